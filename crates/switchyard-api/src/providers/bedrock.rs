//! Bedrock ConverseStream (SPEC R4.1, R4.8): the mapping from decoded AWS event-stream frames
//! to chunks.
//!
//! Frames (botocore `bedrock-runtime` 2023-09-30 `ConverseStreamOutput`): events
//! `messageStart`, `contentBlockStart` (`start.toolUse{toolUseId,name}`), `contentBlockDelta`
//! (`delta.text`, `delta.toolUse.input` fragments, `delta.reasoningContent.{text, signature,
//! redactedContent}`), `contentBlockStop`, `messageStop` (`stopReason`), `metadata` (`usage`);
//! `:message-type=exception` frames (`throttlingException`, `modelStreamErrorException`,
//! `validationException`, …) and `:message-type=error` frames become errors.
//!
//! Usage rule (SPEC R1.3): for Claude on Bedrock `inputTokens` is already the uncached part;
//! `cacheReadInputTokens` → cache reads, `cacheWriteInputTokens` → cache writes.
//!
//! The request side (SigV4 signing with the AWS credential chain, cross-region prefixes) is not
//! in this build yet; `bedrock` still reports itself unsupported.

use std::collections::HashMap;

use serde_json::Value;

use crate::error::{ApiError, ErrorKind};
use crate::stream::{ApiStreamChunk, Usage};
use crate::wire::eventstream::EventStreamMessage;

/// Maps ConverseStream frames to chunks, one frame at a time.
#[derive(Debug, Default)]
pub struct ConverseStreamParser {
    /// Tool-use blocks by content-block index: (id, name, argument bytes so far).
    tools: HashMap<u64, (String, String, usize)>,
    stopped: bool,
}

fn u64_at(v: &Value, pointer: &str) -> Option<u64> {
    v.pointer(pointer).and_then(Value::as_u64)
}

impl ConverseStreamParser {
    /// Handles one frame, appending chunks or an error to `out`.
    pub fn on_message(
        &mut self,
        msg: &EventStreamMessage,
        out: &mut Vec<Result<ApiStreamChunk, ApiError>>,
    ) {
        let payload: Value = serde_json::from_slice(&msg.payload).unwrap_or(Value::Null);
        match msg.header_str(":message-type") {
            Some("exception") => {
                let kind = msg.header_str(":exception-type").unwrap_or("exception");
                let message = payload
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or(kind);
                return out.push(Err(ApiError::from_provider(
                    None,
                    Some(kind),
                    message,
                    None,
                )));
            }
            Some("error") => {
                let code = msg.header_str(":error-code");
                let message = msg
                    .header_str(":error-message")
                    .unwrap_or("the stream reported an error");
                return out.push(Err(ApiError::from_provider(None, code, message, None)));
            }
            _ => {}
        }
        let index = u64_at(&payload, "/contentBlockIndex").unwrap_or(0);
        match msg.header_str(":event-type").unwrap_or_default() {
            "contentBlockStart" => {
                if let Some(tool) = payload.pointer("/start/toolUse") {
                    let id = tool
                        .get("toolUseId")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    let name = tool
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    out.push(Ok(ApiStreamChunk::ToolCalls {
                        call_id: None,
                        id: id.clone(),
                        name: name.clone(),
                        arguments_delta: String::new(),
                    }));
                    self.tools.insert(index, (id, name, 0));
                }
            }
            "contentBlockDelta" => {
                let delta = &payload["delta"];
                if let Some(t) = delta
                    .get("text")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    out.push(Ok(ApiStreamChunk::text(t)));
                }
                if let (Some(part), Some((id, name, bytes))) = (
                    delta.pointer("/toolUse/input").and_then(Value::as_str),
                    self.tools.get_mut(&index),
                ) {
                    *bytes += part.len();
                    if !part.is_empty() {
                        out.push(Ok(ApiStreamChunk::ToolCalls {
                            call_id: None,
                            id: id.clone(),
                            name: name.clone(),
                            arguments_delta: part.to_owned(),
                        }));
                    }
                }
                if let Some(r) = delta.get("reasoningContent") {
                    let text = r.get("text").and_then(Value::as_str).unwrap_or_default();
                    let signature = r
                        .get("signature")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    let redacted = r
                        .get("redactedContent")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    if !text.is_empty() || signature.is_some() || redacted.is_some() {
                        out.push(Ok(ApiStreamChunk::Reasoning {
                            reasoning: text.to_owned(),
                            details: None,
                            signature,
                            redacted_data: redacted,
                            id: None,
                        }));
                    }
                }
            }
            "contentBlockStop" => {
                // A finished tool block is no longer open.
                if let Some(tool) = self.tools.get_mut(&index) {
                    tool.2 = usize::MAX;
                }
            }
            "messageStop" => {
                let open = self
                    .tools
                    .values()
                    .find(|(_, _, bytes)| *bytes != usize::MAX);
                if payload.get("stopReason").and_then(Value::as_str) == Some("max_tokens") {
                    if let Some((_, name, bytes)) = open {
                        return out.push(Err(ApiError::new(
                            ErrorKind::Decode,
                            format!(
                                "the response hit its max_tokens limit while writing the arguments of tool `{name}` ({bytes} bytes received); the incomplete call was dropped"
                            ),
                        )));
                    }
                }
                self.stopped = true;
            }
            "metadata" => {
                if let Some(u) = payload.get("usage") {
                    out.push(Ok(ApiStreamChunk::Usage(Usage {
                        input_tokens: u64_at(u, "/inputTokens").unwrap_or(0),
                        output_tokens: u64_at(u, "/outputTokens").unwrap_or(0),
                        cache_write_tokens: u64_at(u, "/cacheWriteInputTokens"),
                        cache_read_tokens: u64_at(u, "/cacheReadInputTokens"),
                        thoughts_tokens: None,
                        total_cost_usd: None,
                        id: None,
                    })));
                }
            }
            _ => {} // messageStart and future event types.
        }
    }

    /// Handles the clean end of the body: a stream without `messageStop` was cut off.
    pub fn on_end(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        if !self.stopped {
            out.push(Err(ApiError::new(
                ErrorKind::Network,
                "the stream ended before the response was complete (no messageStop)",
            )));
        }
    }
}
