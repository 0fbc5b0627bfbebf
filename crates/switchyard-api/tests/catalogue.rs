//! The built-in model catalogue against the reference's own tables (issue 18): the JSON in
//! `tests/reference/cline-v4.0.10-models.json` is read here, field by field, independently of
//! `scripts/gen-models.py` and of the loader, so a wrong price, limit or default in a model
//! table fails this test (SPEC R2.5).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Map, Value};
use switchyard_api::model::{Catalogue, EntrySource, ModelInfo, ModelTable};
use switchyard_api::providers::WireFamily;
use switchyard_api::providers::presets::preset;
use switchyard_testkit::test_data_dir;

fn reference() -> Value {
    let text = std::fs::read_to_string(test_data_dir().join("reference/cline-v4.0.10-models.json"))
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The region of the reference's per-region tables (the handlers' `qwenApiLine` /
/// `zaiApiLine`), `None` for the others.
fn region_of(table: &str) -> Option<&'static str> {
    match table {
        "internationalQwenModels" | "internationalZAiModels" => Some("international"),
        "mainlandQwenModels" | "mainlandZAiModels" => Some("china"),
        _ => None,
    }
}

/// The reference's ApiFormat enum names and the `api_format` spellings of the catalogue.
fn api_format_name(enum_name: &str) -> &'static str {
    match enum_name {
        "ANTHROPIC_CHAT" => "anthropic",
        "GEMINI_CHAT" => "gemini",
        "OPENAI_CHAT" => "openai_chat",
        "R1_CHAT" => "r1",
        "OPENAI_RESPONSES" => "responses",
        "OPENAI_RESPONSES_WEBSOCKET_MODE" => "responses_websocket",
        other => panic!("an ApiFormat this test does not know: {other}"),
    }
}

fn price(v: &Value, key: &str) -> Option<f64> {
    v.get(key).map(|p| p.as_f64().unwrap())
}

fn flag(v: &Value, key: &str, absent: bool) -> bool {
    v.get(key).map_or(absent, |b| b.as_bool().unwrap())
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).map(|s| s.as_str().unwrap().to_owned())
}

/// A tier bound: a number of tokens, or the reference's `Infinity` (no upper bound).
fn bound(v: &Value) -> u64 {
    match v {
        Value::String(s) if s == "Infinity" => u64::MAX,
        v => v.as_u64().unwrap(),
    }
}

/// Asserts that `info` says what the reference's `entry` says, every field of it.
fn assert_same(entry: &Map<String, Value>, info: &ModelInfo, api_formats: &Value, at: &str) {
    const KNOWN: &[&str] = &[
        "name",
        "maxTokens",
        "contextWindow",
        "supportsImages",
        "supportsPromptCache",
        "supportsReasoning",
        "supportsReasoningEffort",
        "supportsStreaming",
        "supportsTools",
        "supportsGlobalEndpoint",
        "systemRole",
        "inputPrice",
        "outputPrice",
        "cacheWritesPrice",
        "cacheReadsPrice",
        "temperature",
        "apiFormat",
        "description",
        "thinkingConfig",
        "tiers",
    ];
    for key in entry.keys() {
        assert!(
            KNOWN.contains(&key.as_str()),
            "{at}: `{key}` is a field this test does not check"
        );
    }
    let e = Value::Object(entry.clone());
    // -1 (or absent): no limit set by the reference; the catalogue's 0 means unknown.
    let max = e.get("maxTokens").and_then(Value::as_i64).unwrap_or(-1);
    assert_eq!(
        info.max_tokens,
        u64::try_from(max).unwrap_or(0),
        "{at}: max_tokens"
    );
    assert_eq!(
        Some(info.context_window),
        e["contextWindow"].as_u64(),
        "{at}: context"
    );
    assert_eq!(
        info.supports_images,
        flag(&e, "supportsImages", false),
        "{at}"
    );
    assert_eq!(
        info.supports_prompt_cache,
        flag(&e, "supportsPromptCache", false),
        "{at}"
    );
    assert_eq!(
        info.supports_reasoning,
        flag(&e, "supportsReasoning", false),
        "{at}"
    );
    assert_eq!(
        info.supports_reasoning_effort,
        flag(&e, "supportsReasoningEffort", false),
        "{at}"
    );
    assert_eq!(
        info.supports_streaming,
        flag(&e, "supportsStreaming", true),
        "{at}"
    );
    assert_eq!(info.supports_tools, flag(&e, "supportsTools", true), "{at}");
    assert_eq!(
        info.supports_global_endpoint,
        flag(&e, "supportsGlobalEndpoint", false),
        "{at}"
    );
    assert_eq!(info.name, text(&e, "name"), "{at}: name");
    assert_eq!(
        info.system_role,
        text(&e, "systemRole"),
        "{at}: system role"
    );
    assert_eq!(
        info.description,
        text(&e, "description"),
        "{at}: description"
    );
    assert_eq!(
        info.input_price,
        price(&e, "inputPrice"),
        "{at}: input price"
    );
    assert_eq!(
        info.output_price,
        price(&e, "outputPrice"),
        "{at}: output price"
    );
    assert_eq!(
        info.cache_writes_price,
        price(&e, "cacheWritesPrice"),
        "{at}: cache writes"
    );
    assert_eq!(
        info.cache_reads_price,
        price(&e, "cacheReadsPrice"),
        "{at}: cache reads"
    );
    assert_eq!(
        info.temperature,
        price(&e, "temperature"),
        "{at}: temperature"
    );
    let format = e.get("apiFormat").map(|n| {
        let name = api_formats[n.as_i64().unwrap().to_string()]
            .as_str()
            .unwrap();
        api_format_name(name).to_owned()
    });
    assert_eq!(info.api_format, format, "{at}: api_format");
    match (e.get("thinkingConfig"), &info.thinking_config) {
        (None, None) => {}
        (Some(t), Some(ours)) => {
            for key in t.as_object().unwrap().keys() {
                assert!(
                    [
                        "maxBudget",
                        "outputPrice",
                        "geminiThinkingLevel",
                        "supportsThinkingLevel"
                    ]
                    .contains(&key.as_str()),
                    "{at}: thinkingConfig.{key} is not checked"
                );
            }
            assert_eq!(
                ours.max_budget,
                t.get("maxBudget").map(|b| b.as_u64().unwrap()),
                "{at}"
            );
            assert_eq!(
                ours.output_price,
                price(t, "outputPrice"),
                "{at}: thinking price"
            );
            assert_eq!(
                ours.gemini_thinking_level,
                text(t, "geminiThinkingLevel"),
                "{at}"
            );
            assert_eq!(
                ours.supports_thinking_level,
                flag(t, "supportsThinkingLevel", false)
            );
        }
        (t, ours) => panic!("{at}: thinking config {t:?} vs {ours:?}"),
    }
    let tiers: &[Value] = e
        .get("tiers")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    assert_eq!(info.tiers.len(), tiers.len(), "{at}: tiers");
    for (ours, t) in info.tiers.iter().zip(tiers) {
        assert_eq!(
            ours.context_window,
            bound(&t["contextWindow"]),
            "{at}: tier bound"
        );
        assert_eq!(ours.input_price, price(t, "inputPrice"), "{at}: tier input");
        assert_eq!(
            ours.output_price,
            price(t, "outputPrice"),
            "{at}: tier output"
        );
        assert_eq!(
            ours.cache_writes_price,
            price(t, "cacheWritesPrice"),
            "{at}: tier cw"
        );
        assert_eq!(
            ours.cache_reads_price,
            price(t, "cacheReadsPrice"),
            "{at}: tier cr"
        );
    }
}

fn table<'a>(catalogue: &'a Catalogue, provider: &str, region: Option<&str>) -> &'a ModelTable {
    let t = catalogue
        .table(provider, region)
        .unwrap_or_else(|| panic!("no table for {provider} {region:?}"));
    assert_eq!(t.region.as_deref(), region, "{provider}");
    t
}

#[test]
fn every_reference_model_is_in_the_catalogue_with_every_field_and_the_default() {
    let reference = reference();
    let api_formats = &reference["enums"]["ApiFormat"];
    let catalogue = Catalogue::builtin();
    let mut compared = 0;
    for (name, t) in reference["tables"].as_object().unwrap() {
        let providers = t["provider_ids"].as_array().unwrap();
        if providers.is_empty() {
            // vertexGlobalModels: derived from vertexModels, read by no handler.
            assert_eq!(name, "vertexGlobalModels");
            continue;
        }
        for provider in providers {
            let provider = provider.as_str().unwrap();
            let ours = table(catalogue, provider, region_of(name));
            assert_eq!(
                ours.default.as_deref(),
                t["default_model"].as_str(),
                "{name}"
            );
            for (id, entry) in t["models"].as_object().unwrap() {
                let at = format!("{name} {id} ({provider})");
                let got = ours.get(id).unwrap_or_else(|| panic!("{at} is missing"));
                assert_eq!(
                    got.source,
                    EntrySource::Reference {
                        table: name.clone()
                    },
                    "{at}"
                );
                assert_same(entry.as_object().unwrap(), &got.info, api_formats, &at);
                compared += 1;
            }
        }
    }
    assert_eq!(
        compared, 494,
        "the reference's tables hold 494 models with a provider"
    );
}

#[test]
fn gateways_fall_back_to_the_references_default_model_and_info() {
    let reference = reference();
    let api_formats = &reference["enums"]["ApiFormat"];
    let exports = &reference["other_exports"];
    let infos = &reference["default_model_infos"];
    for (provider, id_const, info_const) in [
        (
            "openrouter",
            "openRouterDefaultModelId",
            "openRouterDefaultModelInfo",
        ),
        (
            "vercel-ai-gateway",
            "openRouterDefaultModelId",
            "openRouterDefaultModelInfo",
        ),
        (
            "requesty",
            "requestyDefaultModelId",
            "requestyDefaultModelInfo",
        ),
    ] {
        let default = exports[id_const].as_str().unwrap();
        let ours = table(Catalogue::builtin(), provider, None);
        assert_eq!(ours.default.as_deref(), Some(default), "{provider}");
        let entry = ours.get(default).unwrap();
        assert_same(
            infos[info_const].as_object().unwrap(),
            &entry.info,
            api_formats,
            provider,
        );
    }
}

#[test]
fn each_providers_default_is_the_references() {
    let reference = reference();
    let exports = &reference["other_exports"];
    let mut defaults: Vec<(String, String)> = Vec::new();
    for (name, t) in reference["tables"].as_object().unwrap() {
        // A provider's default is its default region's (international, see providers/endpoint.rs).
        if region_of(name) == Some("china") {
            continue;
        }
        for p in t["provider_ids"].as_array().unwrap() {
            defaults.push((
                p.as_str().unwrap().to_owned(),
                t["default_model"].as_str().unwrap().to_owned(),
            ));
        }
    }
    for (p, c) in [
        ("openrouter", "openRouterDefaultModelId"),
        ("vercel-ai-gateway", "openRouterDefaultModelId"),
        ("requesty", "requestyDefaultModelId"),
        ("litellm", "liteLlmDefaultModelId"),
    ] {
        defaults.push((p.to_owned(), exports[c].as_str().unwrap().to_owned()));
    }
    let mut checked = 0;
    for (provider, default) in &defaults {
        // Provider ids this build has no preset for, or that cannot work from a terminal
        // (`cline-pass`: one clear sentence, no model), are listed, not used.
        let Some(preset) = preset(provider) else {
            continue;
        };
        if matches!(preset.family, WireFamily::Unavailable(_)) {
            continue;
        }
        assert_eq!(preset.default_model, default, "{provider}");
        checked += 1;
    }
    assert!(checked >= 27, "{checked}");
}

#[test]
fn a_wrong_price_in_a_table_is_caught() {
    // The comparison above is what catches it: a changed price makes assert_same fail.
    let reference = reference();
    let api_formats = &reference["enums"]["ApiFormat"];
    let entry = reference["tables"]["anthropicModels"]["models"]["claude-sonnet-5"]
        .as_object()
        .unwrap()
        .clone();
    let mut info = table(Catalogue::builtin(), "anthropic", None)
        .get("claude-sonnet-5")
        .unwrap()
        .info
        .clone();
    assert_same(&entry, &info, api_formats, "as built");
    info.output_price = info.output_price.map(|p| p + 0.01);
    let wrong = std::panic::catch_unwind(|| assert_same(&entry, &info, api_formats, "changed"));
    assert!(wrong.is_err());
}
