//! The dashboard's plain answers: an HTML page and a redirect.
//! Spec: R14.11.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Response;

use crate::reply::{Body, set_header, with_body};

/// An HTML page.
pub(super) fn html(status: u16, page: String) -> Response<Body> {
    with_body(
        status,
        "text/html; charset=utf-8",
        Full::new(Bytes::from(page)).boxed(),
    )
}

/// A 303 to `to`.
pub(super) fn redirect(to: &str) -> Response<Body> {
    let mut r = with_body(
        303,
        "text/plain; charset=utf-8",
        Full::new(Bytes::new()).boxed(),
    );
    set_header(&mut r, "location", to);
    r
}
