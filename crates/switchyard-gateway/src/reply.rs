//! What the gateway writes back: JSON responses, and the streaming body whose every chunk
//! goes to the client as it arrives.
//! Spec: R14.4, R14.5, R14.10.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Frame;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Response, StatusCode};
use switchyard_api::ApiError;
use tokio::sync::mpsc;

use crate::ingress::{Dialect, error_response};

/// Every response body the gateway sends.
pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// A streamed response body fed by a channel: each `Bytes` sent is one HTTP chunk, handed to
/// hyper as soon as it is received, never buffered. When the client goes away hyper drops
/// the body, which closes the channel: the relay then cancels the upstream request.
pub(crate) struct ChannelBody {
    rx: mpsc::Receiver<Bytes>,
}

impl ChannelBody {
    /// A body and the sender that feeds it; `capacity` chunks may wait in between.
    pub(crate) fn channel(capacity: usize) -> (mpsc::Sender<Bytes>, Body) {
        let (tx, rx) = mpsc::channel(capacity);
        (tx, Self { rx }.boxed())
    }
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
    }
}

/// A response of `status` with `body` and `content_type`.
pub(crate) fn with_body(status: u16, content_type: &'static str, body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static(content_type),
    );
    response
}

/// A JSON response of `status`.
pub(crate) fn json(status: u16, value: &serde_json::Value) -> Response<Body> {
    let body = Full::new(Bytes::from(value.to_string())).boxed();
    with_body(status, "application/json", body)
}

/// `error` as `dialect` answers it, with `status` in place of the kind's when given. The
/// provider's wait goes to the client as `retry-after` in whole seconds and
/// `retry-after-ms`, which the OpenAI and Anthropic SDKs read before they retry.
pub(crate) fn dialect_error(
    dialect: Dialect,
    error: &ApiError,
    status: Option<u16>,
) -> Response<Body> {
    let (kind_status, body) = error_response(dialect, error);
    let mut response = json(status.unwrap_or(kind_status), &body);
    if let Some(wait) = error.retry_after {
        let ms = wait.as_millis();
        set_header(&mut response, "retry-after", &ms.div_ceil(1000).to_string());
        set_header(&mut response, "retry-after-ms", &ms.to_string());
    }
    response
}

/// Sets header `name` to `value`; a value that is not valid in HTTP is left out.
pub(crate) fn set_header(response: &mut Response<Body>, name: &'static str, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        response
            .headers_mut()
            .insert(HeaderName::from_static(name), value);
    }
}
