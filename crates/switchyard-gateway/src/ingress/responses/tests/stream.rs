//! Chunks → the Responses event stream, read back event by event; the whole answer; failures.

use std::time::Duration;

use serde_json::{Value, json};
use switchyard_api::{ApiError, ApiStreamChunk, ErrorKind, Usage};

use super::{Collector, Encoder, collect, events, names, run};
use crate::ingress::encode::{ResponseCollector, StopReason, StreamEncoder};
use crate::ingress::request::ClientTool;

fn usage(input: u64, output: u64) -> ApiStreamChunk {
    ApiStreamChunk::Usage(Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    })
}

/// The data of the only event named `name`.
fn only<'a>(events: &'a [(String, Value)], name: &str) -> &'a Value {
    let found: Vec<&Value> = events
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, d)| d)
        .collect();
    assert_eq!(found.len(), 1, "one {name}");
    found[0]
}

#[test]
fn text_answer_event_by_event() {
    let ev = run(
        &[
            ApiStreamChunk::text("Hel"),
            ApiStreamChunk::text("lo"),
            usage(10, 2),
        ],
        StopReason::EndTurn,
    );
    assert_eq!(
        names(&ev),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    for (_, d) in &ev[..2] {
        let r = &d["response"];
        assert_eq!(r["id"], "resp_req1");
        assert_eq!(r["object"], "response");
        assert_eq!(r["status"], "in_progress");
        assert_eq!(r["model"], "gpt-5-codex");
        assert_eq!(r["output"], json!([]));
        assert!(r["created_at"].as_u64().unwrap() > 1_700_000_000);
    }
    let added = &ev[2].1;
    assert_eq!(added["output_index"], 0);
    assert_eq!(
        added["item"],
        json!({"id": "msg_req1_0", "type": "message", "status": "in_progress", "role": "assistant", "content": []})
    );
    assert_eq!(
        ev[3].1["part"],
        json!({"type": "output_text", "text": "", "annotations": []})
    );
    for (_, d) in &ev[3..9] {
        assert_eq!(d.get("item_id").unwrap_or(&d["item"]["id"]), "msg_req1_0");
        assert_eq!(d["output_index"], 0);
    }
    assert_eq!(ev[4].1["delta"], "Hel");
    assert_eq!(ev[4].1["content_index"], 0);
    assert_eq!(ev[5].1["delta"], "lo");
    assert_eq!(ev[6].1["text"], "Hello");
    assert_eq!(ev[7].1["part"]["text"], "Hello");
    let item = json!({"id": "msg_req1_0", "type": "message", "status": "completed", "role": "assistant",
                      "content": [{"type": "output_text", "text": "Hello", "annotations": []}]});
    assert_eq!(ev[8].1["item"], item);
    let done = &ev[9].1["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"], json!([item]));
    assert_eq!(done["error"], Value::Null);
    assert_eq!(done["incomplete_details"], Value::Null);
    assert_eq!(done["usage"]["input_tokens"], 10);
    assert_eq!(done["usage"]["total_tokens"], 12);
}

#[test]
fn reasoning_then_text_then_call() {
    let chunks = [
        ApiStreamChunk::reasoning("Think"),
        ApiStreamChunk::reasoning("ing."),
        ApiStreamChunk::redacted_reasoning("enc-1"),
        ApiStreamChunk::text("Running ls."),
        ApiStreamChunk::ToolCalls {
            call_id: Some("call_X".into()),
            id: "call_X".into(),
            name: "shell".into(),
            arguments_delta: "{\"command\":".into(),
            signature: None,
        },
        ApiStreamChunk::tool_call("call_X", "shell", "[\"ls\"]}"),
    ];
    let ev = run(&chunks, StopReason::ToolUse);
    assert_eq!(
        names(&ev),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    assert_eq!(
        ev[2].1["item"],
        json!({"id": "rs_req1_0", "type": "reasoning", "summary": []})
    );
    assert_eq!(ev[3].1["part"], json!({"type": "summary_text", "text": ""}));
    assert_eq!(ev[4].1["summary_index"], 0);
    assert_eq!(ev[6].1["text"], "Thinking.");
    let reasoning = json!({"id": "rs_req1_0", "type": "reasoning",
                           "summary": [{"type": "summary_text", "text": "Thinking."}], "encrypted_content": "enc-1"});
    assert_eq!(ev[8].1["item"], reasoning);
    assert_eq!(ev[9].1["output_index"], 1);
    assert_eq!(
        ev[15].1["item"],
        json!({"id": "fc_req1_2", "type": "function_call", "status": "in_progress", "call_id": "call_X", "name": "shell", "arguments": ""})
    );
    assert_eq!(ev[16].1["delta"], "{\"command\":");
    assert_eq!(ev[17].1["item_id"], "fc_req1_2");
    assert_eq!(ev[18].1["arguments"], "{\"command\":[\"ls\"]}");
    let call = json!({"id": "fc_req1_2", "type": "function_call", "status": "completed", "call_id": "call_X",
                      "name": "shell", "arguments": "{\"command\":[\"ls\"]}"});
    assert_eq!(ev[19].1["item"], call);
    assert_eq!(ev[19].1["output_index"], 2);
    let output = &ev[20].1["response"]["output"];
    assert_eq!(output.as_array().unwrap().len(), 3);
    assert_eq!(output[0], reasoning);
    assert_eq!(output[2], call);
    // Every event of an item names it by the id and index it was announced with.
    for (name, d) in &ev[2..20] {
        let id = d
            .get("item_id")
            .unwrap_or(&d["item"]["id"])
            .as_str()
            .unwrap();
        let index = d["output_index"].as_u64().unwrap();
        assert_eq!(id.rsplit('_').next().unwrap(), index.to_string(), "{name}");
    }
}

/// Codex acts only on `response.output_item.done`: a call announced and streamed but never
/// closed is silently lost (github.com/NousResearch/hermes-agent/issues/92764), and a call
/// sent twice is run twice (bifrost#5128, GATEWAY.md anchors). Each call here gets exactly one
/// `added` and one `done`, before `response.completed`, and appears once in `output`.
#[test]
fn every_call_is_closed_once() {
    let chunks = [
        ApiStreamChunk::tool_call("a", "read", "{\"p\":1}"),
        ApiStreamChunk::tool_call("b", "read", "{\"p\":"),
        ApiStreamChunk::tool_call("a", "read", ""),
        ApiStreamChunk::tool_call("b", "read", "2}"),
    ];
    let ev = run(&chunks, StopReason::ToolUse);
    let added: Vec<&Value> = ev
        .iter()
        .filter(|(n, _)| n == "response.output_item.added")
        .map(|(_, d)| &d["item"])
        .collect();
    let done: Vec<&Value> = ev
        .iter()
        .filter(|(n, _)| n == "response.output_item.done")
        .map(|(_, d)| &d["item"])
        .collect();
    assert_eq!(added.len(), 2);
    assert_eq!(done.len(), 2);
    assert_eq!(done[0]["call_id"], "a");
    assert_eq!(done[0]["arguments"], "{\"p\":1}");
    assert_eq!(done[1]["call_id"], "b");
    assert_eq!(
        done[1]["arguments"], "{\"p\":2}",
        "interleaved fragments join per call"
    );
    let last_done = ev
        .iter()
        .rposition(|(n, _)| n == "response.output_item.done")
        .unwrap();
    assert_eq!(
        last_done,
        ev.len() - 2,
        "the items close before response.completed"
    );
    assert_eq!(
        ev.last().unwrap().1["response"]["output"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// A call without arguments is `{}`: an empty string is not JSON and Codex cannot run it.
#[test]
fn call_without_arguments() {
    let ev = run(
        &[ApiStreamChunk::tool_call("c", "now", "")],
        StopReason::ToolUse,
    );
    assert!(!names(&ev).contains(&"response.function_call_arguments.delta"));
    assert_eq!(
        only(&ev, "response.function_call_arguments.done")["arguments"],
        "{}"
    );
    assert_eq!(
        only(&ev, "response.output_item.done")["item"]["arguments"],
        "{}"
    );
}

/// An answer cut by the output limit ends with `response.completed` carrying status
/// `incomplete`, not `response.incomplete`, which Codex treats as a failed stream and retries
/// (github.com/openai/codex/issues/38831).
#[test]
fn max_tokens_is_completed_incomplete() {
    let ev = run(
        &[ApiStreamChunk::text("The answer is"), usage(5, 3)],
        StopReason::MaxTokens,
    );
    assert!(!names(&ev).contains(&"response.incomplete"));
    let (name, last) = ev.last().unwrap();
    assert_eq!(name, "response.completed");
    assert_eq!(last["response"]["status"], "incomplete");
    assert_eq!(
        last["response"]["incomplete_details"],
        json!({"reason": "max_output_tokens"})
    );
    assert_eq!(
        only(&ev, "response.output_item.done")["item"]["status"],
        "incomplete"
    );
    assert_eq!(
        last["response"]["output"][0]["content"][0]["text"],
        "The answer is"
    );
}

/// A stream must end with its terminal event: without `response.completed` Codex reports
/// "stream closed before response.completed" and retries five times
/// (github.com/router-for-me/CLIProxyAPI/issues/1407). Exactly one terminal event ends each
/// stream, and nothing follows it.
#[test]
fn exactly_one_terminal_event() {
    let terminal = |ev: &[(String, Value)]| {
        ev.iter()
            .filter(|(n, _)| {
                matches!(
                    n.as_str(),
                    "response.completed" | "response.failed" | "response.incomplete"
                )
            })
            .count()
    };
    let mut enc = Encoder::new("m", "r");
    let mut out = Vec::new();
    enc.start(&mut out);
    enc.chunk(&ApiStreamChunk::text("x"), &mut out);
    enc.finish(StopReason::EndTurn, &mut out);
    let before = out.len();
    enc.finish(StopReason::EndTurn, &mut out);
    enc.chunk(&ApiStreamChunk::text("late"), &mut out);
    enc.error(&ApiError::new(ErrorKind::Server, "late"), &mut out);
    assert_eq!(out.len(), before, "nothing after the terminal event");
    let ev = events(&out);
    assert_eq!(terminal(&ev), 1);
    assert_eq!(ev.last().unwrap().0, "response.completed");

    // An empty answer still opens and completes.
    let ev = run(&[], StopReason::EndTurn);
    assert_eq!(
        names(&ev),
        [
            "response.created",
            "response.in_progress",
            "response.completed"
        ]
    );
    assert_eq!(ev[2].1["response"]["output"], json!([]));
    assert_eq!(
        ev[0].1["response"]["usage"],
        Value::Null,
        "no usage while in progress"
    );
    let u = &ev[2].1["response"]["usage"];
    assert_eq!(
        u["input_tokens"], 0,
        "a terminal response always has a usage object"
    );
    assert_eq!(u["total_tokens"], 0);
}

/// A failure after content: `response.failed` with status `failed` and `error: {code,
/// message}`, never a clean `response.completed` (SPEC R14.4); the cut item is not closed (a
/// `done` would make Codex keep a half answer).
#[test]
fn failure_mid_stream() {
    let mut enc = Encoder::new("m", "r9");
    let mut out = Vec::new();
    enc.start(&mut out);
    enc.chunk(&ApiStreamChunk::reasoning("hmm"), &mut out);
    enc.chunk(&ApiStreamChunk::text("partial"), &mut out);
    let error = ApiError::new(ErrorKind::Server, "upstream reset")
        .with_origin("anthropic", "claude-sonnet-4-5");
    enc.error(&error, &mut out);
    enc.finish(StopReason::EndTurn, &mut out);
    let ev = events(&out);
    assert!(!names(&ev).contains(&"response.completed"));
    let (name, failed) = ev.last().unwrap();
    assert_eq!(name, "response.failed");
    let r = &failed["response"];
    assert_eq!(r["id"], "resp_r9");
    assert_eq!(r["status"], "failed");
    assert_eq!(r["error"]["code"], "server_error");
    assert_eq!(r["error"]["message"], error.to_string());
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("anthropic had a server error")
    );
    assert_eq!(
        r["output"].as_array().unwrap().len(),
        1,
        "the closed reasoning item only"
    );
    assert_eq!(r["output"][0]["type"], "reasoning");
    let done = ev
        .iter()
        .filter(|(n, _)| n == "response.output_item.done")
        .count();
    assert_eq!(done, 1);
}

/// The error codes Codex reads to decide whether to retry, and the wait it reads from the
/// message ("try again in Ns").
#[test]
fn failure_codes() {
    let code = |kind| {
        let mut enc = Encoder::new("m", "r");
        let mut out = Vec::new();
        enc.error(&ApiError::new(kind, "x"), &mut out);
        let ev = events(&out);
        assert_eq!(
            names(&ev),
            [
                "response.created",
                "response.in_progress",
                "response.failed"
            ]
        );
        ev[2].1["response"]["error"]["code"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        code(ErrorKind::ContextWindowExceeded),
        "context_length_exceeded"
    );
    assert_eq!(code(ErrorKind::QuotaExceeded), "insufficient_quota");
    assert_eq!(code(ErrorKind::SpendCap), "insufficient_quota");
    assert_eq!(code(ErrorKind::RateLimited), "rate_limit_exceeded");
    assert_eq!(code(ErrorKind::Overloaded), "server_is_overloaded");
    assert_eq!(code(ErrorKind::InvalidRequest), "invalid_prompt");
    assert_eq!(code(ErrorKind::Timeout), "server_error");

    let mut error = ApiError::new(ErrorKind::RateLimited, "slow down");
    error.retry_after = Some(Duration::from_millis(1500));
    let mut enc = Encoder::new("m", "r");
    let mut out = Vec::new();
    enc.error(&error, &mut out);
    let message = events(&out)[2].1["response"]["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.ends_with("Please try again in 1.500s."),
        "{message}"
    );
}

/// Keys never appear in what the gateway writes (SPEC R14.5, R14.10), even when a provider
/// echoed one into its error message.
#[test]
fn failure_message_has_no_key() {
    let key = "sk-proj-responses-test-key-0123456789";
    switchyard_api::secrets::register(key);
    let mut enc = Encoder::new("m", "r");
    let mut out = Vec::new();
    enc.error(
        &ApiError::new(
            ErrorKind::Auth,
            format!("Incorrect API key provided: {key}"),
        ),
        &mut out,
    );
    let text = String::from_utf8(out).unwrap();
    assert!(!text.contains(key), "{text}");
    assert!(text.contains("invalid_api_key"));
}

/// Usage: `input_tokens` includes cached input (Switchyard's is non-cached), so a gateway
/// does not report `input_tokens: 0` for a cached prompt (envoyproxy/ai-gateway#2352,
/// GATEWAY.md anchors); the details objects are always present with their counts, as
/// Codex's strict parser requires (github.com/6Kmfi6HP/opencode2api/pull/11); chunks of a
/// continued answer add up.
#[test]
fn usage_mapping() {
    let cached = ApiStreamChunk::Usage(Usage {
        input_tokens: 100,
        output_tokens: 20,
        cache_read_tokens: Some(900),
        cache_write_tokens: Some(50),
        thoughts_tokens: Some(5),
        ..Usage::default()
    });
    let ev = run(
        &[ApiStreamChunk::text("x"), cached.clone(), usage(1, 2)],
        StopReason::EndTurn,
    );
    let u = &ev.last().unwrap().1["response"]["usage"];
    assert_eq!(
        *u,
        json!({"input_tokens": 1051, "input_tokens_details": {"cached_tokens": 900},
               "output_tokens": 22, "output_tokens_details": {"reasoning_tokens": 5}, "total_tokens": 1073})
    );
    let ev = run(&[usage(7, 3)], StopReason::EndTurn);
    let u = &ev.last().unwrap().1["response"]["usage"];
    assert_eq!(u["input_tokens_details"], json!({"cached_tokens": 0}));
    assert_eq!(u["output_tokens_details"], json!({"reasoning_tokens": 0}));
}

/// The final `output` mirrors the `output_item.done` items: a terminal response with an
/// empty or missing `output` makes clients drop the streamed calls
/// (github.com/router-for-me/CLIProxyAPI/issues/2626,
/// github.com/NousResearch/hermes-agent/pull/32914). The collector's answer is the same.
#[test]
fn completed_output_and_collector_agree() {
    let chunks = [
        ApiStreamChunk::reasoning("plan"),
        ApiStreamChunk::reasoning_signature("sig"),
        ApiStreamChunk::text("ok"),
        ApiStreamChunk::tool_call("t1", "edit", "{}"),
        usage(3, 4),
    ];
    let ev = run(&chunks, StopReason::ToolUse);
    let done: Vec<Value> = ev
        .iter()
        .filter(|(n, _)| n == "response.output_item.done")
        .map(|(_, d)| d["item"].clone())
        .collect();
    let mut completed = ev.last().unwrap().1["response"].clone();
    assert_eq!(completed["output"], Value::Array(done));
    let mut whole = collect(&chunks, StopReason::ToolUse);
    completed["created_at"] = Value::Null;
    whole["created_at"] = Value::Null;
    assert_eq!(whole, completed);
}

/// Anthropic thinking blocks: each signature closes its block, a redacted block is its own
/// reasoning item with only `encrypted_content`.
#[test]
fn thinking_blocks_become_reasoning_items() {
    let chunks = [
        ApiStreamChunk::reasoning("first"),
        ApiStreamChunk::reasoning_signature("sig-a"),
        ApiStreamChunk::redacted_reasoning("redacted-b"),
        ApiStreamChunk::reasoning("second"),
        ApiStreamChunk::reasoning_signature("sig-c"),
    ];
    let r = collect(&chunks, StopReason::EndTurn);
    let out = r["output"].as_array().unwrap();
    assert_eq!(out.len(), 3);
    assert_eq!(out[0]["summary"][0]["text"], "first");
    assert_eq!(out[0]["encrypted_content"], "sig-a");
    assert_eq!(
        out[1],
        json!({"id": "rs_req1_1", "type": "reasoning", "summary": [], "encrypted_content": "redacted-b"})
    );
    assert_eq!(out[2]["summary"][0]["text"], "second");
    assert_eq!(out[2]["encrypted_content"], "sig-c");
    let ev = run(&chunks, StopReason::EndTurn);
    let parts = ev
        .iter()
        .filter(|(n, _)| n == "response.reasoning_summary_part.added")
        .count();
    assert_eq!(parts, 2, "no summary part for the redacted item");
}

/// Text with newlines and SSE-looking content stays inside one `data:` line; empty chunks
/// make no events; a chunk before `start` still comes after the opening events.
#[test]
fn framing_is_robust() {
    let mut enc = Encoder::new("m", "r");
    let mut out = Vec::new();
    enc.chunk(
        &ApiStreamChunk::text("a\n\nevent: x\ndata: y\r\n"),
        &mut out,
    );
    enc.chunk(&ApiStreamChunk::text(""), &mut out);
    enc.chunk(&ApiStreamChunk::reasoning(""), &mut out);
    enc.start(&mut out);
    enc.finish(StopReason::EndTurn, &mut out);
    let ev = events(&out);
    assert_eq!(ev[0].0, "response.created");
    assert_eq!(
        ev.iter().filter(|(n, _)| n == "response.created").count(),
        1
    );
    assert_eq!(
        only(&ev, "response.output_text.delta")["delta"],
        "a\n\nevent: x\ndata: y\r\n"
    );
    assert_eq!(ev.len(), 9);
}

/// Text after a call opens a new message; the call closes first.
#[test]
fn new_item_type_closes_the_open_one() {
    let ev = run(
        &[
            ApiStreamChunk::text("a"),
            ApiStreamChunk::tool_call("c", "f", "{}"),
            ApiStreamChunk::text("b"),
        ],
        StopReason::EndTurn,
    );
    let order: Vec<(String, String)> = ev
        .iter()
        .filter(|(n, _)| n.starts_with("response.output_item."))
        .map(|(n, d)| {
            (
                n.trim_start_matches("response.output_item.").to_owned(),
                d["item"]["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expect = [
        ("added", "msg_req1_0"),
        ("done", "msg_req1_0"),
        ("added", "fc_req1_1"),
        ("done", "fc_req1_1"),
        ("added", "msg_req1_2"),
        ("done", "msg_req1_2"),
    ];
    let expect: Vec<(String, String)> = expect
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
    assert_eq!(order, expect);
}

/// A provider's separate `call_id` is the one the client sees (and sends back with the
/// output); fragments are joined by the chunk's `id`, also when later ones omit `call_id`.
#[test]
fn call_id_is_the_client_id() {
    let first = ApiStreamChunk::ToolCalls {
        call_id: Some("call_Z".into()),
        id: "upstream_1".into(),
        name: "grep".into(),
        arguments_delta: "{\"q\":".into(),
        signature: None,
    };
    let r = collect(
        &[
            first,
            ApiStreamChunk::tool_call("upstream_1", "grep", "\"x\"}"),
        ],
        StopReason::ToolUse,
    );
    let out = r["output"].as_array().unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["call_id"], "call_Z");
    assert_eq!(out[0]["arguments"], "{\"q\":\"x\"}");
}

/// The non-streamed answer: the same response object, `incomplete` when cut.
#[test]
fn collector_whole_answer() {
    let r = collect(
        &[
            ApiStreamChunk::text("par"),
            ApiStreamChunk::text("tial"),
            usage(4, 8),
        ],
        StopReason::MaxTokens,
    );
    assert_eq!(r["object"], "response");
    assert_eq!(r["id"], "resp_req1");
    assert_eq!(r["model"], "gpt-5-codex");
    assert_eq!(r["status"], "incomplete");
    assert_eq!(r["incomplete_details"]["reason"], "max_output_tokens");
    assert_eq!(r["output"][0]["content"][0]["text"], "partial");
    assert_eq!(r["output"][0]["status"], "incomplete");
    assert_eq!(r["usage"]["total_tokens"], 12);
    let empty = collect(&[], StopReason::EndTurn);
    assert_eq!(empty["status"], "completed");
    assert_eq!(empty["output"], json!([]));
}

/// The custom tool `name`.
fn custom_tool(name: &str) -> ClientTool {
    ClientTool {
        name: name.to_owned(),
        custom: true,
        namespace: None,
    }
}

/// The events of a whole stream whose request offered the custom tools `custom`.
fn run_custom(custom: &[&str], chunks: &[ApiStreamChunk]) -> Vec<(String, Value)> {
    let tools: Vec<ClientTool> = custom.iter().map(|c| custom_tool(c)).collect();
    run_client(&tools, chunks)
}

/// The events of a whole stream whose request had the client tools `tools`.
fn run_client(tools: &[ClientTool], chunks: &[ApiStreamChunk]) -> Vec<(String, Value)> {
    let mut enc = Encoder::new("gpt-5.5", "req1").client_tools(tools);
    let mut out = Vec::new();
    enc.start(&mut out);
    for c in chunks {
        enc.chunk(c, &mut out);
    }
    enc.finish(StopReason::ToolUse, &mut out);
    events(&out)
}

const PATCH: &str = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n";

/// An Anthropic model's call of the function form of Codex's freeform `apply_patch`
/// (`{"input": PATCH}`, in fragments) reaches Codex as the `custom_tool_call` item it
/// executes — announced, its input sent whole once the JSON is complete, closed by
/// `response.output_item.done` with the raw patch — and never as a `function_call`, which
/// Codex would answer with "unsupported call". A plain function call next to it stays one.
#[test]
fn a_custom_tools_call_goes_back_as_a_custom_tool_call_item() {
    let arguments = json!({ "input": PATCH }).to_string();
    let (a, b) = arguments.split_at(12);
    let ev = run_custom(
        &["apply_patch"],
        &[
            ApiStreamChunk::text("Writing it."),
            ApiStreamChunk::tool_call("toolu_1", "apply_patch", a),
            ApiStreamChunk::tool_call("toolu_1", "apply_patch", b),
            ApiStreamChunk::tool_call("toolu_2", "exec_command", "{\"cmd\":\"ls\"}"),
            usage(10, 5),
        ],
    );
    let order = names(&ev);
    let from = order
        .iter()
        .position(|n| *n == "response.content_part.done")
        .unwrap();
    assert_eq!(
        order[from + 1..],
        [
            "response.output_item.done",
            "response.output_item.added",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.custom_tool_call_input.delta",
            "response.custom_tool_call_input.done",
            "response.output_item.done",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let added = &ev[from + 2].1["item"];
    assert_eq!(added["type"], "custom_tool_call");
    assert_eq!(added["input"], "");
    assert_eq!(added["status"], "in_progress");
    let id = added["id"].as_str().unwrap();
    assert!(id.starts_with("ctc_"), "{id}");
    assert_eq!(
        only(&ev, "response.custom_tool_call_input.delta")["delta"],
        PATCH
    );
    let done = only(&ev, "response.custom_tool_call_input.done");
    assert_eq!(
        (done["item_id"].as_str(), &done["input"]),
        (Some(id), &json!(PATCH))
    );
    let item = json!({"id": id, "type": "custom_tool_call", "status": "completed",
                      "call_id": "toolu_1", "name": "apply_patch", "input": PATCH});
    assert_eq!(ev[from + 7].1["item"], item);
    let output = &only(&ev, "response.completed")["response"]["output"];
    assert_eq!(output[1], item);
    assert_eq!(output[2]["type"], "function_call");
    assert_eq!(output[2]["arguments"], "{\"cmd\":\"ls\"}");
    // The whole answer says the same.
    let mut c = Collector::new("gpt-5.5", "req1").client_tools(&[custom_tool("apply_patch")]);
    c.chunk(&ApiStreamChunk::tool_call(
        "toolu_1",
        "apply_patch",
        &arguments,
    ));
    assert_eq!(
        c.finish(StopReason::ToolUse)["output"][0],
        json!({"id": "ctc_req1_0", "type": "custom_tool_call", "status": "completed",
               "call_id": "toolu_1", "name": "apply_patch", "input": PATCH})
    );
}

/// A custom call whose arguments are not the function form's (a model that ignored the
/// schema) passes them on as the input, for the tool to refuse in its own words; no
/// arguments at all are an empty input.
#[test]
fn a_custom_call_without_the_input_string_passes_its_arguments_on() {
    for (arguments, input) in [
        ("{}", ""),
        ("", ""),
        ("\"raw text\"", "raw text"),
        ("*** Begin Patch", "*** Begin Patch"),
        ("{\"patch\":\"x\"}", "{\"patch\":\"x\"}"),
    ] {
        let ev = run_custom(
            &["apply_patch"],
            &[ApiStreamChunk::tool_call("t", "apply_patch", arguments)],
        );
        let done = only(&ev, "response.custom_tool_call_input.done");
        assert_eq!(done["input"], input, "{arguments:?}");
    }
    // Without custom tools the same call is a function call, as before.
    let ev = run_custom(&[], &[ApiStreamChunk::tool_call("t", "apply_patch", "{}")]);
    assert_eq!(
        only(&ev, "response.output_item.done")["item"]["type"],
        "function_call"
    );
}

/// A call of a `namespace` member (offered as `NAMESPACE__NAME`) goes back to Codex by the
/// member's own name with its `namespace`, the only form Codex runs; a custom member is a
/// `custom_tool_call` with its `namespace`.
#[test]
fn a_namespace_members_call_goes_back_with_its_namespace() {
    let tools = [
        ClientTool {
            name: "multi_agent_v1__close_agent".into(),
            custom: false,
            namespace: Some(("multi_agent_v1".into(), "close_agent".into())),
        },
        ClientTool {
            name: "mcp__files__edit".into(),
            custom: true,
            namespace: Some(("mcp__files".into(), "mcp__files__edit".into())),
        },
    ];
    let ev = run_client(
        &tools,
        &[
            ApiStreamChunk::tool_call("t1", "multi_agent_v1__close_agent", "{\"target\":\"a1\"}"),
            ApiStreamChunk::tool_call("t2", "mcp__files__edit", "{\"input\":\"x\"}"),
        ],
    );
    let added: Vec<&Value> = ev
        .iter()
        .filter(|(n, _)| n == "response.output_item.added")
        .map(|(_, d)| &d["item"])
        .collect();
    assert_eq!(added[0]["name"], "close_agent");
    assert_eq!(added[0]["namespace"], "multi_agent_v1");
    let output = &only(&ev, "response.completed")["response"]["output"];
    assert_eq!(
        output[0],
        json!({"id": "fc_req1_0", "type": "function_call", "status": "completed", "call_id": "t1",
               "name": "close_agent", "namespace": "multi_agent_v1", "arguments": "{\"target\":\"a1\"}"})
    );
    assert_eq!(
        output[1],
        json!({"id": "ctc_req1_1", "type": "custom_tool_call", "status": "completed", "call_id": "t2",
               "name": "mcp__files__edit", "namespace": "mcp__files", "input": "x"})
    );
}
