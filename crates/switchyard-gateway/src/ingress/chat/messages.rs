//! A Chat Completions body's `messages[]` read into Switchyard's Anthropic-shaped
//! conversation. `tool` messages become tool results in one user message, since that shape
//! needs every result of a turn in the user message after the calls.
//! Spec: R14.1.

use serde_json::Value;
use switchyard_api::{CacheAt, CacheHints, ContentBlock, Message, Role};

use super::super::content::cache_ttl;
use super::super::fields::{
    Object, as_object, element, get, member, note_dropped, opt_array, opt_object, opt_str, req_str,
    wrong_kind,
};
use super::super::request::IngressError;
use super::content::{self, Parts};

/// The system prompt and conversation the `messages` hold.
#[derive(Debug, Default)]
pub(super) struct Conversation {
    /// `system` and `developer` texts wherever they stand, joined by blank lines.
    pub(super) system_prompt: String,
    /// Everything else, oldest first.
    pub(super) messages: Vec<Message>,
    /// The breakpoints of Anthropic-style `cache_control` on messages or their parts.
    pub(super) cache: CacheHints,
}

/// Reads `messages[]`; parts that cannot be carried are named in `dropped`.
pub(super) fn conversation(
    messages: &[Value],
    dropped: &mut Vec<String>,
) -> Result<Conversation, IngressError> {
    let mut out = Conversation::default();
    // True while the last message is a user message made of `tool` messages' results.
    let mut tool_turn = false;
    for (i, message) in messages.iter().enumerate() {
        let path = element("messages", i);
        let obj = as_object(message, &path)?;
        let role = req_str(obj, "role", &path)?;
        let content = get(obj, "content");
        let content_path = member(&path, "content");
        let before = out.messages.iter().map(|m| m.content.len()).sum::<usize>();
        match role {
            "system" | "developer" => {
                let text = content::text(content, &content_path, dropped)?;
                if !text.is_empty() {
                    if !out.system_prompt.is_empty() {
                        out.system_prompt.push_str("\n\n");
                    }
                    out.system_prompt.push_str(&text);
                }
                if let Some(ttl) = cache_ttl(obj) {
                    out.cache.mark(CacheAt::System, ttl);
                }
                continue;
            }
            // A message with nothing to send leaves the tool turn open: the results around it are one
            // turn, as they are when the body is sent on.
            "user" => {
                let blocks = content::blocks(content, &content_path, Parts::User, dropped)?;
                if push(&mut out.messages, Role::User, blocks, tool_turn) {
                    tool_turn = false;
                }
            }
            "assistant" => {
                let blocks = assistant(obj, &path, dropped)?;
                if push(&mut out.messages, Role::Assistant, blocks, false) {
                    tool_turn = false;
                }
            }
            "tool" => {
                let result = ContentBlock::ToolResult {
                    tool_use_id: req_str(obj, "tool_call_id", &path)?.to_owned(),
                    content: content::text(content, &content_path, dropped)?,
                    is_error: false,
                };
                push(&mut out.messages, Role::User, vec![result], tool_turn);
                tool_turn = true;
            }
            "function" => {
                return Err(IngressError::new(
                    member(&path, "role"),
                    "`function` is the deprecated function-calling form; send `tool` messages \
                     with a `tool_call_id` instead.",
                ));
            }
            other => {
                return Err(IngressError::new(
                    member(&path, "role"),
                    format!(
                        "must be one of system, developer, user, assistant or tool (got `{other}`)."
                    ),
                ));
            }
        }
        mark_cached(&mut out, obj, before);
    }
    Ok(out)
}

/// Marks the last block of the conversation when `message`, which added blocks after the first
/// `before`, carries `cache_control`. Clients mark a message's last part, so the cached prefix
/// ends at the message's end.
fn mark_cached(out: &mut Conversation, message: &Object, before: usize) {
    let now = out.messages.iter().map(|m| m.content.len()).sum::<usize>();
    let (Some(ttl), Some(last)) = (cache_ttl(message), out.messages.len().checked_sub(1)) else {
        return;
    };
    if now > before {
        let block = out.messages[last].content.len() - 1;
        out.cache.mark(
            CacheAt::Block {
                message: last,
                block,
            },
            ttl,
        );
    }
}

/// Appends a message of `role` holding `blocks`, or adds them to the last message when
/// `merge`. False when `blocks` is empty: an empty message cannot be sent.
fn push(messages: &mut Vec<Message>, role: Role, blocks: Vec<ContentBlock>, merge: bool) -> bool {
    if blocks.is_empty() {
        return false;
    }
    match messages.last_mut() {
        Some(last) if merge && last.role == role => last.content.extend(blocks),
        _ => messages.push(Message {
            role,
            content: blocks,
        }),
    }
    true
}

/// An assistant message's blocks: thinking, also spelt `reasoning` by OpenRouter and vLLM,
/// then text, then one tool use per `tool_calls` entry. A legacy `function_call` has no id to
/// answer it by, and is dropped.
fn assistant(
    obj: &Object,
    path: &str,
    dropped: &mut Vec<String>,
) -> Result<Vec<ContentBlock>, IngressError> {
    let mut blocks = Vec::new();
    let reasoning = match opt_str(obj, "reasoning_content", path)? {
        Some(text) => Some(text),
        None => get(obj, "reasoning").and_then(Value::as_str),
    };
    if let Some(thinking) = reasoning.filter(|t| !t.is_empty()) {
        blocks.push(ContentBlock::Thinking {
            thinking: thinking.to_owned(),
            signature: String::new(),
        });
    }
    let content_path = member(path, "content");
    blocks.extend(content::blocks(
        get(obj, "content"),
        &content_path,
        Parts::Assistant,
        dropped,
    )?);
    if get(obj, "function_call").is_some() {
        note_dropped(dropped, "function_call");
    }
    let calls_path = member(path, "tool_calls");
    for (j, call) in opt_array(obj, "tool_calls", path)?
        .into_iter()
        .flatten()
        .enumerate()
    {
        blocks.push(tool_use(call, &element(&calls_path, j))?);
    }
    Ok(blocks)
}

/// One `tool_calls` entry as a tool use. `arguments` is the JSON object as a string, or the
/// object itself as some clients send it; empty means `{}`. Gemini's thought signature, as
/// its OpenAI-compatible endpoint sends it, is kept with the call.
fn tool_use(call: &Value, path: &str) -> Result<ContentBlock, IngressError> {
    let obj = as_object(call, path)?;
    let id = req_str(obj, "id", path)?;
    if let Some(kind) = opt_str(obj, "type", path)?.filter(|k| *k != "function") {
        return Err(IngressError::new(
            member(path, "type"),
            format!("must be `function`: a `{kind}` tool call cannot be carried."),
        ));
    }
    let function_path = member(path, "function");
    let function = opt_object(obj, "function", path)?
        .ok_or_else(|| IngressError::new(&function_path, "is required in a tool call."))?;
    let name = req_str(function, "name", &function_path)?;
    let input = arguments(function, &member(&function_path, "arguments"))?;
    let signature = opt_object(obj, "extra_content", path)?
        .and_then(|extra| extra.get("google"))
        .and_then(|google| google.get("thought_signature"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok(ContentBlock::ToolUse {
        id: id.to_owned(),
        name: name.to_owned(),
        input,
        signature,
    })
}

/// A call's `arguments` as a JSON object.
fn arguments(function: &Object, path: &str) -> Result<Value, IngressError> {
    let parsed = match get(function, "arguments") {
        None => return Ok(Value::Object(Object::new())),
        Some(Value::String(raw)) if raw.trim().is_empty() => return Ok(Value::Object(Object::new())),
        Some(Value::String(raw)) => serde_json::from_str::<Value>(raw).map_err(|e| {
            IngressError::new(
                path,
                format!(
                    "is not valid JSON ({e}); send the call's arguments as a JSON object in a string."
                ),
            )
        })?,
        Some(other) => other.clone(),
    };
    match parsed {
        Value::Object(_) => Ok(parsed),
        other => Err(wrong_kind(path, "a JSON object (as a string)", &other)),
    }
}
