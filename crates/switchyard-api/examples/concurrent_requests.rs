//! Many concurrent requests on one handler, each with its own options: its cancellation token,
//! its retry observer, its extra headers, its deadlines. One is cancelled once its first text
//! arrives; the others run to the end, undisturbed.
//!
//! ```sh
//! scripts/local-model.sh start
//! cargo run -p switchyard-api --example concurrent_requests -- 8
//! ```
//!
//! The endpoint is `SWITCHYARD_EXAMPLE_BASE_URL` (default the local server,
//! `http://127.0.0.1:8089/v1`) with model `SWITCHYARD_EXAMPLE_MODEL`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use switchyard_api::{
    ApiConfiguration, ApiHandler, ApiStreamChunk, CancellationToken, Deadlines, ErrorKind, Message,
    Mode, RequestOptions, RetryStatus, build_api_handler,
};

/// How one request ended.
struct Outcome {
    index: usize,
    chars: usize,
    first_text: Option<Duration>,
    total: Duration,
    result: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let count: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(8)
        .max(1);
    let base_url = std::env::var("SWITCHYARD_EXAMPLE_BASE_URL")
        .unwrap_or_else(|_| "http://127.0.0.1:8089/v1".to_owned());
    let model = std::env::var("SWITCHYARD_EXAMPLE_MODEL")
        .unwrap_or_else(|_| "smollm2-135m-instruct".to_owned());
    let toml = format!(
        "[act]\nprovider = \"openai\"\nmodel = \"{model}\"\n[act.model_info]\nmax_tokens = 64\n\
         [providers.openai]\nbase_url = \"{base_url}\"\n"
    );
    let config = ApiConfiguration::from_toml(&toml, "example", |v| std::env::var(v).ok())?;
    // One handler for every request: it holds configuration only.
    let handler: Arc<dyn ApiHandler> = Arc::from(build_api_handler(&config, Mode::Act)?);

    let cancelled_one = count - 1;
    let tasks: Vec<_> = (0..count)
        .map(|index| {
            let handler = Arc::clone(&handler);
            tokio::spawn(async move {
                let cancel = CancellationToken::new();
                let options = RequestOptions {
                    cancel: cancel.clone(),
                    // Reports reach this request's observer only.
                    on_retry: Some(Arc::new(move |s: RetryStatus| {
                        eprintln!(
                            "request {index}: attempt {}/{} failed ({}), retrying in {:.1} s",
                            s.attempt,
                            s.max_attempts,
                            s.error.kind,
                            s.delay.as_secs_f64()
                        );
                    })),
                    headers: vec![("x-request-index".into(), index.to_string())],
                    deadlines: Deadlines {
                        first_content: Some(Duration::from_secs(60)),
                        idle: Some(Duration::from_secs(30)),
                    },
                    ..RequestOptions::default()
                };
                let prompt = format!("Count from {index} to {} in words.", index + 5);
                let started = Instant::now();
                let mut stream = handler.create_message(
                    "Be brief.",
                    &[Message::user_text(prompt)],
                    &[],
                    options,
                );
                let mut chars = 0;
                let mut first_text = None;
                let mut result = "completed".to_owned();
                while let Some(item) = stream.next().await {
                    match item {
                        Ok(ApiStreamChunk::Text { text, .. }) => {
                            first_text.get_or_insert_with(|| started.elapsed());
                            chars += text.chars().count();
                            if index == cancelled_one {
                                // Ends this request only; its connection is closed.
                                cancel.cancel();
                            }
                        }
                        Ok(_) => {}
                        Err(e) if e.kind == ErrorKind::Cancelled => result = "cancelled".into(),
                        Err(e) => result = format!("failed: {e}"),
                    }
                }
                Outcome {
                    index,
                    chars,
                    first_text,
                    total: started.elapsed(),
                    result,
                }
            })
        })
        .collect();

    for task in tasks {
        let o = task.await?;
        println!(
            "request {:>3}: {:<10} {:>5} chars, first text after {:>7}, done after {:.2} s",
            o.index,
            o.result,
            o.chars,
            o.first_text
                .map_or("-".to_owned(), |d| format!("{:.2} s", d.as_secs_f64())),
            o.total.as_secs_f64()
        );
    }
    Ok(())
}
