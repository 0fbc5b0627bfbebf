//! The messages and tools every Chat Completions body shares: Anthropic-shaped messages converted
//! plainly or in the R1 format, prompt-cache marks and function tools.
//! Spec: R4.3.

use serde_json::{Map, Value, json};

use crate::cache_hints::{CacheAt, CacheHints};
use crate::message::{ContentBlock, Message, Role, ToolSpec};

/// Adds `tools`, `tool_choice: "auto"` and `parallel_tool_calls` for a non-empty tool list. Tools
/// go whenever the task has any, MCP tools having no XML-prompt way in, and the choice stays `auto`
/// even on Mistral, where the reference's `any` forces a call every time.
pub(crate) fn add_tools(body: &mut Map<String, Value>, tools: &[ToolSpec], parallel: Option<bool>) {
    if tools.is_empty() {
        return;
    }
    body.insert("tools".into(), function_tools(tools));
    body.insert("tool_choice".into(), json!("auto"));
    if let Some(p) = parallel {
        body.insert("parallel_tool_calls".into(), json!(p));
    }
}

/// Tools in the Chat Completions shape, also Ollama's `/api/chat`'s.
pub(crate) fn function_tools(tools: &[ToolSpec]) -> Value {
    tools
        .iter()
        .map(|t| {
            json!({ "type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.input_schema } })
        })
        .collect()
}

fn image_part(source: &crate::message::ImageSource) -> Value {
    json!({
        "type": "image_url",
        "image_url": { "url": format!("data:{};base64,{}", source.media_type, source.data) },
    })
}

/// Converts Anthropic-shaped messages into Chat Completions messages, as the reference's
/// `convertToOpenAiMessages`: tool results become `tool` messages first, and a user's text alone
/// goes as a string, since llama.cpp-style chat templates render arrays badly. Thinking is not sent
/// back.
pub(crate) fn openai_messages(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::new();
    for m in messages {
        match m.role {
            Role::User => {
                let mut texts: Vec<&str> = Vec::new();
                let mut parts: Vec<Value> = Vec::new();
                let mut images = false;
                for block in &m.content {
                    match block {
                        ContentBlock::ToolResult {
                            tool_use_id,
                            content,
                            ..
                        } => out.push(
                            json!({ "role": "tool", "tool_call_id": tool_use_id, "content": content }),
                        ),
                        ContentBlock::Text { text } => {
                            texts.push(text);
                            parts.push(json!({ "type": "text", "text": text }));
                        }
                        ContentBlock::Image { source } => {
                            images = true;
                            parts.push(image_part(source));
                        }
                        _ => {}
                    }
                }
                if images {
                    out.push(json!({ "role": "user", "content": parts }));
                } else if !texts.is_empty() {
                    out.push(json!({ "role": "user", "content": texts.join("\n\n") }));
                }
            }
            Role::Assistant => {
                let mut texts: Vec<&str> = Vec::new();
                let mut tool_calls: Vec<Value> = Vec::new();
                for block in &m.content {
                    match block {
                        ContentBlock::Text { text } => texts.push(text),
                        ContentBlock::ToolUse {
                            id, name, input, ..
                        } => tool_calls.push(json!({
                            "id": id, "type": "function",
                            "function": { "name": name, "arguments": input.to_string() },
                        })),
                        _ => {}
                    }
                }
                // A blank line between blocks: the task layer keeps "[Response interrupted by API
                // Error]" as a block of its own, where the reference appends it after a blank line.
                let text = texts.join("\n\n");
                let content = if !text.trim().is_empty() {
                    json!(text)
                } else if !tool_calls.is_empty() {
                    Value::Null
                } else {
                    json!("")
                };
                let mut msg = json!({ "role": "assistant", "content": content });
                if !tool_calls.is_empty() {
                    msg["tool_calls"] = Value::Array(tool_calls);
                }
                out.push(msg);
            }
        }
    }
    out
}

/// The system message and `messages` in OpenAI's shape with a client's own cache marks, as the
/// model routers pass them on to Claude: on the system message when the client marked it, and
/// on the last part of the last message each marked message became.
pub(crate) fn client_marked_messages(
    system_prompt: &str,
    messages: &[Message],
    hints: &CacheHints,
) -> Vec<Value> {
    let mut out = vec![json!({ "role": "system", "content": system_prompt })];
    if let Some(mark) = hints.at(&CacheAt::System) {
        out[0]["content"] = json!([{ "type": "text", "text": system_prompt, "cache_control": mark.cache_control() }]);
    }
    for (i, m) in messages.iter().enumerate() {
        let start = out.len();
        out.extend(openai_messages(std::slice::from_ref(m)));
        let mark = (hints.marks.iter())
            .find(|k| matches!(k.at, CacheAt::Block { message, .. } if message == i));
        let target = out[start..]
            .iter_mut()
            .rev()
            .find(|v| v["content"].is_string() || v["content"].is_array());
        if let (Some(mark), Some(target)) = (mark, target) {
            let content = &mut target["content"];
            if let Value::String(text) = content {
                *content = json!([{ "type": "text", "text": text }]);
            }
            if let Some(last) = content.as_array_mut().and_then(|p| p.last_mut()) {
                last["cache_control"] = mark.cache_control();
            }
        }
    }
    out
}

/// True when the conversation holds a tool call or a tool result.
pub(crate) fn has_tool_blocks(messages: &[Message]) -> bool {
    messages.iter().flat_map(|m| &m.content).any(|b| {
        matches!(
            b,
            ContentBlock::ToolUse { .. } | ContentBlock::ToolResult { .. }
        )
    })
}

/// The R1 format of the reference's `convertToR1Format`: the system prompt as the first user
/// message, each message's text joined with newlines, and consecutive messages of one role merged.
pub(crate) fn r1_messages(system_prompt: &str, messages: &[Message]) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::new();
    // A blank system prompt is no message, as in `chat_body::messages`.
    let system: Vec<Message> = (!system_prompt.is_empty())
        .then(|| Message::user_text(system_prompt))
        .into_iter()
        .collect();
    for m in system.iter().chain(messages) {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let mut texts: Vec<&str> = Vec::new();
        let mut images: Vec<Value> = Vec::new();
        for block in &m.content {
            match block {
                ContentBlock::Text { text } => texts.push(text),
                ContentBlock::Image { source } => images.push(image_part(source)),
                _ => {}
            }
        }
        let content = if images.is_empty() {
            json!(texts.join("\n"))
        } else {
            let mut parts = Vec::new();
            if !texts.is_empty() {
                parts.push(json!({ "type": "text", "text": texts.join("\n") }));
            }
            parts.extend(images);
            Value::Array(parts)
        };
        match merged.last_mut() {
            Some(last) if last["role"] == role => {
                let previous = last["content"].take();
                last["content"] = match (previous, content) {
                    (Value::String(a), Value::String(b)) => json!(format!("{a}\n{b}")),
                    (a, b) => {
                        let as_parts = |v: Value| match v {
                            Value::Array(parts) => parts,
                            other => vec![
                                json!({ "type": "text", "text": other.as_str().unwrap_or("") }),
                            ],
                        };
                        let mut parts = as_parts(a);
                        parts.extend(as_parts(b));
                        Value::Array(parts)
                    }
                };
            }
            _ => merged.push(json!({ "role": role, "content": content })),
        }
    }
    merged
}

/// Where a cache mark goes in a user message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CachePoint {
    /// On the last text part, adding a `"..."` one when there is none, for the model routers.
    LastText,
    /// On the last part, whatever it is, for LiteLLM.
    LastPart,
}

/// Prompt-caching marks on the system message and the last two user messages, content made parts.
pub(crate) fn mark_cache_points(messages: &mut [Value], point: CachePoint) {
    let ephemeral = json!({ "type": "ephemeral" });
    if let Some(system) = messages.first_mut().filter(|m| m["role"] == "system") {
        let text = system["content"].take();
        system["content"] = json!([{ "type": "text", "text": text, "cache_control": ephemeral }]);
    }
    let users: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m["role"] == "user")
        .map(|(i, _)| i)
        .rev()
        .take(2)
        .collect();
    for i in users {
        let content = &mut messages[i]["content"];
        if let Value::String(text) = content {
            *content = json!([{ "type": "text", "text": text }]);
        }
        let Some(parts) = content.as_array_mut() else {
            continue;
        };
        let target = match point {
            CachePoint::LastText => match parts.iter().rposition(|p| p["type"] == "text") {
                Some(j) => j,
                None => {
                    parts.push(json!({ "type": "text", "text": "..." }));
                    parts.len() - 1
                }
            },
            CachePoint::LastPart => match parts.len().checked_sub(1) {
                Some(j) => j,
                None => continue,
            },
        };
        parts[target]["cache_control"] = ephemeral.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client's marks reach a router where placed: a tool result's on its `tool` message, and
    /// no mark on the system or the other user message, which the layer would have marked.
    #[test]
    fn client_marks_go_on_the_messages_they_were_on() {
        let mut hints = CacheHints::default();
        hints.mark(
            CacheAt::Block {
                message: 2,
                block: 0,
            },
            None,
        );
        let messages = [
            Message::user_text("one"),
            Message::assistant_text("two"),
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "t1".into(),
                    content: "done".into(),
                    is_error: false,
                }],
            },
        ];
        let out = client_marked_messages("s", &messages, &hints);
        assert_eq!(out[0]["content"], "s");
        assert_eq!(out[1]["content"], "one");
        assert_eq!(out[3]["role"], "tool");
        assert_eq!(
            out[3]["content"],
            json!([{"type": "text", "text": "done", "cache_control": {"type": "ephemeral"}}])
        );
    }

    #[test]
    fn r1_format_merges_roles_and_puts_the_system_prompt_first() {
        let messages = [
            Message::user_text("a"),
            Message::user_text("b"),
            Message::assistant_text("c"),
        ];
        assert_eq!(
            r1_messages("SYS", &messages),
            vec![
                json!({"role": "user", "content": "SYS\na\nb"}),
                json!({"role": "assistant", "content": "c"}),
            ]
        );
    }

    #[test]
    fn cache_marks_go_on_the_system_prompt_and_the_last_two_user_messages() {
        let mut messages = vec![
            json!({"role": "system", "content": "S"}),
            json!({"role": "user", "content": "u1"}),
            json!({"role": "assistant", "content": "a"}),
            json!({"role": "user", "content": "u2"}),
            json!({"role": "tool", "tool_call_id": "t", "content": "r"}),
            json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}),
        ];
        mark_cache_points(&mut messages, CachePoint::LastText);
        let mark = json!({"type": "ephemeral"});
        assert_eq!(messages[0]["content"][0]["cache_control"], mark);
        assert_eq!(messages[1]["content"], "u1");
        assert_eq!(messages[3]["content"][0]["cache_control"], mark);
        // No text part: a "..." part carries the mark.
        assert_eq!(
            messages[5]["content"][1],
            json!({"type": "text", "text": "...", "cache_control": mark})
        );
    }
}
