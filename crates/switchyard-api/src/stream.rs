//! The one stream every provider speaks through, normalised into the reference's chunk kinds.
//! Spec: R1, R1.2, R1.3, R1.4.

use std::pin::Pin;

use futures_util::Stream;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// An async stream of chunks; dropping it closes the HTTP connection.
pub type ApiStream = Pin<Box<dyn Stream<Item = Result<ApiStreamChunk, ApiError>> + Send>>;

/// One normalised piece of a model response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ApiStreamChunk {
    /// Assistant text, in wire order. `signature` carries Gemini's thought signature.
    Text {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Thinking text; a signature or redacted thinking comes with an empty `reasoning`.
    Reasoning {
        reasoning: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<serde_json::Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        redacted_data: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
    /// Token usage for the request.
    Usage(Usage),
    /// A fragment of a tool call's arguments, given once the call's `id` and `name` are known.
    ToolCalls {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        id: String,
        name: String,
        arguments_delta: String,
        /// Gemini's thought signature of this call, on the first fragment that knows it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// The answer ended for `reason`, not as the model chose; yielded once, after the content.
    Finish { reason: FinishReason },
    /// One provider event as it came, only in a forwarded stream, after its chunks; not content.
    #[serde(skip)]
    Wire(WireEvent),
}

/// The bytes of one provider event as a client of its dialect reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireEvent {
    /// The event's bytes, ready to write; empty when `ends`.
    pub bytes: bytes::Bytes,
    /// The events end here because a configured secret spanned two; the consumer writes the rest.
    pub ends: bool,
    /// Set while the mapper holds this event's content back; always false after the guard.
    pub(crate) held: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FinishReason {
    /// The output limit cut the answer; a tool call it cuts is an error instead, never run.
    MaxTokens,
}

impl ApiStreamChunk {
    pub fn max_tokens() -> Self {
        Self::Finish {
            reason: FinishReason::MaxTokens,
        }
    }

    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            id: None,
            signature: None,
        }
    }

    pub fn reasoning(reasoning: impl Into<String>) -> Self {
        Self::Reasoning {
            reasoning: reasoning.into(),
            details: None,
            signature: None,
            redacted_data: None,
            id: None,
        }
    }

    pub fn reasoning_signature(signature: impl Into<String>) -> Self {
        Self::Reasoning {
            reasoning: String::new(),
            details: None,
            signature: Some(signature.into()),
            redacted_data: None,
            id: None,
        }
    }

    pub fn redacted_reasoning(data: impl Into<String>) -> Self {
        Self::Reasoning {
            reasoning: String::new(),
            details: None,
            signature: None,
            redacted_data: Some(data.into()),
            id: None,
        }
    }

    pub fn tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments_delta: impl Into<String>,
    ) -> Self {
        Self::ToolCalls {
            call_id: None,
            id: id.into(),
            name: name.into(),
            arguments_delta: arguments_delta.into(),
            signature: None,
        }
    }

    /// True for text, reasoning and tool calls, the chunks that commit a stream.
    pub fn is_content(&self) -> bool {
        !matches!(self, Self::Usage(_) | Self::Finish { .. } | Self::Wire(_))
    }
}

/// Token usage of one request, in tokens; `input_tokens` leaves out cache reads and writes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Reasoning tokens, included in `output_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thoughts_tokens: Option<u64>,
    /// The provider's own cost for the request in USD, when it reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl Usage {
    /// Adds `u` as the usage chunks of one answer add up; cost and id take the latest.
    pub fn add(&mut self, u: &Usage) {
        let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        self.input_tokens += u.input_tokens;
        self.output_tokens += u.output_tokens;
        self.cache_read_tokens = add(self.cache_read_tokens, u.cache_read_tokens);
        self.cache_write_tokens = add(self.cache_write_tokens, u.cache_write_tokens);
        self.thoughts_tokens = add(self.thoughts_tokens, u.thoughts_tokens);
        self.total_cost_usd = u.total_cost_usd.or(self.total_cost_usd);
        self.id = u.id.clone().or(self.id.take());
    }
}

/// One complete tool call, assembled from [`ApiStreamChunk::ToolCalls`] fragments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    pub name: String,
    /// The fragments joined byte for byte; `{}` when the model sent none, as "" is not JSON.
    pub arguments: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

impl ToolCall {
    /// The arguments as the JSON object a tool takes, or a sentence fragment saying why they are
    /// not one. A call whose arguments are not an object must never run.
    pub fn arguments_object(&self) -> Result<serde_json::Map<String, serde_json::Value>, String> {
        match serde_json::from_str::<serde_json::Value>(&self.arguments) {
            Ok(serde_json::Value::Object(map)) => Ok(map),
            Ok(other) => Err(format!(
                "a JSON {} instead of an object",
                match other {
                    serde_json::Value::Null => "null",
                    serde_json::Value::Bool(_) => "boolean",
                    serde_json::Value::Number(_) => "number",
                    serde_json::Value::String(_) => "string",
                    _ => "array",
                }
            )),
            Err(e) => Err(format!("not valid JSON ({e})")),
        }
    }
}

/// A tool-call id for a call the wire sent without one: `call_`, a tag drawn once per process
/// and a counter, so a later tool round never repeats an earlier id.
pub fn generated_tool_call_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::LazyLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    static TAG: LazyLock<u32> = LazyLock::new(|| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        h.write_u32(std::process::id());
        (h.finish() >> 32) as u32
    });
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("call_{:08x}_{}", *TAG, NEXT.fetch_add(1, Ordering::Relaxed))
}

#[derive(Debug, Default)]
pub struct ToolCallAccumulator {
    calls: Vec<ToolCall>,
}

impl ToolCallAccumulator {
    /// Adds one tool-call fragment; the first signature a call's fragments carry is kept.
    pub fn push(
        &mut self,
        call_id: Option<&str>,
        id: &str,
        name: &str,
        arguments_delta: &str,
        signature: Option<&str>,
    ) {
        if let Some(call) = self.calls.iter_mut().find(|c| c.id == id) {
            call.arguments.push_str(arguments_delta);
            if call.call_id.is_none() {
                call.call_id = call_id.map(str::to_owned);
            }
            if call.signature.is_none() {
                call.signature = signature.map(str::to_owned);
            }
        } else {
            self.calls.push(ToolCall {
                id: id.to_owned(),
                call_id: call_id.map(str::to_owned),
                name: name.to_owned(),
                arguments: arguments_delta.to_owned(),
                signature: signature.map(str::to_owned),
            });
        }
    }

    pub fn push_chunk(&mut self, chunk: &ApiStreamChunk) {
        if let ApiStreamChunk::ToolCalls {
            call_id,
            id,
            name,
            arguments_delta,
            signature,
        } = chunk
        {
            self.push(
                call_id.as_deref(),
                id,
                name,
                arguments_delta,
                signature.as_deref(),
            );
        }
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The assembled calls in first-appearance order, arguments as they came but none as `{}`.
    pub fn finish(self) -> Vec<ToolCall> {
        self.calls
            .into_iter()
            .map(|mut c| {
                if c.arguments.trim().is_empty() {
                    c.arguments = "{}".to_owned();
                }
                c
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_unique() {
        let ids: std::collections::HashSet<String> =
            (0..1000).map(|_| generated_tool_call_id()).collect();
        assert_eq!(ids.len(), 1000);
        assert!(ids.iter().all(|id| id.starts_with("call_")));
    }

    #[test]
    fn arguments_must_be_one_json_object() {
        let call = |args: &str| ToolCall {
            id: "c".into(),
            call_id: None,
            name: "n".into(),
            arguments: args.into(),
            signature: None,
        };
        assert!(call(r#"{"a":1}"#).arguments_object().is_ok());
        assert!(call(" {} ").arguments_object().is_ok());
        let err = call(r#"{"a":1}{"b":2}"#).arguments_object().unwrap_err();
        assert!(err.starts_with("not valid JSON"), "{err}");
        let err = call(r#"{"path": "notes.md", "content": "line"#)
            .arguments_object()
            .unwrap_err();
        assert!(err.contains("EOF"), "{err}");
        assert_eq!(
            call("[1]").arguments_object().unwrap_err(),
            "a JSON array instead of an object"
        );
    }
}
