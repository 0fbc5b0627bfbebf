//! The one request a client's body becomes in every dialect, and the error a malformed body
//! gets.
//! Spec: R14.1, R14.2, R14.3.

use std::fmt;

use switchyard_api::{Message, RequestOverrides, ToolSpec};

/// One client request as Switchyard's layer takes it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GatewayRequest {
    /// The model the client named, a route name or `PROVIDER/MODEL`.
    pub model: String,
    /// The system prompt, its parts joined by blank lines.
    pub system_prompt: String,
    /// The conversation, oldest first, in Switchyard's Anthropic-shaped messages.
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    /// The tools the client declared other than as functions; their calls go back in its form.
    pub client_tools: Vec<ClientTool>,
    pub overrides: RequestOverrides,
    pub stream: bool,
    /// Chat Completions' `stream_options.include_usage`.
    pub include_usage: bool,
    /// Responses: whether the response is kept for a later `previous_response_id`.
    pub store: bool,
    pub previous_response_id: Option<String>,
    /// Gemini: the stream is one JSON array, asked for without `alt=sse`.
    pub json_array: bool,
    /// Gemini without `includeThoughts`: the answer's thinking is not shown, its signatures are.
    pub hide_thoughts: bool,
    /// Parameters the gateway read but cannot carry, for `x-switchyard-dropped`.
    pub dropped: Vec<String>,
}

/// A tool offered to the provider as a function that the client declared otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientTool {
    /// The name the provider is offered; a `namespace` member's is `NAMESPACE__NAME`.
    pub name: String,
    /// Responses: a custom tool, whose one string parameter `input` is its raw text input.
    pub custom: bool,
    /// Responses: the `namespace` group the tool belongs to and its name there.
    pub namespace: Option<(String, String)>,
}

/// A request body the gateway cannot read: a 400 naming the field.
/// Spec: R14.5.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngressError {
    /// The JSON path of the field at fault, or `body` for the whole.
    pub field: String,
    /// What is wrong and what to send instead, one sentence.
    pub message: String,
}

impl IngressError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for IngressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.field, self.message)
    }
}

impl std::error::Error for IngressError {}
