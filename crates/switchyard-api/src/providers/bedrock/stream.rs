//! Bedrock ConverseStream frames mapped to stream chunks: events, and exception and error frames.
//! Spec: R4.8, R1.2, R1.3, R7.5.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::finish::finish_reason_error;
use crate::error::{ApiError, ErrorKind};
use crate::providers::mapper::{Chunks, require_end};
use crate::stream::{ApiStreamChunk, Usage};
use crate::transport::EventParser;
use crate::wire::eventstream::EventStreamMessage;

#[derive(Debug, Default)]
pub(crate) struct ConverseStreamParser {
    /// Open tool-use blocks by index with id, name and argument bytes, until their
    /// `contentBlockStop`; ordered, so a cut names the lowest index every time.
    tools: BTreeMap<u64, (String, String, usize)>,
    stopped: bool,
    /// The error a named stop reason ends the stream with, held for the usage after it.
    failure: Option<ApiError>,
}

fn u64_at(v: &Value, pointer: &str) -> Option<u64> {
    v.pointer(pointer).and_then(Value::as_u64)
}

/// The error of an `exception` or `error` frame, or `None` for an event frame.
#[inline]
fn frame_error(msg: &EventStreamMessage, payload: &Value) -> Option<ApiError> {
    match msg.header_str(":message-type") {
        Some("exception") => {
            let kind = msg.header_str(":exception-type").unwrap_or("exception");
            let message = payload
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or(kind);
            Some(ApiError::from_provider(None, Some(kind), message, None))
        }
        Some("error") => {
            let code = msg.header_str(":error-code");
            let message = msg
                .header_str(":error-message")
                .unwrap_or("the stream reported an error");
            Some(ApiError::from_provider(None, code, message, None))
        }
        _ => None,
    }
}

#[inline]
fn str_or_empty<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

impl ConverseStreamParser {
    pub fn on_message(&mut self, msg: &EventStreamMessage, out: &mut Chunks) {
        let payload: Value = serde_json::from_slice(&msg.payload).unwrap_or(Value::Null);
        if let Some(e) = frame_error(msg, &payload) {
            return out.push(Err(e));
        }
        let index = u64_at(&payload, "/contentBlockIndex").unwrap_or(0);
        match msg.header_str(":event-type").unwrap_or_default() {
            "contentBlockStart" => {
                if let Some(tool) = payload.pointer("/start/toolUse") {
                    self.on_tool_start(index, tool, out);
                }
            }
            "contentBlockDelta" => self.on_delta(index, &payload["delta"], out),
            "contentBlockStop" => {
                self.tools.remove(&index);
            }
            "messageStop" => self.on_stop(&payload, out),
            "metadata" => {
                if let Some(u) = payload.get("usage") {
                    out.push(Ok(usage(u)));
                }
                out.extend(self.failure.take().map(Err));
            }
            _ => {} // messageStart and future event types.
        }
    }

    /// `contentBlockStart` of a tool use: its id and name; the arguments follow as deltas.
    #[inline]
    fn on_tool_start(&mut self, index: u64, tool: &Value, out: &mut Chunks) {
        let id = str_or_empty(tool, "toolUseId").to_owned();
        let name = str_or_empty(tool, "name").to_owned();
        out.push(Ok(ApiStreamChunk::tool_call(
            id.clone(),
            name.clone(),
            String::new(),
        )));
        self.tools.insert(index, (id, name, 0));
    }

    /// `contentBlockDelta`: text, a tool use's argument fragment, reasoning.
    #[inline]
    fn on_delta(&mut self, index: u64, delta: &Value, out: &mut Chunks) {
        if let Some(t) = delta
            .get("text")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            out.push(Ok(ApiStreamChunk::text(t)));
        }
        // A fragment for a block that is not open, never started or already stopped, has no call to
        // join and is dropped, as opencode's Converse parser does.
        if let (Some(part), Some((id, name, bytes))) = (
            delta.pointer("/toolUse/input").and_then(Value::as_str),
            self.tools.get_mut(&index),
        ) {
            *bytes = bytes.saturating_add(part.len());
            if !part.is_empty() {
                out.push(Ok(ApiStreamChunk::tool_call(
                    id.clone(),
                    name.clone(),
                    part,
                )));
            }
        }
        if let Some(r) = delta.get("reasoningContent") {
            out.extend(reasoning(r).map(Ok));
        }
    }

    /// `messageStop`: a tool call cut off by `max_tokens` is an error; a named stop reason
    /// is the error the stream ends with after the usage.
    #[inline]
    fn on_stop(&mut self, payload: &Value, out: &mut Chunks) {
        // The lowest open index: the same frames give the same error.
        let open = self.tools.values().next();
        let stop_reason = payload.get("stopReason").and_then(Value::as_str);
        if stop_reason == Some("max_tokens") {
            if let Some((_, name, bytes)) = open {
                return out.push(Err(ApiError::new(
                    ErrorKind::Decode,
                    format!(
                        "the response hit its max_tokens limit while writing the arguments of tool `{name}` ({bytes} bytes received); the incomplete call was dropped"
                    ),
                )));
            }
            out.push(Ok(ApiStreamChunk::max_tokens()));
        }
        // A named stop reason such as `guardrail_intervened` ends the stream in its error after the
        // `metadata` frame with the billed usage.
        self.failure = stop_reason.and_then(finish_reason_error);
        self.stopped = true;
    }

    /// Handles the clean end of the body: a stream without `messageStop` was cut off.
    pub fn on_end(&mut self, out: &mut Chunks) {
        if let Some(e) = self.failure.take() {
            out.push(Err(e));
        } else {
            require_end(self.stopped, "messageStop", out);
        }
    }
}

/// A `reasoningContent` delta: text, signature and redacted content in one chunk, if any.
#[inline]
fn reasoning(r: &Value) -> Option<ApiStreamChunk> {
    let text = str_or_empty(r, "text");
    let signature = r
        .get("signature")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let redacted = r
        .get("redactedContent")
        .and_then(Value::as_str)
        .map(str::to_owned);
    (!text.is_empty() || signature.is_some() || redacted.is_some()).then(|| {
        ApiStreamChunk::Reasoning {
            reasoning: text.to_owned(),
            details: None,
            signature,
            redacted_data: redacted,
            id: None,
        }
    })
}

/// A `metadata` frame's usage. For Claude on Bedrock `inputTokens` is already the uncached part, so
/// the Anthropic cost rule applies to these numbers.
#[inline]
fn usage(u: &Value) -> ApiStreamChunk {
    ApiStreamChunk::Usage(Usage {
        input_tokens: u64_at(u, "/inputTokens").unwrap_or(0),
        output_tokens: u64_at(u, "/outputTokens").unwrap_or(0),
        cache_write_tokens: u64_at(u, "/cacheWriteInputTokens"),
        cache_read_tokens: u64_at(u, "/cacheReadInputTokens"),
        thoughts_tokens: None,
        total_cost_usd: None,
        id: None,
    })
}

impl EventParser for ConverseStreamParser {
    type Event = EventStreamMessage;

    fn on_event(&mut self, event: EventStreamMessage, out: &mut Chunks) {
        self.on_message(&event, out);
    }

    fn on_end(&mut self, out: &mut Chunks) {
        ConverseStreamParser::on_end(self, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn exception(kind: &str, message: &str) -> EventStreamMessage {
        use crate::wire::eventstream::HeaderValue;
        EventStreamMessage {
            headers: vec![
                (
                    ":message-type".into(),
                    HeaderValue::String("exception".into()),
                ),
                (":exception-type".into(), HeaderValue::String(kind.into())),
                (
                    ":content-type".into(),
                    HeaderValue::String("application/json".into()),
                ),
            ],
            payload: json!({ "message": message }).to_string().into_bytes(),
        }
    }

    #[test]
    fn exception_events_map_to_error_kinds() {
        for (kind, message, want) in [
            (
                "validationException",
                "Input is too long for requested model.",
                ErrorKind::ContextWindowExceeded,
            ),
            (
                "throttlingException",
                "Too many tokens, please wait before trying again.",
                ErrorKind::RateLimited,
            ),
            (
                "serviceUnavailableException",
                "Bedrock is unable to process your request.",
                ErrorKind::Overloaded,
            ),
            (
                "validationException",
                "messages.1: tool_use ids must be unique",
                ErrorKind::InvalidRequest,
            ),
        ] {
            let mut out = Vec::new();
            ConverseStreamParser::default().on_message(&exception(kind, message), &mut out);
            let [Err(e)] = out.as_slice() else {
                panic!("{out:?}")
            };
            assert_eq!(e.kind, want, "{kind}: {message}");
            assert!(e.message.contains(message), "{e}");
        }
    }

    /// The recorded ConverseStream fixture's frames, with `messageStop`'s `stopReason` set to
    /// `stop_reason`, through the parser.
    fn recorded_with_stop_reason(stop_reason: &str) -> Chunks {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/bedrock_converse_stream.bin"
        );
        let mut frames = Vec::new();
        let mut decoder = crate::wire::eventstream::EventStreamDecoder::new();
        decoder
            .feed(&std::fs::read(path).unwrap(), &mut frames)
            .unwrap();
        let (mut parser, mut out) = (ConverseStreamParser::default(), Vec::new());
        for mut frame in frames {
            if frame.header_str(":event-type") == Some("messageStop") {
                frame.payload = json!({ "stopReason": stop_reason })
                    .to_string()
                    .into_bytes();
            }
            parser.on_message(&frame, &mut out);
        }
        parser.on_end(&mut out);
        out
    }

    #[test]
    fn a_max_tokens_stop_says_the_output_limit_cut_the_answer() {
        let finish = |out: &Chunks| {
            (out.iter())
                .filter(|c| matches!(c, Ok(ApiStreamChunk::Finish { .. })))
                .count()
        };
        let cut = recorded_with_stop_reason("max_tokens");
        assert!(cut.iter().all(Result::is_ok), "{cut:?}");
        assert_eq!(finish(&cut), 1, "{cut:?}");
        let last_content = cut
            .iter()
            .rposition(|c| c.as_ref().is_ok_and(ApiStreamChunk::is_content));
        let at = cut
            .iter()
            .position(|c| matches!(c, Ok(ApiStreamChunk::Finish { .. })));
        assert!(last_content < at, "{cut:?}");
        assert_eq!(finish(&recorded_with_stop_reason("tool_use")), 0);
        assert_eq!(finish(&recorded_with_stop_reason("end_turn")), 0);
    }

    fn event(kind: &str, payload: serde_json::Value) -> EventStreamMessage {
        use crate::wire::eventstream::HeaderValue;
        EventStreamMessage {
            headers: vec![(":event-type".into(), HeaderValue::String(kind.into()))],
            payload: payload.to_string().into_bytes(),
        }
    }

    /// Found by the map_bedrock fuzz target (tests/fuzz/map_bedrock/
    /// tool_delta_after_block_stop.body): a fragment after a tool block's stop overflowed the
    /// closed block's byte count and reopened it, so `max_tokens` then blamed a finished call.
    /// Now the fragment is dropped: the call's arguments were complete at its stop.
    #[test]
    fn a_tool_fragment_after_its_block_stop_is_dropped_and_the_block_stays_closed() {
        let (mut parser, mut out) = (ConverseStreamParser::default(), Vec::new());
        for (kind, payload) in [
            (
                "contentBlockStart",
                json!({"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "read_file"}}}),
            ),
            (
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{}"}}}),
            ),
            ("contentBlockStop", json!({"contentBlockIndex": 0})),
            (
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": " "}}}),
            ),
            ("messageStop", json!({"stopReason": "max_tokens"})),
        ] {
            parser.on_message(&event(kind, payload), &mut out);
        }
        assert!(out.iter().all(Result::is_ok), "{out:?}");
        let fragments = (out.iter())
            .filter(|c| matches!(c, Ok(ApiStreamChunk::ToolCalls { .. })))
            .count();
        // The block's start and its one fragment before the stop.
        assert_eq!(fragments, 2, "{out:?}");
        assert!(
            matches!(out.last(), Some(Ok(ApiStreamChunk::Finish { .. }))),
            "{out:?}"
        );
    }

    /// Two tool blocks open when `max_tokens` cuts the answer: the error names the lower index
    /// every time (a HashMap's order made it either; the Anthropic mapper's rule, issue 27).
    #[test]
    fn a_cut_with_two_open_tool_blocks_names_the_first_every_time() {
        for _ in 0..16 {
            let (mut parser, mut out) = (ConverseStreamParser::default(), Vec::new());
            for (i, name) in [(3, "second"), (1, "first")] {
                let start = json!({"contentBlockIndex": i, "start": {"toolUse": {"toolUseId": format!("t{i}"), "name": name}}});
                parser.on_message(&event("contentBlockStart", start), &mut out);
            }
            out.clear();
            let stop = json!({"stopReason": "max_tokens"});
            parser.on_message(&event("messageStop", stop), &mut out);
            let [Err(e)] = &out[..] else {
                panic!("{out:?}")
            };
            assert!(e.message.contains("tool `first`"), "{}", e.message);
        }
    }
}
