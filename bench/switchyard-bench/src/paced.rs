//! Paced answers of the loopback upstream for the gateway benchmark (bench/gateway/, issue 25).
//!
//! A request to `/p/SPEC/...` is answered in the dialect its path ends with
//! (`/chat/completions`: OpenAI Chat Completions, `/messages`: Anthropic Messages,
//! `/responses`: OpenAI Responses), streamed when its body says `"stream": true`, else as the
//! dialect's whole JSON answer. `SPEC` is comma-separated `key=value` pairs, all optional:
//!
//! - `n` (chunks of text, default 16), `size` (bytes of text per chunk, default 16),
//!   `ttfb` (milliseconds before the first byte, default 0), `gap` (milliseconds between
//!   chunks, default 0);
//! - faults: `cut=K` (the connection is closed after K text chunks, without the end of the
//!   stream), `stall=K` (after K text chunks nothing more is sent, the connection kept open
//!   for up to 10 minutes), `bad=K` (text chunk K is replaced by an event whose data is not
//!   JSON; the stream goes on), `status=429` (with `retry-after: 1`), `status=500` or
//!   `status=529` (Anthropic's "overloaded"; an error body in the dialect).
//!
//! The text of chunk `i` is `size` bytes of the letter `a + i % 26`, so a client can check that
//! every chunk arrived, in order (the load generator, `load.rs`, does). A whole answer waits
//! `ttfb + (n - 1) × gap` and holds the same text. Usage: 10 input tokens, `n` output tokens.

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Largest `n` accepted (chunks per answer).
const MAX_CHUNKS: usize = 100_000;
/// Largest `size` accepted (bytes per chunk).
const MAX_CHUNK_BYTES: usize = 1 << 20;

/// The wire dialect of a request, from its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// OpenAI Chat Completions (`.../chat/completions`).
    Chat,
    /// Anthropic Messages (`.../messages`).
    Messages,
    /// OpenAI Responses (`.../responses`).
    Responses,
}

impl Dialect {
    /// The dialect a request path ends with (query removed), if any.
    pub fn from_path(path: &str) -> Option<Self> {
        let path = path.split('?').next().unwrap_or(path);
        if path.ends_with("/chat/completions") {
            Some(Self::Chat)
        } else if path.ends_with("/messages") {
            Some(Self::Messages)
        } else if path.ends_with("/responses") {
            Some(Self::Responses)
        } else {
            None
        }
    }
}

/// What a `/p/SPEC/...` request asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// Text chunks.
    pub n: usize,
    /// Bytes of text per chunk.
    pub size: usize,
    /// Milliseconds before the first byte.
    pub ttfb_ms: u64,
    /// Milliseconds between chunks.
    pub gap_ms: u64,
    /// Close the connection after this many text chunks.
    pub cut: Option<usize>,
    /// Send nothing more after this many text chunks (the connection stays open).
    pub stall: Option<usize>,
    /// Replace this text chunk by an event that is not JSON.
    pub bad: Option<usize>,
    /// Answer with this error status instead (429, 500 or 529).
    pub status: Option<u16>,
}

/// How long a stalled answer keeps its connection open.
const STALL: Duration = Duration::from_secs(600);

impl Spec {
    /// Parses `n=16,size=16,ttfb=0,gap=5,cut=3,stall=2,bad=1,status=429` (every key
    /// optional).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut spec = Self {
            n: 16,
            size: 16,
            ttfb_ms: 0,
            gap_ms: 0,
            cut: None,
            stall: None,
            bad: None,
            status: None,
        };
        for pair in text.split(',').filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("`{pair}` is not key=value"))?;
            let number: u64 = value
                .parse()
                .map_err(|_| format!("`{value}` of `{key}` is not a number"))?;
            let count = usize::try_from(number).unwrap_or(usize::MAX);
            match key {
                "n" if (1..=MAX_CHUNKS).contains(&count) => spec.n = count,
                "size" if (1..=MAX_CHUNK_BYTES).contains(&count) => spec.size = count,
                "ttfb" if number <= 60_000 => spec.ttfb_ms = number,
                "gap" if number <= 60_000 => spec.gap_ms = number,
                "cut" => spec.cut = Some(count),
                "stall" => spec.stall = Some(count),
                "bad" => spec.bad = Some(count),
                "status" if matches!(number, 429 | 500 | 529) => spec.status = Some(number as u16),
                _ => return Err(format!("`{pair}` is not a known setting or out of range")),
            }
        }
        Ok(spec)
    }

    /// The text of chunk `i`.
    fn text(&self, i: usize) -> String {
        let letter = char::from(b'a' + (i % 26) as u8);
        std::iter::repeat_n(letter, self.size).collect()
    }
}

/// True when a JSON request body asks for a stream (`"stream": true`, any spacing).
pub fn wants_stream(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    let mut rest = text.as_ref();
    while let Some(i) = rest.find("\"stream\"") {
        rest = &rest[i + 8..];
        let after = rest.trim_start();
        if let Some(value) = after.strip_prefix(':') {
            return value.trim_start().starts_with("true");
        }
    }
    false
}

/// Answers one paced request on `socket`.
pub async fn answer(
    socket: &mut TcpStream,
    spec: &Spec,
    dialect: Dialect,
    stream: bool,
) -> std::io::Result<()> {
    if spec.ttfb_ms > 0 {
        tokio::time::sleep(Duration::from_millis(spec.ttfb_ms)).await;
    }
    if let Some(status) = spec.status {
        return socket
            .write_all(error_response(status, dialect).as_bytes())
            .await;
    }
    if !stream {
        let wait = spec.gap_ms * (spec.n as u64 - 1);
        if wait > 0 {
            tokio::time::sleep(Duration::from_millis(wait)).await;
        }
        let text: String = (0..spec.n).map(|i| spec.text(i)).collect();
        let body = whole(dialect, &text, spec.n).to_string();
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        return socket.write_all(response.as_bytes()).await;
    }
    let mut out = String::from(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
         transfer-encoding: chunked\r\n\r\n",
    );
    push_chunk(&mut out, &opening(dialect));
    for i in 0..spec.n {
        if spec.cut == Some(i) {
            socket.write_all(out.as_bytes()).await?;
            return socket.shutdown().await;
        }
        if spec.stall == Some(i) {
            socket.write_all(out.as_bytes()).await?;
            tokio::time::sleep(STALL).await;
            return Ok(());
        }
        if i > 0 && spec.gap_ms > 0 {
            tokio::time::sleep(Duration::from_millis(spec.gap_ms)).await;
        }
        if spec.bad == Some(i) {
            push_chunk(&mut out, "data: {\"choices\": [{\"delta\": \n\n");
        } else {
            push_chunk(&mut out, &delta(dialect, &spec.text(i), i));
        }
        if i + 1 == spec.n {
            push_chunk(&mut out, &closing(dialect, spec));
            out.push_str("0\r\n\r\n");
        }
        socket.write_all(out.as_bytes()).await?;
        out.clear();
    }
    Ok(())
}

/// Appends `data` as one HTTP chunk.
fn push_chunk(out: &mut String, data: &str) {
    if data.is_empty() {
        return; // an empty chunk would end the body
    }
    out.push_str(&format!("{:x}\r\n{data}\r\n", data.len()));
}

/// One SSE event, with an `event:` line when `name` is given.
fn event(name: Option<&str>, data: &serde_json::Value) -> String {
    match name {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// The events before the first text.
fn opening(dialect: Dialect) -> String {
    use serde_json::json;
    match dialect {
        Dialect::Chat => String::new(),
        Dialect::Messages => {
            event(
                Some("message_start"),
                &json!({"type": "message_start", "message": {"id": "msg_bench", "type": "message",
                "role": "assistant", "model": "bench", "content": [], "stop_reason": null,
                "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
            ) + &event(
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": 0,
                        "content_block": {"type": "text", "text": ""}}),
            )
        }
        Dialect::Responses => {
            let response = json!({"id": "resp_bench", "object": "response", "created_at": 0,
                "status": "in_progress", "model": "bench", "output": []});
            event(
                Some("response.created"),
                &json!({"type": "response.created", "sequence_number": 0, "response": response}),
            ) + &event(
                Some("response.output_item.added"),
                &json!({"type": "response.output_item.added", "sequence_number": 1,
                    "output_index": 0, "item": {"id": "msg_bench", "type": "message",
                    "status": "in_progress", "role": "assistant", "content": []}}),
            ) + &event(
                Some("response.content_part.added"),
                &json!({"type": "response.content_part.added", "sequence_number": 2,
                    "item_id": "msg_bench", "output_index": 0, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}}),
            )
        }
    }
}

/// The event carrying text chunk `i`.
fn delta(dialect: Dialect, text: &str, i: usize) -> String {
    use serde_json::json;
    match dialect {
        Dialect::Chat => {
            let delta = if i == 0 {
                json!({"role": "assistant", "content": text})
            } else {
                json!({"content": text})
            };
            event(
                None,
                &json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
                    "model": "bench", "choices": [{"index": 0, "delta": delta,
                    "finish_reason": null}]}),
            )
        }
        Dialect::Messages => event(
            Some("content_block_delta"),
            &json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": text}}),
        ),
        Dialect::Responses => event(
            Some("response.output_text.delta"),
            &json!({"type": "response.output_text.delta", "sequence_number": 3 + i,
                "item_id": "msg_bench", "output_index": 0, "content_index": 0, "delta": text}),
        ),
    }
}

/// The events after the last text: finish reason, usage, end.
fn closing(dialect: Dialect, spec: &Spec) -> String {
    use serde_json::json;
    let n = spec.n;
    match dialect {
        Dialect::Chat => {
            event(
                None,
                &json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
                "model": "bench", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            ) + &event(
                None,
                &json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
                "model": "bench", "choices": [], "usage": {"prompt_tokens": 10,
                "completion_tokens": n, "total_tokens": 10 + n}}),
            ) + "data: [DONE]\n\n"
        }
        Dialect::Messages => {
            event(
                Some("content_block_stop"),
                &json!({"type": "content_block_stop", "index": 0}),
            ) + &event(
                Some("message_delta"),
                &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn",
                "stop_sequence": null}, "usage": {"output_tokens": n}}),
            ) + &event(Some("message_stop"), &json!({"type": "message_stop"}))
        }
        Dialect::Responses => {
            let text: String = (0..n).map(|i| spec.text(i)).collect();
            let whole = whole(Dialect::Responses, &text, n);
            event(
                Some("response.completed"),
                &json!({"type": "response.completed", "sequence_number": 3 + n,
                        "response": whole}),
            )
        }
    }
}

/// The whole (non-streamed) answer holding `text`.
fn whole(dialect: Dialect, text: &str, n: usize) -> serde_json::Value {
    use serde_json::json;
    match dialect {
        Dialect::Chat => json!({"id": "chatcmpl-bench", "object": "chat.completion",
            "created": 0, "model": "bench", "choices": [{"index": 0, "message":
            {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": n, "total_tokens": 10 + n}}),
        Dialect::Messages => json!({"id": "msg_bench", "type": "message", "role": "assistant",
            "model": "bench", "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": n}}),
        Dialect::Responses => json!({"id": "resp_bench", "object": "response", "created_at": 0,
            "status": "completed", "model": "bench", "output": [{"id": "msg_bench",
            "type": "message", "status": "completed", "role": "assistant", "content":
            [{"type": "output_text", "text": text, "annotations": []}]}],
            "usage": {"input_tokens": 10, "output_tokens": n, "total_tokens": 10 + n}}),
    }
}

/// An error response in `dialect` with `status` (429 carries `retry-after: 1`).
fn error_response(status: u16, dialect: Dialect) -> String {
    let (reason, kind) = match status {
        429 => ("Too Many Requests", "rate_limit_error"),
        529 => ("Site Overloaded", "overloaded_error"),
        _ => ("Internal Server Error", "api_error"),
    };
    let body = match dialect {
        Dialect::Messages => serde_json::json!({"type": "error",
            "error": {"type": kind, "message": "bench fault"}}),
        _ => serde_json::json!({"error": {"type": kind, "message": "bench fault",
            "code": null}}),
    }
    .to_string();
    let retry = if status == 429 {
        "retry-after: 1\r\n"
    } else {
        ""
    };
    format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n{retry}content-length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn specs_parse_with_defaults_and_bounds() {
        let spec = Spec::parse("n=64,gap=20,cut=3,status=429").unwrap();
        assert_eq!((spec.n, spec.size, spec.gap_ms), (64, 16, 20));
        assert_eq!((spec.cut, spec.status), (Some(3), Some(429)));
        let spec = Spec::parse("stall=2,bad=1,status=529").unwrap();
        assert_eq!(
            (spec.stall, spec.bad, spec.status),
            (Some(2), Some(1), Some(529))
        );
        assert_eq!(Spec::parse("").unwrap().n, 16);
        assert!(Spec::parse("n=0").is_err());
        assert!(Spec::parse("status=404").is_err());
        assert!(Spec::parse("what=1").is_err());
    }

    #[test]
    fn stream_is_read_from_the_body_with_any_spacing() {
        assert!(wants_stream(br#"{"model":"m","stream":true}"#));
        assert!(wants_stream(br#"{"model":"m", "stream" : true}"#));
        assert!(!wants_stream(br#"{"model":"m","stream":false}"#));
        assert!(!wants_stream(br#"{"stream_options":{},"model":"m"}"#));
        assert!(!wants_stream(br#"{"model":"stream"}"#));
    }

    #[test]
    fn dialects_come_from_the_path() {
        assert_eq!(
            Dialect::from_path("/p/n=1/v1/chat/completions"),
            Some(Dialect::Chat)
        );
        assert_eq!(
            Dialect::from_path("/p/n=1/v1/messages?beta=true"),
            Some(Dialect::Messages)
        );
        assert_eq!(
            Dialect::from_path("/p/x/v1/responses"),
            Some(Dialect::Responses)
        );
        assert_eq!(Dialect::from_path("/p/x/v1/models"), None);
    }
}
