//! A request the gateway answers itself instead of sending it on.
//! Spec: R14.5, R14.6, R14.7, R14.9, R14.11.

use std::time::Duration;

use hyper::{Method, Response};
use switchyard_api::ApiError;

use crate::ingress::{Dialect, IngressError, previous_not_found, refusal_response};
use crate::metrics::Metrics;
use crate::reply::{Body, dialect_error, json, set_header};
use crate::ui::Live;

/// What `/metrics` counts a refusal as: its `error_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    InvalidRequest,
    TooLarge,
    NotFound,
    Auth,
    Budget,
    RateLimited,
    Server,
    /// The client did not send its request in time.
    Timeout,
}

#[derive(Debug)]
enum Said {
    Sentence(String),
    NoEndpoint(String),
    Invalid(IngressError),
    PreviousNotFound(String),
    Failed(Box<ApiError>),
}

/// A request the gateway refuses: its status, metric kind, body in each dialect and when to
/// ask again. [`Refusal::answer`] is the one place a refusal is counted and written.
#[derive(Debug)]
pub(crate) struct Refusal {
    status: u16,
    kind: Kind,
    said: Said,
    retry_after: Option<Duration>,
    counted: bool,
    /// The connection closes after the answer: the rest of the request will not be read.
    closes: bool,
    /// The route and key prefix the live page lists it under, when it lists it.
    listed: Option<Box<(String, String)>>,
}

impl Refusal {
    pub(crate) fn new(status: u16, kind: Kind, message: String) -> Self {
        Self::with(status, kind, Said::Sentence(message))
    }

    /// The 404 of a path the gateway does not serve; `/metrics` counts model requests only.
    pub(crate) fn no_endpoint(method: &Method, path: &str) -> Self {
        let message = format!("There is no endpoint {method} {path} on this gateway.");
        Self::with(404, Kind::NotFound, Said::NoEndpoint(message)).uncounted()
    }

    pub(crate) fn invalid(error: IngressError) -> Self {
        Self::with(400, Kind::InvalidRequest, Said::Invalid(error))
    }

    /// The 404 of a `previous_response_id` the store does not hold: never sent on without the
    /// conversation it stands for.
    pub(crate) fn previous_not_found(id: String) -> Self {
        Self::with(404, Kind::InvalidRequest, Said::PreviousNotFound(id))
    }

    pub(crate) fn failed(status: u16, kind: Kind, error: ApiError) -> Self {
        Self::with(status, kind, Said::Failed(Box::new(error)))
    }

    fn with(status: u16, kind: Kind, said: Said) -> Self {
        Self {
            status,
            kind,
            said,
            retry_after: None,
            counted: true,
            closes: false,
            listed: None,
        }
    }

    pub(crate) fn retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    /// This refusal closing its connection once written.
    pub(crate) fn closing(mut self) -> Self {
        self.closes = true;
        self
    }

    /// This refusal left out of `/metrics`, which counts model requests.
    pub(crate) fn uncounted(mut self) -> Self {
        self.counted = false;
        self
    }

    /// This refusal listed on the live page under `route` and `key_prefix`.
    pub(crate) fn listed(mut self, route: &str, key_prefix: &str) -> Self {
        self.listed = Some(Box::new((route.to_owned(), key_prefix.to_owned())));
        self
    }

    pub(crate) fn kind(&self) -> &'static str {
        match self.kind {
            Kind::InvalidRequest => "invalid_request",
            Kind::TooLarge => "too_large",
            Kind::NotFound => "not_found",
            Kind::Auth => "auth",
            Kind::Budget => "budget",
            Kind::RateLimited => "rate_limited",
            Kind::Server => "server",
            Kind::Timeout => "timeout",
        }
    }

    pub(crate) fn sentence(&self) -> String {
        match &self.said {
            Said::Sentence(s) | Said::NoEndpoint(s) => s.clone(),
            Said::Invalid(e) => e.to_string(),
            Said::PreviousNotFound(id) => format!("no stored response {id}"),
            Said::Failed(e) => e.message.clone(),
        }
    }

    /// Counts, lists and logs request `id`'s refusal, and writes it in `dialect`.
    pub(crate) fn answer(
        self,
        dialect: Dialect,
        id: &str,
        metrics: &Metrics,
        live: &Live,
    ) -> Response<Body> {
        let kind = self.kind();
        if self.counted {
            metrics.refused(kind);
        }
        let sentence = self.sentence();
        if let Some((route, prefix)) = self.listed.as_deref() {
            live.refused(id, route, Some(prefix.as_str()), (kind, &sentence));
        }
        let said = switchyard_api::secrets::scrub(&sentence);
        tracing::debug!(id = %id, status = self.status, kind = %kind, "refused: {said}");
        self.render(dialect)
    }

    fn render(self, dialect: Dialect) -> Response<Body> {
        let status = self.status;
        let mut response = match &self.said {
            Said::Sentence(message) => json(status, &refusal_response(dialect, status, message)),
            Said::NoEndpoint(message) => {
                let message = switchyard_api::secrets::scrub(message);
                json(status, &dialect.rules().no_endpoint_body(&message))
            }
            Said::Invalid(error) => {
                let (status, body) = dialect.rules().invalid_request(error);
                json(status, &body)
            }
            Said::PreviousNotFound(id) => json(status, &previous_not_found(id)),
            Said::Failed(error) => dialect_error(dialect, error, Some(status)),
        };
        if let Some(wait) = self.retry_after {
            let ms = wait.as_millis().max(1);
            set_header(&mut response, "retry-after", &ms.div_ceil(1000).to_string());
            set_header(&mut response, "retry-after-ms", &ms.to_string());
        }
        if self.closes {
            set_header(&mut response, "connection", "close");
        }
        response
    }
}
