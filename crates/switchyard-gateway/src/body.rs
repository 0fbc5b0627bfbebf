//! A request's body, read under the gateway's size cap.
//! Spec: R14.10.

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::Request;
use hyper::body::Incoming;

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

/// The body of `request`, at most `limit` bytes. A larger one is a 413 before it is read past
/// the cap.
pub(crate) async fn read(request: Request<Incoming>, limit: usize) -> Result<Bytes, Refusal> {
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
    match Limited::new(request.into_body(), limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(e) => {
            let message = format!("The request body could not be read: {e}.");
            Err(Refusal::new(400, Kind::InvalidRequest, message))
        }
    }
}
