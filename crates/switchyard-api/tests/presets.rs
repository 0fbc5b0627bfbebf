//! Every provider id of the presets (SPEC R4.2) reaches the mock server with only its key
//! variable and the default model: the family's path, the key in the family's header, the
//! default model on the wire, and a recorded stream decoded to its text. Bedrock and Vertex
//! have their own files (tests/bedrock.rs, tests/vertex.rs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::StreamExt;
use serde_json::Value;
use switchyard_api::model::Catalogue;
use switchyard_api::providers::presets::{PRESETS, WireFamily};
use switchyard_api::{
    ApiConfiguration, ApiStreamChunk, Message, Mode, RequestOptions, build_api_handler,
};
use switchyard_testkit::{HttpResponse, MockServer, Reply, test_data_dir};

const KEY: &str = "sk-preset-test-key-0123456789";

fn fixture_text(name: &str) -> String {
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(test_data_dir().join(format!("fixtures/{name}.expected.json")))
            .unwrap(),
    )
    .unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "text")
        .map(|c| c["text"].as_str().unwrap())
        .collect()
}

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
            WireFamily::Bedrock | WireFamily::Vertex => continue,
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
    assert_eq!(tested.len(), PRESETS.len() - 2, "{tested:?}");
}
