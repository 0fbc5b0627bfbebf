//! The request loop of a turn (SPEC R9) over the real HTTP path with a paused clock: a stream
//! that fails after content keeps its partial answer, marked, and is retried after 2 s, 4 s,
//! 8 s without tearing anything down; quota errors are not retried.

use super::{handler, request_context};
use crate::task::CancelReason;
use crate::task::TaskEvent;
use crate::task::conversation::Conversation;
use crate::task::mcp_wait::NoMcpServers;
use crate::task::request::RequestStatus;
use crate::task::turn::{CONTINUE_AFTER_INTERRUPTION, INTERRUPTED_MARKER, TurnOutcome, run_turn};
use crate::task::{FailureDecision, FixedDecision};
use switchyard_api::{
    ApiConfiguration, ApiHandler, ContentBlock, ErrorKind, Message, Mode, Role, build_api_handler,
};
use switchyard_testkit::{HttpResponse, MockServer, Reply, case_replies};

async fn turn(h: &dyn ApiHandler, conv: &mut Conversation) -> (TurnOutcome, Vec<TaskEvent>) {
    let prompt = || ("SYSTEM".to_owned(), Vec::new());
    let ctx = request_context(
        h,
        &NoMcpServers,
        &FixedDecision(FailureDecision::Cancel),
        &prompt,
    );
    let mut events = Vec::new();
    let mut index = 0;
    let outcome = run_turn(&ctx, conv, &mut index, &mut |e: TaskEvent| events.push(e)).await;
    (outcome, events)
}

fn one_user_message() -> Conversation {
    Conversation {
        api_conversation_history: vec![Message::user_text("Write hello in Python.")],
        conversation_history_deleted_range: None,
    }
}

fn texts(events: &[TaskEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            TaskEvent::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn c34_a_stream_reset_after_text_keeps_the_partial_and_continues_after_2_s() {
    let server = MockServer::start(case_replies("C34")).await;
    let h = handler("anthropic", "claude-sonnet-4-5-20250929", &server.url());
    let mut conv = one_user_message();
    let (outcome, events) = turn(h.as_ref(), &mut conv).await;
    assert!(
        matches!(outcome.status, RequestStatus::Completed),
        "{events:?}"
    );
    assert_eq!(outcome.requests, 2);
    assert_eq!(server.request_count(), 2);
    let reqs = server.requests();
    assert_eq!((reqs[1].at - reqs[0].at).as_secs(), 2);

    // The consumer saw the partial once, then the new response: nothing replayed.
    let seen = texts(&events);
    assert_eq!(seen[0], "def hello():");
    assert_eq!(
        seen.iter().filter(|t| t.as_str() == "def hello():").count(),
        1
    );
    assert!(events.iter().any(|e| matches!(
        e,
        TaskEvent::ApiReqFinished {
            request_index: 1,
            cancel_reason: Some(CancelReason::StreamingFailed),
            ..
        }
    )));

    // History: the partial answer marked, a continue request, then the full answer.
    let h = &conv.api_conversation_history;
    assert_eq!(h.len(), 4);
    assert_eq!(h[1].role, Role::Assistant);
    assert_eq!(
        h[1].content,
        vec![
            ContentBlock::Text {
                text: "def hello():".into()
            },
            ContentBlock::Text {
                text: INTERRUPTED_MARKER.into()
            },
        ]
    );
    assert_eq!(h[2], Message::user_text(CONTINUE_AFTER_INTERRUPTION));
    assert_eq!(h[3].role, Role::Assistant);
    // The second request carried the partial answer and the continue request.
    let sent = reqs[1].json();
    assert_eq!(sent["messages"].as_array().unwrap().len(), 3);
    // Usage comes from the completed request: a stream that fails before Anthropic's
    // message_delta reports none (tests/fixtures README, rule 6).
    assert_eq!(outcome.usage.input_tokens, 2048);
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_keeps_failing_after_content_is_retried_three_times_then_fails() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture(
        "anthropic_error_midstream",
    ))])
    .await;
    let h = handler("anthropic", "claude-sonnet-4-5-20250929", &server.url());
    let mut conv = one_user_message();
    let (outcome, events) = turn(h.as_ref(), &mut conv).await;
    assert!(
        matches!(outcome.status, RequestStatus::Failed(ref e) if e.kind == ErrorKind::Overloaded)
    );
    assert_eq!(server.request_count(), 4);
    let reqs = server.requests();
    let gaps: Vec<u64> = reqs
        .windows(2)
        .map(|w| (w[1].at - w[0].at).as_secs())
        .collect();
    assert_eq!(gaps, vec![2, 4, 8]);
    let started: Vec<u32> = events
        .iter()
        .filter_map(|e| match e {
            TaskEvent::ApiReqStarted { request_index } => Some(*request_index),
            _ => None,
        })
        .collect();
    assert_eq!(started, vec![1, 2, 3, 4]);
    // Four partial answers, each marked, with a continue request between them.
    assert_eq!(conv.api_conversation_history.len(), 1 + 4 + 3);
}

#[tokio::test(start_paused = true)]
async fn c31_a_stream_cut_without_finish_is_an_interruption_not_a_success() {
    let mut replies = case_replies("C31");
    replies.push(Reply::new(HttpResponse::fixture("openai_chat_text")));
    let server = MockServer::start(replies).await;
    let h = handler("openai", "test-model", &format!("{}/v1", server.url()));
    let mut conv = one_user_message();
    let (outcome, events) = turn(h.as_ref(), &mut conv).await;
    assert!(
        matches!(outcome.status, RequestStatus::Completed),
        "{events:?}"
    );
    assert_eq!(server.request_count(), 2);
    assert_eq!(texts(&events)[0], "Partial answer");
    let marked = &conv.api_conversation_history[1];
    assert_eq!(
        marked.content.last(),
        Some(&ContentBlock::Text {
            text: INTERRUPTED_MARKER.into()
        })
    );
}

#[tokio::test(start_paused = true)]
async fn a_quota_error_after_content_is_not_retried() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\
                data: {\"error\":{\"code\":402,\"message\":\"Insufficient credits\"},\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"error\"}]}\n\n";
    let server = MockServer::start(vec![Reply::new(HttpResponse::sse(body))]).await;
    let h = handler(
        "openrouter",
        "openai/gpt-4o",
        &format!("{}/v1", server.url()),
    );
    let mut conv = one_user_message();
    let (outcome, _) = turn(h.as_ref(), &mut conv).await;
    assert!(
        matches!(outcome.status, RequestStatus::Failed(ref e) if e.kind == ErrorKind::QuotaExceeded)
    );
    assert_eq!(server.request_count(), 1);
    assert_eq!(
        conv.api_conversation_history.len(),
        2,
        "the partial answer is kept"
    );
}

// ---------------------------------------------------------------------------------------------
// Issue 12: an answer cut off by the context window, and failures that leave nothing to keep
// ---------------------------------------------------------------------------------------------

fn bedrock_handler(url: &str) -> Box<dyn ApiHandler> {
    let text = format!(
        "[act]\nprovider = \"bedrock\"\nmodel = \"us.anthropic.claude-sonnet-4-5-20250929-v1:0\"\n[providers.bedrock]\nbase_url = \"{url}\"\nregion = \"us-east-1\"\n"
    );
    let config = ApiConfiguration::from_toml(&text, "t.toml", |_| Some("sk-test".into())).unwrap();
    build_api_handler(&config, Mode::Act).unwrap()
}

#[tokio::test(start_paused = true)]
async fn h01_an_answer_that_fills_the_context_window_stops_when_nothing_can_be_hidden() {
    let server = MockServer::start(case_replies("H01")).await;
    let h = handler("anthropic", "claude-sonnet-4-5-20250929", &server.url());
    let mut conv = one_user_message();
    let (outcome, events) = turn(h.as_ref(), &mut conv).await;
    let RequestStatus::Failed(e) = &outcome.status else {
        panic!("{events:?}")
    };
    assert_eq!(e.kind, ErrorKind::ContextWindowExceeded);
    assert!(e.to_string().contains("nothing is left to truncate"), "{e}");
    assert_eq!(server.request_count(), 1);
    // No 2/4/8 s retry: waiting cannot shrink the conversation.
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, TaskEvent::ErrorRetry { .. })),
        "{events:?}"
    );
    // The partial answer is kept, marked; the usage was reported; the error said once.
    let last = conv.api_conversation_history.last().unwrap();
    assert_eq!(last.role, Role::Assistant);
    assert!(
        matches!(last.content.last(), Some(ContentBlock::Text { text }) if text == INTERRUPTED_MARKER)
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, TaskEvent::Error { .. }))
            .count(),
        1,
        "{events:?}"
    );
    assert!(events.iter().any(|e| matches!(e, TaskEvent::Usage { .. })));
}

#[tokio::test(start_paused = true)]
async fn h01_with_history_to_hide_the_answer_goes_on_at_once_after_truncation() {
    let server = MockServer::start(vec![
        Reply::new(HttpResponse::case("H01")),
        Reply::new(HttpResponse::case("C03ok")),
    ])
    .await;
    let h = handler("anthropic", "claude-sonnet-4-5-20250929", &server.url());
    let mut conv = Conversation {
        api_conversation_history: (0..11)
            .map(|i| {
                if i % 2 == 0 {
                    Message::user_text(format!("user {i}"))
                } else {
                    Message::assistant_text(format!("assistant {i}"))
                }
            })
            .collect(),
        conversation_history_deleted_range: None,
    };
    let (outcome, events) = turn(h.as_ref(), &mut conv).await;
    assert!(
        matches!(outcome.status, RequestStatus::Completed),
        "{events:?}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].at - reqs[0].at, std::time::Duration::ZERO);
    assert!(conv.conversation_history_deleted_range.is_some());
    // The continuation is asked for after the kept partial.
    let n = conv.api_conversation_history.len();
    assert!(matches!(
        &conv.api_conversation_history[n - 2].content[0],
        ContentBlock::Text { text } if text == CONTINUE_AFTER_INTERRUPTION
    ));
}

#[tokio::test(start_paused = true)]
async fn h28_a_failure_that_leaves_nothing_stores_no_empty_message_and_sends_the_request_again() {
    // Bedrock's malformed_tool_use after a tool block whose input never became JSON: the call
    // is dropped, nothing else arrived, so no assistant message (not even the interruption
    // marker) is stored; the same request goes again after 2 s and is answered.
    let server = MockServer::start(case_replies("H28")).await;
    let h = bedrock_handler(&server.url());
    let mut conv = one_user_message();
    let (outcome, events) = turn(h.as_ref(), &mut conv).await;
    assert!(
        matches!(outcome.status, RequestStatus::Completed),
        "{events:?}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!((reqs[1].at - reqs[0].at).as_secs(), 2);
    assert_eq!(reqs[0].body, reqs[1].body, "the same request, sent again");
    assert_eq!(conv.api_conversation_history.len(), 2, "{conv:?}");
    assert_eq!(
        conv.api_conversation_history[1].content,
        vec![ContentBlock::Text { text: "OK".into() }]
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, TaskEvent::ToolCall { .. })),
        "{events:?}"
    );
}
