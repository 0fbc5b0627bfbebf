//! `attempt_api_request` over the real HTTP path: the testkit server replays the cases of
//! `tests/cases` and fixtures, tokio's clock is paused so the 2 s / 4 s / 8 s waits take no
//! real time, and each test checks the requests the server saw, the delays between them, the
//! events recorded and the chunks the consumer got (SPEC R6).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use super::{Recorded, conversation, handler, request_context, retries, text_of};
use crate::task::TaskEvent;
use crate::task::attempt::attempt_api_request;
use crate::task::conversation::Conversation;
use crate::task::mcp_wait::{McpHub, NoMcpServers};
use crate::task::{BoxFuture, FailureDecider, FailureDecision, FixedDecision};
use futures_util::StreamExt;
use switchyard_api::{ApiError, ApiHandler, ApiStreamChunk, ErrorKind};
use switchyard_testkit::{HttpResponse, MockServer, Reply, case_replies};

fn anthropic(url: &str) -> Box<dyn ApiHandler> {
    handler("anthropic", "claude-sonnet-4-5-20250929", url)
}

struct Outcome {
    result: Result<Vec<ApiStreamChunk>, ApiError>,
    events: Vec<TaskEvent>,
    ranges: Vec<Option<(usize, usize)>>,
    conversation: Conversation,
}

async fn run_with(
    server: &MockServer,
    conv: Conversation,
    decider: &dyn FailureDecider,
    hub: &dyn McpHub,
) -> Outcome {
    let handler = anthropic(&server.url());
    run_handler(handler.as_ref(), conv, decider, hub).await
}

async fn run_handler(
    handler: &dyn ApiHandler,
    mut conv: Conversation,
    decider: &dyn FailureDecider,
    hub: &dyn McpHub,
) -> Outcome {
    let prompt = || ("SYSTEM".to_owned(), Vec::new());
    let ctx = request_context(handler, hub, decider, &prompt);
    let mut seen = Recorded::default();
    let result = match attempt_api_request(&ctx, &mut conv, &mut seen).await {
        Ok(stream) => {
            let items: Vec<_> = stream.collect().await;
            Ok(items.into_iter().map(|i| i.unwrap()).collect())
        }
        Err(e) => Err(e),
    };
    Outcome {
        result,
        events: seen.events,
        ranges: seen.ranges,
        conversation: conv,
    }
}

async fn run(server: &MockServer, conv: Conversation) -> Outcome {
    run_with(
        server,
        conv,
        &FixedDecision(FailureDecision::Cancel),
        &NoMcpServers,
    )
    .await
}

/// Seconds between consecutive requests the server saw.
fn gaps(server: &MockServer) -> Vec<u64> {
    let reqs = server.requests();
    reqs.windows(2)
        .map(|w| (w[1].at - w[0].at).as_secs())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn c04_overloaded_529_retries_after_2_then_4_seconds() {
    let server = MockServer::start(case_replies("C04")).await;
    let out = run(&server, conversation(1)).await;
    let chunks = out.result.unwrap();
    assert_eq!(text_of(&chunks), "Done.");
    assert_eq!(server.request_count(), 3);
    assert_eq!(gaps(&server), vec![2, 4]);
    assert_eq!(retries(&out.events), vec![(1, 2.0, false), (2, 4.0, false)]);
    let retried = out
        .events
        .iter()
        .filter(|e| matches!(e, TaskEvent::ApiReqRetried))
        .count();
    assert_eq!(retried, 2);
}

#[tokio::test(start_paused = true)]
async fn c03_overloaded_after_usage_only_prefix_is_a_clean_pre_stream_failure() {
    let server = MockServer::start(case_replies("C03")).await;
    let out = run(&server, conversation(1)).await;
    let chunks = out.result.unwrap();
    assert_eq!(text_of(&chunks), "Done.");
    assert_eq!(server.request_count(), 2);
    assert_eq!(gaps(&server), vec![2]);
    // Usage comes only from the successful attempt: the failed one's was dropped with it.
    let usages = chunks
        .iter()
        .filter(|c| matches!(c, ApiStreamChunk::Usage(_)))
        .count();
    assert_eq!(usages, 1);
}

#[tokio::test(start_paused = true)]
async fn c03b_error_after_text_is_passed_through_not_retried() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::case("C03b"))]).await;
    let handler = anthropic(&server.url());
    let prompt = || ("S".to_owned(), Vec::new());
    let ctx = request_context(
        handler.as_ref(),
        &NoMcpServers,
        &FixedDecision(FailureDecision::Retry),
        &prompt,
    );
    let mut conv = conversation(1);
    let mut events = Vec::new();
    let stream = attempt_api_request(&ctx, &mut conv, &mut |e: TaskEvent| events.push(e))
        .await
        .unwrap();
    let items: Vec<_> = stream.collect().await;
    assert!(matches!(items.last(), Some(Err(e)) if e.kind == ErrorKind::Overloaded));
    let text: String = items
        .iter()
        .filter_map(|i| match i {
            Ok(ApiStreamChunk::Text { text, .. }) => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "I'll start by reading");
    assert_eq!(
        server.request_count(),
        1,
        "never replayed into the same consumer"
    );
    assert!(events.is_empty());
}

#[tokio::test(start_paused = true)]
async fn c08_persistent_502_waits_2_4_8_then_asks_and_cancel_surfaces_it() {
    let server = MockServer::start(case_replies("C08")).await;
    let out = run(&server, conversation(1)).await;
    let err = out.result.err().unwrap();
    assert_eq!(err.kind, ErrorKind::Server);
    assert_eq!(err.status, Some(502));
    assert_eq!(server.request_count(), 4);
    assert_eq!(gaps(&server), vec![2, 4, 8]);
    assert_eq!(
        retries(&out.events),
        vec![
            (1, 2.0, false),
            (2, 4.0, false),
            (3, 8.0, false),
            (3, 0.0, true)
        ]
    );
    assert!(
        matches!(out.events.last(), Some(TaskEvent::ApiReqFailed { kind, .. }) if kind == "server")
    );
}

/// Retries once when asked, then cancels.
struct RetryOnce(AtomicBool);

impl FailureDecider for RetryOnce {
    fn api_req_failed<'a>(&'a self, _e: &'a ApiError) -> BoxFuture<'a, FailureDecision> {
        let first = !self.0.swap(true, Ordering::SeqCst);
        Box::pin(async move {
            if first {
                FailureDecision::Retry
            } else {
                FailureDecision::Cancel
            }
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_user_retry_resets_the_counter_for_three_fresh_retries() {
    let server = MockServer::start(case_replies("C08")).await;
    let decider = RetryOnce(AtomicBool::new(false));
    let out = run_with(&server, conversation(1), &decider, &NoMcpServers).await;
    assert!(out.result.is_err());
    assert_eq!(server.request_count(), 8);
    assert_eq!(gaps(&server), vec![2, 4, 8, 0, 2, 4, 8]);
    let failed = out
        .events
        .iter()
        .filter(|e| matches!(e, TaskEvent::ApiReqFailed { .. }))
        .count();
    assert_eq!(failed, 2);
}

#[tokio::test(start_paused = true)]
async fn c05_retry_after_is_honoured_by_the_provider_level_retry() {
    let server = MockServer::start(case_replies("C05")).await;
    let out = run(&server, conversation(1)).await;
    assert_eq!(text_of(&out.result.unwrap()), "Done.");
    // The provider level retries the 429 after its retry-after: 7 s, jittered only upward,
    // and reports it (R5.3); the task level never saw a failure.
    let reqs = server.requests();
    let gap = reqs[1].at - reqs[0].at;
    assert!(
        gap >= Duration::from_secs(7) && gap <= Duration::from_millis(7_700),
        "{gap:?}"
    );
    assert!(
        matches!(
            out.events.as_slice(),
            [TaskEvent::RetryStatus {
                attempt: 1,
                max_attempts: 3,
                ..
            }]
        ),
        "{:?}",
        out.events
    );
}

#[tokio::test(start_paused = true)]
async fn never_retried_kinds_make_one_request_and_ask_at_once() {
    for (reply, kind) in [
        (
            HttpResponse::fixture("openai_insufficient_quota"),
            ErrorKind::QuotaExceeded,
        ),
        (HttpResponse::case("C17"), ErrorKind::Auth),
    ] {
        let server = MockServer::start(vec![Reply::new(reply)]).await;
        let out = run(&server, conversation(1)).await;
        assert_eq!(out.result.err().unwrap().kind, kind);
        assert_eq!(server.request_count(), 1);
        assert!(retries(&out.events).is_empty(), "{:?}", out.events);
        assert!(matches!(
            out.events.last(),
            Some(TaskEvent::ApiReqFailed { .. })
        ));
    }
}

#[tokio::test(start_paused = true)]
async fn context_overflow_truncates_once_persists_the_range_first_and_retries_at_once() {
    let replies = vec![
        Reply::new(HttpResponse::fixture("anthropic_prompt_too_long")),
        Reply::new(HttpResponse::fixture("anthropic_text")),
    ];
    let server = MockServer::start(replies).await;
    let out = run(&server, conversation(11)).await;
    assert!(out.result.is_ok());
    assert_eq!(server.request_count(), 2);
    assert_eq!(gaps(&server), vec![0]);
    // 11 messages, quarter: n = 9 after the first two, remove floor(27/8)*2 = 6 → [2, 7].
    assert_eq!(out.ranges, vec![Some((2, 7))]);
    assert_eq!(
        out.conversation.conversation_history_deleted_range,
        Some((2, 7))
    );
    assert_eq!(
        out.conversation.api_conversation_history.len(),
        11,
        "the stored history is never cut"
    );
    let sent = server.requests()[1].json();
    let first_sent = server.requests()[0].json();
    assert!(
        sent["messages"].as_array().unwrap().len()
            < first_sent["messages"].as_array().unwrap().len()
    );
    assert!(retries(&out.events).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_second_overflow_asks_with_the_truncate_further_message() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture(
        "anthropic_prompt_too_long",
    ))])
    .await;
    let out = run(&server, conversation(11)).await;
    let err = out.result.err().unwrap();
    assert_eq!(err.kind, ErrorKind::ContextWindowExceeded);
    assert_eq!(
        err.message,
        "context window exceeded; retry to truncate the conversation further"
    );
    assert_eq!(server.request_count(), 2);

    // Three messages: nothing left to cut, the original error is shown.
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture(
        "anthropic_prompt_too_long",
    ))])
    .await;
    let out = run(&server, conversation(3)).await;
    let err = out.result.err().unwrap();
    assert!(err.message.contains("prompt is too long"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn c33_a_stream_silent_after_headers_times_out_and_is_retried() {
    let server = MockServer::start(case_replies("C33")).await;
    let h = handler("openai", "test-model", &format!("{}/v1", server.url()));
    let decider = FixedDecision(FailureDecision::Cancel);
    let out = run_handler(h.as_ref(), conversation(1), &decider, &NoMcpServers).await;
    assert!(out.result.is_ok(), "{:?}", out.events);
    assert_eq!(server.request_count(), 2);
    // 120 s first-content deadline, then the 2 s retry delay.
    assert_eq!(gaps(&server), vec![122]);
    let (_, _, failed) = retries(&out.events)[0];
    assert!(!failed);
}

/// A hub whose servers never finish connecting.
struct Hanging(AtomicU32);

impl McpHub for Hanging {
    fn is_connecting(&self) -> bool {
        self.0.fetch_add(1, Ordering::SeqCst);
        true
    }
}

#[tokio::test(start_paused = true)]
async fn a_hanging_mcp_server_delays_the_request_at_most_ten_seconds() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let start = tokio::time::Instant::now();
    let hub = Hanging(AtomicU32::new(0));
    let out = run_with(
        &server,
        conversation(1),
        &FixedDecision(FailureDecision::Cancel),
        &hub,
    )
    .await;
    assert!(out.result.is_ok());
    let waited = server.requests()[0].at - start;
    assert!(
        waited >= Duration::from_secs(10) && waited < Duration::from_secs(11),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_whole_step_reruns_after_a_retry_with_a_fresh_system_prompt() {
    let server = MockServer::start(case_replies("C04")).await;
    let handler = anthropic(&server.url());
    let calls = Mutex::new(0u32);
    let prompt = || {
        let mut n = calls.lock().unwrap();
        *n += 1;
        (format!("SYSTEM {n}"), Vec::new())
    };
    let ctx = request_context(
        handler.as_ref(),
        &NoMcpServers,
        &FixedDecision(FailureDecision::Cancel),
        &prompt,
    );
    let mut conv = conversation(1);
    let _ = attempt_api_request(&ctx, &mut conv, &mut |_: TaskEvent| {})
        .await
        .unwrap();
    let systems: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.json()["system"][0]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(systems, vec!["SYSTEM 1", "SYSTEM 2", "SYSTEM 3"]);
}

#[tokio::test(start_paused = true)]
async fn an_oversized_conversation_is_truncated_before_the_first_request() {
    // 20 messages of 50 kB each ≈ 250k estimated tokens > 160k allowed for a 200k window.
    let mut conv = conversation(20);
    for m in &mut conv.api_conversation_history {
        m.content = vec![switchyard_api::ContentBlock::Text {
            text: "x".repeat(50_000),
        }];
    }
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let out = run(&server, conv).await;
    assert!(out.result.is_ok());
    assert_eq!(server.request_count(), 1);
    // Quarter (estimate/2 > allowed is false here: 125k < 160k → half): n = 18, remove 8 → (2, 9).
    assert_eq!(out.ranges, vec![Some((2, 9))]);
    let sent = server.requests()[0].json();
    assert!(sent["messages"].as_array().unwrap().len() < 20);
}

#[tokio::test(start_paused = true)]
async fn c16_persistent_throttling_is_retried_at_both_levels_then_surfaced_never_truncated() {
    // Bedrock-style 429 ThrottlingException on every request. Each task-level attempt makes 3
    // provider-level requests (SPEC R5.1); the task retries 3 times after 2/4/8 s (R6.7).
    let server = MockServer::start(vec![Reply::new(HttpResponse::case("C16"))]).await;
    let out = run(&server, conversation(11)).await;
    let err = out.result.err().unwrap();
    assert_eq!(err.kind, ErrorKind::RateLimited);
    assert_eq!(server.request_count(), 12);
    assert!(
        out.ranges.is_empty(),
        "throttling is never treated as an overflow"
    );
    let task_retries: Vec<_> = retries(&out.events).into_iter().filter(|r| !r.2).collect();
    assert_eq!(
        task_retries.iter().map(|r| r.1).collect::<Vec<_>>(),
        vec![2.0, 4.0, 8.0]
    );
    let provider_retries = out
        .events
        .iter()
        .filter(|e| matches!(e, TaskEvent::RetryStatus { .. }))
        .count();
    assert_eq!(provider_retries, 8);
}

#[tokio::test(start_paused = true)]
async fn r6_8_each_automatic_retry_marks_the_request_streaming_failed_with_the_serialized_error() {
    let server = MockServer::start(case_replies("C04")).await;
    let out = run(&server, conversation(1)).await;
    assert!(out.result.is_ok());
    let marks: Vec<serde_json::Value> = out
        .events
        .iter()
        .filter_map(|e| match e {
            TaskEvent::ApiReqFinished {
                cancel_reason: Some(crate::task::CancelReason::StreamingFailed),
                streaming_failed_message: Some(json),
                ..
            } => Some(serde_json::from_str(json).unwrap()),
            _ => None,
        })
        .collect();
    assert_eq!(marks.len(), 2);
    assert_eq!(marks[0]["kind"], "overloaded");
    assert_eq!(marks[0]["status"], 529);
    assert_eq!(marks[0]["provider_id"], "anthropic");
    assert_eq!(marks[0]["model_id"], "claude-sonnet-4-5-20250929");
    assert!(!marks[0].to_string().contains("sk-test"));
}

#[tokio::test(start_paused = true)]
async fn the_models_tokenizer_decides_near_the_limit_where_bytes_over_four_undercounts() {
    // 20 messages of 17,500 digits: 350 kB, 87.5k tokens at 4 bytes a token — under the 98k
    // allowed for a 128k window — but about 117k tokens for OpenAI's o200k tokenizer, which
    // cuts numbers into pieces of at most three digits (SPEC R8.2 Improve, DESIGN.md).
    let digits = || {
        let mut conv = conversation(20);
        for m in &mut conv.api_conversation_history {
            m.content = vec![switchyard_api::ContentBlock::Text {
                text: "1234567890".repeat(1_750),
            }];
        }
        conv
    };
    for (model, truncated) in [("gpt-4o", true), ("some-local-model", false)] {
        let server =
            MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
        let h = handler("openai", model, &server.url());
        let out = run_handler(
            h.as_ref(),
            digits(),
            &FixedDecision(FailureDecision::Cancel),
            &NoMcpServers,
        )
        .await;
        assert!(out.result.is_ok(), "{model}");
        assert_eq!(h.get_model().info.context_window, 128_000, "{model}");
        assert_eq!(
            !out.ranges.is_empty(),
            truncated,
            "{model}: {:?}",
            out.ranges
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Issue 12 item 5: errors that waiting cannot fix fail at once (SPEC R7.4, R6.5)
// ---------------------------------------------------------------------------------------------

/// A case of `tests/cases` and how to reach it: `(id, provider, model, base path)`.
type Case = (&'static str, &'static str, &'static str, &'static str);

const H13: Case = ("H13", "lmstudio", "google/gemma-4-26b-a4b", "/v1");
const H14B: Case = ("H14b", "openai-native", "gpt-4o-mini", "/v1");

/// Runs `case` (its `meta.json` sequence) through `attempt_api_request`, its base path
/// appended to the server's URL.
async fn run_case(
    (id, provider, model, base): Case,
    conv: Conversation,
    decider: &dyn FailureDecider,
) -> (Outcome, MockServer) {
    let server = MockServer::start(case_replies(id)).await;
    let h = handler(provider, model, &format!("{}{base}", server.url()));
    let out = run_handler(h.as_ref(), conv, decider, &NoMcpServers).await;
    (out, server)
}

#[tokio::test(start_paused = true)]
async fn an_overflow_that_truncation_cannot_shrink_is_not_sent_again() {
    // H13 (LM Studio's n_keep > n_ctx) on a one-message conversation: nothing to hide, so the
    // identical request is not resent (R6.5 Improve); the error says what to change.
    let cancel = FixedDecision(FailureDecision::Cancel);
    let (out, server) = run_case(H13, conversation(1), &cancel).await;
    let e = out.result.unwrap_err();
    assert_eq!(e.kind, ErrorKind::ContextWindowExceeded, "{e}");
    assert!(e.permanent, "{e}");
    assert!(e.to_string().contains("nothing is left to truncate"), "{e}");
    assert!(
        e.to_string().contains("4096"),
        "the provider's words stay: {e}"
    );
    assert_eq!(server.request_count(), 1);
    assert!(out.ranges.is_empty());
    assert!(
        !out.events
            .iter()
            .any(|e| matches!(e, TaskEvent::ApiReqRetried)),
        "{:?}",
        out.events
    );
    assert!(retries(&out.events).is_empty(), "{:?}", out.events);
    // Near miss: with history to hide, the same error truncates once and retries at once.
    let server = MockServer::start(vec![
        Reply::new(HttpResponse::case("H13")),
        Reply::new(HttpResponse::case("C02c")),
    ])
    .await;
    let h = handler(H13.1, H13.2, &format!("{}{}", server.url(), H13.3));
    let out = run_handler(h.as_ref(), conversation(11), &cancel, &NoMcpServers).await;
    assert_eq!(text_of(&out.result.unwrap()), "OK");
    assert_eq!(gaps(&server), vec![0]);
    assert_eq!(out.ranges.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn failures_that_waiting_cannot_fix_are_sent_once() {
    let cancel = FixedDecision(FailureDecision::Cancel);
    for (id, provider, model, base, kind) in [
        // The request alone is over the per-minute budget (H04, H05).
        (
            "H04",
            "openai-native",
            "gpt-4o",
            "/v1",
            ErrorKind::RateLimited,
        ),
        (
            "H05",
            "groq",
            "llama-3.3-70b-versatile",
            "/v1",
            ErrorKind::RateLimited,
        ),
        // A 404 the provider explains, a model too big for the server, a web page for a stream.
        (
            "H15",
            "openrouter",
            "deepseek/deepseek-r1:free",
            "/v1",
            ErrorKind::InvalidRequest,
        ),
        ("H30", "ollama", "deepseek-r1:8b", "", ErrorKind::Server),
        ("H18", "openai", "gpt-4o", "/v1", ErrorKind::Decode),
    ] {
        let (out, server) = run_case((id, provider, model, base), conversation(1), &cancel).await;
        let e = out.result.unwrap_err();
        assert_eq!(e.kind, kind, "{id}: {e}");
        assert_eq!(server.request_count(), 1, "{id}: {:?}", out.events);
        assert!(retries(&out.events).is_empty(), "{id}: {:?}", out.events);
        assert!(
            matches!(out.events.last(), Some(TaskEvent::ApiReqFailed { .. })),
            "{id}: {:?}",
            out.events
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_wait_longer_than_the_cap_is_named_and_waited_in_full_when_the_user_retries() {
    // H14b: "Please try again in 7m12s" (432 s, past the 60 s cap). Not retried on its own: no
    // 60 s slices each spending a request.
    let cancel = FixedDecision(FailureDecision::Cancel);
    let (out, server) = run_case(H14B, conversation(1), &cancel).await;
    let e = out.result.unwrap_err();
    assert_eq!(e.kind, ErrorKind::RateLimited);
    assert!(e.to_string().contains("about 7 min"), "{e}");
    assert_eq!(server.request_count(), 1);
    assert!(retries(&out.events).is_empty(), "{:?}", out.events);
    // The user says retry: the wait the provider asked for, in full, then the answer.
    let decider = RetryOnce(AtomicBool::new(false));
    let (out, server) = run_case(H14B, conversation(1), &decider).await;
    assert_eq!(text_of(&out.result.unwrap()), "OK");
    let reqs = server.requests();
    let gap = reqs[1].at - reqs[0].at;
    assert!(gap >= Duration::from_secs(432), "{gap:?}");
    assert_eq!(retries(&out.events), vec![(1, 432.0, false)]);
}

// ---------------------------------------------------------------------------------------------
// Issue 26: a prompt that cannot fit the model's context window is not sent (SPEC R8.2)
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_prompt_that_cannot_fit_the_window_is_not_sent_and_the_sizes_are_named() {
    // One message of 600,000 bytes: 150,000 tokens at 4 bytes a token, over the 128,000 of a
    // model the catalogue does not know; nothing earlier can be hidden.
    let server =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
    let h = handler(
        "openai",
        "some-local-model",
        &format!("{}/v1", server.url()),
    );
    let mut conv = conversation(1);
    conv.api_conversation_history[0] = switchyard_api::Message::user_text("word ".repeat(120_000));
    let out = run_handler(
        h.as_ref(),
        conv,
        &FixedDecision(FailureDecision::Retry),
        &NoMcpServers,
    )
    .await;
    let e = out.result.unwrap_err();
    assert_eq!(e.kind, ErrorKind::ContextWindowExceeded, "{e}");
    assert!(e.permanent && !e.is_retryable(), "{e}");
    let text = e.to_string();
    assert!(
        text.starts_with("the request was not sent: it is about 15"),
        "{text}"
    );
    assert!(text.contains("context window of 128000 tokens"), "{text}");
    assert!(text.contains("some-local-model"), "{text}");
    assert!(!text.contains("says"), "Switchyard's own sentence: {text}");
    assert_eq!(server.request_count(), 0);
}
