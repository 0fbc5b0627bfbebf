//! Cost per SPEC R9.2 for each wire family's usage normalisation: every fixture with usage is
//! replayed through its provider, the usage chunks summed and priced from the model table, and
//! the result compared with the reference's rule applied to the raw wire numbers recorded in
//! the fixture's `.expected.json`:
//!
//! - Anthropic rule (Anthropic, Bedrock, Vertex Claude, MiniMax): the wire's `input_tokens`
//!   is already uncached: `in·p_in + out·p_out + cw·p_cw + cr·p_cr`.
//! - OpenAI rule (Chat Completions, Responses, DeepSeek, OpenRouter without its own cost, the
//!   OpenAI-compatible presets): the wire's prompt tokens include cache hits:
//!   `max(0, in − cw − cr)·p_in + out·p_out + cw·p_cw + cr·p_cr`.
//! - Gemini (Gemini, Vertex Gemini): `promptTokenCount` includes `cachedContentTokenCount`,
//!   and thoughts are billed as output: `(prompt − cached)·p_in + cached·p_cr +
//!   (candidates + thoughts)·p_out`.
//!
//! Prices are the model tables' (USD per million tokens); tiers apply by prompt size.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::StreamExt;
use serde_json::Value;
use switchyard_api::model::ModelInfo;
use switchyard_api::{
    ApiConfiguration, ApiStreamChunk, Message, Mode, RequestOptions, build_api_handler,
};
use switchyard_core::cost::UsageTotals;
use switchyard_testkit::{HttpResponse, MockServer, Reply, test_data_dir};

#[derive(Clone, Copy, Debug)]
enum Rule {
    Anthropic,
    OpenAi,
    Gemini,
}

/// The tier's prices for a prompt of `prompt` tokens (SPEC R9.2).
fn prices(info: &ModelInfo, prompt: u64) -> (f64, f64, f64, f64) {
    let tier = info
        .tiers
        .iter()
        .find(|t| prompt <= t.context_window)
        .or(info.tiers.last());
    let pick = |t: Option<f64>, base: f64| t.unwrap_or(base);
    match tier {
        Some(t) => (
            pick(t.input_price, info.input_price),
            pick(t.output_price, info.output_price),
            pick(t.cache_writes_price, info.cache_writes_price),
            pick(t.cache_reads_price, info.cache_reads_price),
        ),
        None => (
            info.input_price,
            info.output_price,
            info.cache_writes_price,
            info.cache_reads_price,
        ),
    }
}

/// The reference's cost of the raw usage recorded in a fixture's expected chunks.
fn reference_cost(rule: Rule, info: &ModelInfo, raw: &Value) -> f64 {
    let n = |k: &str| raw.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (input, output, cw, cr, thoughts) = (
        n("input_tokens"),
        n("output_tokens"),
        n("cache_write_tokens"),
        n("cache_read_tokens"),
        n("reasoning_tokens"),
    );
    let m = |tokens: u64, price: f64| tokens as f64 * price / 1e6;
    match rule {
        Rule::Anthropic => {
            let (pi, po, pw, pr) = prices(info, input + cw + cr);
            m(input, pi) + m(output, po) + m(cw, pw) + m(cr, pr)
        }
        Rule::OpenAi => {
            let (pi, po, pw, pr) = prices(info, input);
            m(input.saturating_sub(cw + cr), pi) + m(output, po) + m(cw, pw) + m(cr, pr)
        }
        Rule::Gemini => {
            let (pi, po, _, pr) = prices(info, input);
            m(input - cr, pi) + m(cr, pr) + m(output + thoughts, po)
        }
    }
}

#[tokio::test]
async fn every_familys_cost_matches_the_reference_rule_on_raw_usage() {
    let cases: &[(&str, &str, &str, &str, Rule)] = &[
        (
            "anthropic_text",
            "anthropic",
            "claude-sonnet-4-5-20250929",
            "",
            Rule::Anthropic,
        ),
        (
            "anthropic_thinking",
            "anthropic",
            "claude-sonnet-4-5-20250929",
            "",
            Rule::Anthropic,
        ),
        (
            "anthropic_tool_use",
            "anthropic",
            "claude-sonnet-4-5-20250929",
            "",
            Rule::Anthropic,
        ),
        (
            "bedrock_converse_stream",
            "bedrock",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
            "",
            Rule::Anthropic,
        ),
        (
            "openai_chat_text",
            "openai-native",
            "o4-mini",
            "/v1",
            Rule::OpenAi,
        ),
        (
            "openai_chat_tool_calls",
            "openai-native",
            "gpt-4.1",
            "/v1",
            Rule::OpenAi,
        ),
        (
            "openai_responses",
            "openai-native",
            "gpt-5",
            "/v1",
            Rule::OpenAi,
        ),
        (
            "deepseek_reasoner",
            "deepseek",
            "deepseek-reasoner",
            "/v1",
            Rule::OpenAi,
        ),
        (
            "gemini_stream",
            "gemini",
            "gemini-2.5-flash",
            "",
            Rule::Gemini,
        ),
    ];
    for &(fixture, provider, model, prefix, rule) in cases {
        let server = MockServer::start(vec![Reply::new(HttpResponse::fixture(fixture))]).await;
        let region = if provider == "bedrock" {
            "region = \"us-east-1\"\n"
        } else {
            ""
        };
        let text = format!(
            "[act]\nprovider = \"{provider}\"\nmodel = \"{model}\"\n[providers.\"{provider}\"]\nbase_url = \"{}{prefix}\"\n{region}",
            server.url()
        );
        let config =
            ApiConfiguration::from_toml(&text, "t.toml", |_| Some("k".to_owned())).unwrap();
        let handler = build_api_handler(&config, Mode::Act).unwrap();
        let info = handler.get_model().info;
        assert!(info.input_price > 0.0, "{fixture}: {model} has no prices");
        let mut totals = UsageTotals::default();
        let items: Vec<_> = handler
            .create_message(
                "s",
                &[Message::user_text("x")],
                &[],
                RequestOptions::default(),
            )
            .collect()
            .await;
        for item in &items {
            if let Ok(ApiStreamChunk::Usage(u)) = item {
                totals.add(u);
            }
        }
        assert!(totals.reported, "{fixture}: no usage");
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(
                test_data_dir().join(format!("fixtures/{fixture}.expected.json")),
            )
            .unwrap(),
        )
        .unwrap();
        let raw: Vec<&Value> = expected
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["type"] == "usage")
            .collect();
        assert_eq!(raw.len(), 1, "{fixture}");
        let want = reference_cost(rule, &info, raw[0]);
        let got = totals.cost_usd(&info);
        assert!(want > 0.0, "{fixture}");
        assert!(
            (got - want).abs() < 1e-12,
            "{fixture} ({rule:?}): {got} vs reference {want}"
        );
    }
}
