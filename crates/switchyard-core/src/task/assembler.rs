//! Assembling the assistant's message from streamed chunks, block by block.
//! Spec: R9.1, R9.3.

use switchyard_api::{ApiStreamChunk, ContentBlock, Message, Role, ToolCall, ToolCallAccumulator};

/// Builds one assistant `Message` from the chunks of a stream.
#[derive(Debug, Default)]
pub struct MessageAssembler {
    blocks: Vec<ContentBlock>,
    thinking_open: bool,
    tools: ToolCallAccumulator,
    tool_slots: Vec<(String, usize)>,
}

impl MessageAssembler {
    /// Adds one chunk; a signature closes the thinking block it follows, so each keeps its own.
    pub fn push(&mut self, chunk: &ApiStreamChunk) {
        match chunk {
            ApiStreamChunk::Text { text, .. } => {
                self.thinking_open = false;
                if text.is_empty() {
                    return;
                }
                if let Some(ContentBlock::Text { text: last }) = self.blocks.last_mut() {
                    last.push_str(text);
                } else {
                    self.blocks.push(ContentBlock::Text { text: text.clone() });
                }
            }
            ApiStreamChunk::Reasoning {
                reasoning,
                signature,
                redacted_data,
                ..
            } => {
                if let Some(data) = redacted_data {
                    self.thinking_open = false;
                    self.blocks
                        .push(ContentBlock::RedactedThinking { data: data.clone() });
                }
                if !reasoning.is_empty() {
                    match (self.thinking_open, self.blocks.last_mut()) {
                        (true, Some(ContentBlock::Thinking { thinking, .. })) => {
                            thinking.push_str(reasoning);
                        }
                        _ => {
                            self.blocks.push(ContentBlock::Thinking {
                                thinking: reasoning.clone(),
                                signature: String::new(),
                            });
                            self.thinking_open = true;
                        }
                    }
                }
                if let Some(sig) = signature.as_ref().filter(|s| !s.is_empty()) {
                    match (self.thinking_open, self.blocks.last_mut()) {
                        (true, Some(ContentBlock::Thinking { signature, .. })) => {
                            signature.push_str(sig);
                        }
                        _ => self.blocks.push(ContentBlock::Thinking {
                            thinking: String::new(),
                            signature: sig.clone(),
                        }),
                    }
                    self.thinking_open = false;
                }
            }
            ApiStreamChunk::ToolCalls {
                call_id,
                id,
                name,
                arguments_delta,
                signature,
            } => {
                self.thinking_open = false;
                if !self.tool_slots.iter().any(|(slot_id, _)| slot_id == id) {
                    self.tool_slots.push((id.clone(), self.blocks.len()));
                    // A placeholder, filled in by `finish` once the arguments are complete.
                    self.blocks.push(ContentBlock::ToolUse {
                        id: id.clone(),
                        name: name.clone(),
                        input: serde_json::Value::Null,
                        signature: None,
                    });
                }
                self.tools.push(
                    call_id.as_deref(),
                    id,
                    name,
                    arguments_delta,
                    signature.as_deref(),
                );
            }
            ApiStreamChunk::Usage(_) | ApiStreamChunk::Finish { .. } | ApiStreamChunk::Wire(_) => {}
        }
    }

    /// The message of a stream cut part-way, without calls or thinking blocks left incomplete.
    pub fn finish_partial(self) -> Message {
        let (mut message, calls) = self.finish();
        message.content.retain(|block| match block {
            ContentBlock::ToolUse { id, .. } => calls.iter().any(|c| c.id == *id),
            ContentBlock::Thinking { signature, .. } => !signature.is_empty(),
            _ => true,
        });
        message
    }

    /// The message and the calls it hands over; a rejected call stays with `{}` as its input,
    /// so the provider accepts the replayed turn.
    pub fn finish(self) -> (Message, Vec<ToolCall>) {
        let (message, calls, _) = self.finish_checked();
        (message, calls)
    }

    /// `finish`, with the rejected calls and why each was rejected.
    pub fn finish_checked(mut self) -> (Message, Vec<ToolCall>, Vec<(ToolCall, String)>) {
        let mut valid = Vec::new();
        let mut rejected = Vec::new();
        for mut call in std::mem::take(&mut self.tools).finish() {
            let input = match call.arguments_object() {
                Ok(map) => Ok(serde_json::Value::Object(map)),
                Err(why) => Err(why),
            };
            if let Some(ContentBlock::ToolUse {
                input: slot,
                signature,
                ..
            }) = self
                .tool_slots
                .iter()
                .find(|(id, _)| *id == call.id)
                .and_then(|(_, at)| self.blocks.get_mut(*at))
            {
                *slot = input.clone().unwrap_or_else(|_| serde_json::json!({}));
                signature.clone_from(&call.signature);
            }
            match input {
                Ok(_) => valid.push(call),
                Err(why) => {
                    call.signature = None;
                    rejected.push((call, why));
                }
            }
        }
        (
            Message {
                role: Role::Assistant,
                content: self.blocks,
            },
            valid,
            rejected,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reasoning(text: &str, signature: Option<&str>) -> ApiStreamChunk {
        ApiStreamChunk::Reasoning {
            reasoning: text.into(),
            details: None,
            signature: signature.map(Into::into),
            redacted_data: None,
            id: None,
        }
    }

    #[test]
    fn two_thinking_blocks_keep_their_own_signatures_in_order() {
        let mut a = MessageAssembler::default();
        a.push(&reasoning("I should read", None));
        a.push(&reasoning(" the file first.", None));
        a.push(&reasoning("", Some("SIG0")));
        a.push(&ApiStreamChunk::tool_call("t1", "read_file", ""));
        a.push(&ApiStreamChunk::tool_call(
            "t1",
            "read_file",
            "{\"path\":\"src/main.rs\"}",
        ));
        a.push(&ApiStreamChunk::Reasoning {
            reasoning: String::new(),
            details: None,
            signature: None,
            redacted_data: Some("REDACTED".into()),
            id: None,
        });
        a.push(&reasoning("Then summarise.", None));
        a.push(&reasoning("", Some("SIG3")));
        a.push(&ApiStreamChunk::text("Done"));
        a.push(&ApiStreamChunk::text("."));
        let (message, calls) = a.finish();
        assert_eq!(
            message.content,
            vec![
                ContentBlock::Thinking {
                    thinking: "I should read the file first.".into(),
                    signature: "SIG0".into()
                },
                ContentBlock::ToolUse {
                    id: "t1".into(),
                    name: "read_file".into(),
                    input: serde_json::json!({"path": "src/main.rs"}),
                    signature: None,
                },
                ContentBlock::RedactedThinking {
                    data: "REDACTED".into()
                },
                ContentBlock::Thinking {
                    thinking: "Then summarise.".into(),
                    signature: "SIG3".into()
                },
                ContentBlock::Text {
                    text: "Done.".into()
                },
            ]
        );
        assert_eq!(calls.len(), 1);
    }

    #[test]
    fn empty_arguments_become_an_empty_object_and_bad_json_is_rejected() {
        let mut a = MessageAssembler::default();
        for (id, args) in [
            ("a", ""),
            ("b", "{\"cut"),
            ("c", "{\"x\":1}{\"y\":2}"),
            ("d", "[1]"),
        ] {
            a.push(&ApiStreamChunk::tool_call(id, "n", args));
        }
        let (message, calls, rejected) = a.finish_checked();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].arguments, "{}");
        let rejected: Vec<(&str, &str)> = rejected
            .iter()
            .map(|(c, why)| (c.id.as_str(), why.as_str()))
            .collect();
        assert_eq!(rejected.len(), 3, "{rejected:?}");
        assert!(rejected[0].1.starts_with("not valid JSON"), "{rejected:?}");
        assert!(rejected[1].1.starts_with("not valid JSON"), "{rejected:?}");
        assert_eq!(rejected[2].1, "a JSON array instead of an object");
        // Every call keeps its place in the message, the rejected ones with `{}` as input.
        for block in &message.content {
            let ContentBlock::ToolUse { input, .. } = block else {
                panic!("{block:?}")
            };
            assert!(input.is_object(), "{input}");
        }
        assert_eq!(message.content.len(), 4);
    }

    #[test]
    fn a_signature_stays_with_its_call() {
        let mut a = MessageAssembler::default();
        a.push(&ApiStreamChunk::ToolCalls {
            call_id: None,
            id: "g1".into(),
            name: "read".into(),
            arguments_delta: "{}".into(),
            signature: Some("SIG".into()),
        });
        a.push(&ApiStreamChunk::tool_call("g2", "read", "{}"));
        let (message, calls) = a.finish();
        assert_eq!(calls[0].signature.as_deref(), Some("SIG"));
        assert_eq!(calls[1].signature, None);
        assert!(matches!(
            &message.content[0],
            ContentBlock::ToolUse { signature: Some(s), .. } if s == "SIG"
        ));
    }
}
