//! `GET /metrics` (SPEC R14.9) end to end: the gateway on 127.0.0.1:0 in front of scripted
//! Anthropic upstreams; the scrape is parsed back (Prometheus text format 0.0.4) and its
//! counts, buckets and sums checked against the fixtures' usage.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_api::ApiConfiguration;
use switchyard_gateway::{Gateway, ServerLimits, serve};
use switchyard_testkit::{Gate, HttpResponse, MockServer, Reply};
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-ant-metrics-test-key-0123456789";

/// A gateway serving on 127.0.0.1:0 until dropped.
struct Running {
    base: String,
    shutdown: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn start(text: &str, label_sets: usize) -> Running {
    let config = ApiConfiguration::from_toml(text, "serve.toml", |_| Some(KEY.to_owned())).unwrap();
    let gateway = Gateway::new(config)
        .unwrap()
        .with_metric_label_sets(label_sets);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let limits = ServerLimits::default();
    tokio::spawn(serve(listener, Arc::new(gateway), limits, shutdown.clone()));
    Running { base, shutdown }
}

fn route(name: &str, url: &str) -> String {
    format!(
        "[serve.routes.\"{name}\"]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{url}\"\n"
    )
}

fn chat(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "stream_options": {"include_usage": true},
           "messages": [{"role": "user", "content": "What is the capital of France?"}]})
}

async fn post(base: &str, body: &Value) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(format!("{base}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// One sample: its name, labels and value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// The scrape, checked line by line: every sample's family has `# HELP` and `# TYPE` before it.
async fn scrape(base: &str) -> (String, Vec<Sample>) {
    let response = reqwest::get(format!("{base}/metrics")).await.unwrap();
    assert_eq!(response.status(), 200);
    let kind = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    let text = response.text().await.unwrap();
    let mut typed = Vec::new();
    let mut helped = Vec::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            typed.push(rest.split(' ').next().unwrap().to_owned());
        } else if let Some(rest) = line.strip_prefix("# HELP ") {
            helped.push(rest.split(' ').next().unwrap().to_owned());
        } else {
            let sample = parse(line);
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| sample.name.strip_suffix(s))
                .filter(|f| typed.iter().any(|t| t == f))
                .unwrap_or(&sample.name)
                .to_owned();
            assert!(
                typed.contains(&family) && helped.contains(&family),
                "{line}"
            );
            samples.push(sample);
        }
    }
    (text, samples)
}

fn parse(line: &str) -> Sample {
    let (head, value) = line.rsplit_once(' ').unwrap();
    let value = value.parse().unwrap();
    let Some((name, labels)) = head.split_once('{') else {
        return Sample {
            name: head.to_owned(),
            labels: BTreeMap::new(),
            value,
        };
    };
    let mut map = BTreeMap::new();
    let mut rest = labels.strip_suffix('}').unwrap();
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"").unwrap();
        let end = after.find('"').unwrap();
        map.insert(key.to_owned(), after[..end].to_owned());
        rest = after[end + 1..].trim_start_matches(',');
    }
    Sample {
        name: name.to_owned(),
        labels: map,
        value,
    }
}

/// The value of the one sample `name` whose labels include `with`.
fn value(samples: &[Sample], name: &str, with: &[(&str, &str)]) -> Option<f64> {
    let matching: Vec<&Sample> = samples
        .iter()
        .filter(|s| {
            s.name == name
                && with
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map_or("", String::as_str) == *v)
        })
        .collect();
    assert!(matching.len() <= 1, "{name} {with:?}: {matching:?}");
    matching.first().map(|s| s.value)
}

/// A histogram's buckets with labels `with`, in order: (le, cumulative count).
fn buckets(samples: &[Sample], name: &str, with: &[(&str, &str)]) -> Vec<(String, f64)> {
    let bucket = format!("{name}_bucket");
    samples
        .iter()
        .filter(|s| {
            s.name == bucket
                && with
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map_or("", String::as_str) == *v)
        })
        .map(|s| (s.labels["le"].clone(), s.value))
        .collect()
}

#[tokio::test]
async fn a_streamed_and_a_failed_request_are_counted_with_their_tokens_and_durations() {
    let upstream = MockServer::start(vec![
        Reply::new(HttpResponse::fixture("anthropic_text")),
        Reply::new(HttpResponse::fixture("anthropic_prompt_too_long")),
    ])
    .await;
    let gateway = start(&route("sonnet", &upstream.url()), 1000).await;
    let (status, text) = post(&gateway.base, &chat("sonnet", true)).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("data: [DONE]"), "{text}");
    let (status, text) = post(&gateway.base, &chat("sonnet", true)).await;
    assert_eq!(status, 400, "{text}");
    let (status, _) = post(&gateway.base, &chat("no-such-route", false)).await;
    assert_eq!(status, 404);

    let (text, samples) = scrape(&gateway.base).await;
    assert!(!text.contains(KEY), "{text}");
    let total = "switchyard_gateway_requests_total";
    assert_eq!(value(&samples, total, &[("outcome", "ok")]), Some(1.0));
    let too_long = [
        ("outcome", "error"),
        ("error_type", "context_window_exceeded"),
    ];
    assert_eq!(value(&samples, total, &too_long), Some(1.0));
    let unknown = [("outcome", "error"), ("error_type", "not_found")];
    assert_eq!(value(&samples, total, &unknown), Some(1.0));

    // The fixture's usage: 21 input + 2,048 cache reads + 248 cache writes, 27 output.
    let answered = [
        ("gen_ai_provider_name", "anthropic"),
        ("gen_ai_request_model", "sonnet"),
        ("gen_ai_response_model", "claude-sonnet-4-5"),
    ];
    let tokens = "gen_ai_client_token_usage";
    for (kind, n, first_le) in [("input", 2317.0, "4096"), ("output", 27.0, "64")] {
        let with: Vec<(&str, &str)> = [&answered[..], &[("gen_ai_token_type", kind)]].concat();
        assert_eq!(value(&samples, &format!("{tokens}_sum"), &with), Some(n));
        assert_eq!(
            value(&samples, &format!("{tokens}_count"), &with),
            Some(1.0)
        );
        let b = buckets(&samples, tokens, &with);
        assert_eq!(b.len(), 15, "{b:?}");
        assert_eq!(b.last().unwrap(), &("+Inf".to_owned(), 1.0));
        // Cumulative: 0 below the first bound the value is at most, 1 from there on.
        let at = b.iter().position(|(le, _)| le == first_le).unwrap();
        assert!(b[..at].iter().all(|(_, c)| *c == 0.0), "{b:?}");
        assert!(b[at..].iter().all(|(_, c)| *c == 1.0), "{b:?}");
    }
    let duration = "gen_ai_server_request_duration_seconds";
    // (A label given as "" must be absent.)
    let ok: Vec<(&str, &str)> = [&answered[..], &[("error_type", "")]].concat();
    assert_eq!(
        value(&samples, &format!("{duration}_count"), &ok),
        Some(1.0)
    );
    // A failure is labelled with the entry it failed on.
    let failed = [
        ("gen_ai_provider_name", "anthropic"),
        ("gen_ai_response_model", "claude-sonnet-4-5"),
        ("error_type", "context_window_exceeded"),
    ];
    assert_eq!(
        value(&samples, &format!("{duration}_count"), &failed),
        Some(1.0)
    );
    let b = buckets(&samples, duration, &failed);
    assert_eq!(b.len(), 15);
    assert_eq!(b[0].0, "0.01");
    assert_eq!(b[13].0, "81.92");
    let ttft = "gen_ai_server_time_to_first_token_seconds";
    assert_eq!(value(&samples, &format!("{ttft}_count"), &ok), Some(1.0));
    assert_eq!(buckets(&samples, ttft, &ok).len(), 17);
    let sum = value(&samples, &format!("{ttft}_sum"), &ok).unwrap();
    let whole = value(&samples, &format!("{duration}_sum"), &ok).unwrap();
    assert!(sum > 0.0 && sum <= whole, "ttft {sum} duration {whole}");
    // The overhead: once per request that was sent upstream (two), never more than the whole.
    let overhead = "switchyard_gateway_overhead_seconds";
    assert_eq!(
        value(&samples, &format!("{overhead}_count"), &[]),
        Some(2.0)
    );
    let cost = value(
        &samples,
        "switchyard_gateway_cost_usd_total",
        &answered[..1],
    )
    .unwrap();
    assert!(cost > 0.0, "{cost}");
    assert_eq!(
        value(&samples, "switchyard_gateway_requests_in_flight", &[]),
        Some(0.0)
    );
    assert_eq!(
        value(&samples, "switchyard_gateway_cooldowns", &[]),
        Some(0.0)
    );
    eprintln!("scrape: {} bytes, {} samples", text.len(), samples.len());
    if std::env::var_os("SWITCHYARD_DUMP_METRICS").is_some() {
        eprintln!("{text}");
    }
}

#[tokio::test]
async fn a_stream_the_client_leaves_is_counted_as_cancelled_and_leaves_no_request_in_flight() {
    let fixture = HttpResponse::fixture("anthropic_text");
    let body = String::from_utf8_lossy(&fixture.body).into_owned();
    let at = body.find("text_delta").unwrap();
    let cut = at + body[at..].find("\n\n").unwrap() + 2;
    let gate = Gate::new();
    let upstream = MockServer::start(vec![Reply::new(fixture).gate_at(cut, &gate)]).await;
    let gateway = start(&route("sonnet", &upstream.url()), 1000).await;
    let mut response = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", gateway.base))
        .header("content-type", "application/json")
        .body(chat("sonnet", true).to_string())
        .send()
        .await
        .unwrap();
    let mut seen = String::new();
    while !seen.contains("content") {
        seen.push_str(&String::from_utf8_lossy(
            &response.chunk().await.unwrap().unwrap(),
        ));
    }
    let (_, samples) = scrape(&gateway.base).await;
    assert_eq!(
        value(&samples, "switchyard_gateway_requests_in_flight", &[]),
        Some(1.0)
    );
    drop(response);
    let mut last = None;
    for _ in 0..500 {
        let (_, samples) = scrape(&gateway.base).await;
        let cancelled = value(
            &samples,
            "switchyard_gateway_requests_total",
            &[("outcome", "cancelled")],
        );
        let flying = value(&samples, "switchyard_gateway_requests_in_flight", &[]);
        if cancelled == Some(1.0) && flying == Some(0.0) {
            assert_eq!(
                value(
                    &samples,
                    "switchyard_gateway_requests_total",
                    &[("outcome", "ok")]
                ),
                None
            );
            return;
        }
        last = Some((cancelled, flying));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("after 5 s: cancelled and in flight {last:?}");
}

#[tokio::test]
async fn past_the_label_cap_requests_are_counted_under_other_and_no_key_is_a_label() {
    let replies = (0..4)
        .map(|_| Reply::new(HttpResponse::fixture("anthropic_text")))
        .collect();
    let upstream = MockServer::start(replies).await;
    let url = upstream.url();
    let config = format!(
        "{}{}{}",
        route("a", &url),
        route("b", &url),
        route("c", &url)
    );
    let gateway = start(&config, 2).await;
    for model in ["a", "b", "c"] {
        let (status, text) = post(&gateway.base, &chat(model, false)).await;
        assert_eq!(status, 200, "{text}");
    }
    // A model name holding a key (a PROVIDER/MODEL the router accepts) never becomes a label.
    let config = format!(
        "{}[providers.anthropic]\nbase_url = \"{url}\"\n",
        route("a", &url)
    );
    let keyed = start(&config, 1000).await;
    let (status, text) = post(&keyed.base, &chat(&format!("anthropic/{KEY}"), false)).await;
    assert_eq!(status, 200, "{text}");
    let (text, samples) = scrape(&keyed.base).await;
    assert!(!text.contains(KEY), "{text}");
    let count = "gen_ai_server_request_duration_seconds_count";
    assert_eq!(
        value(&samples, count, &[("gen_ai_request_model", "redacted")]),
        Some(1.0)
    );

    let (_, samples) = scrape(&gateway.base).await;
    let routes: Vec<&str> = samples
        .iter()
        .filter(|s| s.name == count)
        .map(|s| s.labels["gen_ai_request_model"].as_str())
        .collect();
    assert_eq!(routes, ["a", "b", "other"]);
    let other = [
        ("gen_ai_request_model", "other"),
        ("gen_ai_provider_name", "other"),
    ];
    assert_eq!(value(&samples, count, &other), Some(1.0));
    assert_eq!(
        value(
            &samples,
            "switchyard_gateway_requests_total",
            &[("outcome", "ok")]
        ),
        Some(3.0)
    );
}
