//! A request's body, read under the gateway's size cap and its deadline.
//! Spec: R14.10.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::Request;
use hyper::body::Incoming;

use crate::idle::Reading;
use crate::refusal::{Kind, Refusal};

/// A completion request's body as it came, and the client headers sent on with it when a
/// provider takes that body as it is.
pub(crate) struct Sent {
    pub(crate) bytes: Bytes,
    pub(crate) forward_headers: Vec<(String, String)>,
}

/// The path and query of `request`, which some dialects read part of a request from.
pub(crate) fn target(request: &Request<Incoming>) -> String {
    let uri = request.uri();
    uri.path_and_query()
        .map_or(uri.path(), |p| p.as_str())
        .to_owned()
}

/// How a body is read: its cap in bytes and how long it may take from the end of its head.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyLimits {
    pub(crate) bytes: usize,
    pub(crate) deadline: Duration,
}

/// The body of `request` under `limits`. A larger one is a 413 before it is read past the cap;
/// one that does not arrive by the deadline is a 408 that closes the connection.
pub(crate) async fn read(request: Request<Incoming>, limits: BodyLimits) -> Result<Bytes, Refusal> {
    let limit = limits.bytes;
    let too_large = || {
        let mib = limit as f64 / (1024.0 * 1024.0);
        let message = format!("The request body is larger than this gateway's {mib} MiB.");
        Refusal::new(413, Kind::TooLarge, message)
    };
    let declared = (request.headers().get(hyper::header::CONTENT_LENGTH))
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let (mut parts, mut body) = request.into_parts();
    // Until the body is in, the connection is still reading a request.
    let reading = parts.extensions.remove::<Reading>();
    // Pages not yet written take no memory, so a body that never comes costs nothing here; one
    // buffer the size declared is never copied as it grows.
    let mut buf = Vec::with_capacity(declared.map_or(0, |n| n as usize));
    let until = tokio::time::Instant::now() + limits.deadline;
    loop {
        let frame = match tokio::time::timeout_at(until, body.frame()).await {
            Err(_) => return Err(timed_out(limits.deadline, buf.len(), declared)),
            Ok(None) => break,
            Ok(Some(Ok(frame))) => frame,
            Ok(Some(Err(e))) => {
                let message = format!("The request body could not be read: {e}.");
                return Err(Refusal::new(400, Kind::InvalidRequest, message));
            }
        };
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > limit {
                return Err(too_large());
            }
            buf.extend_from_slice(&data);
        }
    }
    drop(reading);
    Ok(Bytes::from(buf))
}

/// The 408 of a body that did not arrive in time, naming how much did.
fn timed_out(deadline: Duration, got: usize, declared: Option<u64>) -> Refusal {
    let of = declared.map_or_else(String::new, |n| format!(" of the {n} declared"));
    let message = format!(
        "The request body did not arrive within this gateway's {} s ({got} bytes{of} came): send it again.",
        deadline.as_secs()
    );
    Refusal::new(408, Kind::Timeout, message).closing()
}
