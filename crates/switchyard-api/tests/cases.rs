//! Every case of `tests/cases` that has a `{id}.expected.json` (schema: `tests/cases/README.md`,
//! "H cases"), replayed by the testkit server as the case's `meta.json` says, its bodies cut
//! into 1-, 5- and 7-byte writes (and whole): one `ApiHandler::create_message` call must yield
//! the chunks of `stream.chunks` and send `stream.requests` HTTP requests. A new case file is a
//! new row of this test; the task-level half of each file is checked through the real CLI
//! (`crates/switchyard-cli/tests/cases.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;

use futures_util::StreamExt;
use serde_json::{Value, json};
use switchyard_api::{ApiError, ApiStreamChunk, Message, RequestOptions, ToolSpec};
use switchyard_testkit::{MockServer, Split, case_expectations, case_replies};

mod common;

use common::{KEY, handler};

/// Our items normalised as README.md "H cases" says: text and reasoning one chunk per wire
/// delta (compared with each run joined, [`common::merge_text_runs`]); tool calls assembled per id and placed at their last fragment, arguments parsed
/// (`""` → `{}`), a call whose arguments never became JSON left out (it is never handed
/// over); usage in the provider's raw numbers; an error as its kind, status, retry-after,
/// code and message (matched against the expectation by [`assert_matches`]).
fn normalise(family: &str, items: &[Result<ApiStreamChunk, ApiError>]) -> Vec<Value> {
    let mut out = common::normalise(family, items, |e| {
        json!({
            "type": "error",
            "kind": e.kind.as_str(),
            "status": e.status,
            "retry_after_s": e.retry_after.map(|d| d.as_secs_f64()),
            "said": format!("{} {}", e.code.as_deref().unwrap_or(""), e),
        })
    });
    for v in &mut out {
        if v["type"] == "tool_call" {
            let args = v["arguments"].as_str().unwrap().trim().to_owned();
            let args = if args.is_empty() { "{}" } else { &args };
            v["arguments"] = serde_json::from_str(args).unwrap_or(Value::Null);
        }
    }
    // A call whose arguments never became JSON is not listed: it is never handed over.
    out.retain(|v| !(v["type"] == "tool_call" && v["arguments"].is_null()));
    out
}

/// `got` (from [`normalise`]) against the case's `stream.chunks`: equal chunk by chunk,
/// except that a tool call's `"id": null` takes any id distinct from the other calls', and an
/// error matches on its kind and on the `status`, `retry_after_s` (±10 %) and `reason` (named
/// by its code or message, any case) that the expectation gives.
fn assert_matches(label: &str, expected: &[Value], got: &[Value]) {
    let (expected, got) = (
        &common::merge_text_runs(expected)[..],
        &common::merge_text_runs(got)[..],
    );
    let show = || format!("{label}\n  want {expected:?}\n  got  {got:?}");
    assert_eq!(expected.len(), got.len(), "{}", show());
    let mut ids = HashSet::new();
    for (want, have) in expected.iter().zip(got) {
        match want["type"].as_str().unwrap() {
            "tool_call" => {
                assert_eq!(have["type"], "tool_call", "{}", show());
                assert_eq!(want["name"], have["name"], "{}", show());
                let args: Value =
                    serde_json::from_str(want["arguments"].as_str().unwrap()).unwrap();
                assert_eq!(args, have["arguments"], "{}", show());
                if !want["id"].is_null() {
                    assert_eq!(want["id"], have["id"], "{}", show());
                }
                assert!(
                    ids.insert(have["id"].as_str().unwrap().to_owned()),
                    "{}: a repeated tool-call id",
                    show()
                );
            }
            "error" => {
                assert_eq!(have["type"], "error", "{}", show());
                assert_eq!(want["kind"], have["kind"], "{}", show());
                if let Some(status) = want.get("status") {
                    assert_eq!(status, &have["status"], "{}", show());
                }
                if let Some(wait) = want.get("retry_after_s").and_then(Value::as_f64) {
                    let got = have["retry_after_s"].as_f64().unwrap_or(-1.0);
                    assert!((got - wait).abs() <= wait * 0.1, "{}", show());
                }
                if let Some(reason) = want.get("reason").and_then(Value::as_str) {
                    let said = have["said"].as_str().unwrap().to_ascii_lowercase();
                    assert!(said.contains(&reason.to_ascii_lowercase()), "{}", show());
                }
                let said = have["said"].as_str().unwrap();
                assert!(!said.contains(KEY), "{label}: the key in {said}");
            }
            _ => assert_eq!(want, have, "{}", show()),
        }
    }
}

/// A tool the model may call, so that requests carry `tools` as an agent's do.
fn a_tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Reads a file.".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }
}

/// One `create_message` call against the testkit server replaying case `id` (each reply's
/// body cut as `split` says), as an agent sends it: a system prompt, one user message, a tool.
async fn replay(
    id: &str,
    case: &Value,
    split: Split,
) -> (Vec<Result<ApiStreamChunk, ApiError>>, MockServer) {
    let replies = case_replies(id)
        .into_iter()
        .map(|r| r.split(split.clone()))
        .collect();
    let server = MockServer::start(replies).await;
    let base_url = format!("{}{}", server.url(), case["base_path"].as_str().unwrap());
    let h = handler(
        case["provider"].as_str().unwrap(),
        case["model"].as_str().unwrap(),
        &base_url,
        "",
    );
    let items = h
        .create_message(
            "You are a coding agent.",
            &[Message::user_text("Summarise the build log.")],
            &[a_tool()],
            RequestOptions::default(),
        )
        .collect()
        .await;
    (items, server)
}

#[tokio::test(start_paused = true)]
async fn every_case_yields_its_expected_chunks_in_every_split() {
    let cases = case_expectations();
    assert!(cases.len() >= 41, "{} cases", cases.len());
    for (id, case) in &cases {
        let stream = &case["stream"];
        let expected = stream["chunks"].as_array().unwrap();
        let family = case["family"].as_str().unwrap();
        for split in [
            Split::Whole,
            Split::Every(1),
            Split::Every(5),
            Split::Every(7),
        ] {
            let label = format!("{id} {split:?}");
            let (items, server) = replay(id, case, split).await;
            assert_matches(&label, expected, &normalise(family, &items));
            assert_eq!(
                server.request_count() as u64,
                stream["requests"].as_u64().unwrap(),
                "{label}: {items:?}"
            );
        }
    }
}

/// A case file the table reads must name what the schema needs, so that a typo cannot
/// silently skip a check.
#[test]
fn every_expected_file_follows_the_schema() {
    for (id, case) in case_expectations() {
        for key in [
            "case",
            "title",
            "source",
            "family",
            "provider",
            "model",
            "base_path",
        ] {
            assert!(case[key].is_string(), "{id}: `{key}`");
        }
        assert_eq!(case["case"], id.as_str());
        assert!(case["stream"]["requests"].is_u64(), "{id}");
        assert!(case["stream"]["chunks"].is_array(), "{id}");
        let task = &case["task"];
        assert!(
            task["status"].is_string() && task["requests"].is_u64(),
            "{id}"
        );
        assert!(task["waits_s"].is_array(), "{id}");
        assert!(case["tool_calls"].is_array(), "{id}");
        for chunk in case["stream"]["chunks"].as_array().unwrap() {
            let known = ["text", "reasoning", "tool_call", "usage", "error"];
            assert!(
                known.contains(&chunk["type"].as_str().unwrap_or("")),
                "{id}: {chunk}"
            );
        }
    }
}

/// Gemini's thought signature travels with its call (SPEC R1.2 `signature`): on the first
/// fragment of the call it belongs to, and on no other (tests/cases H21: native Gemini, the
/// signature on the first of three calls; H11: Gemini's OpenAI-compatible endpoint,
/// `extra_content.google.thought_signature`).
#[tokio::test(start_paused = true)]
async fn a_thought_signature_stays_with_its_tool_call() {
    for (id, with_signature) in [("H21", "call_2048146"), ("H11", "call_PLACEHOLDER_11a")] {
        let case = &case_expectations()
            .into_iter()
            .find(|(c, _)| c == id)
            .unwrap()
            .1;
        let (items, _server) = replay(id, case, Split::Whole).await;
        let signed: Vec<&str> = items
            .iter()
            .filter_map(|i| match i {
                Ok(ApiStreamChunk::ToolCalls {
                    id,
                    signature: Some(_),
                    ..
                }) => Some(id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(signed, [with_signature], "{id}: {items:?}");
    }
}

/// tests/cases C92: llama-cpp-python's server (0.3.36, the quickstart's local model at 2,048
/// tokens) answers a streamed request past its window with a 200 and no event at all, as
/// captured on 127.0.0.1. A request whose estimate is past the model's window is an overflow
/// then, never a temporary incomplete response retried for minutes (issue 46, Claude Code's
/// 4,205-token request through the gateway); a small one that meets the same silence stays a
/// retried incomplete response. The same holds for a forwarded body.
#[tokio::test(start_paused = true)]
async fn a_silent_end_of_a_request_past_the_window_is_an_overflow() {
    use switchyard_api::error::INCOMPLETE_STREAM;
    use switchyard_api::{ErrorKind, ForwardDialect};
    let big = "apple ".repeat(3000);
    for (prompt, want) in [
        (big.as_str(), ErrorKind::ContextWindowExceeded),
        ("Summarise the build log.", ErrorKind::Network),
    ] {
        let server = MockServer::start(case_replies("C92")).await;
        let base_url = format!("{}/v1", server.url());
        let h = handler("openai", "smollm2-135m-instruct", &base_url, "");
        let items: Vec<_> = h
            .create_message(
                "You are a coding agent.",
                &[Message::user_text(prompt)],
                &[a_tool()],
                RequestOptions::default(),
            )
            .collect()
            .await;
        let [Err(e)] = &items[..] else {
            panic!("{items:?}")
        };
        assert_eq!(e.kind, want, "{e}");
        assert_eq!(server.request_count(), 1);
        if want == ErrorKind::Network {
            assert_eq!(e.code.as_deref(), Some(INCOMPLETE_STREAM));
        } else {
            assert!(e.to_string().contains("2048-token context window"), "{e}");
        }
        let body = json!({"model": "smollm2-135m-instruct", "stream": true,
            "messages": [{"role": "user", "content": prompt}]});
        let server = MockServer::start(case_replies("C92")).await;
        let h = handler(
            "openai",
            "smollm2-135m-instruct",
            &format!("{}/v1", server.url()),
            "",
        );
        let items: Vec<_> = h
            .forward(
                ForwardDialect::ChatCompletions,
                body.as_object().unwrap().clone(),
                RequestOptions::default(),
            )
            .collect()
            .await;
        let Some(Err(e)) = items.last() else {
            panic!("{items:?}")
        };
        assert_eq!(e.kind, want, "forwarded: {e}");
    }
}
