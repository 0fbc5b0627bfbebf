//! Failover chains, spend caps and shared rate limits (SPEC R12) through the public API:
//! tasks built from configuration, local mock servers, one SQLite store, tokio's paused clock
//! (so a 60 s wait takes no real time and the gaps between requests are exact).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use switchyard_api::{ApiConfiguration, CancellationToken, ErrorKind, Mode};
use switchyard_core::Task;
use switchyard_core::limits::{Cooldown, EntryKey, LimitsStore};
use switchyard_core::store::{SqliteStore, TaskStore};
use switchyard_core::task::{FailureDecision, FixedDecision, RequestStatus, TaskEvent};
use switchyard_testkit::{HttpResponse, MockServer, Reply};
use tokio::time::Instant;

fn ok() -> Reply {
    Reply::new(HttpResponse::fixture("openai_chat_text"))
}

/// An OpenAI-style 429 with `retry-after` (seconds).
fn limited(retry_after: &str) -> Reply {
    Reply::new(HttpResponse::new(
        429,
        &[
            ("content-type", "application/json"),
            ("retry-after", retry_after),
        ],
        r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#,
    ))
}

/// `[act]` on `primary` with one fallback on `backup` (both OpenAI-compatible), plus `extra`.
fn config(primary: &MockServer, backup: &MockServer, extra: &str) -> ApiConfiguration {
    let toml = format!(
        r#"[act]
provider = "openai"
model = "primary-model"
fallbacks = [ {{ provider = "openai", model = "backup-model", base_url = "{}/v1" }} ]
[providers.openai]
base_url = "{}/v1"
{extra}
"#,
        backup.url(),
        primary.url()
    );
    ApiConfiguration::from_toml(&toml, "limits.toml", |_| Some("sk-test".into())).unwrap()
}

async fn run_task(
    config: &ApiConfiguration,
    store: &Arc<SqliteStore>,
    decision: FailureDecision,
) -> (RequestStatus, Vec<TaskEvent>) {
    let dir = tempfile::tempdir().unwrap();
    let mut task = Task::builder(config, Mode::Act, store.clone())
        .unwrap()
        .cwd(dir.path())
        .global_rules_dir(None)
        .failure_decider(Arc::new(FixedDecision(decision)))
        .create("hello")
        .await
        .unwrap();
    let mut events = Vec::new();
    let outcome = task
        .run_turn(None, &CancellationToken::new(), &mut |e| events.push(e))
        .await
        .unwrap();
    (outcome.status, events)
}

fn fallbacks(events: &[TaskEvent]) -> Vec<(String, String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            TaskEvent::Fallback {
                from, to, reason, ..
            } => Some((from.clone(), to.clone(), reason.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_429_moves_to_the_fallback_at_once_and_the_next_task_skips_the_primary() {
    let primary = MockServer::start(vec![limited("30"), ok()]).await;
    let backup = MockServer::start(vec![ok()]).await;
    let data = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(data.path()).unwrap());
    let config = config(&primary, &backup, "");

    let started = Instant::now();
    let (status, events) = run_task(&config, &store, FailureDecision::Cancel).await;
    assert!(matches!(status, RequestStatus::Completed), "{status:?}");
    assert!(
        started.elapsed() < Duration::from_millis(100),
        "no wait: {:?}",
        started.elapsed()
    );
    assert_eq!((primary.request_count(), backup.request_count()), (1, 1));
    assert_eq!(
        fallbacks(&events),
        [(
            "openai:primary-model".into(),
            "openai:backup-model".into(),
            "rate_limited".into()
        )]
    );
    let until = events.iter().find_map(|e| match e {
        TaskEvent::Fallback { until, message, .. } => Some((until.clone(), message.clone())),
        _ => None,
    });
    let (until, message) = until.unwrap();
    assert!(until.ends_with('Z') && until.len() == 20, "{until}");
    assert!(message.contains("rate limiting"), "{message}");
    // No provider-level retry and no task-level backoff were announced.
    assert!(!events.iter().any(|e| matches!(
        e,
        TaskEvent::RetryStatus { .. } | TaskEvent::ErrorRetry { .. }
    )));
    // The store holds the cooldown: 30 s from the failure.
    let cooling = store.cooldowns(switchyard_now()).await.unwrap();
    assert_eq!(cooling.len(), 1);
    assert_eq!(cooling[0].entry.model, "primary-model");
    assert_eq!(cooling[0].reason, "rate_limited");

    // A second task goes straight to the fallback.
    let (status, events) = run_task(&config, &store, FailureDecision::Cancel).await;
    assert!(matches!(status, RequestStatus::Completed));
    assert!(fallbacks(&events).is_empty());
    assert_eq!((primary.request_count(), backup.request_count()), (1, 2));

    // Once the cooldown is over, requests start again from the first entry.
    tokio::time::advance(Duration::from_secs(31)).await;
    let (status, _) = run_task(&config, &store, FailureDecision::Cancel).await;
    assert!(matches!(status, RequestStatus::Completed));
    assert_eq!((primary.request_count(), backup.request_count()), (2, 2));
}

/// Now as the limits read it (wall time plus tokio's virtual advance).
fn switchyard_now() -> i64 {
    switchyard_core::limits::Clock::system().now_ms()
}

#[tokio::test(start_paused = true)]
async fn auth_failures_skip_to_the_next_entry_and_are_reported() {
    let primary = MockServer::start(vec![Reply::new(HttpResponse::json(
        401,
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
    ))])
    .await;
    let backup = MockServer::start(vec![ok()]).await;
    let data = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(data.path()).unwrap());
    let (status, events) = run_task(
        &config(&primary, &backup, ""),
        &store,
        FailureDecision::Cancel,
    )
    .await;
    assert!(matches!(status, RequestStatus::Completed));
    let found = events.iter().find_map(|e| match e {
        TaskEvent::Fallback {
            reason, message, ..
        } => Some((reason.clone(), message.clone())),
        _ => None,
    });
    let (reason, message) = found.unwrap();
    assert_eq!(reason, "auth");
    assert!(message.contains("credentials"), "{message}");
    assert!(!message.contains("sk-test"));
}

#[tokio::test(start_paused = true)]
async fn with_every_entry_cooling_the_task_fails_or_waits_for_the_earliest_reset() {
    let primary = MockServer::start(vec![ok()]).await;
    let backup = MockServer::start(vec![ok()]).await;
    let data = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(data.path()).unwrap());
    let config = config(&primary, &backup, "");
    let now = switchyard_now();
    let cool = |model: &str, base: &MockServer, secs: i64| Cooldown {
        entry: EntryKey {
            provider: "openai".into(),
            model: model.into(),
            base_url: format!("{}/v1", base.url()),
        },
        since_ms: now,
        until_ms: now + secs * 1000,
        reason: "rate_limited".into(),
    };
    store
        .set_cooldown(&cool("primary-model", &primary, 40))
        .await
        .unwrap();
    store
        .set_cooldown(&cool("backup-model", &backup, 25))
        .await
        .unwrap();

    // --on-failure fail: no request is sent; the error names the first entry back.
    let (status, events) = run_task(&config, &store, FailureDecision::Cancel).await;
    let RequestStatus::Failed(error) = status else {
        panic!("{status:?}")
    };
    assert_eq!(error.kind, ErrorKind::RateLimited);
    assert!(error.to_string().contains("openai:backup-model"), "{error}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, TaskEvent::ApiReqFailed { .. }))
    );
    assert_eq!((primary.request_count(), backup.request_count()), (0, 0));

    // --on-failure retry: waits for the earliest reset (25 s, with the countdown), then
    // sends to the entry that came back.
    let started = Instant::now();
    let (status, events) = run_task(&config, &store, FailureDecision::Retry).await;
    assert!(matches!(status, RequestStatus::Completed), "{status:?}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(24) && waited <= Duration::from_secs(26),
        "{waited:?}"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        TaskEvent::ErrorRetry { delay_seconds, failed: false, .. } if *delay_seconds > 20.0
    )));
    assert_eq!((primary.request_count(), backup.request_count()), (0, 1));
}

#[tokio::test(start_paused = true)]
async fn a_spend_cap_stops_the_task_before_its_first_request() {
    let primary = MockServer::start(vec![ok()]).await;
    let backup = MockServer::start(vec![ok()]).await;
    let data = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(data.path()).unwrap());
    // $1000 per million input tokens: the first request's system prompt alone costs more than
    // the cap of one cent.
    let config = config(
        &primary,
        &backup,
        "[act.model_info]\ninput_price = 1000.0\noutput_price = 1000.0\n[limits]\nmax_cost_usd = 0.01\n",
    );
    let toml_ok = config.limits.max_cost_usd == Some(0.01);
    assert!(toml_ok);
    let (status, events) = run_task(&config, &store, FailureDecision::Retry).await;
    let RequestStatus::Failed(error) = status else {
        panic!("{status:?}")
    };
    assert_eq!(error.kind, ErrorKind::SpendCap);
    let text = error.to_string();
    assert!(
        text.contains("$0.01") && text.contains("--max-cost"),
        "{text}"
    );
    assert_eq!(primary.request_count() + backup.request_count(), 0);
    // Never retried, never asked about.
    assert!(!events.iter().any(|e| matches!(
        e,
        TaskEvent::ApiReqFailed { .. } | TaskEvent::ErrorRetry { .. }
    )));
}

#[tokio::test(start_paused = true)]
async fn the_daily_cap_counts_what_every_task_on_the_store_spent_today() {
    let primary = MockServer::start(vec![ok()]).await;
    let backup = MockServer::start(vec![ok()]).await;
    let data = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(data.path()).unwrap());
    let earlier = store
        .create_task(&switchyard_core::store::NewTask {
            cwd: "/w".into(),
            mode: "act".into(),
            provider: "openai".into(),
            model: "primary-model".into(),
            first_prompt: "earlier".into(),
        })
        .await
        .unwrap();
    store
        .add_usage(
            &earlier.id,
            &switchyard_core::store::TaskUsage {
                cost_usd: 4.99,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let config = config(
        &primary,
        &backup,
        "[act.model_info]\ninput_price = 1.0\noutput_price = 1.0\n[limits]\nmax_cost_usd_per_day = 5.0\n",
    );
    // Another task, under its own (absent) task cap, still meets the day's.
    let (status, _) = run_task(&config, &store, FailureDecision::Cancel).await;
    assert!(matches!(status, RequestStatus::Completed), "{status:?}");
    store
        .add_usage(
            &earlier.id,
            &switchyard_core::store::TaskUsage {
                cost_usd: 0.02,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let (status, _) = run_task(&config, &store, FailureDecision::Cancel).await;
    let RequestStatus::Failed(error) = status else {
        panic!("{status:?}")
    };
    assert_eq!(error.kind, ErrorKind::SpendCap);
    assert!(error.to_string().contains("today"), "{error}");
    assert_eq!(primary.request_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn three_tasks_share_requests_per_minute_two_and_the_third_waits_a_minute() {
    let primary = MockServer::start(vec![ok()]).await;
    let backup = MockServer::start(vec![ok()]).await;
    let data = tempfile::tempdir().unwrap();
    let config = config(&primary, &backup, "requests_per_minute = 2\n");
    let started = Instant::now();
    let mut runs = Vec::new();
    for _ in 0..3 {
        // One store handle (its own connection) per task, as separate processes have.
        let store = Arc::new(SqliteStore::open(data.path()).unwrap());
        let config = config.clone();
        runs.push(tokio::spawn(async move {
            let (status, events) = run_task(&config, &store, FailureDecision::Cancel).await;
            (status, events, started.elapsed())
        }));
    }
    let mut times = Vec::new();
    for run in runs {
        let (status, events, took) = run.await.unwrap();
        assert!(matches!(status, RequestStatus::Completed), "{status:?}");
        let waited = events.iter().find_map(|e| match e {
            TaskEvent::RateLimitWait {
                limit,
                delay_seconds,
                ..
            } => Some((limit.clone(), *delay_seconds)),
            _ => None,
        });
        times.push((took, waited));
    }
    times.sort_by_key(|t| t.0);
    assert!(times[0].0 < Duration::from_secs(1) && times[1].0 < Duration::from_secs(1));
    assert!(times[0].1.is_none() && times[1].1.is_none());
    assert!(
        times[2].0 >= Duration::from_secs(59) && times[2].0 <= Duration::from_secs(61),
        "{times:?}"
    );
    let (limit, delay) = times[2].1.clone().unwrap();
    assert_eq!(limit, "requests_per_minute");
    assert!((59.0..=60.5).contains(&delay), "{delay}");
    // Nobody earned a 429, and the fallback was never needed.
    assert_eq!((primary.request_count(), backup.request_count()), (3, 0));
    let reqs = primary.requests();
    let gap = reqs[2].at - reqs[0].at;
    assert!(gap >= Duration::from_secs(59), "{gap:?}");
}

#[tokio::test(start_paused = true)]
async fn limits_the_provider_states_in_its_headers_make_the_next_request_wait() {
    let exhausted = Reply::new(HttpResponse::new(
        200,
        &[
            ("content-type", "text/event-stream"),
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "20s"),
        ],
        HttpResponse::fixture("openai_chat_text").body,
    ));
    let primary = MockServer::start(vec![exhausted, ok()]).await;
    let backup = MockServer::start(vec![ok()]).await;
    let data = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(data.path()).unwrap());
    let config = config(&primary, &backup, "");
    let (status, _) = run_task(&config, &store, FailureDecision::Cancel).await;
    assert!(matches!(status, RequestStatus::Completed), "{status:?}");
    let started = Instant::now();
    let (status, events) = run_task(&config, &store, FailureDecision::Cancel).await;
    assert!(matches!(status, RequestStatus::Completed), "{status:?}");
    assert!(events.iter().any(|e| matches!(
        e,
        TaskEvent::RateLimitWait { limit, .. } if limit == "provider_requests_remaining"
    )));
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(19) && waited <= Duration::from_secs(21),
        "{waited:?}"
    );
    assert_eq!((primary.request_count(), backup.request_count()), (2, 0));
}

// ---------------------------------------------------------------------------------------------
// Cases (tests/cases/CASES.md, "L" rows)
// ---------------------------------------------------------------------------------------------

/// Runs one task on `store`, then a second one, and returns how long the second waited before
/// its request and the limit it named.
async fn second_task_wait(
    config: &ApiConfiguration,
    store: &Arc<SqliteStore>,
) -> (Duration, String) {
    let (status, _) = run_task(config, store, FailureDecision::Cancel).await;
    assert!(matches!(status, RequestStatus::Completed), "{status:?}");
    let started = Instant::now();
    let (status, events) = run_task(config, store, FailureDecision::Cancel).await;
    assert!(matches!(status, RequestStatus::Completed), "{status:?}");
    let limit = events
        .iter()
        .find_map(|e| match e {
            TaskEvent::RateLimitWait { limit, .. } => Some(limit.clone()),
            _ => None,
        })
        .unwrap_or_default();
    (started.elapsed(), limit)
}

/// L01: Groq's and OpenAI's `x-ratelimit-reset-*` are Go durations, fractional seconds
/// included (`2m59.56s`, `6m0s`); parsing them as integers or Unix times loses the reset.
#[tokio::test(start_paused = true)]
async fn l01_go_duration_resets_are_read_and_waited_for() {
    let primary = MockServer::start(vec![Reply::new(HttpResponse::case("L01")), ok()]).await;
    let backup = MockServer::start(vec![ok()]).await;
    let data = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(data.path()).unwrap());
    let (waited, limit) = second_task_wait(&config(&primary, &backup, ""), &store).await;
    assert_eq!(limit, "provider_requests_remaining");
    assert!(
        waited >= Duration::from_millis(179_500) && waited <= Duration::from_millis(180_500),
        "2m59.56s: {waited:?}"
    );
    assert_eq!((primary.request_count(), backup.request_count()), (2, 0));
}

/// L02: Anthropic's `anthropic-ratelimit-*-reset` are RFC 3339 times, measured from the
/// response's `Date` (a parser that reads the leading `2026` as seconds waits 34 minutes).
#[tokio::test(start_paused = true)]
async fn l02_rfc3339_resets_are_measured_from_the_date_header() {
    let server = MockServer::start(vec![
        Reply::new(HttpResponse::case("L02")),
        Reply::new(HttpResponse::fixture("anthropic_text")),
    ])
    .await;
    let toml = format!(
        "[act]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n[providers.anthropic]\nbase_url = \"{}\"\n",
        server.url()
    );
    let config =
        ApiConfiguration::from_toml(&toml, "l02.toml", |_| Some("sk-test".into())).unwrap();
    let data = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(data.path()).unwrap());
    let (waited, limit) = second_task_wait(&config, &store).await;
    assert_eq!(limit, "provider_requests_remaining");
    assert!(
        waited >= Duration::from_secs(28) && waited <= Duration::from_secs(30),
        "29 s from Date: {waited:?}"
    );
    assert_eq!(server.request_count(), 2);
}

/// L03: a fallback retried with the rate-limited entry's model id (openclaude#1176 review):
/// the fallback's request carries its own model, and the answer is priced at its model.
#[tokio::test(start_paused = true)]
async fn l03_the_fallback_request_names_the_fallback_model() {
    let primary = MockServer::start(vec![Reply::new(HttpResponse::case("L03"))]).await;
    let backup = MockServer::start(vec![ok()]).await;
    let toml = format!(
        "[act]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n\
         fallbacks = [ {{ provider = \"openai\", model = \"backup-model\", base_url = \"{}/v1\" }} ]\n\
         [providers.anthropic]\nbase_url = \"{}\"\n",
        backup.url(),
        primary.url()
    );
    let config =
        ApiConfiguration::from_toml(&toml, "l03.toml", |_| Some("sk-test".into())).unwrap();
    let data = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(data.path()).unwrap());
    let (status, events) = run_task(&config, &store, FailureDecision::Cancel).await;
    assert!(matches!(status, RequestStatus::Completed), "{status:?}");
    assert_eq!(primary.requests()[0].json()["model"], "claude-sonnet-4-5");
    assert_eq!(backup.requests()[0].json()["model"], "backup-model");
    assert_eq!(
        fallbacks(&events),
        [(
            "anthropic:claude-sonnet-4-5".into(),
            "openai:backup-model".into(),
            "rate_limited".into()
        )]
    );
    // The backup model has no prices: the usage is the backup's (cost unknown), not priced
    // at Sonnet's.
    let cost = events.iter().find_map(|e| match e {
        TaskEvent::Usage { cost_usd, .. } => Some(*cost_usd),
        _ => None,
    });
    assert_eq!(cost, Some(None), "{events:?}");
}

/// L04: a 429 whose `retry-after-ms` is three days (a monthly spend limit, kandev#3811): the
/// entry cools down for the stated time, not 60 s, and the task goes on on the fallback.
#[tokio::test(start_paused = true)]
async fn l04_a_reset_days_away_cools_the_entry_for_days() {
    let primary = MockServer::start(vec![Reply::new(HttpResponse::case("L04")), ok()]).await;
    let backup = MockServer::start(vec![ok()]).await;
    let toml = format!(
        "[act]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n\
         fallbacks = [ {{ provider = \"openai\", model = \"backup-model\", base_url = \"{}/v1\" }} ]\n\
         [providers.anthropic]\nbase_url = \"{}\"\n",
        backup.url(),
        primary.url()
    );
    let config =
        ApiConfiguration::from_toml(&toml, "l04.toml", |_| Some("sk-test".into())).unwrap();
    let data = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(data.path()).unwrap());
    let started = Instant::now();
    let (status, _) = run_task(&config, &store, FailureDecision::Cancel).await;
    assert!(matches!(status, RequestStatus::Completed), "{status:?}");
    assert!(started.elapsed() < Duration::from_secs(1));
    let cooling = store.cooldowns(switchyard_now()).await.unwrap();
    let left = cooling[0].until_ms - switchyard_now();
    assert!(
        (274_578_000..=274_580_000).contains(&left),
        "3 d 4 h 16 min 19 s: {left} ms"
    );
    tokio::time::advance(Duration::from_secs(3600)).await;
    let (status, _) = run_task(&config, &store, FailureDecision::Cancel).await;
    assert!(matches!(status, RequestStatus::Completed));
    assert_eq!((primary.request_count(), backup.request_count()), (1, 2));
}

#[tokio::test(start_paused = true)]
async fn the_last_free_entry_is_retried_with_the_usual_backoff() {
    let primary = MockServer::start(vec![limited("30")]).await;
    let backup = MockServer::start(vec![
        Reply::new(HttpResponse::json(
            500,
            r#"{"error":{"message":"internal error","type":"server_error"}}"#,
        )),
        ok(),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(data.path()).unwrap());
    let started = Instant::now();
    let (status, events) = run_task(
        &config(&primary, &backup, ""),
        &store,
        FailureDecision::Cancel,
    )
    .await;
    assert!(matches!(status, RequestStatus::Completed), "{status:?}");
    // The fallback's 500 is retried after R6.7's 2 s, on the fallback (the primary rests).
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(2) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        TaskEvent::ErrorRetry {
            attempt: 1,
            failed: false,
            ..
        }
    )));
    assert_eq!(fallbacks(&events).len(), 1);
    assert_eq!((primary.request_count(), backup.request_count()), (1, 2));
    // Only the entry that was left is cooling; the one retried is not.
    let cooling = store.cooldowns(switchyard_now()).await.unwrap();
    assert_eq!(cooling.len(), 1);
    assert_eq!(cooling[0].entry.model, "primary-model");
}

#[tokio::test(start_paused = true)]
async fn a_provider_that_times_out_before_content_hands_over_after_its_configured_deadline() {
    // R12.4 with R12.1: `first_content_timeout_seconds` of the provider's section decides how
    // long the first entry gets; its timeout moves the request on.
    let primary = MockServer::start(vec![ok().delay_before(Duration::from_secs(600))]).await;
    let backup = MockServer::start(vec![ok()]).await;
    let data = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(data.path()).unwrap());
    let started = Instant::now();
    let (status, events) = run_task(
        &config(&primary, &backup, "first_content_timeout_seconds = 7\n"),
        &store,
        FailureDecision::Cancel,
    )
    .await;
    assert!(matches!(status, RequestStatus::Completed), "{status:?}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(7) && waited < Duration::from_secs(8),
        "{waited:?}"
    );
    assert_eq!(
        fallbacks(&events)[0].2,
        "timeout",
        "{:?}",
        fallbacks(&events)
    );
    assert_eq!(backup.request_count(), 1);
}
