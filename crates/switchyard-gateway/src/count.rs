//! `POST /v1/messages/count_tokens` and Gemini's `countTokens`: a request's input tokens as the
//! task layer estimates them, tools included. No provider is asked, since the route's
//! handlers have no such request, and the answer says it is an estimate.
//! Spec: R14.1, R14.12, R8.2.

use hyper::body::Incoming;
use hyper::{Request, Response};
use switchyard_core::context::{Tokenizer, estimate_message_tokens_with};

use crate::body::BodyLimits;
use crate::ingress::{Dialect, GatewayRequest};
use crate::refusal::Refusal;
use crate::reply::{Body, json, set_header};
use crate::request::Router;

/// Answers `request` in `dialect` with the tokens of its route's model. Its refusals are the
/// dialect's; `/metrics` does not count them.
pub(crate) async fn answer(
    router: &Router,
    dialect: Dialect,
    request: Request<Incoming>,
    limits: BodyLimits,
) -> Result<Response<Body>, Refusal> {
    let rules = dialect.rules();
    let target = crate::body::target(&request);
    let body = crate::body::read(request, limits).await?;
    crate::ingress::shape(&body).map_err(Refusal::invalid)?;
    let request = rules
        .parse_count(&target, &body)
        .map_err(Refusal::invalid)?;
    let chain = router.chain(&request.model).map_err(|e| e.refusal())?;
    let model = chain
        .first()
        .map_or(request.model.as_str(), |e| &e.model_id);
    let tokens = input_tokens(&request, model);
    let mut response = json(200, &rules.count_body(tokens));
    set_header(&mut response, "x-switchyard-usage", "estimated");
    Ok(response)
}

/// The estimated input tokens of `request` for the route's first model: system prompt,
/// messages and each tool's name, description and schema, with that model's tokenizer where
/// one is known.
pub(crate) fn input_tokens(request: &GatewayRequest, model_id: &str) -> u64 {
    let tokenizer = Tokenizer::for_model(model_id);
    let messages =
        estimate_message_tokens_with(tokenizer, &request.system_prompt, &request.messages);
    let tools: u64 = (request.tools.iter())
        .map(|tool| {
            let text = format!("{}{}{}", tool.name, tool.description, tool.input_schema);
            tokenizer.count(&text)
        })
        .sum();
    messages.saturating_add(tools)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingress::parse_count_tokens;

    #[test]
    fn a_request_is_counted_by_the_layers_estimate_and_its_tools_too() {
        let body = br#"{"model": "m", "system": "abcdefgh",
                        "messages": [{"role": "user", "content": "12345678"}]}"#;
        let request = parse_count_tokens(body).unwrap();
        // 16 bytes at 4 bytes per token (no tokenizer known for a Claude model).
        assert_eq!(input_tokens(&request, "claude-sonnet-4-5"), 4);
        let with_tool = br#"{"model": "m", "system": "abcdefgh",
                        "messages": [{"role": "user", "content": "12345678"}],
                        "tools": [{"name": "edit", "description": "Edit",
                                   "input_schema": {"type": "object"}}]}"#;
        let request = parse_count_tokens(with_tool).unwrap();
        // + "editEdit{\"type\":\"object\"}" = 25 bytes → 7 tokens.
        assert_eq!(input_tokens(&request, "claude-sonnet-4-5"), 4 + 7);
    }
}
