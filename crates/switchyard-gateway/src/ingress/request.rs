//! What every ingress dialect shares (SPEC R14.1, R14.2): the one internal request a client's
//! body becomes, the dialects, and the error a malformed body gets (a 400 naming the field).

use std::fmt;

use switchyard_api::{Message, RequestOverrides, ToolSpec};

/// One client request as Switchyard's layer takes it (SPEC R14.1): the handler's inputs
/// (system prompt, Anthropic-shaped messages, tools) plus what the client set for this request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GatewayRequest {
    /// The model the client named (`PROVIDER/MODEL` or a route name, SPEC R14.3), as sent.
    pub model: String,
    /// The system prompt: Chat `system`/`developer` messages, Responses `instructions`,
    /// Anthropic `system` (and any `role: "system"` message), joined by blank lines.
    pub system_prompt: String,
    /// The conversation, oldest first, in Switchyard's (Anthropic-shaped) messages.
    pub messages: Vec<Message>,
    /// The function tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// The tools among [`Self::tools`] the client declared as something other than a plain
    /// function (Responses: custom tools, `namespace` members), whose calls go back to the
    /// client in its own form.
    pub client_tools: Vec<ClientTool>,
    /// Output limit, sampling, stop sequences, tool choice, reasoning the client set.
    pub overrides: RequestOverrides,
    /// Whether the client asked for a stream (`"stream": true`).
    pub stream: bool,
    /// Chat Completions: `stream_options.include_usage` (the last chunk carries `usage`).
    pub include_usage: bool,
    /// Responses: whether the response is kept for a later `previous_response_id`
    /// (`store`, default true).
    pub store: bool,
    /// Responses: the stored response this one continues.
    pub previous_response_id: Option<String>,
    /// Parameters the client sent that the gateway read but cannot carry, in the client's
    /// spelling (`n`, `logprobs`, a tool of a type other than function, …), for
    /// `x-switchyard-dropped` (SPEC R14.2).
    pub dropped: Vec<String>,
}

/// A tool offered to the provider as a function under [`ClientTool::name`] that the client
/// declared otherwise (SPEC R14.2): the model's calls of it go back in the client's form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientTool {
    /// The name the provider is offered (a `namespace` member's is `NAMESPACE__NAME`).
    pub name: String,
    /// Responses: a custom (freeform) tool, offered as a function whose one string parameter
    /// `input` is the tool's raw text input; its calls go back as `custom_tool_call` items.
    pub custom: bool,
    /// Responses: the `namespace` group the tool belongs to and its name there; its calls go
    /// back with that `name` and `namespace`.
    pub namespace: Option<(String, String)>,
}

/// A request body the gateway cannot read: a 400 in the client's dialect naming the field
/// (SPEC R14.5). `Display`: "`field`: message".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngressError {
    /// The JSON path of the field at fault (`messages[2].content`), or `body` for the whole.
    pub field: String,
    /// What is wrong and what to send instead, one sentence.
    pub message: String,
}

impl IngressError {
    /// An error at `field`.
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
