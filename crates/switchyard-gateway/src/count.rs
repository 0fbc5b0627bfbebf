//! `POST /v1/messages/count_tokens` (SPEC R14.1): how many input tokens an Anthropic Messages
//! request would be, as Switchyard estimates them — the task layer's own estimate
//! (`switchyard_core::context`, R8.2: the route's model's tokenizer where one is known, OpenAI's
//! `o200k_base`/`cl100k_base`, else 4 bytes per token, each image 1,000 tokens) plus the tools
//! offered, counted the same way. No provider is asked: the route's handlers have no
//! count-tokens request, and a provider of another family has no such endpoint; the answer
//! says it is an estimate (`x-switchyard-usage: estimated`).

use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::json;
use switchyard_core::context::{Tokenizer, estimate_message_tokens_with};

use crate::ingress::{GatewayRequest, parse_count_tokens};
use crate::refusal::Refusal;
use crate::reply::{Body, json, set_header};
use crate::request::Router;

/// Answers `request` with `{"input_tokens": N}` for its route's model. Its refusals are
/// Anthropic's, named by the path; `/metrics` does not count them.
pub(crate) async fn answer(
    router: &Router,
    request: Request<Incoming>,
    body_limit: usize,
) -> Result<Response<Body>, Refusal> {
    let body = crate::body::read(request, body_limit).await?;
    let request = parse_count_tokens(&body).map_err(Refusal::invalid)?;
    let chain = router.chain(&request.model).map_err(|e| e.refusal())?;
    let model = chain
        .first()
        .map_or(request.model.as_str(), |e| &e.model_id);
    let tokens = input_tokens(&request, model);
    let mut response = json(200, &json!({"input_tokens": tokens}));
    set_header(&mut response, "x-switchyard-usage", "estimated");
    Ok(response)
}

/// The estimated input tokens of `request` for the model `model_id` (the route's first
/// entry's): system prompt and messages as [`estimate_message_tokens_with`] counts them, and
/// each tool's name, description and input schema (compact JSON) with the same tokenizer.
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
