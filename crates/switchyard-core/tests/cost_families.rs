//! Cost per SPEC R9.2 for each wire family's usage normalisation: every fixture with usage is
//! replayed through its provider, the usage chunks summed and priced by the product (its
//! catalogue's prices), and the result compared with the reference's rule applied to the raw
//! wire numbers recorded in the fixture's `.expected.json`, **at the prices of the reference's
//! own table** (`tests/reference/cline-v4.0.10-models.json`, read here), so a wrong price in a
//! model table fails this test (issue 18):
//!
//! - Anthropic rule (Anthropic, Bedrock, Vertex Claude, MiniMax): the wire's `input_tokens`
//!   is already uncached: `in·p_in + out·p_out + cw·p_cw + cr·p_cr`.
//! - OpenAI rule (Chat Completions, Responses, DeepSeek, OpenRouter without its own cost, the
//!   OpenAI-compatible presets): the wire's prompt tokens include cache hits:
//!   `max(0, in − cw − cr)·p_in + out·p_out + cw·p_cw + cr·p_cr`.
//! - DeepSeek: the reference's table prices input at $0 and the cache misses (`prompt − hits`
//!   when the wire gives no miss count) at the cache-write price: `(in − cr)·p_cw +
//!   out·p_out + cr·p_cr`.
//! - Gemini (Gemini, Vertex Gemini): `promptTokenCount` includes `cachedContentTokenCount`,
//!   and thoughts are billed as output: `(prompt − cached)·p_in + cached·p_cr +
//!   (candidates + thoughts)·p_out`.
//!
//! Prices in USD per million tokens; tiers apply by prompt size, after sorting.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::StreamExt;
use serde_json::Value;
use switchyard_api::{
    ApiConfiguration, ApiStreamChunk, Message, Mode, RequestOptions, build_api_handler,
};
use switchyard_core::cost::UsageTotals;
use switchyard_testkit::{HttpResponse, MockServer, Reply, test_data_dir};

#[derive(Clone, Copy, Debug)]
enum Rule {
    Anthropic,
    OpenAi,
    DeepSeek,
    Gemini,
}

/// The reference's entry for `model` in its table `table`, as JSON.
fn reference_entry(table: &str, model: &str) -> Value {
    let text = std::fs::read_to_string(test_data_dir().join("reference/cline-v4.0.10-models.json"))
        .unwrap();
    let all: Value = serde_json::from_str(&text).unwrap();
    all["tables"][table]["models"][model].clone()
}

/// The reference's prices for a prompt of `prompt` tokens: `(in, out, cache writes, cache
/// reads)`, from the tier the prompt fits in (tiers sorted by `contextWindow`, `Infinity` last).
fn prices(entry: &Value, prompt: u64) -> (f64, f64, f64, f64) {
    let price = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64);
    let bound = |t: &Value| match &t["contextWindow"] {
        Value::String(s) if s == "Infinity" => f64::INFINITY,
        v => v.as_f64().unwrap(),
    };
    let mut tiers: Vec<&Value> = entry
        .get("tiers")
        .and_then(Value::as_array)
        .map(|t| t.iter().collect())
        .unwrap_or_default();
    tiers.sort_by(|a, b| bound(a).total_cmp(&bound(b)));
    let tier = tiers
        .iter()
        .find(|t| prompt as f64 <= bound(t))
        .or(tiers.last());
    let pick = |k: &str| {
        tier.and_then(|t| price(t, k))
            .or_else(|| price(entry, k))
            .unwrap_or(0.0)
    };
    (
        pick("inputPrice"),
        pick("outputPrice"),
        pick("cacheWritesPrice"),
        pick("cacheReadsPrice"),
    )
}

/// The reference's cost of the raw usage recorded in a fixture's expected chunks.
fn reference_cost(rule: Rule, entry: &Value, raw: &Value) -> f64 {
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
            let (pi, po, pw, pr) = prices(entry, input + cw + cr);
            m(input, pi) + m(output, po) + m(cw, pw) + m(cr, pr)
        }
        Rule::OpenAi => {
            let (pi, po, pw, pr) = prices(entry, input);
            m(input.saturating_sub(cw + cr), pi) + m(output, po) + m(cw, pw) + m(cr, pr)
        }
        Rule::DeepSeek => {
            let (_, po, pw, pr) = prices(entry, input);
            m(input.saturating_sub(cr), pw) + m(output, po) + m(cr, pr)
        }
        Rule::Gemini => {
            let (pi, po, _, pr) = prices(entry, input);
            m(input - cr, pi) + m(cr, pr) + m(output + thoughts, po)
        }
    }
}

#[tokio::test]
async fn every_familys_cost_matches_the_reference_rule_on_raw_usage() {
    // (fixture, provider, model, base URL suffix, rule, the reference table of the model)
    let cases: &[(&str, &str, &str, &str, Rule, &str)] = &[
        (
            "anthropic_text",
            "anthropic",
            "claude-sonnet-4-5-20250929",
            "",
            Rule::Anthropic,
            "anthropicModels",
        ),
        (
            "anthropic_thinking",
            "anthropic",
            "claude-sonnet-4-5-20250929",
            "",
            Rule::Anthropic,
            "anthropicModels",
        ),
        (
            "anthropic_tool_use",
            "anthropic",
            "claude-sonnet-4-5-20250929",
            "",
            Rule::Anthropic,
            "anthropicModels",
        ),
        (
            "bedrock_converse_stream",
            "bedrock",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
            "",
            Rule::Anthropic,
            "bedrockModels",
        ),
        (
            "openai_chat_text",
            "openai-native",
            "o4-mini",
            "/v1",
            Rule::OpenAi,
            "openAiNativeModels",
        ),
        (
            "openai_chat_tool_calls",
            "openai-native",
            "gpt-4.1",
            "/v1",
            Rule::OpenAi,
            "openAiNativeModels",
        ),
        (
            "openai_responses",
            "openai-native",
            "gpt-5.4",
            "/v1",
            Rule::OpenAi,
            "openAiNativeModels",
        ),
        (
            "deepseek_reasoner",
            "deepseek",
            "deepseek-reasoner",
            "/v1",
            Rule::DeepSeek,
            "deepSeekModels",
        ),
        (
            "gemini_stream",
            "gemini",
            "gemini-2.5-flash",
            "",
            Rule::Gemini,
            "geminiModels",
        ),
    ];
    for &(fixture, provider, model, prefix, rule, table) in cases {
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
        let entry = reference_entry(table, model);
        assert!(entry.is_object(), "{fixture}: {model} is not in {table}");
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
        let want = reference_cost(rule, &entry, raw[0]);
        let got = totals.cost_usd(&info, 0).unwrap();
        assert!(want > 0.0, "{fixture}");
        assert!(
            (got - want).abs() < 1e-12,
            "{fixture} ({rule:?}): {got} vs reference {want}"
        );
    }
}
