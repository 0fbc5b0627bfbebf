//! The gateway goes through the same layer as a task, with the same store (SPEC R14.4, R14.9,
//! R12.1–R12.3, R9.2, R13.2): cooldowns shared in the store, rate limits waited out instead of
//! sent into a 429, the daily cap, and a record of every request; `/ready` follows the store.
//! The gateway runs in-process on 127.0.0.1:0 in front of the testkit's scripted upstreams;
//! the rate-limit and cooldown waits run on tokio's paused clock.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_api::{ApiConfiguration, Mode, build_failover_chain};
use switchyard_core::cost::{TokenCounts, calculate_cost};
use switchyard_core::limits::{Clock, Cooldown, EntryKey};
use switchyard_core::store::{RequestOutcome, RequestRecord, SqliteStore, TaskStore};
use switchyard_gateway::{Gateway, ServerLimits, serve};
use switchyard_testkit::{AfterBody, HttpResponse, MockServer, Reply};
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-layer-test-key-0123456789";

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

fn config(text: &str) -> ApiConfiguration {
    ApiConfiguration::from_toml(text, "serve.toml", |_| Some(KEY.to_owned())).unwrap()
}

/// A gateway over `text` whose layer keeps its state in `store`.
async fn start(text: &str, store: Arc<dyn TaskStore>) -> Running {
    let gateway = Gateway::with_store(config(text), store);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let limits = ServerLimits::default();
    tokio::spawn(serve(listener, Arc::new(gateway), limits, shutdown.clone()));
    Running { base, shutdown }
}

fn memory() -> Arc<dyn TaskStore> {
    Arc::new(SqliteStore::in_memory().unwrap())
}

/// `[serve.routes.sonnet]` on Anthropic's `claude-sonnet-4-5` at `url`, then `extra`.
fn sonnet(url: &str, extra: &str) -> String {
    format!(
        "[serve.routes.sonnet]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{url}\"\n{extra}"
    )
}

/// [`sonnet`] with one fallback, Anthropic's `claude-haiku-4-5` at `backup`.
fn with_fallback(primary: &str, backup: &str) -> String {
    sonnet(
        primary,
        &format!(
            "[[serve.routes.sonnet.fallbacks]]\nprovider = \"anthropic\"\nmodel = \"claude-haiku-4-5\"\nbase_url = \"{backup}\"\n"
        ),
    )
}

fn user(stream: bool) -> Value {
    json!({"model": "sonnet", "stream": stream, "max_tokens": 256,
           "messages": [{"role": "user", "content": "What is the capital of France?"}]})
}

/// POSTs `body` to `/v1/messages`: the status, headers and body.
async fn post(base: &str, body: &Value) -> (u16, reqwest::header::HeaderMap, String) {
    let response = reqwest::Client::new()
        .post(format!("{base}/v1/messages"))
        .header("anthropic-version", "2023-06-01")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

async fn upstream(replies: Vec<Reply>) -> (MockServer, String) {
    let server = MockServer::start(replies).await;
    let url = server.url();
    (server, url)
}

fn fixture(name: &str) -> Reply {
    Reply::new(HttpResponse::fixture(name))
}

/// The store's `n` newest request records, once that many are written (they are written after
/// the answer ended, in a task of their own).
async fn records(store: &dyn TaskStore, n: usize) -> Vec<RequestRecord> {
    for _ in 0..500 {
        let got = store.recent_requests(0).await.unwrap();
        if got.len() >= n {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("fewer than {n} requests were recorded");
}

/// The cooldown key of `model` behind `url` (the entry: provider + model + base URL).
fn entry_key(text: &str, model: &str) -> EntryKey {
    let mut config = config(text);
    let route = config.serve.routes["sonnet"].clone();
    config.act.provider = Some(route.provider);
    config.act.model_id = route.model;
    config.act.fallbacks = route.fallbacks;
    let url = route.base_url.unwrap();
    config
        .providers
        .endpoints
        .entry("anthropic".into())
        .or_default()
        .base_url = Some(url);
    let chain = build_failover_chain(&config, Mode::Act).unwrap();
    let e = chain.iter().find(|e| e.model_id == model).unwrap();
    EntryKey {
        provider: e.provider_id.clone(),
        model: e.model_id.clone(),
        base_url: e.base_url.clone(),
    }
}

#[tokio::test]
async fn a_429_cools_the_entry_down_so_the_next_request_goes_straight_to_the_fallback() {
    let (primary, primary_url) = upstream(vec![fixture("anthropic_429")]).await;
    let (backup, backup_url) = upstream(vec![fixture("anthropic_text")]).await;
    let text = with_fallback(&primary_url, &backup_url);
    let store = memory();
    let gateway = start(&text, Arc::clone(&store)).await;
    for stream in [false, true] {
        let (status, _, body) = post(&gateway.base, &user(stream)).await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("Paris"), "{body}");
    }
    // One request to the primary: its 429 (retry-after: 17) cooled it down in the store, for
    // the time the provider stated (not a default: https://github.com/BerriAI/litellm/pull/35104).
    assert_eq!((primary.request_count(), backup.request_count()), (1, 2));
    let cooling = store.cooldowns(Clock::system().now_ms()).await.unwrap();
    assert_eq!(cooling.len(), 1, "{cooling:?}");
    assert_eq!(cooling[0].entry, entry_key(&text, "claude-sonnet-4-5"));
    assert_eq!(cooling[0].reason, "rate_limited");
    let left = cooling[0].until_ms - Clock::system().now_ms();
    assert!((10_000..=17_000).contains(&left), "{left}");
    // Both answers are accounted to the model that answered.
    let got = records(store.as_ref(), 2).await;
    assert!(
        got.iter()
            .all(|r| r.model.as_deref() == Some("claude-haiku-4-5"))
    );
}

/// LiteLLM's proxy keeps cooldowns per replica unless Redis is set up, and even then a sibling
/// sees one up to 10 s late (https://github.com/BerriAI/litellm/issues/871,
/// https://github.com/BerriAI/litellm/pull/40025): here the next request of any gateway on the
/// store reads it.
#[tokio::test]
async fn a_second_gateway_on_the_same_store_sees_the_cooldown() {
    let (primary, primary_url) = upstream(vec![fixture("anthropic_429")]).await;
    let (backup, backup_url) = upstream(vec![fixture("anthropic_text")]).await;
    let text = with_fallback(&primary_url, &backup_url);
    let data = tempfile::tempdir().unwrap();
    // Two store handles (two connections), as two `switchyard serve` processes have.
    let first = start(&text, Arc::new(SqliteStore::open(data.path()).unwrap())).await;
    let second = start(&text, Arc::new(SqliteStore::open(data.path()).unwrap())).await;
    let (status, _, body) = post(&first.base, &user(false)).await;
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = post(&second.base, &user(true)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!((primary.request_count(), backup.request_count()), (1, 2));
}

#[tokio::test]
async fn every_entry_cooling_past_the_deadline_is_a_429_with_retry_after_and_is_recorded() {
    let (primary, url) = upstream(vec![fixture("anthropic_text")]).await;
    let text = sonnet(&url, "[serve]\nrequest_deadline = 30\n");
    let store = memory();
    let now = Clock::system().now_ms();
    let cooldown = Cooldown {
        entry: entry_key(&text, "claude-sonnet-4-5"),
        since_ms: now,
        until_ms: now + 300_000,
        reason: "rate_limited".into(),
    };
    store.set_cooldown(&cooldown).await.unwrap();
    let gateway = start(&text, Arc::clone(&store)).await;
    let (status, headers, body) = post(&gateway.base, &user(true)).await;
    assert_eq!(status, 429, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["type"], "rate_limit_error", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cooling down"),
        "{v}"
    );
    let wait: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((295..=300).contains(&wait), "{wait}");
    assert_eq!(primary.request_count(), 0);
    let got = records(store.as_ref(), 1).await;
    assert_eq!(got[0].outcome, RequestOutcome::Error("rate_limited".into()));
    assert_eq!(
        (got[0].provider.clone(), got[0].first_token_ms),
        (None, None)
    );
}

#[tokio::test(start_paused = true)]
async fn every_entry_cooling_within_the_deadline_is_waited_out() {
    let (primary, url) = upstream(vec![fixture("anthropic_text")]).await;
    let text = sonnet(&url, "");
    let store = memory();
    let now = Clock::system().now_ms();
    let cooldown = Cooldown {
        entry: entry_key(&text, "claude-sonnet-4-5"),
        since_ms: now,
        until_ms: now + 30_000,
        reason: "overloaded".into(),
    };
    store.set_cooldown(&cooldown).await.unwrap();
    let gateway = start(&text, Arc::clone(&store)).await;
    let sent = tokio::time::Instant::now();
    let (status, _, body) = post(&gateway.base, &user(false)).await;
    assert_eq!(status, 200, "{body}");
    let waited = sent.elapsed();
    assert!(
        (Duration::from_secs(29)..Duration::from_secs(35)).contains(&waited),
        "{waited:?}"
    );
    assert_eq!(primary.request_count(), 1);
}

/// A configured limit that holds across every process on the store (LiteLLM's key limits were
/// per replica: https://github.com/BerriAI/litellm/issues/2730), waited out rather than
/// answered with a 429.
#[tokio::test(start_paused = true)]
async fn requests_per_minute_make_the_second_request_wait_instead_of_earning_a_429() {
    let replies = vec![fixture("anthropic_text")];
    let (primary, url) = upstream(replies).await;
    let text = sonnet(&url, "[providers.anthropic]\nrequests_per_minute = 1\n");
    let gateway = start(&text, memory()).await;
    let sent = tokio::time::Instant::now();
    let (status, _, body) = post(&gateway.base, &user(false)).await;
    assert_eq!(status, 200, "{body}");
    assert!(sent.elapsed() < Duration::from_secs(1));
    // The window holds one request a minute: the second waits for room, then is sent.
    let (status, _, body) = post(&gateway.base, &user(true)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Paris"), "{body}");
    let waited = sent.elapsed();
    assert!(
        (Duration::from_secs(59)..Duration::from_secs(62)).contains(&waited),
        "{waited:?}"
    );
    let reqs = primary.requests();
    assert_eq!(reqs.len(), 2);
    let gap = reqs[1].at - reqs[0].at;
    assert!(gap >= Duration::from_secs(59), "{gap:?}");
}

#[tokio::test]
async fn a_request_is_recorded_with_who_answered_its_tokens_cost_and_times() {
    let (_primary, url) = upstream(vec![fixture("anthropic_text")]).await;
    let text = sonnet(&url, "");
    let store = memory();
    let gateway = start(&text, Arc::clone(&store)).await;
    let (status, headers, body) = post(&gateway.base, &user(true)).await;
    assert_eq!(status, 200, "{body}");
    let id = headers["x-request-id"].to_str().unwrap().to_owned();
    let got = records(store.as_ref(), 1).await;
    let r = &got[0];
    assert_eq!(r.id, id);
    assert_eq!(
        (r.route.as_str(), r.dialect.as_str(), r.stream),
        ("sonnet", "messages", true)
    );
    assert_eq!(r.provider.as_deref(), Some("anthropic"));
    assert_eq!(r.model.as_deref(), Some("claude-sonnet-4-5"));
    // The fixture's usage (tests/fixtures/anthropic_text.expected.json).
    let tokens = (
        r.input_tokens,
        r.output_tokens,
        r.cache_read_tokens,
        r.cache_write_tokens,
    );
    assert_eq!(tokens, (21, 27, 2048, 248));
    // Priced at the answering model's prices, as a task's request is (SPEC R9.2).
    let mut priced = config(&text);
    priced.act.provider = Some("anthropic".into());
    priced.act.model_id = Some("claude-sonnet-4-5".into());
    let info = build_failover_chain(&priced, Mode::Act).unwrap()[0]
        .handler
        .get_model()
        .info;
    let counts = TokenCounts {
        input: 21,
        output: 27,
        cache_write: 248,
        cache_read: 2048,
    };
    let expected = calculate_cost(&info, &counts, 0).unwrap();
    assert!(expected > 0.0);
    assert_eq!(r.cost_usd, Some(expected));
    assert_eq!(r.outcome, RequestOutcome::Ok);
    let first = r.first_token_ms.unwrap();
    assert!(first >= 0 && first <= r.duration_ms, "{r:?}");
    // Its cost is today's spend, which the daily cap of every task and gateway counts.
    let spent = store.spend_between(0, i64::MAX).await.unwrap();
    assert!((spent - expected).abs() < 1e-12, "{spent}");
}

#[tokio::test]
async fn a_client_that_goes_away_mid_stream_is_recorded_as_cancelled() {
    let mut fixture = HttpResponse::fixture("anthropic_text");
    let text_at = String::from_utf8_lossy(&fixture.body)
        .find("text_delta")
        .unwrap();
    let cut = text_at
        + String::from_utf8_lossy(&fixture.body[text_at..])
            .find("\n\n")
            .unwrap()
        + 2;
    fixture.body.truncate(cut);
    let reply = Reply::new(fixture).after_body(AfterBody::HoldOpen(Duration::from_secs(60)));
    let (upstream, url) = upstream(vec![reply]).await;
    let store = memory();
    let gateway = start(&sonnet(&url, ""), Arc::clone(&store)).await;
    let mut response = reqwest::Client::new()
        .post(format!("{}/v1/messages", gateway.base))
        .header("content-type", "application/json")
        .body(user(true).to_string())
        .send()
        .await
        .unwrap();
    let mut seen = String::new();
    // The answer has started (its first content probed): the text delta itself may wait
    // with the scrubber, whose held "s" could start the configured `sk-` key (SPEC R10.5).
    while !seen.contains("content_block_start") {
        let chunk = response.chunk().await.unwrap().unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(response);
    tokio::time::timeout(Duration::from_secs(10), upstream.wait_for_closed(1))
        .await
        .unwrap();
    let got = records(store.as_ref(), 1).await;
    assert_eq!(got[0].outcome, RequestOutcome::Cancelled, "{:?}", got[0]);
    assert_eq!(got[0].model.as_deref(), Some("claude-sonnet-4-5"));
    assert!(got[0].first_token_ms.is_some());
    // The Anthropic stream states its usage at its end, which never came: the cost is
    // unknown, not $0.
    assert_eq!((got[0].input_tokens, got[0].output_tokens), (0, 0));
    assert_eq!(got[0].cost_usd, None);
}

#[tokio::test]
async fn the_daily_spend_cap_counts_gateway_requests() {
    let (primary, url) = upstream(vec![fixture("anthropic_text")]).await;
    // The fixture's answer costs about $0.002 at Sonnet's prices.
    let text = sonnet(&url, "[limits]\nmax_cost_usd_per_day = 0.001\n");
    let store = memory();
    let gateway = start(&text, Arc::clone(&store)).await;
    let (status, _, body) = post(&gateway.base, &user(false)).await;
    assert_eq!(status, 200, "{body}");
    records(store.as_ref(), 1).await;
    let (status, _, body) = post(&gateway.base, &user(false)).await;
    assert_eq!(status, 402, "{body}");
    assert!(body.contains("spend cap"), "{body}");
    assert_eq!(primary.request_count(), 1);
    let got = records(store.as_ref(), 2).await;
    assert_eq!(got[0].outcome, RequestOutcome::Error("spend_cap".into()));
}

#[tokio::test]
async fn ready_answers_200_while_the_store_is_reachable() {
    let gateway = start(&sonnet("http://127.0.0.1:9", ""), memory()).await;
    let response = reqwest::get(format!("{}/ready", gateway.base))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let health = reqwest::get(format!("{}/health", gateway.base))
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
}

/// A PostgreSQL store on a fresh database of the test server (`scripts/postgres.sh`), and its
/// URL; `None` when no server is set (outside CI: skipped).
#[track_caller]
fn postgres() -> Option<String> {
    switchyard_testkit::fresh_postgres_database("gateway")
}

async fn pg_store(url: &str) -> Arc<dyn TaskStore> {
    Arc::new(switchyard_core::store::PgStore::connect(url).await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgresql_two_gateways_share_the_cooldown_and_record_each_request() {
    let Some(url) = postgres() else { return };
    let (primary, primary_url) = upstream(vec![fixture("anthropic_429")]).await;
    let (backup, backup_url) = upstream(vec![fixture("anthropic_text")]).await;
    let text = with_fallback(&primary_url, &backup_url);
    let store = pg_store(&url).await;
    let first = start(&text, Arc::clone(&store)).await;
    let second = start(&text, pg_store(&url).await).await;
    let (status, _, body) = post(&first.base, &user(true)).await;
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = post(&second.base, &user(false)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!((primary.request_count(), backup.request_count()), (1, 2));
    let got = records(store.as_ref(), 2).await;
    assert!(
        got.iter().all(|r| r.outcome == RequestOutcome::Ok),
        "{got:?}"
    );
    assert!(
        got.iter()
            .all(|r| r.model.as_deref() == Some("claude-haiku-4-5"))
    );
    assert_eq!((got[0].input_tokens, got[0].output_tokens), (21, 27));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_is_503_once_the_store_is_gone_and_health_stays_200() {
    let Some(url) = postgres() else { return };
    let gateway = start(&sonnet("http://127.0.0.1:9", ""), pg_store(&url).await).await;
    let ready = || async {
        reqwest::get(format!("{}/ready", gateway.base))
            .await
            .unwrap()
    };
    assert_eq!(ready().await.status().as_u16(), 200);
    // The store's database goes away under the running gateway.
    let database = url.rsplit('/').next().unwrap().to_owned();
    let server = switchyard_testkit::postgres_server_url().unwrap();
    let (client, connection) = tokio_postgres::connect(&server, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!("DROP DATABASE {database} WITH (FORCE)"))
        .await
        .unwrap();
    let response = ready().await;
    assert_eq!(response.status().as_u16(), 503);
    let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(body["status"], "unavailable", "{body}");
    assert!(body["error"].as_str().unwrap().contains("store"), "{body}");
    assert!(!body.to_string().contains("password"), "{body}");
    let health = reqwest::get(format!("{}/health", gateway.base))
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
}

/// A gateway told to stop right after an answer writes that answer's record before `serve`
/// returns (SPEC R14.9): the spend and the budget hold of a request answered before SIGTERM
/// are not lost with the process (a test of the CLI's saw `requests --json` empty once).
#[tokio::test]
async fn the_records_of_answered_requests_are_written_before_serve_returns() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let store = memory();
    let gateway = Gateway::with_store(config(&sonnet(&upstream.url(), "")), Arc::clone(&store));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(serve(
        listener,
        Arc::new(gateway),
        ServerLimits::default(),
        shutdown.clone(),
    ));
    for stream in [false, true] {
        let (status, _, text) = post(&base, &user(stream)).await;
        assert_eq!(status, 200, "{text}");
    }
    shutdown.cancel();
    served.await.unwrap();
    let records = store.recent_requests(10).await.unwrap();
    assert_eq!(records.len(), 2, "{records:?}");
    assert!(
        records.iter().all(|r| r.outcome == RequestOutcome::Ok),
        "{records:?}"
    );
}
