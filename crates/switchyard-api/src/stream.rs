//! The one stream every provider speaks through (SPEC R1).
//!
//! A request yields an [`ApiStream`]: an async stream of `Result<ApiStreamChunk, ApiError>`.
//! Provider specifics (Anthropic content blocks, OpenAI deltas, Gemini parts, …) are
//! normalised into exactly four chunk kinds, as in the reference (`ApiStreamChunk` in
//! Cline's `src/core/api/transform/stream.ts`).

use std::pin::Pin;

use futures_util::Stream;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// An async stream of chunks; dropping it closes the underlying HTTP connection (SPEC R1.4).
pub type ApiStream = Pin<Box<dyn Stream<Item = Result<ApiStreamChunk, ApiError>> + Send>>;

/// One normalised piece of a model response (SPEC R1.2).
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
    /// Thinking text. A thinking signature arrives as a chunk with empty `reasoning` and
    /// `signature` set; Anthropic `redacted_thinking` / OpenAI `encrypted_content` arrive in
    /// `redacted_data` (opaque base64, kept as on the wire for round-trips).
    Reasoning {
        reasoning: String,
        /// Provider-specific structured reasoning (e.g. OpenRouter `reasoning_details`), as JSON.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<serde_json::Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        redacted_data: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
    /// Token usage for the request, in tokens (see [`Usage`]).
    Usage(Usage),
    /// A fragment of a tool call's arguments. Emitted only once the call's `id` and `name` are
    /// known; the consumer joins `arguments_delta` per `id` (see [`ToolCallAccumulator`]).
    ToolCalls {
        /// The provider's separate call id where it has one (OpenAI Responses `call_id`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        id: String,
        name: String,
        arguments_delta: String,
    },
}

impl ApiStreamChunk {
    /// Builds a plain text chunk.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            id: None,
            signature: None,
        }
    }

    /// Builds a plain reasoning chunk.
    pub fn reasoning(reasoning: impl Into<String>) -> Self {
        Self::Reasoning {
            reasoning: reasoning.into(),
            details: None,
            signature: None,
            redacted_data: None,
            id: None,
        }
    }

    /// A thinking signature: a reasoning chunk with empty text and `signature` set (SPEC R1.2).
    pub fn reasoning_signature(signature: impl Into<String>) -> Self {
        Self::Reasoning {
            reasoning: String::new(),
            details: None,
            signature: Some(signature.into()),
            redacted_data: None,
            id: None,
        }
    }

    /// Redacted or encrypted thinking: a reasoning chunk with empty text and `redacted_data`
    /// set (SPEC R1.2).
    pub fn redacted_reasoning(data: impl Into<String>) -> Self {
        Self::Reasoning {
            reasoning: String::new(),
            details: None,
            signature: None,
            redacted_data: Some(data.into()),
            id: None,
        }
    }

    /// True for text, reasoning and tool calls: the chunks that commit a stream (SPEC R6.4).
    /// Usage chunks are not content.
    pub fn is_content(&self) -> bool {
        !matches!(self, Self::Usage(_))
    }
}

/// Token usage of one request (SPEC R1.2, R1.3). All counts are tokens.
///
/// `input_tokens` is the **non-cached** input: each provider subtracts cache reads and writes
/// before yielding, and documents its rule next to its usage mapping. Optional fields are
/// `Some` exactly when the provider reported them (including a reported 0).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Reasoning tokens as reported (OpenAI `reasoning_tokens`, included in `output_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thoughts_tokens: Option<u64>,
    /// The provider's own cost for the request in USD, when it reports one (OpenRouter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// One complete tool call, assembled from [`ApiStreamChunk::ToolCalls`] fragments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    pub name: String,
    /// The byte-exact concatenation of the fragments; `{}` when the model sent none
    /// (an empty argument string is not valid JSON, see tests/cases C22).
    pub arguments: String,
}

/// Joins tool-call fragments per id, keeping calls in the order they first appeared.
#[derive(Debug, Default)]
pub struct ToolCallAccumulator {
    calls: Vec<ToolCall>,
}

impl ToolCallAccumulator {
    /// Adds one fragment.
    pub fn push(&mut self, call_id: Option<&str>, id: &str, name: &str, arguments_delta: &str) {
        if let Some(call) = self.calls.iter_mut().find(|c| c.id == id) {
            call.arguments.push_str(arguments_delta);
            if call.call_id.is_none() {
                call.call_id = call_id.map(str::to_owned);
            }
        } else {
            self.calls.push(ToolCall {
                id: id.to_owned(),
                call_id: call_id.map(str::to_owned),
                name: name.to_owned(),
                arguments: arguments_delta.to_owned(),
            });
        }
    }

    /// True when no fragment was pushed.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The assembled calls, in first-appearance order.
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
