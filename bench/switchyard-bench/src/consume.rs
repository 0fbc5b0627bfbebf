//! Consuming streams through Switchyard's `ApiHandler`.
//!
//! The handler is built with `build_api_handler` from an `ApiConfiguration` whose provider
//! endpoint points at the loopback server, as the CLI would build it from a config file.
//! Every chunk is matched and counted; the counts are the same "logical content" the SDK
//! clients count (non-empty text, reasoning and tool-argument deltas, usage reports, bytes of
//! each, in Unicode code points), so the driver can check that every client consumed every byte.

use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use serde_json::json;
use switchyard_api::{
    ApiConfiguration, ApiHandler, ApiStream, ApiStreamChunk, Message, Mode, ProviderEndpoint,
    RequestOptions, build_api_handler,
};
use tokio::sync::Barrier;

/// What to consume.
pub struct Target {
    pub provider: String,
    pub base_url: String,
    pub model: String,
    /// Streams consumed at once (1 = a single stream).
    pub streams: usize,
}

/// Counts of one stream's logical content.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Counts {
    /// Every chunk the stream yielded, of any kind and size.
    chunks: u64,
    text: u64,
    text_chars: u64,
    reasoning: u64,
    reasoning_chars: u64,
    tool_args: u64,
    tool_args_chars: u64,
    usage: u64,
    /// `output_tokens` of the last usage chunk.
    output_tokens: u64,
}

impl Counts {
    fn add(&mut self, chunk: &ApiStreamChunk) {
        self.chunks += 1;
        match chunk {
            ApiStreamChunk::Text { text, .. } if !text.is_empty() => {
                self.text += 1;
                self.text_chars += text.chars().count() as u64;
            }
            ApiStreamChunk::Reasoning { reasoning, .. } if !reasoning.is_empty() => {
                self.reasoning += 1;
                self.reasoning_chars += reasoning.chars().count() as u64;
            }
            ApiStreamChunk::ToolCalls {
                arguments_delta, ..
            } if !arguments_delta.is_empty() => {
                self.tool_args += 1;
                self.tool_args_chars += arguments_delta.chars().count() as u64;
            }
            ApiStreamChunk::Usage(usage) => {
                self.usage += 1;
                self.output_tokens = usage.output_tokens;
            }
            _ => {}
        }
    }

    fn to_json(&self) -> serde_json::Value {
        json!({
            "text": self.text,
            "text_chars": self.text_chars,
            "reasoning": self.reasoning,
            "reasoning_chars": self.reasoning_chars,
            "tool_args": self.tool_args,
            "tool_args_chars": self.tool_args_chars,
            "usage": self.usage,
            "output_tokens": self.output_tokens,
        })
    }
}

/// Runs the consumer and prints one JSON line on stdout.
pub fn run(target: &Target) -> Result<(), String> {
    let handler = build_handler(target)?;
    let mut builder = if target.streams > 1 {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        // One stream: one thread, like the Node and Python clients.
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = builder
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))?;
    let report = if target.streams > 1 {
        runtime.block_on(many(handler, target.streams))
    } else {
        runtime.block_on(one(handler.as_ref()))?
    };
    println!("{report}");
    Ok(())
}

fn build_handler(target: &Target) -> Result<Arc<dyn ApiHandler>, String> {
    let mut config = ApiConfiguration::default();
    config.act.provider = Some(target.provider.clone());
    config.act.model_id = Some(target.model.clone());
    config.providers.endpoints.insert(
        target.provider.clone(),
        ProviderEndpoint {
            base_url: Some(target.base_url.clone()),
            ..ProviderEndpoint::default()
        },
    );
    config.read_keys(|k| std::env::var(k).ok());
    let handler = build_api_handler(&config, Mode::Act).map_err(|e| e.to_string())?;
    if handler.provider_id() != target.provider {
        return Err(format!(
            "asked for provider `{}` but the handler is for `{}`",
            target.provider,
            handler.provider_id()
        ));
    }
    Ok(Arc::from(handler))
}

fn start(handler: &dyn ApiHandler) -> ApiStream {
    let messages = [Message::user_text(
        "Benchmark request: stream the whole answer.",
    )];
    handler.create_message(
        "You are a benchmark peer.",
        &messages,
        &[],
        RequestOptions::default(),
    )
}

/// One stream, consumed to the end.
async fn one(handler: &dyn ApiHandler) -> Result<serde_json::Value, String> {
    let started = Instant::now();
    let cpu_before = process_cpu_ns();
    let mut stream = start(handler);
    let mut counts = Counts::default();
    let mut first_text_ms = None;
    while let Some(item) = stream.next().await {
        let chunk = item.map_err(|e| e.to_string())?;
        if first_text_ms.is_none()
            && matches!(&chunk, ApiStreamChunk::Text { text, .. } if !text.is_empty())
        {
            first_text_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
        }
        counts.add(&chunk);
    }
    let stream_ms = started.elapsed().as_secs_f64() * 1000.0;
    let stream_cpu_ms = process_cpu_ns().saturating_sub(cpu_before) as f64 / 1e6;
    Ok(json!({
        "client": "switchyard",
        "stream_ms": stream_ms,
        "stream_cpu_ms": stream_cpu_ms,
        "peak_rss_kb": proc_status_kb("VmHWM"),
        "first_text_ms": first_text_ms,
        "chunks": counts.chunks,
        "counts": counts.to_json(),
    }))
}

/// `n` streams at once. Each stream is opened and waits for its first chunk; only when all
/// `n` are open (a barrier) do they read on, so `n` connections are truly open together.
async fn many(handler: Arc<dyn ApiHandler>, n: usize) -> serde_json::Value {
    let baseline_rss_kb = proc_status_kb("VmRSS").unwrap_or(0);
    let barrier = Arc::new(Barrier::new(n));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(n);
    for _ in 0..n {
        let handler = Arc::clone(&handler);
        let barrier = Arc::clone(&barrier);
        tasks.push(tokio::spawn(async move {
            let mut stream = start(handler.as_ref());
            let mut counts = Counts::default();
            let first = stream.next().await;
            barrier.wait().await;
            match first {
                Some(Ok(chunk)) => counts.add(&chunk),
                Some(Err(e)) => return Err(e.to_string()),
                None => return Err("the stream ended before its first chunk".to_owned()),
            }
            while let Some(item) = stream.next().await {
                counts.add(&item.map_err(|e| e.to_string())?);
            }
            Ok(counts)
        }));
    }
    let mut errors = 0u64;
    let mut first_error = None;
    let mut reference: Option<Counts> = None;
    let mut mismatched = 0u64;
    let mut total_chunks = 0u64;
    for task in tasks {
        match task.await {
            Ok(Ok(counts)) => {
                total_chunks += counts.chunks;
                match &reference {
                    None => reference = Some(counts),
                    Some(r) if *r != counts => mismatched += 1,
                    Some(_) => {}
                }
            }
            Ok(Err(e)) => {
                errors += 1;
                first_error.get_or_insert(e);
            }
            Err(e) => {
                errors += 1;
                first_error.get_or_insert(format!("task failed: {e}"));
            }
        }
    }
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    let peak_rss_kb = proc_status_kb("VmHWM").unwrap_or(0);
    json!({
        "client": "switchyard",
        "streams": n,
        "errors": errors,
        "first_error": first_error,
        "mismatched": mismatched,
        "stream_ms": wall_ms,
        "chunks": total_chunks,
        "counts": reference.unwrap_or_default().to_json(),
        "baseline_rss_kb": baseline_rss_kb,
        "peak_rss_kb": peak_rss_kb,
    })
}

/// CPU time (user + system) of every live thread of this process, in nanoseconds: the sum
/// of the first field of `/proc/self/task/*/schedstat` (Linux only; 0 elsewhere).
fn process_cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// A `kB` field of `/proc/self/status` (`VmRSS`, `VmHWM`), Linux only.
fn proc_status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use switchyard_api::Usage;

    #[test]
    fn counts_only_non_empty_deltas_in_code_points() {
        let mut counts = Counts::default();
        counts.add(&ApiStreamChunk::text(""));
        counts.add(&ApiStreamChunk::text(" (東京)"));
        counts.add(&ApiStreamChunk::reasoning("°C"));
        counts.add(&ApiStreamChunk::tool_call("call_1", "write_to_file", ""));
        counts.add(&ApiStreamChunk::tool_call(
            "call_1",
            "write_to_file",
            "{\"a\"",
        ));
        counts.add(&ApiStreamChunk::Usage(Usage {
            output_tokens: 7,
            ..Usage::default()
        }));
        assert_eq!(
            counts,
            Counts {
                chunks: 6,
                text: 1,
                text_chars: 5,
                reasoning: 1,
                reasoning_chars: 2,
                tool_args: 1,
                tool_args_chars: 4,
                usage: 1,
                output_tokens: 7,
            }
        );
    }
}
