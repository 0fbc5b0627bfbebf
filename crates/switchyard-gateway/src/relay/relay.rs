//! One request relayed: the first attempt chosen, then the answer driven to its end.
//! Spec: R14.4, R14.2, R14.5.

use std::sync::Arc;

use hyper::Response;
use tokio::time::Instant;

use super::cursor::Cursor;
use super::drive::Drive;
use super::observer::Observer;
use super::window::fitting;
use crate::body::Sent;
use crate::ingress::GatewayRequest;
use crate::reply::{Body, dialect_error, set_header};
use crate::request::{Chain, RequestContext};
use crate::shared::Shared;

/// One admitted request, ready to be sent to its route.
pub(crate) struct Relay {
    shared: Arc<Shared>,
    context: RequestContext,
    request: GatewayRequest,
    sent: Sent,
    chain: Chain,
}

impl Relay {
    /// The relay of `request`, which the client sent as `sent`, to `chain`.
    pub(crate) fn new(
        shared: Arc<Shared>,
        context: RequestContext,
        (request, sent): (GatewayRequest, Sent),
        chain: Chain,
    ) -> Self {
        Self {
            shared,
            context,
            request,
            sent,
            chain,
        }
    }

    /// Runs the request: the response streamed or whole, or the last entry's error in the
    /// client's dialect and status.
    pub(crate) async fn run(self) -> Response<Body> {
        let until = Instant::now() + self.shared.deadline;
        let context = &self.context;
        let dialect = context.dialect;
        let times = (context.input_tokens, context.received, until);
        let mut observer = Observer::new(&self.shared, self.context, &self.request);
        let chain = match fitting(self.chain, &self.request, dialect) {
            Ok(chain) => chain,
            Err(error) => {
                observer.never_answered(&error);
                return dialect_error(dialect, &error, None);
            }
        };
        let parts = (chain, self.request, self.sent);
        let mut cursor = Cursor::new(self.shared, parts, dialect, times);
        cursor.traced(observer.span_parent());
        let attempt = match cursor.first().await {
            Ok(attempt) => attempt,
            Err(error) => {
                let dropped = cursor.dropped(None);
                observer.never_answered(&error);
                let mut response = dialect_error(dialect, &error, None);
                set_dropped(&mut response, &dropped);
                return response;
            }
        };
        // A forwarded body dropped nothing.
        let dropped = if attempt.forwarded {
            Vec::new()
        } else {
            cursor.dropped(Some(attempt.at))
        };
        let mut response = Drive::new(cursor, attempt, observer).respond().await;
        set_dropped(&mut response, &dropped);
        response
    }
}

/// `x-switchyard-dropped`: what the request could not carry, when anything.
/// Spec: R14.2.
fn set_dropped(response: &mut Response<Body>, dropped: &[String]) {
    if !dropped.is_empty() {
        set_header(response, "x-switchyard-dropped", &dropped.join(","));
    }
}
