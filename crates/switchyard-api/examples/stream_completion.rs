//! Streams one completion and prints it as it arrives, then the token usage.
//!
//! ```sh
//! scripts/local-model.sh start          # a local OpenAI-compatible server on 127.0.0.1:8089
//! cargo run -p switchyard-api --example stream_completion -- "Why is the sky blue?"
//! ```
//!
//! With a configuration file instead (the `switchyard` command's format, keys from the
//! environment): `SWITCHYARD_CONFIG=~/.config/switchyard/config.toml cargo run … --example
//! stream_completion -- "…"`. Without one, the local server of `scripts/local-model.sh`
//! (`SWITCHYARD_EXAMPLE_BASE_URL`, default `http://127.0.0.1:8089/v1`).

use std::io::Write;

use futures_util::StreamExt;
use switchyard_api::{
    ApiConfiguration, ApiStreamChunk, Message, Mode, RequestOptions, build_api_handler,
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let prompt = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "Say hello in five words.".to_owned());
    let env = |var: &str| std::env::var(var).ok();
    let config = match std::env::var_os("SWITCHYARD_CONFIG") {
        Some(path) => ApiConfiguration::load(path.as_ref(), env)?,
        None => {
            let base_url = std::env::var("SWITCHYARD_EXAMPLE_BASE_URL")
                .unwrap_or_else(|_| "http://127.0.0.1:8089/v1".to_owned());
            let toml = format!(
                "[act]\nprovider = \"openai\"\nmodel = \"smollm2-135m-instruct\"\n\
                 [providers.openai]\nbase_url = \"{base_url}\"\n"
            );
            ApiConfiguration::from_toml(&toml, "example", env)?
        }
    };
    let handler = build_api_handler(&config, Mode::Act)?;
    eprintln!("{} / {}", handler.provider_id(), handler.get_model().id);

    let mut stream = handler.create_message(
        "You are a helpful assistant. Answer briefly.",
        &[Message::user_text(prompt)],
        &[],
        RequestOptions::default(),
    );
    let mut stdout = std::io::stdout();
    while let Some(chunk) = stream.next().await {
        match chunk? {
            ApiStreamChunk::Text { text, .. } => {
                stdout.write_all(text.as_bytes())?;
                stdout.flush()?;
            }
            ApiStreamChunk::Reasoning { reasoning, .. } => eprint!("{reasoning}"),
            ApiStreamChunk::Usage(usage) => eprintln!(
                "\n[{} input tokens, {} output tokens]",
                usage.input_tokens, usage.output_tokens
            ),
            ApiStreamChunk::Finish { reason } => eprintln!("\n[cut: {reason:?}]"),
            // Only a forwarded request's stream (a gateway's) carries the provider's events.
            ApiStreamChunk::Wire(_) => {}
            ApiStreamChunk::ToolCalls { .. } => {}
        }
    }
    println!();
    Ok(())
}
