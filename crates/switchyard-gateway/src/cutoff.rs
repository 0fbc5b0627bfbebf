//! What a client is told when its connection is closed before its request's head is in: a 408
//! with `connection: close`, in the dialect of the path its head names when it got that far.
//! Spec: R14.10, R14.5.

use std::time::Duration;

use hyper::Method;
use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::endpoint::find;
use crate::ingress::refusal_response;

/// How long the 408 may take to go out before the connection is closed anyway.
const WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// Writes the 408 saying `message` to `io` and closes it. `head` is what arrived of the head.
pub(crate) async fn request_timeout<T: AsyncWrite + Unpin>(mut io: T, head: &[u8], message: &str) {
    let bytes = response(head, message);
    let written = tokio::time::timeout(WRITE_TIMEOUT, async {
        io.write_all(&bytes).await?;
        io.shutdown().await
    });
    if let Ok(Err(e)) = written.await {
        tracing::debug!("a 408 could not be written to a client: {e}");
    }
}

/// The whole 408 response for a head that began with `head`.
fn response(head: &[u8], message: &str) -> Vec<u8> {
    let (method, path) = request_line(head).unwrap_or((Method::GET, "/"));
    let dialect = find(&method, path).dialect;
    let body = refusal_response(dialect, 408, message).to_string();
    format!(
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The method and path of a head's request line, when that much arrived.
fn request_line(head: &[u8]) -> Option<(Method, &str)> {
    let line = head.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split(' ');
    let method = Method::from_bytes(words.next()?.as_bytes()).ok()?;
    let target = words.next()?;
    let path = target.split('?').next()?;
    Some((method, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_408_speaks_the_dialect_its_path_named_and_closes() {
        let text = |head: &[u8]| String::from_utf8(response(head, "Too slow.")).unwrap();
        let anthropic = text(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-slo");
        assert!(
            anthropic.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
            "{anthropic}"
        );
        assert!(anthropic.contains("connection: close\r\n"), "{anthropic}");
        let body: serde_json::Value =
            serde_json::from_str(anthropic.split_once("\r\n\r\n").unwrap().1).unwrap();
        assert_eq!(body["type"], "error", "{body}");
        assert_eq!(body["error"]["message"], "Too slow.");
        let openai = text(b"PO");
        let body: serde_json::Value =
            serde_json::from_str(openai.split_once("\r\n\r\n").unwrap().1).unwrap();
        assert_eq!(body["error"]["message"], "Too slow.", "{body}");
    }
}
