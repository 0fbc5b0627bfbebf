//! The events a socket sends: a stream's server-sent events as messages, and an answer that is
//! no stream as the `error` event Codex CLI reads a failed handshake's status from.
//! Spec: R14.1b.

use bytes::{Buf, BytesMut};
use http_body_util::BodyExt;
use hyper::Response;
use serde_json::{Map, Value, json};

use crate::reply::Body;

/// The most of an error answer's body read into its event; the gateway's own are far smaller.
const ERROR_BODY_MAX: usize = 64 * 1024;

/// The headers an error event carries on, as Codex reads its rate limits and waits from them.
const CARRIED: [&str; 4] = [
    "retry-after",
    "retry-after-ms",
    "x-request-id",
    "x-switchyard-dropped",
];

/// An `error` event with the HTTP status the same request would have had.
pub(super) fn error_event(status: u16, kind: &str, code: Option<&str>, message: &str) -> Value {
    json!({
        "type": "error",
        "status": status,
        "error": {"type": kind, "code": code, "message": message, "param": null},
    })
}

/// The `error` event standing for `response`, an answer that is not a stream: its status, its
/// error object and the headers a client acts on.
pub(super) async fn answer_event(response: Response<Body>) -> Value {
    let (parts, body) = response.into_parts();
    let limited = http_body_util::Limited::new(body, ERROR_BODY_MAX);
    let bytes = limited.collect().await.map(|b| b.to_bytes());
    let parsed = bytes
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    let error = match parsed.as_ref().map(|v| &v["error"]) {
        Some(Value::Object(error)) => Value::Object(error.clone()),
        _ => json!({"type": "api_error", "message": "The gateway's answer could not be read."}),
    };
    let mut headers = Map::new();
    for name in CARRIED {
        if let Some(value) = parts.headers.get(name).and_then(|v| v.to_str().ok()) {
            headers.insert(name.to_owned(), Value::String(value.to_owned()));
        }
    }
    let status = parts.status.as_u16();
    json!({"type": "error", "status": status, "error": error, "headers": headers})
}

/// The `switchyard.dropped` event naming what `x-switchyard-dropped` names, if it names any.
pub(super) fn dropped_event(headers: &hyper::HeaderMap) -> Option<Value> {
    let names = headers.get("x-switchyard-dropped")?.to_str().ok()?;
    let names: Vec<&str> = names
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    (!names.is_empty()).then(|| json!({"type": "switchyard.dropped", "dropped": names}))
}

/// Server-sent events split out of a stream's bytes as they come, each its `data` as text.
#[derive(Default)]
pub(super) struct Split {
    pending: BytesMut,
}

impl Split {
    /// The data of each event `bytes` completes.
    pub(super) fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.pending.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(end) = find_end(&self.pending) {
            let event = self.pending.split_to(end.0);
            self.pending.advance(end.1);
            let text = String::from_utf8_lossy(&event);
            let data: Vec<&str> = (text.lines())
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if !data.is_empty() {
                out.push(data.join("\n"));
            }
        }
        out
    }
}

/// Where the first event in `buf` ends and how long its blank-line separator is.
fn find_end(buf: &[u8]) -> Option<(usize, usize)> {
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// Seconds since the epoch, for a warm-up's `created_at`.
pub(super) fn now_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_reads_come_out_whole_and_in_order() {
        let stream = "event: response.created\ndata: {\"a\":1}\n\n: comment\n\nevent: x\r\ndata: {\"b\":2}\r\n\r\n";
        for cut in 1..stream.len() {
            let mut split = Split::default();
            let mut got = split.push(&stream.as_bytes()[..cut]);
            got.extend(split.push(&stream.as_bytes()[cut..]));
            assert_eq!(got, ["{\"a\":1}", "{\"b\":2}"], "cut at {cut}");
        }
    }
}
