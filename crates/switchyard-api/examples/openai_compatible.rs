//! An OpenAI-compatible endpoint of your own (vLLM, llama.cpp, LiteLLM, a gateway), configured
//! in code instead of a TOML file: base URL, the variable holding its key, extra headers, what
//! is known of the model (context window, output limit, prices), timeouts; then one request
//! offering a tool, with the tool call (if the model makes one) assembled from its fragments.
//!
//! ```sh
//! scripts/local-model.sh start
//! cargo run -p switchyard-api --example openai_compatible
//! # another endpoint: its URL, model, and the variable its key is in
//! MY_LLM_KEY=… SWITCHYARD_EXAMPLE_BASE_URL=https://llm.example.com/v1 \
//!   SWITCHYARD_EXAMPLE_MODEL=my-model cargo run -p switchyard-api --example openai_compatible
//! ```

use std::collections::BTreeMap;

use futures_util::StreamExt;
use switchyard_api::{
    ApiConfiguration, ApiStreamChunk, Message, Mode, ModeSettings, ProviderEndpoint,
    RequestOptions, ToolCallAccumulator, ToolSpec, build_api_handler,
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base_url = std::env::var("SWITCHYARD_EXAMPLE_BASE_URL")
        .unwrap_or_else(|_| "http://127.0.0.1:8089/v1".to_owned());
    let model = std::env::var("SWITCHYARD_EXAMPLE_MODEL")
        .unwrap_or_else(|_| "smollm2-135m-instruct".to_owned());

    // What the endpoint's model is known to be; prices in USD per million tokens.
    let mut model_info = toml::Table::new();
    model_info.insert("context_window".into(), 8192.into());
    model_info.insert("max_tokens".into(), 512.into());
    model_info.insert("input_price".into(), 0.0.into());
    model_info.insert("output_price".into(), 0.0.into());

    let mut config = ApiConfiguration {
        act: ModeSettings {
            provider: Some("openai".into()),
            model_id: Some(model),
            model_info: Some(model_info),
            ..ModeSettings::default()
        },
        ..ApiConfiguration::default()
    };
    config.providers.endpoints.insert(
        "openai".into(),
        ProviderEndpoint {
            base_url: Some(base_url),
            // The key is read from this variable (not needed for a server on this machine).
            api_key_env: Some("MY_LLM_KEY".into()),
            headers: BTreeMap::from([("X-Team".into(), "examples".into())]),
            connect_timeout_seconds: Some(5),
            first_content_timeout_seconds: Some(60),
            ..ProviderEndpoint::default()
        },
    );
    // Keys are read from the environment once, into values that never print.
    config.read_keys(|var| std::env::var(var).ok());

    let handler = build_api_handler(&config, Mode::Act)?;
    let model = handler.get_model();
    eprintln!(
        "{} at a {}-token context window",
        model.id, model.info.context_window
    );

    let weather = ToolSpec {
        name: "get_weather".into(),
        description: "The current weather in a city.".into(),
        input_schema: serde_json::json!({
            "type": "object",
            "properties": { "city": { "type": "string" } },
            "required": ["city"],
        }),
    };
    let mut stream = handler.create_message(
        "You can look up the weather with get_weather.",
        &[Message::user_text("What is the weather in Lisbon?")],
        &[weather],
        RequestOptions::default(),
    );
    let mut calls = ToolCallAccumulator::default();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        calls.push_chunk(&chunk);
        match chunk {
            ApiStreamChunk::Text { text, .. } => print!("{text}"),
            ApiStreamChunk::Reasoning { reasoning, .. } => eprint!("{reasoning}"),
            ApiStreamChunk::ToolCalls { .. } => {}
            ApiStreamChunk::Usage(usage) => eprintln!(
                "\n[{} input tokens, {} output tokens]",
                usage.input_tokens, usage.output_tokens
            ),
            ApiStreamChunk::Finish { reason } => eprintln!("\n[cut: {reason:?}]"),
            // Only a forwarded request's stream (a gateway's) carries the provider's events.
            ApiStreamChunk::Wire(_) => {}
        }
    }
    println!();
    for call in calls.finish() {
        println!("tool call {}: {}({})", call.id, call.name, call.arguments);
    }
    Ok(())
}
