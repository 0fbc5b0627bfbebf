//! How an answer ended (SPEC R1.2 `Finish`): every family that names the output limit yields
//! `Finish { reason: MaxTokens }` after the answer's content, replayed from the recorded
//! fixtures and cases (C26 Ollama, H19 Responses), or from a recorded fixture whose stop reason
//! is set to the limit's; the same fixture as recorded (a chosen end) yields none.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::StreamExt;
use switchyard_api::{ApiError, ApiStreamChunk, FinishReason, Message, RequestOptions};
use switchyard_testkit::{HttpResponse, MockServer, Reply, Split};

mod common;

use common::handler;

/// The items of one request to `provider`/`model` under `prefix`, answered by `response` cut
/// in 7-byte pieces.
async fn replay(
    provider: &str,
    model: &str,
    prefix: &str,
    response: HttpResponse,
) -> Vec<Result<ApiStreamChunk, ApiError>> {
    let server = MockServer::start(vec![Reply::new(response).split(Split::Every(7))]).await;
    let h = handler(provider, model, &format!("{}{prefix}", server.url()), "");
    h.create_message(
        "You are terse.",
        &[Message::user_text("hi")],
        &[],
        RequestOptions::default(),
    )
    .collect()
    .await
}

/// `fixture` with `from` replaced by `to` in its body (which must hold it once), its
/// `content-length` made right.
fn rewritten(fixture: &str, from: &str, to: &str) -> HttpResponse {
    let recorded = HttpResponse::fixture(fixture);
    let content_type = recorded.header("content-type").unwrap();
    let body = String::from_utf8(recorded.body).unwrap();
    assert_eq!(body.matches(from).count(), 1, "{fixture}: {from}");
    HttpResponse::new(
        200,
        &[("content-type", content_type.as_str())],
        body.replace(from, to),
    )
}

/// The finish reasons among `items`, each checked to come after every content chunk; the
/// stream must not have failed.
fn finishes(label: &str, items: &[Result<ApiStreamChunk, ApiError>]) -> Vec<FinishReason> {
    let chunks: Vec<&ApiStreamChunk> = items
        .iter()
        .map(|i| i.as_ref().unwrap_or_else(|e| panic!("{label}: {e}")))
        .collect();
    let last_content = chunks.iter().rposition(|c| c.is_content());
    let mut out = Vec::new();
    for (at, chunk) in chunks.iter().enumerate() {
        if let ApiStreamChunk::Finish { reason } = chunk {
            assert!(
                last_content.is_some_and(|c| c < at),
                "{label}: a finish chunk before content: {chunks:?}"
            );
            assert!(!chunk.is_content(), "{label}");
            out.push(*reason);
        }
    }
    out
}

#[tokio::test(start_paused = true)]
async fn each_family_says_when_the_output_limit_cut_the_answer() {
    let cases = [
        (
            "anthropic",
            "claude-sonnet-4-5-20250929",
            "",
            "anthropic_text",
            r#""stop_reason":"end_turn""#,
            r#""stop_reason":"max_tokens""#,
        ),
        (
            "openai-native",
            "o4-mini",
            "/v1",
            "openai_chat_text",
            r#""finish_reason":"stop""#,
            r#""finish_reason":"length""#,
        ),
        (
            "openrouter",
            "anthropic/claude-sonnet-4.5",
            "/api/v1",
            "openrouter_stream",
            r#""finish_reason":"stop""#,
            r#""finish_reason":"length""#,
        ),
        (
            "gemini",
            "gemini-2.5-flash",
            "",
            "gemini_stream",
            r#""finishReason": "STOP""#,
            r#""finishReason": "MAX_TOKENS""#,
        ),
    ];
    for (provider, model, prefix, fixture, from, to) in cases {
        let recorded = replay(provider, model, prefix, HttpResponse::fixture(fixture)).await;
        assert_eq!(finishes(fixture, &recorded), [], "{fixture} as recorded");
        let cut = replay(provider, model, prefix, rewritten(fixture, from, to)).await;
        assert_eq!(
            finishes(fixture, &cut),
            [FinishReason::MaxTokens],
            "{fixture}: {to}"
        );
        // The answer itself is unchanged: the same content, in the same order.
        let content = |items: &[Result<ApiStreamChunk, ApiError>]| -> Vec<ApiStreamChunk> {
            items
                .iter()
                .filter_map(|i| i.as_ref().ok())
                .filter(|c| c.is_content())
                .cloned()
                .collect()
        };
        assert_eq!(content(&recorded), content(&cut), "{fixture}");
    }
}

#[tokio::test(start_paused = true)]
async fn the_recorded_cut_answers_of_ollama_and_responses_say_so() {
    // tests/cases C26: Ollama `done_reason: "length"`; H19: Responses `response.incomplete`
    // with `incomplete_details.reason: "max_output_tokens"`.
    for (provider, model, prefix, case) in [
        ("ollama", "llama3.1:8b", "", "C26"),
        ("openai-native", "gpt-5.4", "/v1", "H19"),
    ] {
        let items = replay(provider, model, prefix, HttpResponse::case(case)).await;
        assert_eq!(finishes(case, &items), [FinishReason::MaxTokens], "{case}");
    }
    let finished = replay(
        "ollama",
        "qwen3:8b",
        "",
        HttpResponse::fixture("ollama_chat"),
    )
    .await;
    assert_eq!(finishes("ollama_chat", &finished), [], "a chosen end");
}
