//! What the agent upstream's closure is told about a request: the parts an agent test decides
//! on (tools offered, a tool result last, the last user text, `stream`), read from any of the
//! dialects' request bodies.

use serde_json::Value;

use super::UpstreamDialect;
use crate::RecordedRequest;

/// One parsed request, as the closure of an [`AgentUpstream`](super::AgentUpstream) sees it.
#[derive(Clone, Debug)]
pub struct AgentTurnRequest {
    /// The dialect it came in (the server's).
    pub dialect: UpstreamDialect,
    /// The request target as sent, query string included.
    pub path: String,
    /// The headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body as JSON.
    pub body: Value,
    /// The `model` field (empty when absent).
    pub model: String,
    /// Whether the answer is to be streamed (`stream: true`).
    pub stream: bool,
    /// The names of the tools offered, in order: Chat `tools[].function.name` (and legacy
    /// `functions[].name`), Messages and Responses `tools[].name`.
    pub tools: Vec<String>,
    /// Whether the conversation's last message is a tool result: Chat a `role: "tool"` (or
    /// `"function"`) message, Messages a user message holding a `tool_result` block, Responses
    /// a `function_call_output` (or `custom_tool_call_output`) input item.
    pub after_tool_result: bool,
    /// How many tool results the conversation holds in all.
    pub tool_results: usize,
    /// The text of the last user message (its text parts joined with newlines; tool results
    /// left out), or `None` when there is no user text.
    pub last_user_text: Option<String>,
}

impl AgentTurnRequest {
    /// Reads `request`'s body as a `dialect` request. `Err` when the body is not a JSON object.
    pub fn parse(dialect: UpstreamDialect, request: &RecordedRequest) -> Result<Self, String> {
        let body: Value = serde_json::from_slice(&request.body)
            .map_err(|e| format!("the request body is not JSON: {e}"))?;
        if !body.is_object() {
            return Err("the request body is not a JSON object".to_owned());
        }
        let items = conversation(dialect, &body);
        let results = items.iter().filter(|m| is_tool_result(dialect, m)).count();
        let (model, stream) = match dialect {
            // Gemini's URL names the model and the stream: `…/models/MODEL:streamGenerateContent`.
            UpstreamDialect::Gemini => gemini_call(&request.path),
            _ => (
                body["model"].as_str().unwrap_or_default().to_owned(),
                body["stream"].as_bool().unwrap_or(false),
            ),
        };
        Ok(AgentTurnRequest {
            dialect,
            path: request.path.clone(),
            headers: request.headers.clone(),
            model,
            stream,
            tools: tool_names(&body),
            after_tool_result: items.last().is_some_and(|m| is_tool_result(dialect, m)),
            tool_results: results,
            last_user_text: last_user_text(dialect, &body, &items),
            body,
        })
    }

    /// Whether a tool called `name` is offered.
    pub fn offers_tool(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t == name)
    }

    /// The value of the first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The whole body as text (for a closure that matches on a system prompt, say).
    pub fn raw(&self) -> String {
        self.body.to_string()
    }
}

/// The model and the stream a Gemini request's path names.
fn gemini_call(path: &str) -> (String, bool) {
    let path = path.split('?').next().unwrap_or_default();
    let named = path.rsplit_once("/models/").map_or("", |(_, m)| m);
    let (model, method) = named.rsplit_once(':').unwrap_or((named, ""));
    (model.to_owned(), method == "streamGenerateContent")
}

fn tool_names(body: &Value) -> Vec<String> {
    let tools = body["tools"].as_array().into_iter().flatten();
    let functions = body["functions"].as_array().into_iter().flatten();
    // Gemini's tools are lists of `functionDeclarations`.
    let declarations = (body["tools"].as_array().into_iter().flatten())
        .filter_map(|t| t["functionDeclarations"].as_array())
        .flatten();
    tools
        .chain(functions)
        .chain(declarations)
        .filter_map(|t| {
            t["name"]
                .as_str()
                .or_else(|| t["function"]["name"].as_str())
        })
        .map(str::to_owned)
        .collect()
}

/// The conversation's messages (Chat, Messages) or input items (Responses; a string input is
/// one user item).
fn conversation(dialect: UpstreamDialect, body: &Value) -> Vec<Value> {
    let key = match dialect {
        UpstreamDialect::Responses => "input",
        UpstreamDialect::Gemini => "contents",
        _ => "messages",
    };
    match &body[key] {
        Value::Array(items) => items.clone(),
        Value::String(text) => vec![serde_json::json!({"role": "user", "content": text})],
        _ => Vec::new(),
    }
}

fn is_tool_result(dialect: UpstreamDialect, item: &Value) -> bool {
    match dialect {
        UpstreamDialect::ChatCompletions => {
            matches!(item["role"].as_str(), Some("tool" | "function"))
        }
        UpstreamDialect::Messages => {
            item["role"] == "user"
                && (item["content"].as_array().into_iter().flatten())
                    .any(|b| b["type"] == "tool_result")
        }
        UpstreamDialect::Responses => matches!(
            item["type"].as_str(),
            Some("function_call_output" | "custom_tool_call_output")
        ),
        UpstreamDialect::Gemini => {
            item["role"] != "model"
                && (item["parts"].as_array().into_iter().flatten())
                    .any(|p| p["functionResponse"].is_object())
        }
    }
}

fn last_user_text(dialect: UpstreamDialect, body: &Value, items: &[Value]) -> Option<String> {
    if dialect == UpstreamDialect::Responses
        && let Some(text) = body["input"].as_str()
    {
        return Some(text.to_owned());
    }
    if dialect == UpstreamDialect::Gemini {
        let texts = |m: &Value| {
            let parts = m["parts"].as_array().into_iter().flatten();
            let texts: Vec<&str> = parts.filter_map(|p| p["text"].as_str()).collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        };
        return (items.iter().rev())
            .filter(|m| m["role"] != "model")
            .find_map(texts);
    }
    items
        .iter()
        .rev()
        .filter(|m| m["role"] == "user")
        .find_map(|m| text_of(&m["content"]))
}

/// The text parts of a content value (a string, or parts of type `text` / `input_text`).
fn text_of(content: &Value) -> Option<String> {
    match content {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| matches!(p["type"].as_str(), Some("text" | "input_text")))
                .filter_map(|p| p["text"].as_str())
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}
