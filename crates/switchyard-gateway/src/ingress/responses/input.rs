//! OpenAI Responses `input` items read into Anthropic-shaped messages. Consecutive items of
//! one role merge into one message, since that shape alternates roles; system and developer
//! messages go to the system prompt.
//! Spec: R14.1.

use serde_json::Value;
use switchyard_api::{ContentBlock, Message, Role};

use crate::ingress::content::{Inline, inline_image, not_an_image};
use crate::ingress::fields::{Object, get, item_str, note_dropped};
use crate::ingress::request::IngressError;

/// The type of the input items that declare tools, read with the request's tools.
pub(super) const ADDITIONAL_TOOLS: &str = "additional_tools";

/// The parameter of a custom tool's function form that holds its raw text input.
pub(super) const CUSTOM_INPUT: &str = "input";

/// The name a provider is offered for the tool `name` of the group `namespace`, usually
/// `NAMESPACE__NAME`; an MCP server's `mcp__server__tool` is kept as it is.
pub(super) fn qualified(namespace: &str, name: &str) -> String {
    if name == namespace || name.starts_with(&format!("{namespace}__")) {
        name.to_owned()
    } else if namespace.ends_with("__") {
        format!("{namespace}{name}")
    } else {
        format!("{namespace}__{name}")
    }
}

#[derive(Default)]
pub(super) struct Input {
    pub(super) messages: Vec<Message>,
}

impl Input {
    /// Appends `block` to the last message when it has `role`, else starts a message.
    pub(super) fn push(&mut self, role: Role, block: ContentBlock) {
        match self.messages.last_mut() {
            Some(last) if last.role == role => last.content.push(block),
            _ => self.messages.push(Message {
                role,
                content: vec![block],
            }),
        }
    }

    /// One input item at `field`. Item types the gateway cannot carry are dropped by type.
    pub(super) fn item(
        &mut self,
        item: &Value,
        field: &str,
        system: &mut Vec<String>,
        dropped: &mut Vec<String>,
    ) -> Result<(), IngressError> {
        let Value::Object(o) = item else {
            return Err(IngressError::new(field, "an input item must be an object"));
        };
        let kind = match o.get("type").and_then(Value::as_str) {
            Some(kind) => kind,
            None if o.contains_key("role") => "message",
            None => {
                return Err(IngressError::new(
                    format!("{field}.type"),
                    "an input item needs a `type` (or a `role` for a message)",
                ));
            }
        };
        match kind {
            "message" => self.message(o, field, system),
            "function_call" => self.function_call(o, field),
            "custom_tool_call" => self.custom_call(o, field),
            "function_call_output" | "custom_tool_call_output" => {
                self.function_output(o, field, dropped)
            }
            "reasoning" => {
                self.reasoning(o);
                Ok(())
            }
            // Its tools are read with the request's.
            ADDITIONAL_TOOLS => Ok(()),
            other => {
                note_dropped(dropped, &format!("input[type={other}]"));
                Ok(())
            }
        }
    }

    fn message(
        &mut self,
        o: &Object,
        field: &str,
        system: &mut Vec<String>,
    ) -> Result<(), IngressError> {
        let role = match o.get("role").and_then(Value::as_str) {
            Some("user") => Some(Role::User),
            Some("assistant") => Some(Role::Assistant),
            Some("system" | "developer") => None,
            _ => {
                return Err(IngressError::new(
                    format!("{field}.role"),
                    "a message's `role` must be user, assistant, system or developer",
                ));
            }
        };
        let blocks = content_blocks(get(o, "content"), &format!("{field}.content"))?;
        match role {
            Some(role) => blocks.into_iter().for_each(|b| self.push(role, b)),
            None => {
                let mut texts = Vec::with_capacity(blocks.len());
                for block in blocks {
                    let ContentBlock::Text { text } = block else {
                        return Err(IngressError::new(
                            format!("{field}.content"),
                            "a system or developer message holds text only; send images in a user message",
                        ));
                    };
                    texts.push(text);
                }
                system.push(texts.join("\n\n"));
            }
        }
        Ok(())
    }

    /// A `function_call` item as the assistant's tool use, named as the provider was offered it.
    fn function_call(&mut self, o: &Object, field: &str) -> Result<(), IngressError> {
        let call_id = item_str(o, "call_id", field)?;
        let name = call_name(o, field)?;
        let input = match get(o, "arguments") {
            None => Value::Object(Object::new()),
            Some(Value::String(s)) if s.trim().is_empty() => Value::Object(Object::new()),
            Some(Value::String(s)) => serde_json::from_str(s).map_err(|e| {
                IngressError::new(format!("{field}.arguments"), format!("the call's `arguments` are not valid JSON ({e}); send the JSON text the model produced"))
            })?,
            Some(_) => return Err(IngressError::new(format!("{field}.arguments"), "`arguments` must be a JSON string")),
        };
        self.push(
            Role::Assistant,
            ContentBlock::ToolUse {
                id: call_id.to_owned(),
                name,
                input,
                signature: None,
            },
        );
        Ok(())
    }

    /// A `custom_tool_call` item as a tool use of the custom tool's function form.
    fn custom_call(&mut self, o: &Object, field: &str) -> Result<(), IngressError> {
        let call_id = item_str(o, "call_id", field)?;
        let name = call_name(o, field)?;
        let text = match get(o, "input") {
            None => "",
            Some(Value::String(s)) => s.as_str(),
            Some(_) => {
                return Err(IngressError::new(
                    format!("{field}.input"),
                    "a custom tool call's `input` must be a string",
                ));
            }
        };
        self.push(
            Role::Assistant,
            ContentBlock::ToolUse {
                id: call_id.to_owned(),
                name,
                input: serde_json::json!({ CUSTOM_INPUT: text }),
                signature: None,
            },
        );
        Ok(())
    }

    /// A call output item as the user's tool result. A tool result is text in Switchyard's
    /// messages: the parts' texts are joined and images dropped.
    fn function_output(
        &mut self,
        o: &Object,
        field: &str,
        dropped: &mut Vec<String>,
    ) -> Result<(), IngressError> {
        let call_id = item_str(o, "call_id", field)?;
        let content = match get(o, "output") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => {
                let mut texts = Vec::new();
                for part in parts {
                    match part.get("text").and_then(Value::as_str) {
                        Some(t) => texts.push(t),
                        None => {
                            note_dropped(dropped, "function_call_output.output[type=input_image]")
                        }
                    }
                }
                texts.join("\n")
            }
            None => String::new(),
            Some(_) => {
                return Err(IngressError::new(
                    format!("{field}.output"),
                    "`output` must be a string or a list of content parts",
                ));
            }
        };
        self.push(
            Role::User,
            ContentBlock::ToolResult {
                tool_use_id: call_id.to_owned(),
                content,
                is_error: false,
            },
        );
        Ok(())
    }

    /// A `reasoning` item as thinking signed by its `encrypted_content`; with no text, that
    /// alone is redacted thinking.
    fn reasoning(&mut self, o: &Object) {
        let texts = |key: &str| -> String {
            let parts = o.get(key).and_then(Value::as_array).into_iter().flatten();
            let texts: Vec<&str> = parts
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            texts.join("\n\n")
        };
        let mut text = texts("summary");
        if text.is_empty() {
            text = texts("content");
        }
        let encrypted = o
            .get("encrypted_content")
            .and_then(Value::as_str)
            .filter(|e| !e.is_empty());
        let block = match (text.is_empty(), encrypted) {
            (true, None) => return,
            (true, Some(data)) => ContentBlock::RedactedThinking {
                data: data.to_owned(),
            },
            (false, signature) => ContentBlock::Thinking {
                thinking: text,
                signature: signature.unwrap_or_default().to_owned(),
            },
        };
        self.push(Role::Assistant, block);
    }
}

/// The tool name of a call item as the provider was offered it: Codex CLI sends a member's
/// call as `{name, namespace}`.
fn call_name(o: &Object, field: &str) -> Result<String, IngressError> {
    let name = item_str(o, "name", field)?;
    Ok(match get(o, "namespace").and_then(Value::as_str) {
        Some(namespace) if !namespace.is_empty() => qualified(namespace, name),
        _ => name.to_owned(),
    })
}

fn content_blocks(v: Option<&Value>, field: &str) -> Result<Vec<ContentBlock>, IngressError> {
    match v {
        Some(Value::String(text)) => Ok(vec![ContentBlock::Text { text: text.clone() }]),
        Some(Value::Array(parts)) => {
            let mut blocks = Vec::with_capacity(parts.len());
            for (j, part) in parts.iter().enumerate() {
                blocks.push(content_part(part, &format!("{field}[{j}]"))?);
            }
            Ok(blocks)
        }
        None => Ok(Vec::new()),
        Some(_) => Err(IngressError::new(
            field,
            "`content` must be a string or a list of content parts",
        )),
    }
}

/// One content part: text, or an `input_image` with a `data:` URL. Switchyard's messages hold
/// base64 images only, so an image by URL is a 400 rather than an answer that never saw it.
fn content_part(part: &Value, field: &str) -> Result<ContentBlock, IngressError> {
    let kind = part
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("input_text");
    let text_key = if kind == "refusal" { "refusal" } else { "text" };
    match kind {
        "input_text" | "output_text" | "text" | "refusal" => {
            let text = part.get(text_key).and_then(Value::as_str).ok_or_else(|| {
                IngressError::new(
                    format!("{field}.{text_key}"),
                    format!("an `{kind}` part needs its `{text_key}` string"),
                )
            })?;
            Ok(ContentBlock::Text {
                text: text.to_owned(),
            })
        }
        "input_image" => {
            let url = part
                .get("image_url")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let path = format!("{field}.image_url");
            match inline_image(url) {
                Inline::Image(source) => Ok(ContentBlock::Image { source }),
                Inline::NotImage(media_type) => Err(not_an_image(&path, &media_type)),
                Inline::Other => Err(IngressError::new(
                    path,
                    "only images sent inline are carried: send `image_url` as a base64 `data:image/…;base64,…` URL",
                )),
            }
        }
        other => Err(IngressError::new(
            format!("{field}.type"),
            format!(
                "content parts of type `{other}` cannot be carried; send input_text or input_image parts"
            ),
        )),
    }
}
