//! One test per case of `tests/cases/CASES.md` that concerns the request layer, each named
//! after its id. Every case is replayed byte for byte by the testkit's mock server through the
//! real HTTP path (`build_api_handler` → `attempt_api_request` / `run_request` / `run_turn`),
//! with tokio's clock paused so that retry waits take no real time and the gaps between the
//! requests the server saw can be asserted exactly. Where CASES.md and SPEC.md differ, the
//! tests assert SPEC.md.
//!
//! Not here: cases already covered elsewhere (C03, C03b, C04, C05, C08, C16, C33 in
//! `attempt.rs`; C31, C34 in `turn.rs`), and cases whose body is in a wire format this build does
//! not speak yet (C07 OpenAI Responses, C24/C24b Gemini, C26 Ollama native): they carry no HTTP
//! error body to classify.

use std::time::Duration;

use super::{Recorded, conversation, merge_chunk_runs, merge_event_runs, retries, text_of};
use crate::task::CancelReason;
use crate::task::TaskEvent;
use crate::task::attempt::{ApiRequestContext, attempt_api_request};
use crate::task::conversation::Conversation;
use crate::task::mcp_wait::NoMcpServers;
use crate::task::request::{RequestOutcome, RequestStatus, consume_stream, run_request};
use crate::task::turn::{TurnOutcome, run_turn};
use crate::task::{AttemptSettings, FailureDecision, FixedDecision};
use futures_util::StreamExt;
use serde_json::json;
use switchyard_api::{
    ApiConfiguration, ApiError, ApiHandler, ApiStreamChunk, CancellationToken, ContentBlock,
    ErrorKind, Message, Mode, RequestOptions, Role, Usage, build_api_handler,
};
use switchyard_testkit::{HttpResponse, MockServer, Reply, Split, case_replies};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

/// A distinctive key: it must never show up in an error, a `Debug` or an event (C38).
const KEY: &str = "sk-SWYD-c38-distinctive-key-5f1e9b7c3a2d";
/// A part of [`KEY`] that no redaction scheme should leave visible.
const KEY_TAIL: &str = "distinctive-key-5f1e9b7c3a2d";

const SONNET: &str = "claude-sonnet-4-5-20250929";
/// Max output 8192 tokens: a thinking budget above it must be clipped (SPEC R3.3).
const SONNET_37: &str = "claude-3-7-sonnet-20250219";

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn config(provider: &str, model: &str, base_url: &str, extra: &str) -> ApiConfiguration {
    let text = format!(
        "[act]\nprovider = \"{provider}\"\nmodel = \"{model}\"\n{extra}\n[providers.\"{provider}\"]\nbase_url = \"{base_url}\"\n"
    );
    ApiConfiguration::from_toml(&text, "cases.toml", |_| Some(KEY.to_owned())).unwrap()
}

/// A handler for `provider` / `model` pointed at `server`. Anthropic takes the bare URL; the
/// OpenAI Chat family (`openai`, `openrouter`, `deepseek`, …) takes `<mock>/v1`.
fn handler(provider: &str, model: &str, server: &MockServer, extra: &str) -> Box<dyn ApiHandler> {
    build_api_handler(
        &config(provider, model, &base_url(provider, server), extra),
        Mode::Act,
    )
    .unwrap()
}

fn base_url(provider: &str, server: &MockServer) -> String {
    if provider == "anthropic" {
        server.url()
    } else {
        format!("{}/v1", server.url())
    }
}

/// Every item of one request through `h`: system prompt `SYSTEM`, the user message `text`, no
/// tools, default options.
async fn request_items(h: &dyn ApiHandler, text: &str) -> Vec<Result<ApiStreamChunk, ApiError>> {
    h.create_message(
        "SYSTEM",
        &[Message::user_text(text)],
        &[],
        RequestOptions::default(),
    )
    .collect()
    .await
}

fn prompt() -> (String, Vec<switchyard_api::ToolSpec>) {
    ("SYSTEM".to_owned(), Vec::new())
}

fn context<'a>(
    h: &'a dyn ApiHandler,
    decider: &'a FixedDecision,
    system_prompt: &'a (dyn Fn() -> (String, Vec<switchyard_api::ToolSpec>) + Send + Sync),
    cancel: CancellationToken,
) -> ApiRequestContext<'a> {
    ApiRequestContext {
        handler: h,
        mcp_hub: &NoMcpServers,
        decider,
        system_prompt,
        previous_request_total_tokens: 0,
        request_index: 1,
        settings: AttemptSettings::default(),
        limits: None,
        cancel,
    }
}

const CANCEL: FixedDecision = FixedDecision(FailureDecision::Cancel);

/// What `attempt_api_request` did: the stream's items (errors kept) or its error, the events,
/// the deleted ranges it reported and the conversation afterwards.
struct Attempt {
    result: Result<Vec<Result<ApiStreamChunk, ApiError>>, ApiError>,
    events: Vec<TaskEvent>,
    ranges: Vec<Option<(usize, usize)>>,
    conversation: Conversation,
}

async fn attempt(h: &dyn ApiHandler, conv: Conversation) -> Attempt {
    attempt_cancelled_by(h, conv, CancellationToken::new()).await
}

/// [`attempt`] with its requests cancelled by `cancel`.
async fn attempt_cancelled_by(
    h: &dyn ApiHandler,
    mut conv: Conversation,
    cancel: CancellationToken,
) -> Attempt {
    let ctx = context(h, &CANCEL, &prompt, cancel);
    let mut seen = Recorded::default();
    let result = match attempt_api_request(&ctx, &mut conv, &mut seen).await {
        Ok(stream) => Ok(stream.collect().await),
        Err(e) => Err(e),
    };
    Attempt {
        result,
        events: seen.events,
        ranges: seen.ranges,
        conversation: conv,
    }
}

async fn turn(h: &dyn ApiHandler, conv: &mut Conversation) -> (TurnOutcome, Vec<TaskEvent>) {
    turn_cancelled_by(h, conv, CancellationToken::new()).await
}

/// [`turn`] with its requests cancelled by `cancel`.
async fn turn_cancelled_by(
    h: &dyn ApiHandler,
    conv: &mut Conversation,
    cancel: CancellationToken,
) -> (TurnOutcome, Vec<TaskEvent>) {
    let ctx = context(h, &CANCEL, &prompt, cancel);
    let mut events = Vec::new();
    let mut index = 0;
    let outcome = run_turn(&ctx, conv, &mut index, &mut |e: TaskEvent| events.push(e)).await;
    (outcome, events)
}

async fn request(h: &dyn ApiHandler) -> (RequestOutcome, Vec<TaskEvent>) {
    let mut events = Vec::new();
    let messages = [Message::user_text("hi")];
    let outcome = run_request(
        h,
        "SYSTEM",
        &messages,
        &[],
        RequestOptions::default(),
        &mut |e: TaskEvent| {
            events.push(e);
        },
    )
    .await;
    (outcome, events)
}

/// Serves `case` once and returns the single error the provider's stream yields, read
/// straight from `create_message` (no task-level recovery).
async fn http_error(case: &str, provider: &str, model: &str) -> ApiError {
    let server = MockServer::start(vec![Reply::new(HttpResponse::case(case))]).await;
    let h = handler(provider, model, &server, "");
    let items = request_items(h.as_ref(), "hi").await;
    match <[_; 1]>::try_from(items) {
        Ok([Err(e)]) => e,
        other => panic!("{case} via {provider}: expected exactly one error, got {other:?}"),
    }
}

/// The time between consecutive requests the server saw (virtual under a paused clock).
fn gaps(server: &MockServer) -> Vec<Duration> {
    server
        .requests()
        .windows(2)
        .map(|w| w[1].at - w[0].at)
        .collect()
}

fn secs(list: &[u64]) -> Vec<Duration> {
    list.iter().map(|s| Duration::from_secs(*s)).collect()
}

fn count(events: &[TaskEvent], pred: impl Fn(&TaskEvent) -> bool) -> usize {
    events.iter().filter(|e| pred(e)).count()
}

fn ok_chunks(items: Vec<Result<ApiStreamChunk, ApiError>>) -> Vec<ApiStreamChunk> {
    items
        .into_iter()
        .map(|i| i.unwrap_or_else(|e| panic!("unexpected error item: {e}")))
        .collect()
}

fn text(t: &str) -> ApiStreamChunk {
    ApiStreamChunk::text(t)
}

fn reasoning(t: &str) -> ApiStreamChunk {
    ApiStreamChunk::reasoning(t)
}

fn text_event(t: &str) -> TaskEvent {
    TaskEvent::Text { text: t.to_owned() }
}

fn reasoning_event(t: &str) -> TaskEvent {
    TaskEvent::Reasoning { text: t.to_owned() }
}

/// The number of messages in the JSON body of request `i`.
fn sent_messages(server: &MockServer, i: usize) -> usize {
    server.requests()[i].json()["messages"]
        .as_array()
        .unwrap()
        .len()
}

/// SPEC R6.5 for one overflow body: the error is `ContextWindowExceeded`; with an 11-message
/// history `attempt_api_request` truncates exactly once with keep = quarter (n = 9 after the
/// first two messages, remove floor(27/8)·2 = 6 → [2, 7]), reports the range before resending,
/// and retries at once (no delay, no `error_retry`); the stored history is never cut.
async fn assert_overflow_truncates_once(case: &str, provider: &str, model: &str) {
    let e = http_error(case, provider, model).await;
    assert_eq!(e.kind, ErrorKind::ContextWindowExceeded, "{case}: {e}");

    let success = if provider == "anthropic" {
        HttpResponse::fixture("anthropic_text")
    } else {
        HttpResponse::fixture("openai_chat_text")
    };
    let server = MockServer::start(vec![
        Reply::new(HttpResponse::case(case)),
        Reply::new(success),
    ])
    .await;
    let h = handler(provider, model, &server, "");
    let out = attempt(h.as_ref(), conversation(11)).await;
    let items = out
        .result
        .unwrap_or_else(|e| panic!("{case}: no recovery: {e}"));
    let chunks = ok_chunks(items);
    assert!(!text_of(&chunks).is_empty(), "{case}: {chunks:?}");

    assert_eq!(server.request_count(), 2, "{case}");
    assert_eq!(
        gaps(&server),
        vec![Duration::ZERO],
        "{case}: retried at once"
    );
    assert_eq!(
        out.ranges,
        vec![Some((2, 7))],
        "{case}: one quarter truncation"
    );
    assert_eq!(
        out.conversation.conversation_history_deleted_range,
        Some((2, 7)),
        "{case}"
    );
    assert_eq!(
        out.conversation.api_conversation_history.len(),
        11,
        "{case}: the stored history is never cut"
    );
    assert!(retries(&out.events).is_empty(), "{case}: {:?}", out.events);
    assert_eq!(
        count(&out.events, |e| matches!(e, TaskEvent::ApiReqRetried)),
        1,
        "{case}: {:?}",
        out.events
    );
    assert_eq!(
        count(&out.events, |e| matches!(e, TaskEvent::ApiReqFailed { .. })),
        0,
        "{case}: {:?}",
        out.events
    );
    // The resent request hides messages 2..=7: 5 of 11 remain (plus the system message for
    // the OpenAI Chat family, which sends it as a message).
    let system = usize::from(provider != "anthropic");
    assert_eq!(sent_messages(&server, 0), 11 + system, "{case}");
    assert_eq!(sent_messages(&server, 1), 5 + system, "{case}");
}

/// A 400 that is not an overflow (C18b, C19c, C20, C20b, C23b, C37): `InvalidRequest`, and
/// never history truncation. SPEC R7.4: the provider rejected the request itself, so sending it
/// again cannot help: one request, no automatic retry, and the user (here: the policy) is
/// asked at once. Returns the server for extra checks.
async fn assert_invalid_request_not_truncated(
    case: &str,
    provider: &str,
    model: &str,
    extra: &str,
) -> MockServer {
    let e = http_error(case, provider, model).await;
    assert_eq!(e.kind, ErrorKind::InvalidRequest, "{case}: {e}");
    assert_eq!(e.status, Some(400), "{case}");

    let server = MockServer::start(vec![Reply::new(HttpResponse::case(case))]).await;
    let h = handler(provider, model, &server, extra);
    let out = attempt(h.as_ref(), conversation(11)).await;
    let err = match out.result {
        Err(e) => e,
        Ok(items) => panic!("{case}: expected an error, got {items:?}"),
    };
    assert_eq!(err.kind, ErrorKind::InvalidRequest, "{case}: {err}");
    assert!(out.ranges.is_empty(), "{case}: truncated: {:?}", out.ranges);
    assert_eq!(
        out.conversation.conversation_history_deleted_range, None,
        "{case}"
    );
    assert_eq!(server.request_count(), 1, "{case}");
    assert!(retries(&out.events).is_empty(), "{case}: {:?}", out.events);
    assert!(
        matches!(out.events.last(), Some(TaskEvent::ApiReqFailed { kind, .. }) if kind == "invalid_request"),
        "{case}: {:?}",
        out.events
    );
    // The request sent the whole history: nothing was hidden.
    let system = usize::from(provider != "anthropic");
    assert_eq!(sent_messages(&server, 0), 11 + system, "{case}");
    server
}

/// The body offset where the event carrying `needle` starts (`event: …` line).
fn event_start(body: &[u8], needle: &[u8]) -> usize {
    let at = body
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap_or_else(|| panic!("{:?} not in body", String::from_utf8_lossy(needle)));
    let marker = b"event: ";
    body[..at]
        .windows(marker.len())
        .rposition(|w| w == marker)
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// C01 — SSE comment / keep-alive lines
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn c01_comment_lines_are_ignored_wherever_they_appear() {
    for split in [Split::Whole, Split::Every(1), Split::Every(7)] {
        let server = MockServer::start(vec![
            Reply::new(HttpResponse::case("C01")).split(split.clone()),
        ])
        .await;
        let h = handler("openrouter", "anthropic/claude-sonnet-4", &server, "");
        let items = request_items(h.as_ref(), "hi").await;
        assert_eq!(
            ok_chunks(items),
            vec![
                text("Hel"),
                text("lo"),
                ApiStreamChunk::Usage(Usage {
                    input_tokens: 12,
                    output_tokens: 2,
                    ..Usage::default()
                }),
            ],
            "{split:?}"
        );
        assert_eq!(server.request_count(), 1);
    }
}

// ---------------------------------------------------------------------------------------------
// C02 — OpenRouter error object inside a 200 stream
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn c02_openrouter_error_after_content_is_surfaced_with_the_partial_not_replayed() {
    let server = MockServer::start(case_replies("C02")).await;
    let h = handler("openrouter", "anthropic/claude-sonnet-4", &server, "");
    let ctx = context(h.as_ref(), &CANCEL, &prompt, CancellationToken::new());
    let mut conv = conversation(1);
    let mut attempt_events = Vec::new();
    let started = Instant::now();
    let stream = attempt_api_request(&ctx, &mut conv, &mut |e: TaskEvent| {
        attempt_events.push(e);
    })
    .await
    .expect("the stream starts with content: no pre-content failure");
    let mut events = Vec::new();
    let out = consume_stream(
        h.as_ref(),
        stream,
        started,
        "SYSTEM",
        &conv.api_conversation_history,
        &mut |e: TaskEvent| events.push(e),
    )
    .await;

    let RequestStatus::Failed(e) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(e.kind, ErrorKind::Server, "{e}");
    assert_eq!(
        e.status,
        Some(502),
        "OpenRouter's code 502 stands in for the status"
    );
    // The failure is the caller's to report (the request loop says it once, `error`).
    assert_eq!(events, vec![text_event("Let me look")]);
    assert_eq!(
        out.assistant_message.content,
        vec![ContentBlock::Text {
            text: "Let me look".into()
        }],
        "the partial answer is kept"
    );
    assert_eq!(
        server.request_count(),
        1,
        "never replayed into the consumer"
    );
    assert!(attempt_events.is_empty(), "{attempt_events:?}");
}

#[tokio::test(start_paused = true)]
async fn c02b_error_as_the_first_event_is_retried_after_2_s_then_ok() {
    let server = MockServer::start(case_replies("C02b")).await;
    let h = handler("openrouter", "anthropic/claude-sonnet-4", &server, "");
    let out = attempt(h.as_ref(), conversation(1)).await;
    let chunks = ok_chunks(out.result.unwrap());
    assert_eq!(chunks, vec![text("OK")]);
    assert_eq!(server.request_count(), 2);
    assert_eq!(gaps(&server), secs(&[2]));
    assert_eq!(retries(&out.events), vec![(1, 2.0, false)]);
    assert!(
        matches!(out.events.iter().find(|e| matches!(e, TaskEvent::ErrorRetry { .. })).unwrap(), TaskEvent::ErrorRetry { error_message, .. } if error_message.contains("server error")),
        "{:?}",
        out.events
    );
}

// ---------------------------------------------------------------------------------------------
// C05b — 429 without retry-after: the wait comes from the exhausted buckets' resets
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn c05b_rate_limit_wait_derived_from_the_ratelimit_reset_headers() {
    let server = MockServer::start(vec![
        Reply::new(HttpResponse::case("C05b")),
        Reply::new(HttpResponse::case("C03ok")),
    ])
    .await;
    let h = handler("anthropic", SONNET, &server, "");
    let out = attempt(h.as_ref(), conversation(1)).await;
    assert_eq!(text_of(&ok_chunks(out.result.unwrap())), "Done.");
    assert_eq!(server.request_count(), 2);
    // max(reset_i − Date) over the exhausted buckets = 7 s, ± 10 % jitter (SPEC R5.2).
    let gap = gaps(&server)[0];
    assert!(
        gap >= Duration::from_millis(6_300) && gap <= Duration::from_millis(7_700),
        "{gap:?}"
    );
    let [
        TaskEvent::RetryStatus {
            attempt: 1,
            max_attempts: 3,
            delay_seconds,
            ..
        },
    ] = out.events.as_slice()
    else {
        panic!("{:?}", out.events)
    };
    assert!(
        (delay_seconds - gap.as_secs_f64()).abs() < 0.01,
        "{delay_seconds} vs {gap:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// C09 — quota / daily-limit 429s are never retried
// ---------------------------------------------------------------------------------------------

async fn assert_quota_not_retried(case: &str, provider: &str, model: &str) -> ApiError {
    let server = MockServer::start(vec![Reply::new(HttpResponse::case(case))]).await;
    let h = handler(provider, model, &server, "");
    let out = attempt(h.as_ref(), conversation(1)).await;
    let err = match out.result {
        Err(e) => e,
        Ok(items) => panic!("{case}: {items:?}"),
    };
    assert_eq!(err.kind, ErrorKind::QuotaExceeded, "{case}: {err}");
    assert_eq!(err.status, Some(429), "{case}");
    assert_eq!(server.request_count(), 1, "{case}: retried");
    assert!(retries(&out.events).is_empty(), "{case}: {:?}", out.events);
    assert_eq!(
        count(&out.events, |e| matches!(e, TaskEvent::RetryStatus { .. })),
        0,
        "{case}: provider-level retry: {:?}",
        out.events
    );
    assert_eq!(
        out.events,
        vec![TaskEvent::ApiReqFailed {
            kind: "quota_exceeded".into(),
            message: err.to_string(),
        }],
        "{case}"
    );
    err
}

#[tokio::test(start_paused = true)]
async fn c09_daily_quota_429_is_quota_exceeded_and_never_retried() {
    let err = assert_quota_not_retried("C09", "openrouter", "anthropic/claude-sonnet-4").await;
    // X-RateLimit-Reset is 24 h after the response's Date.
    assert!(err.to_string().contains("resets in about 24 h"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn c09b_five_hour_usage_quota_is_quota_exceeded_and_names_the_reset() {
    let err = assert_quota_not_retried("C09b", "openai", "gpt-4o").await;
    assert!(
        err.to_string()
            .contains("It will reset at 2026-01-01 05:00:00 +0000 UTC"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// C10–C12, C15 — context-window errors: one quarter truncation, immediate retry
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn c10_anthropic_prompt_too_long_truncates_once_and_retries_at_once() {
    assert_overflow_truncates_once("C10", "anthropic", SONNET).await;
}

#[tokio::test(start_paused = true)]
async fn c10b_anthropic_413_context_window_truncates_once_and_retries_at_once() {
    assert_overflow_truncates_once("C10b", "anthropic", SONNET).await;
}

#[tokio::test(start_paused = true)]
async fn c10c_anthropic_input_plus_max_tokens_truncates_once_and_retries_at_once() {
    assert_overflow_truncates_once("C10c", "anthropic", SONNET).await;
}

#[tokio::test(start_paused = true)]
async fn c11_deepseek_maximum_context_length_truncates_once_and_retries_at_once() {
    assert_overflow_truncates_once("C11", "deepseek", "deepseek-chat").await;
}

#[tokio::test(start_paused = true)]
async fn c11b_openai_context_length_exceeded_truncates_once_and_retries_at_once() {
    assert_overflow_truncates_once("C11b", "openai", "gpt-4o").await;
}

#[tokio::test(start_paused = true)]
async fn c11c_openrouter_endpoint_context_length_truncates_once_and_retries_at_once() {
    assert_overflow_truncates_once("C11c", "openrouter", "anthropic/claude-sonnet-4").await;
}

#[tokio::test(start_paused = true)]
async fn c12_output_reservation_overflow_truncates_once_and_never_loops() {
    assert_overflow_truncates_once("C12", "openrouter", "anthropic/claude-sonnet-4").await;
    // Never a loop: an overflow that keeps coming back is truncated once automatically, then
    // the user is asked (SPEC R6.6).
    let server = MockServer::start(vec![Reply::new(HttpResponse::case("C12"))]).await;
    let h = handler("openrouter", "anthropic/claude-sonnet-4", &server, "");
    let out = attempt(h.as_ref(), conversation(11)).await;
    let err = out.result.err().unwrap();
    assert_eq!(err.kind, ErrorKind::ContextWindowExceeded);
    assert_eq!(
        err.message,
        "context window exceeded; retry to truncate the conversation further"
    );
    assert_eq!(server.request_count(), 2);
    assert_eq!(out.ranges, vec![Some((2, 7))]);
}

#[tokio::test(start_paused = true)]
async fn c15_bedrock_input_too_long_truncates_once_and_retries_at_once() {
    // Bedrock is not built yet; its AWS-shaped 400 goes through the Anthropic HTTP path.
    assert_overflow_truncates_once("C15", "anthropic", SONNET).await;
}

// ---------------------------------------------------------------------------------------------
// C17 — expired credentials fail fast
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn c17_expired_credentials_are_auth_one_request_no_retry() {
    let server = MockServer::start(case_replies("C17")).await;
    let h = handler("openai", "gpt-4o", &server, "");
    let out = attempt(h.as_ref(), conversation(1)).await;
    let err = out.result.err().unwrap();
    assert_eq!(err.kind, ErrorKind::Auth, "{err}");
    assert_eq!(err.status, Some(403));
    assert_eq!(server.request_count(), 1);
    assert!(retries(&out.events).is_empty(), "{:?}", out.events);
    assert!(
        matches!(out.events.as_slice(), [TaskEvent::ApiReqFailed { kind, .. }] if kind == "auth"),
        "{:?}",
        out.events
    );
    assert!(err.to_string().contains("refresh the credentials"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// C18 — DeepSeek reasoning_content
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn c18_deepseek_reasoning_content_is_reasoning_and_null_content_is_not_text() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::case("C18"))]).await;
    let h = handler("deepseek", "deepseek-reasoner", &server, "");
    let items = request_items(h.as_ref(), "list files").await;
    // prompt_tokens 20 with 0 cache hits: 20 cache misses, which DeepSeek's usage rule reports
    // as cache writes (the reference prices them so), leaving 0 input tokens (SPEC R1.3).
    let usage = Usage {
        input_tokens: 0,
        output_tokens: 9,
        cache_write_tokens: Some(20),
        cache_read_tokens: Some(0),
        thoughts_tokens: Some(6),
        ..Usage::default()
    };
    assert_eq!(
        merge_chunk_runs(ok_chunks(items)),
        vec![
            reasoning("The user wants a file list."),
            text("Sure."),
            ApiStreamChunk::Usage(usage),
        ]
    );

    let (out, events) = request(h.as_ref()).await;
    assert_eq!(out.status, RequestStatus::Completed);
    assert_eq!(
        merge_event_runs(&events)[..2],
        [
            reasoning_event("The user wants a file list."),
            text_event("Sure."),
        ]
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, TaskEvent::Text { text } if text.contains("null"))),
        "{events:?}"
    );
    assert_eq!(
        out.assistant_message.content,
        vec![
            ContentBlock::Thinking {
                thinking: "The user wants a file list.".into(),
                signature: String::new(),
            },
            ContentBlock::Text {
                text: "Sure.".into()
            },
        ]
    );
    assert_eq!(
        (
            out.usage.input_tokens,
            out.usage.cache_write_tokens,
            out.usage.output_tokens
        ),
        (0, 20, 9)
    );
    assert_eq!(server.request_count(), 2);
}

#[tokio::test(start_paused = true)]
async fn c18b_missing_reasoning_content_400_is_invalid_request_never_truncation() {
    assert_invalid_request_not_truncated("C18b", "deepseek", "deepseek-reasoner", "").await;
}

// ---------------------------------------------------------------------------------------------
// C19 — thinking blocks with their own signatures, redacted thinking, a tool call
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn c19_each_thinking_block_keeps_its_own_signature_and_the_tool_call_is_whole() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::case("C19"))]).await;
    let h = handler("anthropic", SONNET, &server, "");
    let (out, events) = request(h.as_ref()).await;
    assert_eq!(out.status, RequestStatus::Completed, "{events:?}");
    assert_eq!(
        events[..4],
        [
            reasoning_event("I should read "),
            reasoning_event("the file first."),
            reasoning_event("Then summarise."),
            TaskEvent::ToolCall {
                id: "toolu_PLACEHOLDER01".into(),
                name: "read_file".into(),
                arguments: "{\"path\": \"src/main.rs\"}".into(),
            },
        ],
        "{events:?}"
    );
    assert!(
        matches!(
            events[4],
            TaskEvent::Usage {
                input_tokens: 2048,
                output_tokens: 87,
                estimated: false,
                ..
            }
        ),
        "{events:?}"
    );
    assert_eq!(events.len(), 5, "{events:?}");
    assert_eq!(out.assistant_message.role, Role::Assistant);
    assert_eq!(
        out.assistant_message.content,
        vec![
            ContentBlock::Thinking {
                thinking: "I should read the file first.".into(),
                signature: "SIG_BLOCK0_PLACEHOLDER==".into(),
            },
            ContentBlock::ToolUse {
                id: "toolu_PLACEHOLDER01".into(),
                name: "read_file".into(),
                input: json!({"path": "src/main.rs"}),
                signature: None,
            },
            ContentBlock::RedactedThinking {
                data: "REDACTED_PLACEHOLDER_BLOB".into(),
            },
            ContentBlock::Thinking {
                thinking: "Then summarise.".into(),
                signature: "SIG_BLOCK3_PLACEHOLDER==".into(),
            },
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn c19c_invalid_thinking_signature_400_is_invalid_request_never_truncation() {
    assert_invalid_request_not_truncated("C19c", "anthropic", SONNET, "").await;
}

// ---------------------------------------------------------------------------------------------
// C20 — thinking budget vs max_tokens
// ---------------------------------------------------------------------------------------------

/// The configured budget (200000) is above the model's max output (128,000 for Claude 3.7
/// Sonnet in the reference's table): every request the server saw carried max_tokens − 1
/// (SPEC R3.3).
fn assert_budget_clipped(server: &MockServer) {
    for (i, req) in server.requests().iter().enumerate() {
        let body = req.json();
        assert_eq!(body["max_tokens"], 128_000, "request {i}");
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 127_999}),
            "request {i}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn c20_budget_not_below_max_tokens_400_is_invalid_request_and_the_budget_is_clipped() {
    let server = assert_invalid_request_not_truncated(
        "C20",
        "anthropic",
        SONNET_37,
        "thinking_budget_tokens = 200000",
    )
    .await;
    assert_budget_clipped(&server);
}

#[tokio::test(start_paused = true)]
async fn c20b_budget_below_1024_400_is_invalid_request_and_the_budget_is_clipped() {
    let server = assert_invalid_request_not_truncated(
        "C20b",
        "anthropic",
        SONNET_37,
        "thinking_budget_tokens = 200000",
    )
    .await;
    assert_budget_clipped(&server);
}

// ---------------------------------------------------------------------------------------------
// C22 — empty / truncated tool arguments
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn c22_empty_tool_arguments_become_an_empty_object() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::case("C22"))]).await;
    let h = handler("openai", "test-model", &server, "");
    let (out, events) = request(h.as_ref()).await;
    assert_eq!(out.status, RequestStatus::Completed, "{events:?}");
    assert_eq!(
        events[0],
        TaskEvent::ToolCall {
            id: "call_PLACEHOLDER4".into(),
            name: "list_windows".into(),
            arguments: "{}".into(),
        }
    );
    assert_eq!(
        out.assistant_message.content,
        vec![ContentBlock::ToolUse {
            id: "call_PLACEHOLDER4".into(),
            name: "list_windows".into(),
            input: json!({}),
            signature: None,
        }]
    );
}

#[tokio::test(start_paused = true)]
async fn c22b_a_tool_call_cut_by_max_tokens_is_never_reported_as_complete() {
    // The tool_use block never gets its content_block_stop and the message stops with
    // stop_reason max_tokens: the arguments are half a JSON object. A careful user expects it
    // never to be handed over as a call to execute, nor stored as one.
    let server = MockServer::start(vec![Reply::new(HttpResponse::case("C22b"))]).await;
    let h = handler("anthropic", SONNET, &server, "");
    let (out, events) = request(h.as_ref()).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, TaskEvent::ToolCall { name, .. } if name == "write_to_file")),
        "an incomplete tool call was reported as complete: {events:?}"
    );
    assert!(
        !out.assistant_message
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolUse { .. })),
        "an incomplete tool call was assembled: {:?}",
        out.assistant_message
    );
    assert_ne!(out.status, RequestStatus::Completed, "{events:?}");
}

// ---------------------------------------------------------------------------------------------
// C23 — empty assistant turn
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn c23_empty_response_is_an_error_retried_2_4_8_and_never_stored() {
    let server = MockServer::start(case_replies("C23")).await;
    let h = handler("deepseek", "deepseek-chat", &server, "");
    let mut conv = Conversation {
        api_conversation_history: vec![Message::user_text("list the files")],
        conversation_history_deleted_range: None,
    };
    let (outcome, events) = turn(h.as_ref(), &mut conv).await;
    let RequestStatus::Failed(err) = &outcome.status else {
        panic!("{:?}", outcome.status)
    };
    assert_eq!(
        err.message, "the provider returned an empty response",
        "{err}"
    );
    assert_eq!(server.request_count(), 4);
    assert_eq!(gaps(&server), secs(&[2, 4, 8]));
    assert_eq!(
        retries(&events),
        vec![
            (1, 2.0, false),
            (2, 4.0, false),
            (3, 8.0, false),
            (3, 0.0, true)
        ]
    );
    assert_eq!(
        count(&events, |e| matches!(e, TaskEvent::ApiReqFailed { .. })),
        1
    );
    assert!(
        matches!(events.last(), Some(TaskEvent::Error { message, .. }) if message.contains("the provider returned an empty response")),
        "{events:?}"
    );
    assert_eq!(
        conv.api_conversation_history,
        vec![Message::user_text("list the files")],
        "no empty assistant message is stored"
    );
}

#[tokio::test(start_paused = true)]
async fn c23b_parts_must_not_be_empty_400_is_invalid_request_never_truncation() {
    // A Gemini body; Gemini is not built yet, so it goes through the OpenAI Chat HTTP path.
    assert_invalid_request_not_truncated("C23b", "openai", "gpt-4o", "").await;
}

// ---------------------------------------------------------------------------------------------
// C31b / C31c — bare error objects in a chat stream
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn c31b_bare_server_error_as_the_first_event_is_retried_after_2_s_then_ok() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::case("C31b"))]).await;
    let h = handler("openai", "gpt-4o", &server, "");
    let items = request_items(h.as_ref(), "hi").await;
    let [Err(e)] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert_eq!((e.kind, e.status), (ErrorKind::Server, Some(500)), "{e}");

    let server = MockServer::start(case_replies("C31b")).await;
    let h = handler("openai", "gpt-4o", &server, "");
    let out = attempt(h.as_ref(), conversation(1)).await;
    assert_eq!(ok_chunks(out.result.unwrap()), vec![text("OK")]);
    assert_eq!(server.request_count(), 2);
    assert_eq!(gaps(&server), secs(&[2]));
    assert_eq!(retries(&out.events), vec![(1, 2.0, false)]);
}

#[tokio::test(start_paused = true)]
async fn c31c_vllm_error_object_after_content_is_a_server_error_with_the_partial() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::case("C31c"))]).await;
    let h = handler("openai", "local-vllm", &server, "");
    let items = request_items(h.as_ref(), "hi").await;
    let [Ok(first), Err(e)] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert_eq!(first, &text("Work"));
    // `{"object":"error","message":"Internal server error",…,"code":500}`: the provider's
    // own error, not "the stream ended before the response was complete".
    assert_eq!(e.kind, ErrorKind::Server, "{e}");
    assert!(e.message.contains("Internal server error"), "{e}");
    assert_eq!(server.request_count(), 1);
}

// ---------------------------------------------------------------------------------------------
// C33b — headers, then silence
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn c33b_headers_then_silence_times_out_at_the_first_content_deadline_then_retries() {
    let mut replies = case_replies("C33b");
    replies.push(Reply::new(HttpResponse::case("C02c")));
    let server = MockServer::start(replies).await;
    let h = handler("openai", "gpt-4o", &server, "");
    let out = attempt(h.as_ref(), conversation(1)).await;
    assert_eq!(ok_chunks(out.result.unwrap()), vec![text("OK")]);
    assert_eq!(server.request_count(), 2);
    // 120 s first-content deadline, then the 2 s retry delay.
    assert_eq!(gaps(&server), secs(&[122]));
    assert_eq!(retries(&out.events), vec![(1, 2.0, false)]);
    assert!(
        matches!(out.events.iter().find(|e| matches!(e, TaskEvent::ErrorRetry { .. })).unwrap(), TaskEvent::ErrorRetry { error_message, .. } if error_message.contains("took too long")),
        "{:?}",
        out.events
    );
}

// ---------------------------------------------------------------------------------------------
// C37 — cancellation mid-stream
// ---------------------------------------------------------------------------------------------

/// C19 served up to the `main.rs"}` fragment of the tool call, then silent for 60 s.
async fn c19_stalled_mid_tool_call() -> MockServer {
    let resp = HttpResponse::case("C19");
    let at = event_start(&resp.body, b"main.rs");
    MockServer::start(vec![Reply::new(resp).stall_at(at, Duration::from_secs(60))]).await
}

/// The complete block the C19 stream has produced when it stalls mid tool call.
fn first_thinking_block() -> ContentBlock {
    ContentBlock::Thinking {
        thinking: "I should read the file first.".into(),
        signature: "SIG_BLOCK0_PLACEHOLDER==".into(),
    }
}

#[tokio::test(start_paused = true)]
async fn c37_abort_mid_tool_call_yields_cancelled_and_keeps_only_complete_blocks() {
    let server = c19_stalled_mid_tool_call().await;
    let h = handler("anthropic", SONNET, &server, "");
    let messages = [Message::user_text("read main.rs")];
    let mut events = Vec::new();
    let mut on_event = |e: TaskEvent| events.push(e);
    let cancel = CancellationToken::new();
    let options = RequestOptions::with_cancel(cancel.clone());
    let run = run_request(h.as_ref(), "SYSTEM", &messages, &[], options, &mut on_event);
    let abort = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        cancel.cancel();
    };
    let (out, ()) = tokio::join!(run, abort);

    let RequestStatus::Failed(e) = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(e.kind, ErrorKind::Cancelled, "{e}");
    assert!(
        out.duration < Duration::from_secs(2),
        "the abort ended the stream at once: {:?}",
        out.duration
    );
    assert_eq!(
        events[..2],
        [
            reasoning_event("I should read "),
            reasoning_event("the file first.")
        ]
    );
    assert!(
        matches!(events.last(), Some(TaskEvent::Error { kind, .. }) if kind == "cancelled"),
        "{events:?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, TaskEvent::ToolCall { .. })),
        "the interrupted tool call was reported as a call: {events:?}"
    );
    assert_eq!(
        out.assistant_message.content,
        vec![first_thinking_block()],
        "only complete blocks are kept"
    );
    assert_eq!(server.request_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn c37_an_aborted_turn_is_not_retried_and_stores_only_complete_blocks() {
    let server = c19_stalled_mid_tool_call().await;
    let h = handler("anthropic", SONNET, &server, "");
    let mut conv = Conversation {
        api_conversation_history: vec![Message::user_text("read main.rs")],
        conversation_history_deleted_range: None,
    };
    let cancel = CancellationToken::new();
    let run = turn_cancelled_by(h.as_ref(), &mut conv, cancel.clone());
    let abort = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        cancel.cancel();
    };
    let ((outcome, events), ()) = tokio::join!(run, abort);

    assert!(
        matches!(outcome.status, RequestStatus::Failed(ref e) if e.kind == ErrorKind::Cancelled),
        "{:?}",
        outcome.status
    );
    assert_eq!(
        server.request_count(),
        1,
        "a user cancellation is never retried"
    );
    assert_eq!(outcome.requests, 1);
    assert!(retries(&events).is_empty(), "{events:?}");
    // Recorded as the user's cancellation, not as a failed stream (SPEC R9.5).
    assert!(
        !events.iter().any(|e| matches!(
            e,
            TaskEvent::ApiReqFinished {
                cancel_reason: Some(CancelReason::StreamingFailed),
                ..
            }
        )),
        "{events:?}"
    );
    // What was received is kept (SPEC R9.5), but only whole blocks: no tool_use without its
    // arguments (and so without a result) that would make every later request fail (C37.http).
    let history = &conv.api_conversation_history;
    assert_eq!(history.len(), 2, "{history:?}");
    assert_eq!(history[1].role, Role::Assistant);
    assert_eq!(history[1].content[0], first_thinking_block());
    assert!(
        !history[1]
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolUse { .. })),
        "{history:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn c37_an_abort_before_content_is_returned_as_cancelled_not_retried() {
    // Headers, then silence (C33b): abort after 1 s, well before the first-content deadline.
    let server = MockServer::start(case_replies("C33b")).await;
    let h = handler("openai", "gpt-4o", &server, "");
    let cancel = CancellationToken::new();
    let run = attempt_cancelled_by(h.as_ref(), conversation(1), cancel.clone());
    let abort = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        cancel.cancel();
    };
    let (out, ()) = tokio::join!(run, abort);
    let err = match out.result {
        Err(e) => e,
        Ok(items) => panic!("{items:?}"),
    };
    assert_eq!(err.kind, ErrorKind::Cancelled, "{err}");
    assert_eq!(
        server.request_count(),
        1,
        "a user cancellation is never retried"
    );
    assert!(retries(&out.events).is_empty(), "{:?}", out.events);
}

#[tokio::test(start_paused = true)]
async fn c37_dropping_the_stream_mid_way_closes_the_connection() {
    // A raw server, so that the connection's end can be observed: it sends C19 up to the
    // middle of the tool call, then waits for the client to close.
    let resp = HttpResponse::case("C19");
    let cut = event_start(&resp.body, b"main.rs");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        let mut piece = [0u8; 4096];
        let head_end = loop {
            let n = sock.read(&mut piece).await.unwrap();
            assert!(n > 0, "the client closed before sending its request");
            buf.extend_from_slice(&piece[..n]);
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p + 4;
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        while buf.len() < head_end + length {
            let n = sock.read(&mut piece).await.unwrap();
            assert!(n > 0);
            buf.extend_from_slice(&piece[..n]);
        }
        sock.write_all(&resp.head).await.unwrap();
        sock.write_all(&resp.body[..cut]).await.unwrap();
        sock.flush().await.unwrap();
        // Wait for the client's FIN (or reset).
        loop {
            match sock.read(&mut piece).await {
                Ok(0) | Err(_) => return Instant::now(),
                Ok(_) => {}
            }
        }
    });

    let h = build_api_handler(&config("anthropic", SONNET, &url, ""), Mode::Act).unwrap();
    let mut stream = h.create_message(
        "SYSTEM",
        &[Message::user_text("read main.rs")],
        &[],
        RequestOptions::default(),
    );
    loop {
        let chunk = stream
            .next()
            .await
            .expect("the stream ended early")
            .expect("no error before the drop");
        if matches!(&chunk, ApiStreamChunk::ToolCalls { arguments_delta, .. } if arguments_delta.contains("src/"))
        {
            break;
        }
    }
    let dropped = Instant::now();
    drop(stream);
    let closed = tokio::time::timeout(Duration::from_millis(100), server)
        .await
        .expect("the connection was still open 100 ms after the stream was dropped")
        .unwrap();
    assert!(closed - dropped <= Duration::from_millis(100));
}

#[tokio::test(start_paused = true)]
async fn c37_orphan_tool_use_400_is_invalid_request_never_truncation() {
    assert_invalid_request_not_truncated("C37", "anthropic", SONNET, "").await;
}

// ---------------------------------------------------------------------------------------------
// C38 — keys never leak
// ---------------------------------------------------------------------------------------------

fn assert_no_key(label: &str, what: &str, text: &str) {
    assert!(
        !text.contains(KEY) && !text.contains(KEY_TAIL),
        "{label}: the key leaked into {what}: {text}"
    );
}

#[tokio::test(start_paused = true)]
async fn c38_the_configured_key_never_appears_in_errors_or_events() {
    // The Gemini 404 itself, through both HTTP paths this build has.
    for provider in ["openai", "anthropic"] {
        let model = if provider == "openai" {
            "gpt-4o"
        } else {
            SONNET
        };
        let e = http_error("C38", provider, model).await;
        assert_eq!(
            (e.kind, e.status),
            (ErrorKind::InvalidRequest, Some(404)),
            "{e}"
        );
        assert_no_key("C38", "Display", &e.to_string());
        assert_no_key("C38", "Debug", &format!("{e:?}"));
    }

    let router = ("openrouter", "anthropic/claude-sonnet-4");
    let deepseek = ("deepseek", "deepseek-chat");
    let openai = ("openai", "gpt-4o");
    let anthropic = ("anthropic", SONNET);
    let runs = [
        ("C02", router),
        ("C02b", router),
        ("C05", anthropic),
        ("C09", router),
        ("C09b", openai),
        ("C10", anthropic),
        ("C10b", anthropic),
        ("C10c", anthropic),
        ("C11", deepseek),
        ("C11b", openai),
        ("C11c", router),
        ("C12", router),
        ("C15", anthropic),
        ("C16", anthropic),
        ("C17", openai),
        ("C18b", ("deepseek", "deepseek-reasoner")),
        ("C19c", anthropic),
        ("C20", anthropic),
        ("C20b", anthropic),
        ("C23", deepseek),
        ("C23b", openai),
        ("C31b", openai),
        ("C31c", openai),
        ("C37", anthropic),
        ("C38", openai),
    ];
    for (case, (provider, model)) in runs {
        let server = MockServer::start(case_replies(case)).await;
        let cfg = config(provider, model, &base_url(provider, &server), "");
        assert_no_key(case, "the configuration's Debug", &format!("{cfg:?}"));
        let h = build_api_handler(&cfg, Mode::Act).unwrap();
        let mut conv = conversation(11);
        let (outcome, events) = turn(h.as_ref(), &mut conv).await;

        // The key was configured and sent: the checks below are not vacuous.
        let sent = &server.requests()[0];
        let carried = sent.header("x-api-key") == Some(KEY)
            || sent.header("authorization") == Some(format!("Bearer {KEY}").as_str());
        assert!(carried, "{case}: the request did not carry the key");

        let mut failures = 0;
        if let RequestStatus::Failed(e) = &outcome.status {
            failures += 1;
            assert_no_key(case, "the error's Display", &e.to_string());
            assert_no_key(case, "the error's Debug", &format!("{e:?}"));
            assert_no_key(
                case,
                "the serialized error",
                &serde_json::to_string(e).unwrap(),
            );
        }
        assert_no_key(case, "the outcome's Debug", &format!("{outcome:?}"));
        assert_no_key(case, "the conversation", &format!("{conv:?}"));
        for e in &events {
            assert_no_key(case, "an event", &serde_json::to_string(e).unwrap());
            assert_no_key(case, "an event's Debug", &format!("{e:?}"));
        }
        // Every case but the three that recover (C02b, C05, C31b) ends in an error, and
        // every case produced at least one error-carrying event.
        let error_events = count(&events, |e| {
            matches!(
                e,
                TaskEvent::Error { .. }
                    | TaskEvent::ErrorRetry { .. }
                    | TaskEvent::ApiReqFailed { .. }
                    | TaskEvent::RetryStatus { .. }
                    | TaskEvent::ApiReqFinished { .. }
            )
        });
        assert!(error_events > 0, "{case}: {events:?}");
        if !matches!(case, "C02b" | "C05" | "C31b") {
            assert_eq!(failures, 1, "{case}: {:?}", outcome.status);
        }
    }
}
