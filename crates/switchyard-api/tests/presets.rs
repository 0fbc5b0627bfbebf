//! Every provider id of the presets (SPEC R4.2) reaches the mock server with only its key
//! variable and the default model: the family's path, the key in the family's header, the
//! default model on the wire, and a recorded stream decoded to its text. Bedrock, Vertex and
//! the providers with their own wire or sign-in have their own files (tests/bedrock.rs,
//! tests/vertex.rs, tests/own_providers.rs, tests/claude_code.rs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::StreamExt;
use switchyard_api::model::Catalogue;
use switchyard_api::providers::presets::{PRESETS, WireFamily};
use switchyard_api::{
    ApiConfiguration, ApiStreamChunk, Message, Mode, RequestOptions, build_api_handler,
};
use switchyard_testkit::{HttpResponse, MockServer, Reply, fixture_text};

const KEY: &str = "sk-preset-test-key-0123456789";

/// True when the catalogue says `model` of `provider` goes through OpenAI's Responses API.
fn responses_by_default(provider: &str, model: &str) -> bool {
    Catalogue::builtin()
        .table(provider, None)
        .and_then(|t| t.get(model))
        .is_some_and(|e| e.info.uses_responses_api())
}

#[tokio::test]
async fn every_preset_streams_with_its_key_and_default_model() {
    let mut tested = Vec::new();
    for preset in PRESETS {
        // (fixture, base URL suffix, request path, key header, expected key header value)
        let (fixture, suffix, path, header, value) = match preset.family {
            WireFamily::Anthropic => (
                "anthropic_text",
                "",
                "/v1/messages",
                "x-api-key",
                KEY.to_owned(),
            ),
            // A default model of the Responses format (openai-native's) streams Responses.
            WireFamily::OpenAiChat if responses_by_default(preset.id, preset.default_model) => (
                "openai_responses",
                "/v1",
                "/v1/responses",
                "authorization",
                format!("Bearer {KEY}"),
            ),
            WireFamily::OpenAiChat => (
                "openai_chat_text",
                "/v1",
                "/v1/chat/completions",
                "authorization",
                format!("Bearer {KEY}"),
            ),
            WireFamily::Ollama => (
                "ollama_chat",
                "",
                "/api/chat",
                "authorization",
                format!("Bearer {KEY}"),
            ),
            WireFamily::Gemini => ("gemini_stream", "", "", "x-goog-api-key", KEY.to_owned()),
            // Their own files: tests/bedrock.rs, tests/vertex.rs, tests/own_providers.rs
            // (AIhubmix, AskSage, Dify, SAP AI Core, the signed-in CLIs' providers), and the
            // ids that are one clear sentence.
            WireFamily::Bedrock
            | WireFamily::Vertex
            | WireFamily::Aihubmix
            | WireFamily::AskSage
            | WireFamily::Dify
            | WireFamily::SapAiCore
            | WireFamily::QwenCode
            | WireFamily::OpenAiCodex
            | WireFamily::ClaudeCode
            | WireFamily::Unavailable(_) => continue,
            WireFamily::NotYetSupported(f) => panic!("{}: {f} is not built", preset.id),
        };
        let server = MockServer::start(vec![Reply::new(HttpResponse::fixture(fixture))]).await;
        let text = format!(
            "[act]\nprovider = \"{}\"\n[providers.\"{}\"]\nbase_url = \"{}{suffix}\"\n",
            preset.id,
            preset.id,
            server.url()
        );
        let vars = preset.api_key_env;
        let config = ApiConfiguration::from_toml(&text, "t.toml", |k| {
            vars.first().filter(|v| **v == k).map(|_| KEY.to_owned())
        })
        .unwrap();
        let handler =
            build_api_handler(&config, Mode::Act).unwrap_or_else(|e| panic!("{}: {e}", preset.id));
        assert_eq!(handler.provider_id(), preset.id);
        assert_eq!(
            handler.get_model().id,
            preset.default_model,
            "{}",
            preset.id
        );
        let items: Vec<_> = handler
            .create_message(
                "s",
                &[Message::user_text("hi")],
                &[],
                RequestOptions::default(),
            )
            .collect()
            .await;
        assert!(items.iter().all(Result::is_ok), "{}: {items:?}", preset.id);
        let got: String = items
            .iter()
            .filter_map(|i| match i {
                Ok(ApiStreamChunk::Text { text, .. }) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(got, fixture_text(fixture), "{}", preset.id);
        let req = &server.requests()[0];
        if preset.family == WireFamily::Gemini {
            assert_eq!(
                req.path,
                format!(
                    "/v1beta/models/{}:streamGenerateContent?alt=sse",
                    preset.default_model
                ),
                "{}",
                preset.id
            );
        } else {
            assert_eq!(req.path, path, "{}", preset.id);
            assert_eq!(req.json()["model"], preset.default_model, "{}", preset.id);
        }
        assert_eq!(req.header(header), Some(value.as_str()), "{}", preset.id);
        tested.push(preset.id);
    }
    let plain = PRESETS
        .iter()
        .filter(|p| {
            matches!(
                p.family,
                WireFamily::Anthropic
                    | WireFamily::OpenAiChat
                    | WireFamily::Ollama
                    | WireFamily::Gemini
            )
        })
        .count();
    assert_eq!(tested.len(), plain, "{tested:?}");
    assert!(plain >= 30, "{tested:?}");
}
