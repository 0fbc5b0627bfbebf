//! The gateway's ingress targets (SPEC R14.1, R14.5): a client's request body parsed in its
//! dialect, then the full path: the internal request built into the provider body of the same
//! dialect's family, and that body parsed again must give the same internal request (system
//! prompt, messages, tools: what the provider is sent).

use switchyard_api::providers::fuzzing::{BodyFamily, provider_body};
use switchyard_gateway::ingress::{Dialect, GatewayRequest, parse_count_tokens, parse_request};

/// The family whose provider body is a request of `dialect` again.
fn family(dialect: Dialect) -> BodyFamily {
    match dialect {
        Dialect::ChatCompletions => BodyFamily::OpenAiChat,
        Dialect::Responses => BodyFamily::OpenAiResponses,
        Dialect::AnthropicMessages => BodyFamily::Anthropic,
    }
}

/// `body` parsed in `dialect`; when it parses, re-encoded and parsed again (see the module docs).
pub fn check_request(dialect: Dialect, body: &[u8]) {
    if dialect == Dialect::AnthropicMessages {
        let _ = parse_count_tokens(body);
    }
    let Ok(request) = parse_request(dialect, body) else {
        return;
    };
    let again = reencoded(dialect, &request);
    assert_eq!(again.system_prompt, request.system_prompt, "system prompt");
    assert_eq!(
        tool_results_first(dialect, &again.messages),
        tool_results_first(dialect, &request.messages),
        "messages"
    );
    assert_eq!(again.tools, request.tools, "tools");
}

/// `messages` as the Responses body orders them: a user message's tool results (its
/// `function_call_output` items) before its other content; other dialects as they are.
fn tool_results_first(
    dialect: Dialect,
    messages: &[switchyard_api::Message],
) -> Vec<switchyard_api::Message> {
    let mut out = messages.to_vec();
    if dialect == Dialect::Responses {
        for m in &mut out {
            m.content
                .sort_by_key(|b| !matches!(b, switchyard_api::ContentBlock::ToolResult { .. }));
        }
    }
    out
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
