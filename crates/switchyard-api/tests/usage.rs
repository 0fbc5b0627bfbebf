//! Usage as providers bill it, on the Chat Completions family (issue 11 item 5, SPEC R1.3):
//! each case a stream served by the testkit server, every figure worked out by hand here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::StreamExt;
use switchyard_api::{
    ApiConfiguration, ApiStreamChunk, Message, Mode, RequestOptions, Usage, build_api_handler,
};
use switchyard_testkit::{HttpResponse, MockServer, Reply};

/// The usage chunks `provider` yields for a stream of `events` (each a `data:` JSON line),
/// ended by `[DONE]`; every item must be `Ok`.
async fn usages(provider: &str, model: &str, events: &[&str]) -> Vec<Usage> {
    let mut body = String::new();
    for e in events {
        body.push_str(&format!("data: {e}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    usages_of(provider, model, Reply::new(HttpResponse::sse(&body))).await
}

async fn usages_of(provider: &str, model: &str, reply: Reply) -> Vec<Usage> {
    let server = MockServer::start(vec![reply]).await;
    let text = format!(
        "[act]\nprovider = \"{provider}\"\nmodel = \"{model}\"\n[providers.\"{provider}\"]\nbase_url = \"{}/v1\"\n",
        server.url()
    );
    let config = ApiConfiguration::from_toml(&text, "t.toml", |_| Some("k".into())).unwrap();
    let handler = build_api_handler(&config, Mode::Act).unwrap();
    let items: Vec<_> = handler
        .create_message(
            "s",
            &[Message::user_text("x")],
            &[],
            RequestOptions::default(),
        )
        .collect()
        .await;
    items
        .into_iter()
        .filter_map(|i| match i.unwrap() {
            ApiStreamChunk::Usage(u) => Some(u),
            _ => None,
        })
        .collect()
}

const TEXT: &str = r#"{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}"#;
const STOP: &str = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;

fn usage_event(usage: &str) -> String {
    format!(r#"{{"choices":[],"usage":{usage}}}"#)
}

#[tokio::test]
async fn xai_reasoning_outside_completion_tokens_is_billed() {
    // tests/cases C45: prompt 32 + completion 9 + reasoning 94 = total 135, so the 94 reasoning
    // tokens are not inside the 9: output = 9 + 94 = 103.
    let reply = Reply::new(HttpResponse::case("C45"));
    let u = usages_of("xai", "grok-3-mini", reply).await;
    assert_eq!(u.len(), 1, "{u:?}");
    assert_eq!((u[0].input_tokens, u[0].output_tokens), (32, 103));
    assert_eq!(u[0].thoughts_tokens, Some(94));
    // OpenAI's convention (total = prompt + completion): reasoning is inside completion.
    let inside = usage_event(
        r#"{"prompt_tokens":32,"completion_tokens":103,"total_tokens":135,"completion_tokens_details":{"reasoning_tokens":94}}"#,
    );
    let u = usages("openai-native", "o4-mini", &[TEXT, STOP, &inside]).await;
    assert_eq!((u[0].input_tokens, u[0].output_tokens), (32, 103));
}

#[tokio::test]
async fn running_totals_repeated_in_every_chunk_are_counted_once() {
    // A server (vLLM's continuous usage stats) that sends the running totals with every chunk.
    let first = r#"{"choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":40,"completion_tokens":1}}"#;
    let second = r#"{"choices":[{"index":0,"delta":{"content":"b"}}],"usage":{"prompt_tokens":40,"completion_tokens":2}}"#;
    let last = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":40,"completion_tokens":3}}"#;
    let u = usages("openai", "m", &[first, second, last]).await;
    assert_eq!(u.len(), 1, "one usage chunk, the last totals: {u:?}");
    assert_eq!((u[0].input_tokens, u[0].output_tokens), (40, 3));
    // Summed as SPEC R9.2 sums usage chunks, the request is 40 in, 3 out — not 120 and 6.
}

#[tokio::test]
async fn cache_writes_are_kept_from_openrouter_and_anthropic_style_gateways() {
    // OpenRouter: prompt 1000 = 500 uncached + 200 read + 300 written.
    let openrouter = usage_event(
        r#"{"prompt_tokens":1000,"completion_tokens":50,"prompt_tokens_details":{"cached_tokens":200,"cache_write_tokens":300},"cost":0.0042}"#,
    );
    let u = usages(
        "openrouter",
        "anthropic/claude-sonnet-4.5",
        &[TEXT, STOP, &openrouter],
    )
    .await;
    assert_eq!(
        (
            u[0].input_tokens,
            u[0].cache_read_tokens,
            u[0].cache_write_tokens,
            u[0].output_tokens
        ),
        (500, Some(200), Some(300), 50)
    );
    assert_eq!(u[0].total_cost_usd, Some(0.0042));
    // LiteLLM / Vercel AI Gateway in front of Anthropic: the Anthropic field names.
    let gateway = usage_event(
        r#"{"prompt_tokens":1000,"completion_tokens":50,"cache_creation_input_tokens":300,"cache_read_input_tokens":200}"#,
    );
    for provider in ["litellm", "vercel-ai-gateway"] {
        let u = usages(
            provider,
            "anthropic/claude-sonnet-5",
            &[TEXT, STOP, &gateway],
        )
        .await;
        assert_eq!(
            (
                u[0].input_tokens,
                u[0].cache_read_tokens,
                u[0].cache_write_tokens
            ),
            (500, Some(200), Some(300)),
            "{provider}"
        );
    }
}

#[tokio::test]
async fn the_upstream_cost_of_a_bring_your_own_key_request_is_added_once() {
    // (usage fields, the cost billed in USD)
    let cases = [
        // BYOK: OpenRouter's fee plus what the user's own key was charged.
        (
            r#""cost":0.0005,"is_byok":true,"cost_details":{"upstream_inference_cost":0.01}"#,
            0.0105,
        ),
        // Billed through OpenRouter: `cost` already holds the upstream cost.
        (
            r#""cost":0.012,"is_byok":false,"cost_details":{"upstream_inference_cost":0.01}"#,
            0.012,
        ),
        // No is_byok: `cost` is what the gateway billed, as the reference reads it.
        (
            r#""cost":0.0005,"cost_details":{"upstream_inference_cost":0.01}"#,
            0.0005,
        ),
        // A BYOK request the gateway charged no fee for: the upstream cost alone.
        (
            r#""cost":0,"is_byok":true,"cost_details":{"upstream_inference_cost":0.036}"#,
            0.036,
        ),
        (
            r#""cost":0,"cost_details":{"upstream_inference_cost":0.036}"#,
            0.036,
        ),
        (
            r#""cost":0.012,"cost_details":{"upstream_inference_cost":0.012}"#,
            0.012,
        ),
        (
            r#""cost":0.012,"cost_details":{"upstream_inference_cost":null}"#,
            0.012,
        ),
    ];
    for (fields, want) in cases {
        let event = usage_event(&format!(
            r#"{{"prompt_tokens":10,"completion_tokens":5,{fields}}}"#
        ));
        let u = usages("openrouter", "openai/gpt-4o", &[TEXT, STOP, &event]).await;
        let got = u[0].total_cost_usd.unwrap();
        assert!((got - want).abs() < 1e-15, "{fields}: {got} vs {want}");
    }
}

#[tokio::test]
async fn negative_and_inconsistent_counts_clamp_at_zero() {
    let event = usage_event(r#"{"prompt_tokens":-5,"completion_tokens":-1}"#);
    let u = usages("openai", "m", &[TEXT, STOP, &event]).await;
    assert_eq!((u[0].input_tokens, u[0].output_tokens), (0, 0));
    // More cached than prompted: no negative (wrapped) input.
    let event = usage_event(
        r#"{"prompt_tokens":100,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":150}}"#,
    );
    let u = usages("openai", "m", &[TEXT, STOP, &event]).await;
    assert_eq!(u[0].input_tokens, 0);
    assert_eq!(u[0].cache_read_tokens, Some(150));
}

#[tokio::test]
async fn deepseek_misses_are_cache_writes_as_the_reference_prices_them() {
    let event = usage_event(
        r#"{"prompt_tokens":1100,"completion_tokens":58,"prompt_cache_hit_tokens":1024,"prompt_cache_miss_tokens":76}"#,
    );
    let u = usages("deepseek", "deepseek-chat", &[TEXT, STOP, &event]).await;
    assert_eq!(
        (
            u[0].input_tokens,
            u[0].cache_read_tokens,
            u[0].cache_write_tokens
        ),
        (0, Some(1024), Some(76))
    );
}

/// The Cline reference vector `openrouter_text_reasoning_details_cost`: an OpenRouter stream of
/// reasoning with `reasoning_details`, text, then usage whose `cost_details` holds an
/// `upstream_inference_cost` above `cost` with no `is_byok`. The reference (v4.0.12 `ai-sdk.ts`
/// `normalizeUsage`) bills `cost`, 0.002; Switchyard added the upstream cost too, 0.0143, as if
/// the request were BYOK (issue 46). SPEC R9.2: the upstream cost counts for a BYOK request.
#[tokio::test]
async fn openrouter_text_reasoning_details_cost() {
    let reasoning = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"Let me think","reasoning_details":[{"type":"reasoning.text","text":"Let me think","format":"anthropic-claude-v1","index":0}]},"finish_reason":null}]}"#;
    let signed = r#"{"choices":[{"index":0,"delta":{"content":"","reasoning_details":[{"type":"reasoning.text","signature":"c2ln","format":"anthropic-claude-v1","index":0}]},"finish_reason":null}]}"#;
    let text =
        r#"{"choices":[{"index":0,"delta":{"content":"The answer is 4."},"finish_reason":null}]}"#;
    let usage = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"cost":0.002,"cost_details":{"upstream_inference_cost":0.0123}}}"#;
    let u = usages(
        "openrouter",
        "anthropic/claude-sonnet-4.5",
        &[reasoning, signed, text, usage],
    )
    .await;
    assert_eq!(u.len(), 1, "{u:?}");
    let cost = u[0].total_cost_usd.unwrap();
    assert!((cost - 0.002).abs() < 1e-15, "{cost}");
    // Marked BYOK, the same usage costs OpenRouter's fee and the upstream cost.
    let byok = usage.replace(r#""cost":0.002,"#, r#""cost":0.002,"is_byok":true,"#);
    let u = usages(
        "openrouter",
        "anthropic/claude-sonnet-4.5",
        &[reasoning, signed, text, &byok],
    )
    .await;
    assert!(
        (u[0].total_cost_usd.unwrap() - 0.0143).abs() < 1e-12,
        "{u:?}"
    );
}
