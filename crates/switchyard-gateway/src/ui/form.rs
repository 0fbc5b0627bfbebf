//! The dashboard's form bodies and query strings, decoded.
//! Spec: R14.11.

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::Request;
use hyper::body::Incoming;

/// The largest form or JSON body the dashboard reads, in bytes.
pub(crate) const FORM_MAX: usize = 16 * 1024;

/// The request's body, at most [`FORM_MAX`] bytes; else the sentence why not.
pub(super) async fn read_body(request: Request<Incoming>) -> Result<Bytes, String> {
    match Limited::new(request.into_body(), FORM_MAX).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(_) => Err(format!(
            "The form could not be read (at most {FORM_MAX} bytes)."
        )),
    }
}

/// The value of `name` in the urlencoded `text`, decoded, invalid UTF-8 replaced.
pub(crate) fn field(text: &str, name: &str) -> Option<String> {
    text.split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(k, _)| decode(k) == name)
        .map(|(_, v)| decode(v))
}

/// `text` with `+` as space and `%XX` escapes decoded; a malformed escape is kept as written.
pub(crate) fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_decoded() {
        let body = "a=1&key=sk-sy-ab%2Bc+d&e";
        assert_eq!(field(body, "key").as_deref(), Some("sk-sy-ab+c d"));
        assert_eq!(field(body, "e").as_deref(), Some(""));
        assert_eq!(field(body, "z"), None);
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%4"), "%4");
    }
}
