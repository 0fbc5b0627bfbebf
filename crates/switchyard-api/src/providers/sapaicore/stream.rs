//! The two stream mappers only SAP AI Core needs: Bedrock Converse events sent as SSE `data:`
//! lines, and Cohere v2 chat events. Its other routes use their family's mapper.
//! Spec: R1.2, R1.3.

use serde_json::Value;

use crate::error::ApiError;
use crate::providers::mapper::{Chunks, JsonEvents, require_end};
use crate::stream::{ApiStreamChunk, Usage};

/// Bedrock Converse events as SSE data.
#[derive(Debug, Default)]
pub(crate) struct ConverseParser {
    stopped: bool,
    usage_seen: bool,
}

#[inline]
fn text_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|t| !t.is_empty())
}

impl ConverseParser {
    /// `contentBlockDelta.delta`: text, and reasoning text and signature as separate chunks.
    #[inline]
    fn on_delta(delta: &Value, out: &mut Chunks) {
        if let Some(t) = text_at(delta, "text") {
            out.push(Ok(ApiStreamChunk::text(t)));
        }
        if let Some(r) = delta.get("reasoningContent") {
            if let Some(t) = text_at(r, "text") {
                out.push(Ok(ApiStreamChunk::reasoning(t)));
            }
            if let Some(s) = r.get("signature").and_then(Value::as_str) {
                out.push(Ok(ApiStreamChunk::reasoning_signature(s)));
            }
        }
    }

    /// `metadata.usage`; Converse's `inputTokens` is already uncached.
    #[inline]
    fn on_usage(&mut self, u: &Value, out: &mut Chunks) {
        self.usage_seen = true;
        let count = |k: &str| u.get(k).and_then(Value::as_u64);
        out.push(Ok(ApiStreamChunk::Usage(Usage {
            input_tokens: count("inputTokens").unwrap_or(0),
            output_tokens: count("outputTokens").unwrap_or(0),
            cache_read_tokens: count("cacheReadInputTokens"),
            cache_write_tokens: count("cacheWriteInputTokens"),
            ..Usage::default()
        })));
    }
}

impl JsonEvents for ConverseParser {
    fn on_json(&mut self, _name: &str, v: &Value, out: &mut Chunks) {
        if let Some(delta) = v.pointer("/contentBlockDelta/delta") {
            Self::on_delta(delta, out);
        }
        if let Some(stop) = v.get("messageStop") {
            self.stopped = true;
            if stop.get("stopReason").and_then(Value::as_str) == Some("max_tokens") {
                out.push(Ok(ApiStreamChunk::max_tokens()));
            }
        }
        if let Some(u) = v.pointer("/metadata/usage") {
            self.on_usage(u, out);
        }
        // Bedrock's exception events, passed through by SAP AI Core.
        for (key, value) in v.as_object().into_iter().flatten() {
            if key.ends_with("Exception") {
                let message = value
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("the model stream failed");
                out.push(Err(ApiError::from_provider(None, Some(key), message, None)));
            }
        }
    }

    fn on_json_end(&mut self, out: &mut Chunks) {
        require_end(self.stopped || self.usage_seen, "messageStop", out);
    }
}

/// Cohere v2 chat events: `content-delta` text and the usage of `message-end`.
#[derive(Debug, Default)]
pub(crate) struct CohereParser {
    ended: bool,
}

impl CohereParser {
    /// `message-end`: the usage, in `delta.usage.tokens` or else `billed_units`.
    #[inline]
    fn on_message_end(&mut self, v: &Value, out: &mut Chunks) {
        self.ended = true;
        if v.pointer("/delta/finish_reason").and_then(Value::as_str) == Some("MAX_TOKENS") {
            out.push(Ok(ApiStreamChunk::max_tokens()));
        }
        let u = v
            .pointer("/delta/usage/tokens")
            .or_else(|| v.pointer("/delta/usage/billed_units"));
        if let Some(u) = u {
            let count = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            out.push(Ok(ApiStreamChunk::Usage(Usage {
                input_tokens: count("input_tokens"),
                output_tokens: count("output_tokens"),
                ..Usage::default()
            })));
        }
    }
}

impl JsonEvents for CohereParser {
    fn on_json(&mut self, _name: &str, v: &Value, out: &mut Chunks) {
        match v.get("type").and_then(Value::as_str) {
            Some("content-delta") => {
                if let Some(t) = v
                    .pointer("/delta/message/content/text")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    out.push(Ok(ApiStreamChunk::text(t)));
                }
            }
            Some("message-end") => self.on_message_end(v, out),
            _ => {}
        }
    }

    fn on_json_end(&mut self, out: &mut Chunks) {
        require_end(self.ended, "message-end", out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::mapper::testing::sse;
    use crate::transport::EventParser;

    #[test]
    fn cohere_events() {
        let mut p = CohereParser::default();
        let mut out = Vec::new();
        for data in [
            r#"{"type":"message-start","id":"m"}"#,
            r#"{"type":"content-delta","index":0,"delta":{"message":{"content":{"text":"Hi"}}}}"#,
            r#"{"type":"message-end","delta":{"finish_reason":"COMPLETE","usage":{"billed_units":{"input_tokens":5,"output_tokens":2},"tokens":{"input_tokens":70,"output_tokens":2}}}}"#,
        ] {
            p.on_event(sse("message", data), &mut out);
        }
        p.on_end(&mut out);
        assert!(matches!(&out[0], Ok(ApiStreamChunk::Text { text, .. }) if text == "Hi"));
        assert!(
            matches!(&out[1], Ok(ApiStreamChunk::Usage(u)) if u.input_tokens == 70 && u.output_tokens == 2)
        );
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn the_output_limit_is_a_finish_chunk_in_converse_and_cohere_streams() {
        let mut converse = (ConverseParser::default(), Vec::new());
        for data in [
            r#"{"contentBlockDelta":{"contentBlockIndex":0,"delta":{"text":"Hi"}}}"#,
            r#"{"messageStop":{"stopReason":"max_tokens"}}"#,
        ] {
            converse.0.on_event(sse("message", data), &mut converse.1);
        }
        converse.0.on_end(&mut converse.1);
        assert!(
            matches!(&converse.1[..], [Ok(ApiStreamChunk::Text { .. }), Ok(c)] if *c == ApiStreamChunk::max_tokens()),
            "{:?}",
            converse.1
        );
        let mut cohere = (CohereParser::default(), Vec::new());
        let end = r#"{"type":"message-end","delta":{"finish_reason":"MAX_TOKENS"}}"#;
        cohere.0.on_event(sse("message", end), &mut cohere.1);
        assert_eq!(cohere.1.len(), 1);
        assert!(matches!(&cohere.1[0], Ok(c) if *c == ApiStreamChunk::max_tokens()));
    }
}
