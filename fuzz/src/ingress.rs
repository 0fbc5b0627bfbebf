//! The gateway's ingress targets (SPEC R14.1, R14.5): a client's request body parsed in its
//! dialect, then the full path: the internal request built into the provider body of the same
//! dialect's family, and that body parsed again must give the same internal request (system
//! prompt, messages, tools: what the provider is sent).

use switchyard_api::providers::fuzzing::{BodyFamily, provider_body};
use switchyard_api::{ContentBlock, Message, Role};
use switchyard_gateway::ingress::{
    Dialect, GatewayRequest, parse_count_tokens, parse_request, parse_request_at,
};

/// The family whose provider body is a request of `dialect` again.
fn family(dialect: Dialect) -> BodyFamily {
    match dialect {
        Dialect::ChatCompletions => BodyFamily::OpenAiChat,
        Dialect::Responses => BodyFamily::OpenAiResponses,
        Dialect::AnthropicMessages => BodyFamily::Anthropic,
        Dialect::Gemini => BodyFamily::Gemini,
    }
}

/// A Gemini body sent to a streaming URL reads as the body alone does, with the URL's model and
/// stream.
fn check_gemini_url(body: &[u8], alone: Option<&GatewayRequest>) {
    let target = "/v1beta/models/m:streamGenerateContent?alt=sse";
    let at = parse_request_at(Dialect::Gemini, target, body);
    match (at, alone) {
        (Ok(at), Some(alone)) => {
            assert_eq!(
                (at.model.as_str(), at.stream, at.json_array),
                ("m", true, false)
            );
            let unset = GatewayRequest {
                model: String::new(),
                stream: false,
                ..at
            };
            assert_eq!(&unset, alone, "the URL changed the body's reading");
        }
        (Err(_), None) => {}
        (at, alone) => panic!("the URL changed whether the body reads: {at:?} {alone:?}"),
    }
}

/// `body` parsed in `dialect`; when it parses, re-encoded and parsed again (see the module docs).
pub fn check_request(dialect: Dialect, body: &[u8]) {
    if dialect == Dialect::AnthropicMessages {
        let _ = parse_count_tokens(body);
    }
    let parsed = parse_request(dialect, body);
    if dialect == Dialect::Gemini {
        check_gemini_url(body, parsed.as_ref().ok());
    }
    let Ok(request) = parsed else {
        return;
    };
    let again = reencoded(dialect, &request);
    assert_eq!(
        system_as_sent(dialect, &again.system_prompt),
        system_as_sent(dialect, &request.system_prompt),
        "system prompt"
    );
    assert_eq!(
        as_sent(dialect, &again.messages),
        as_sent(dialect, &request.messages),
        "messages"
    );
    assert_eq!(again.tools, request.tools, "tools");
}

/// `messages` as the dialect's provider body carries them, by design: the Responses body puts a
/// user message's tool results (its `function_call_output` items) before its other content; the
/// Anthropic body leaves out thinking without a signature (only Anthropic signs thinking; see
/// `anthropic.rs`'s `wire_messages`) and a message left empty by that (Anthropic joins the
/// turns around it); the Chat body sends no thinking back (`chat_messages.rs`; only DeepSeek's
/// reasoner gets `reasoning_content`, not the fixed `gpt-4o` here), so a message of only
/// thinking is sent empty and read as nothing; it joins a turn's texts (`join_assistant_text`,
/// `join_user_text`, the latter after the tool turns are merged, since results come first). The
/// Gemini body sends no thinking back (`gemini.rs`'s `convert_messages`) and no content left
/// empty by that, and a tool result's response carries no error flag.
fn as_sent(dialect: Dialect, messages: &[Message]) -> Vec<Message> {
    let mut out = messages.to_vec();
    match dialect {
        Dialect::Gemini => {
            for m in &mut out {
                m.content
                    .retain(|b| !matches!(b, ContentBlock::Thinking { .. }));
                for block in &mut m.content {
                    if let ContentBlock::ToolResult { is_error, .. } = block {
                        *is_error = false;
                    }
                }
            }
            out.retain(|m| !m.content.is_empty());
        }
        Dialect::Responses => {
            for m in &mut out {
                m.content
                    .sort_by_key(|b| !matches!(b, ContentBlock::ToolResult { .. }));
            }
        }
        Dialect::AnthropicMessages => {
            for m in &mut out {
                m.content.retain(
                    |b| !matches!(b, ContentBlock::Thinking { signature, .. } if signature.is_empty()),
                );
            }
            out.retain(|m| !m.content.is_empty());
        }
        Dialect::ChatCompletions => {
            for m in &mut out {
                m.content.retain(|b| {
                    !matches!(
                        b,
                        ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. }
                    )
                });
                if m.role == Role::Assistant {
                    join_assistant_text(&mut m.content);
                }
            }
            out.retain(|m| !m.content.is_empty());
            out = merge_tool_turns(out);
            for m in &mut out {
                if m.role == Role::User {
                    join_user_text(&mut m.content);
                }
            }
        }
    }
    out
}

/// A Chat conversation after a message was left out: a user message after a tool turn (a user
/// message of tool results, the only kind that ends in one) joins it, as the Chat parser joins
/// what follows `tool` messages when nothing sendable stands between them.
fn merge_tool_turns(messages: Vec<Message>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    for m in messages {
        match out.last_mut() {
            Some(last)
                if last.role == Role::User
                    && m.role == Role::User
                    && matches!(last.content.last(), Some(ContentBlock::ToolResult { .. })) =>
            {
                last.content.extend(m.content);
            }
            _ => out.push(m),
        }
    }
    out
}

/// The system prompt as the dialect's provider body carries it: the Anthropic body sends no
/// system block for a blank prompt (Anthropic refuses a blank text block; see `anthropic.rs`).
fn system_as_sent(dialect: Dialect, system_prompt: &str) -> &str {
    match dialect {
        Dialect::AnthropicMessages if system_prompt.trim().is_empty() => "",
        _ => system_prompt,
    }
}

/// A Chat user turn as the Chat body sends it (`chat_messages.rs`, the reference's
/// `convertToOpenAiMessages`): tool results first as `tool` messages, then, with no image, its
/// texts joined by a blank line as one string.
fn join_user_text(content: &mut Vec<ContentBlock>) {
    if content.iter().any(|b| matches!(b, ContentBlock::Image { .. })) {
        return;
    }
    let joined = take_texts(content);
    if !joined.is_empty() {
        content.push(ContentBlock::Text { text: joined });
    }
}

/// A Chat assistant turn as the Chat body sends it (`chat_messages.rs`): its texts joined by a
/// blank line as one `content` string before its `tool_calls`, and blank text sent as `""`
/// (read as no text).
fn join_assistant_text(content: &mut Vec<ContentBlock>) {
    let joined = take_texts(content);
    if !joined.trim().is_empty() {
        content.insert(0, ContentBlock::Text { text: joined });
    }
}

/// The text blocks of `content` taken out, joined by a blank line (as the Chat body joins them).
fn take_texts(content: &mut Vec<ContentBlock>) -> String {
    let texts: Vec<&str> = (content.iter())
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let joined = texts.join("\n\n");
    content.retain(|b| !matches!(b, ContentBlock::Text { .. }));
    joined
}

/// `request` as its family's provider body, parsed in `dialect` again.
fn reencoded(dialect: Dialect, request: &GatewayRequest) -> GatewayRequest {
    let body = provider_body(
        family(dialect),
        &request.system_prompt,
        &request.messages,
        &request.tools,
        &request.overrides,
    );
    let body = match body {
        Ok(b) => b,
        Err(e) => panic!("the fixed mode did not resolve: {e}"),
    };
    let bytes = body.to_string().into_bytes();
    match parse_request(dialect, &bytes) {
        Ok(r) => r,
        Err(e) => panic!("the provider body does not parse again: {e:?}\n{body}"),
    }
}
