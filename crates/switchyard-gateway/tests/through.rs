//! Every recorded fixture and case through every ingress dialect (SPEC R14.1, R14.2, R14.4,
//! R14.5): each fixture of `tests/fixtures` and each case of `tests/cases` that the provider
//! layer replays (`crates/switchyard-api/tests/fixtures.rs`, `cases.rs`), served by the
//! testkit's scripted upstream of its own family (OpenAI Chat, Anthropic, Responses, Gemini,
//! Bedrock, Ollama, DeepSeek, OpenRouter, xAI, Mistral, Groq, …) in whole, 1-, 5- and 7-byte
//! writes, is asked for through the in-process gateway in each client dialect (Chat
//! Completions, Responses, Anthropic Messages, Gemini), streamed and not. Each answer is parsed back
//! as a client reads it (SSE events / JSON) into text, reasoning, tool calls (id, name, joined
//! arguments), usage and error, and compared with what the library's own `ApiStream` yields
//! for the same recording — not with hand-written expectations.
//!
//! One gateway per split serves every recording (a route per recording, each to its own
//! scripted upstream), so the table costs one server start per split, not per row. The clock
//! is paused: the recordings' retry-after waits (17 s, 36 s) pass in virtual time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use switchyard_api::{
    ApiConfiguration, ApiError, ApiHandler, ApiStreamChunk, ForwardDialect, Mode, RequestOptions,
    ToolCallAccumulator, Usage, build_api_handler, fails_over,
};
use switchyard_gateway::ingress::{Dialect, error_response, parse_request};
use switchyard_gateway::{Gateway, ServerLimits, serve};
use switchyard_testkit::{
    HttpResponse, MockServer, Reply, Split, case_expectations, case_replies, test_data_dir,
};
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-through-test-key-0123456789";
const SYSTEM: &str = "You are a coding agent.";
const USER: &str = "Summarise the build log.";
const DIALECTS: [Dialect; 4] = [
    Dialect::ChatCompletions,
    Dialect::Responses,
    Dialect::AnthropicMessages,
    Dialect::Gemini,
];

/// One recording: where its provider is and what its upstream replays.
struct Recording {
    /// The fixture's or case's name (also its route's name).
    name: String,
    provider: String,
    model: String,
    /// What follows the scripted server's URL in the provider's base URL (`/v1`, `/api/v1`).
    base_path: String,
    /// The replies, request 1 first (the last repeats).
    replies: Vec<Reply>,
}

impl Recording {
    /// Whether `id` was on the wire (not made up by the provider layer for a call without one).
    fn sent(&self, id: &str) -> bool {
        let needle = id.as_bytes();
        self.replies.iter().any(|r| {
            r.response
                .body
                .windows(needle.len())
                .any(|window| window == needle)
        })
    }
}

/// The provider (and model, base path) that replays a fixture, as the library's fixture test
/// has it (`crates/switchyard-api/tests/fixtures.rs`).
fn provider_for(fixture: &str) -> (&'static str, &'static str, &'static str) {
    if fixture.starts_with("anthropic") {
        ("anthropic", "claude-sonnet-4-5-20250929", "")
    } else if fixture.starts_with("openrouter") {
        ("openrouter", "anthropic/claude-sonnet-4.5", "/api/v1")
    } else if fixture.starts_with("gemini") {
        ("gemini", "gemini-2.5-flash", "")
    } else if fixture == "openai_responses" {
        ("openai-native", "gpt-5.4", "/v1")
    } else if fixture.starts_with("ollama") {
        ("ollama", "qwen3:8b", "")
    } else if fixture.starts_with("bedrock") {
        ("bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", "")
    } else if fixture.starts_with("deepseek") {
        ("deepseek", "deepseek-reasoner", "/v1")
    } else {
        ("openai-native", "o4-mini", "/v1")
    }
}

/// The fixtures the library replays (those with an `.expected.json`), and every case with an
/// `.expected.json`.
fn recordings() -> Vec<Recording> {
    let dir = test_data_dir().join("fixtures");
    let mut fixtures: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".expected.json").map(str::to_owned))
        .collect();
    fixtures.sort();
    let mut out: Vec<Recording> = fixtures
        .into_iter()
        .map(|name| {
            let (provider, model, base_path) = provider_for(&name);
            Recording {
                replies: vec![Reply::new(HttpResponse::fixture(&name))],
                name,
                provider: provider.into(),
                model: model.into(),
                base_path: base_path.into(),
            }
        })
        .collect();
    for (id, case) in case_expectations() {
        let text = |key: &str| case[key].as_str().unwrap().to_owned();
        out.push(Recording {
            replies: case_replies(&id),
            provider: text("provider"),
            model: text("model"),
            base_path: text("base_path"),
            name: id,
        });
    }
    out
}

/// One complete tool call as a client assembles it.
#[derive(Debug, Clone, PartialEq)]
struct Call {
    id: String,
    name: String,
    /// The joined argument fragments (none at all: `{}`, as every dialect means it).
    arguments: String,
}

fn call(id: &str, name: &str, arguments: &str) -> Call {
    let arguments = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    Call {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

/// What the library's own stream yields for a recording.
struct Library {
    text: String,
    reasoning: String,
    calls: Vec<Call>,
    /// The opaque reasoning, in order: `{"signature": …}` (a thinking signature) or
    /// `{"redacted": …}` (redacted or encrypted reasoning), which a client sends back.
    opaque: Vec<Value>,
    /// The usage chunks summed (as a task sums them); `None` when there was none.
    usage: Option<Usage>,
    /// The stream's error, and whether content (text, reasoning, a tool call) came before it.
    error: Option<(ApiError, bool)>,
    /// How many requests the upstream got.
    requests: usize,
    /// Whether the gateway continues this answer (SPEC R14.4): cut after text, with no tool
    /// call, by a failure that fails over. On a route of one entry whose every attempt
    /// replays the same cut, that is three continuations after R9.3's waits, then the same
    /// in-band error; the splice keeps the text as it was (tests/continue.rs checks the
    /// continuation itself).
    continued: bool,
    /// Where the provider takes a client's own body (SPEC R14.2): that dialect, and the
    /// provider's events as forwarding gives them back.
    forwarded: Option<(ForwardDialect, String)>,
}

/// The configuration every provider of the table needs (Bedrock: a region), `[serve]` with a
/// request deadline beyond the recordings' retry waits, and `routes`.
fn config_text(routes: &str) -> String {
    format!(
        "[serve]\nrequest_deadline = 3600\n\n[providers.bedrock]\nregion = \"us-east-1\"\n\n{routes}"
    )
}

/// The request every dialect sends, as the Anthropic dialect parses it: the handler's inputs.
fn anthropic_body(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "max_tokens": 1024, "system": SYSTEM,
           "messages": [{"role": "user", "content": USER}],
           "tools": [{"name": "read_file", "description": "Reads a file.", "input_schema": schema()}]})
}

fn schema() -> Value {
    json!({"type": "object", "properties": {"path": {"type": "string"}}})
}

/// The same request in `dialect`.
fn body(dialect: Dialect, model: &str, stream: bool) -> Value {
    match dialect {
        Dialect::AnthropicMessages => anthropic_body(model, stream),
        Dialect::ChatCompletions => {
            let mut body = json!({"model": model, "stream": stream, "max_tokens": 1024,
                "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}],
                "tools": [{"type": "function", "function": {"name": "read_file",
                           "description": "Reads a file.", "parameters": schema()}}]});
            if stream {
                body["stream_options"] = json!({"include_usage": true});
            }
            body
        }
        Dialect::Responses => json!({"model": model, "stream": stream, "max_output_tokens": 1024,
            "instructions": SYSTEM, "input": USER,
            "tools": [{"type": "function", "name": "read_file", "description": "Reads a file.",
                       "parameters": schema()}]}),
        // The model and the stream are the URL's (`path`).
        Dialect::Gemini => json!({"systemInstruction": {"parts": [{"text": SYSTEM}]},
            "contents": [{"role": "user", "parts": [{"text": USER}]}],
            "tools": [{"functionDeclarations": [{"name": "read_file",
                "description": "Reads a file.", "parametersJsonSchema": schema()}]}],
            "generationConfig": {"maxOutputTokens": 1024,
                "thinkingConfig": {"includeThoughts": true}}}),
    }
}

/// The library's handler for `recording`, built as the gateway's route builds it, against
/// the recording replayed whole by a scripted server of its own.
async fn handler_at(recording: &Recording) -> (MockServer, Box<dyn ApiHandler>) {
    let server = MockServer::start(recording.replies.clone()).await;
    let base_url = format!("{}{}", server.url(), recording.base_path);
    let region = if recording.provider == "bedrock" {
        "region = \"us-east-1\"\n"
    } else {
        ""
    };
    let text = format!(
        "[act]\nprovider = \"{}\"\nmodel = \"{}\"\n\n[providers.\"{}\"]\nbase_url = \"{base_url}\"\n{region}",
        recording.provider, recording.model, recording.provider
    );
    let config = ApiConfiguration::from_toml(&text, "library.toml", |_| Some(KEY.to_owned()))
        .unwrap_or_else(|e| panic!("{}: {e}", recording.name));
    (server, build_api_handler(&config, Mode::Act).unwrap())
}

/// The library's answer for `recording`; where its provider takes a client's own body
/// (SPEC R14.2), also the events that forwarding gives back, which a client of that
/// dialect must get byte for byte.
async fn library(recording: &Recording) -> Library {
    let (server, handler) = handler_at(recording).await;
    let body = anthropic_body("m", true).to_string();
    let request = parse_request(Dialect::AnthropicMessages, body.as_bytes()).unwrap();
    let options = RequestOptions {
        overrides: request.overrides.clone(),
        ..RequestOptions::default()
    };
    let items: Vec<_> = handler
        .create_message(
            &request.system_prompt,
            &request.messages,
            &request.tools,
            options.clone(),
        )
        .collect()
        .await;
    let mut library = summarise(items, server.request_count());
    library.continued = matches!(&library.error, Some((e, true)) if fails_over(e.kind))
        && !library.text.is_empty()
        && library.calls.is_empty();
    if let Some(dialect) = handler.forwards() {
        library.forwarded = Some(forwarded(recording, dialect, options, &library).await);
    }
    library
}

/// The events a forward of `recording` in `dialect` gives back, checking that its chunks
/// say what `create_message`'s said (one mapper reads both).
async fn forwarded(
    recording: &Recording,
    dialect: ForwardDialect,
    options: RequestOptions,
    want: &Library,
) -> (ForwardDialect, String) {
    let (server, handler) = handler_at(recording).await;
    let client = match dialect {
        ForwardDialect::AnthropicMessages => body(Dialect::AnthropicMessages, "m", true),
        ForwardDialect::ChatCompletions => body(Dialect::ChatCompletions, "m", true),
        ForwardDialect::Gemini => body(Dialect::Gemini, "m", true),
    };
    let Value::Object(client) = client else {
        unreachable!("a request body is an object")
    };
    let items: Vec<_> = handler.forward(dialect, client, options).collect().await;
    let mut wire = Vec::new();
    for item in &items {
        if let Ok(ApiStreamChunk::Wire(event)) = item {
            wire.extend_from_slice(&event.bytes);
        }
    }
    let got = summarise(items, server.request_count());
    let label = &recording.name;
    assert_eq!(
        (&got.text, &got.reasoning),
        (&want.text, &want.reasoning),
        "{label}: forward"
    );
    // An id the recording did not send is made up afresh by each read, so only its call's name
    // and arguments can agree.
    let sent = |calls: &[Call]| -> Vec<Call> {
        (calls.iter())
            .map(|c| Call {
                id: if !c.id.is_empty() && recording.sent(&c.id) {
                    c.id.clone()
                } else {
                    String::new()
                },
                ..c.clone()
            })
            .collect()
    };
    assert_eq!(
        (sent(&got.calls), &got.usage),
        (sent(&want.calls), &want.usage),
        "{label}: forward"
    );
    assert_eq!(
        got.error.as_ref().map(|(e, c)| (e.to_string(), *c)),
        want.error.as_ref().map(|(e, c)| (e.to_string(), *c)),
        "{label}: forward"
    );
    (dialect, String::from_utf8(wire).unwrap())
}

fn summarise(items: Vec<Result<ApiStreamChunk, ApiError>>, requests: usize) -> Library {
    let mut out = Library {
        text: String::new(),
        reasoning: String::new(),
        calls: Vec::new(),
        opaque: Vec::new(),
        usage: None,
        error: None,
        requests,
        continued: false,
        forwarded: None,
    };
    let mut calls = ToolCallAccumulator::default();
    let mut content = false;
    for item in items {
        match item {
            Ok(chunk) => {
                content |= chunk.is_content();
                match &chunk {
                    ApiStreamChunk::Text { text, .. } => out.text.push_str(text),
                    ApiStreamChunk::Reasoning {
                        reasoning,
                        signature,
                        redacted_data,
                        ..
                    } => {
                        out.reasoning.push_str(reasoning);
                        if let Some(data) = redacted_data {
                            out.opaque.push(json!({"redacted": data}));
                        }
                        if let Some(s) = signature.as_deref().filter(|s| !s.is_empty()) {
                            out.opaque.push(json!({"signature": s}));
                        }
                    }
                    ApiStreamChunk::Usage(u) => {
                        out.usage.get_or_insert_with(Usage::default).add(u);
                    }
                    ApiStreamChunk::ToolCalls { .. } => calls.push_chunk(&chunk),
                    // How the answer ended: the dialects' stop reasons, not compared here.
                    ApiStreamChunk::Finish { .. } | ApiStreamChunk::Wire(_) => {}
                }
            }
            Err(e) => out.error = Some((e, content)),
        }
    }
    out.calls = (calls.finish().iter())
        .map(|c| call(c.call_id.as_deref().unwrap_or(&c.id), &c.name, &c.arguments))
        .collect();
    out
}

/// The usage as `dialect` can say it, from Switchyard's counts (SPEC R1.3: `input_tokens` is
/// the non-cached input). OpenAI's prompt and input counts include cache reads and writes;
/// Anthropic's input is the non-cached part, with both cache counts beside it; only the
/// OpenAI dialects have a place for reasoning tokens.
fn carried(dialect: Dialect, u: &Usage) -> Value {
    let read = u.cache_read_tokens.unwrap_or(0);
    let written = u.cache_write_tokens.unwrap_or(0);
    let all_input = u.input_tokens + read + written;
    let reasoning = u.thoughts_tokens.unwrap_or(0);
    match dialect {
        Dialect::ChatCompletions => json!({"prompt": all_input, "cached": read,
            "cache_write": written, "completion": u.output_tokens, "reasoning": reasoning}),
        Dialect::Responses => json!({"input": all_input, "cached": read,
            "output": u.output_tokens, "reasoning": reasoning}),
        Dialect::AnthropicMessages => json!({"input": u.input_tokens, "cache_read": read,
            "cache_write": written, "output": u.output_tokens}),
        // Google's candidates leave the thoughts out.
        Dialect::Gemini => {
            let thoughts = reasoning.min(u.output_tokens);
            json!({"prompt": all_input, "cached": read, "candidates": u.output_tokens - thoughts,
                   "thoughts": thoughts, "total": all_input + u.output_tokens})
        }
    }
}

/// The usage a client of `dialect` reads from the wire's usage object, in [`carried`]'s shape.
fn read_usage(dialect: Dialect, u: &Value) -> Value {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    match dialect {
        Dialect::ChatCompletions => json!({"prompt": n(&u["prompt_tokens"]),
            "cached": n(&u["prompt_tokens_details"]["cached_tokens"]),
            "cache_write": n(&u["prompt_tokens_details"]["cache_write_tokens"]),
            "completion": n(&u["completion_tokens"]),
            "reasoning": n(&u["completion_tokens_details"]["reasoning_tokens"])}),
        Dialect::Responses => json!({"input": n(&u["input_tokens"]),
            "cached": n(&u["input_tokens_details"]["cached_tokens"]),
            "output": n(&u["output_tokens"]),
            "reasoning": n(&u["output_tokens_details"]["reasoning_tokens"])}),
        Dialect::AnthropicMessages => json!({"input": n(&u["input_tokens"]),
            "cache_read": n(&u["cache_read_input_tokens"]),
            "cache_write": n(&u["cache_creation_input_tokens"]),
            "output": n(&u["output_tokens"])}),
        Dialect::Gemini => json!({"prompt": n(&u["promptTokenCount"]),
            "cached": n(&u["cachedContentTokenCount"]),
            "candidates": n(&u["candidatesTokenCount"]),
            "thoughts": n(&u["thoughtsTokenCount"]), "total": n(&u["totalTokenCount"])}),
    }
}

/// What a client of one dialect got.
#[derive(Debug, Default)]
struct Got {
    status: u16,
    text: String,
    reasoning: String,
    calls: Vec<Call>,
    /// The opaque reasoning as [`Library::opaque`] (Anthropic), or `{"encrypted": …}` per
    /// reasoning item (Responses' `encrypted_content`); Chat has no place for it.
    opaque: Vec<Value>,
    /// In [`carried`]'s shape.
    usage: Option<Value>,
    /// An error response's body, or the stream's in-band error event.
    error: Option<Value>,
    /// The dialect's clean end (`[DONE]`, `message_stop`, `response.completed`) was seen.
    clean_end: bool,
    /// Whether the answer's stop reason says it called tools.
    stopped_for_tools: bool,
}

/// The events of an SSE body: `(event: name, data: JSON)`, `[DONE]` as the string.
fn events(label: &str, text: &str) -> Vec<(Option<String>, Value)> {
    let mut out = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut name = None;
        let mut data = None;
        for line in block.lines() {
            if let Some(n) = line.strip_prefix("event: ") {
                name = Some(n.to_owned());
            } else if let Some(d) = line.strip_prefix("data: ") {
                data = Some(serde_json::from_str(d).unwrap_or_else(|_| json!(d)));
            }
        }
        let data = data.unwrap_or_else(|| panic!("{label}: an event without data: {block:?}"));
        out.push((name, data));
    }
    out
}

/// A Chat Completions stream as the SDKs accumulate it.
fn chat_stream(label: &str, text: &str) -> Got {
    let mut got = Got::default();
    let mut calls: Vec<Call> = Vec::new();
    let mut id = None;
    let mut finished = false;
    for (_, e) in events(label, text) {
        assert!(!got.clean_end, "{label}: an event after [DONE]");
        if e == "[DONE]" {
            got.clean_end = true;
            continue;
        }
        assert!(got.error.is_none(), "{label}: an event after the error");
        if e["error"].is_object() {
            got.error = Some(e);
            continue;
        }
        // Azure's `prompt_filter_results` chunk (no id, no choices, no usage), which an
        // upstream of the client's own dialect sends it as it came (SPEC R14.2): clients skip it.
        let choices = e["choices"].as_array().map_or(0, Vec::len);
        if choices == 0 && e["usage"].is_null() && e["prompt_filter_results"].is_array() {
            continue;
        }
        // One completion: every chunk carries its id; nothing but usage after the finish.
        assert_eq!(e["object"], "chat.completion.chunk", "{label}: {e}");
        assert_eq!(
            id.get_or_insert_with(|| e["id"].clone()),
            &e["id"],
            "{label}: {e}"
        );
        if e["usage"].is_object() {
            got.usage = Some(read_usage(Dialect::ChatCompletions, &e["usage"]));
        }
        let Some(choice) = e["choices"].get(0) else {
            continue;
        };
        assert!(!finished, "{label}: a choice after the finish_reason: {e}");
        finished = choice["finish_reason"].is_string();
        let delta = &choice["delta"];
        got.text += delta["content"].as_str().unwrap_or("");
        got.reasoning += delta["reasoning_content"].as_str().unwrap_or("");
        for fragment in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = fragment["index"].as_u64().unwrap() as usize;
            if index == calls.len() {
                let id = fragment["id"].as_str().unwrap();
                calls.push(call(id, fragment["function"]["name"].as_str().unwrap(), ""));
                calls[index].arguments.clear();
            }
            let arguments = fragment["function"]["arguments"].as_str().unwrap_or("");
            calls[index].arguments += arguments;
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            got.stopped_for_tools = reason == "tool_calls";
        }
    }
    got.calls = calls
        .iter()
        .map(|c| call(&c.id, &c.name, &c.arguments))
        .collect();
    got
}

/// Anthropic's block discipline, which Claude Code and the SDKs rely on: `message_start`
/// first; blocks numbered from 0 in order, one open at a time, each delta of its block's kind
/// and on the open block, each block stopped before the next starts and before
/// `message_delta`; `message_stop` right after `message_delta`.
fn assert_anthropic_blocks(label: &str, events: &[(Option<String>, Value)]) {
    let mut open: Option<(u64, String)> = None;
    let mut next = 0;
    let mut previous = "";
    for (at, (_, e)) in events.iter().enumerate() {
        let kind = e["type"].as_str().unwrap();
        let index = e["index"].as_u64();
        let show = || format!("{label}: event {at} {e}");
        match kind {
            "message_start" => assert_eq!(at, 0, "{}", show()),
            "content_block_start" => {
                assert!(open.is_none() && index == Some(next), "{}", show());
                let block = e["content_block"]["type"].as_str().unwrap().to_owned();
                open = Some((next, block));
                next += 1;
            }
            "content_block_delta" => {
                let (i, block) = open.as_ref().unwrap_or_else(|| panic!("{}", show()));
                assert_eq!(index, Some(*i), "{}", show());
                let fits = match e["delta"]["type"].as_str().unwrap() {
                    "text_delta" => block == "text",
                    "thinking_delta" | "signature_delta" => block == "thinking",
                    "input_json_delta" => block == "tool_use",
                    _ => false,
                };
                assert!(fits, "{}: in a {block} block", show());
            }
            "content_block_stop" => {
                assert_eq!(open.take().map(|(i, _)| i), index, "{}", show());
            }
            "message_delta" => assert!(open.is_none(), "{}: a block is open", show()),
            "message_stop" => assert_eq!(previous, "message_delta", "{}", show()),
            _ => {}
        }
        previous = kind;
    }
}

/// The Responses item discipline Codex and the SDKs rely on: `response.created` then
/// `response.in_progress` first; items added with consecutive
/// `output_index` from 0, every delta on an item added and not yet done, and every item done
/// (`response.output_item.done`) before `response.completed`.
fn assert_responses_items(label: &str, events: &[(Option<String>, Value)]) {
    let mut items: Vec<(String, bool)> = Vec::new();
    for (at, (_, e)) in events.iter().enumerate() {
        let kind = e["type"].as_str().unwrap();
        let show = || format!("{label}: event {at} {e}");
        let index = e["output_index"].as_u64().map(|i| i as usize);
        let opening = ["response.created", "response.in_progress"];
        assert_eq!(at < 2, opening.contains(&kind), "{}: the opening", show());
        match kind {
            "response.output_item.added" => {
                assert_eq!(index, Some(items.len()), "{}", show());
                items.push((e["item"]["id"].as_str().unwrap().to_owned(), false));
            }
            "response.output_item.done" => {
                let item = index.and_then(|i| items.get_mut(i));
                let (id, done) = item.unwrap_or_else(|| panic!("{}", show()));
                assert!(!*done && e["item"]["id"] == id.as_str(), "{}", show());
                *done = true;
            }
            "response.completed" => {
                assert!(
                    items.iter().all(|(_, done)| *done),
                    "{}: an item left open",
                    show()
                );
            }
            _ if kind.ends_with(".delta") => {
                let item = index.and_then(|i| items.get(i));
                let open = item.is_some_and(|(id, done)| !done && e["item_id"] == id.as_str());
                assert!(open, "{}: a delta outside its item", show());
            }
            _ => {}
        }
    }
}

/// An Anthropic stream as the SDKs accumulate it (message_start's usage, overlaid by the
/// fields message_delta carries).
fn messages_stream(label: &str, text: &str) -> Got {
    let mut got = Got::default();
    let mut calls: Vec<(u64, Call)> = Vec::new();
    let mut usage = json!({});
    let events = events(label, text);
    assert_anthropic_blocks(label, &events);
    for (name, e) in events {
        assert!(
            !got.clean_end && got.error.is_none(),
            "{label}: an event after the end"
        );
        assert_eq!(name.as_deref(), e["type"].as_str(), "{label}: {e}");
        match e["type"].as_str().unwrap() {
            "message_start" => usage = e["message"]["usage"].clone(),
            "content_block_start" if e["content_block"]["type"] == "redacted_thinking" => {
                got.opaque
                    .push(json!({"redacted": e["content_block"]["data"]}));
            }
            "content_block_start" if e["content_block"]["type"] == "tool_use" => {
                let block = &e["content_block"];
                let (id, name) = (block["id"].as_str().unwrap(), block["name"].as_str());
                calls.push((e["index"].as_u64().unwrap(), call(id, name.unwrap(), "")));
                calls.last_mut().unwrap().1.arguments.clear();
            }
            "content_block_delta" => {
                let delta = &e["delta"];
                got.text += delta["text"].as_str().unwrap_or("");
                got.reasoning += delta["thinking"].as_str().unwrap_or("");
                if let Some(signature) = delta["signature"].as_str() {
                    got.opaque.push(json!({"signature": signature}));
                }
                if let Some(json) = delta["partial_json"].as_str() {
                    let index = e["index"].as_u64().unwrap();
                    let at = calls.iter().position(|(i, _)| *i == index).unwrap();
                    calls[at].1.arguments += json;
                }
            }
            "message_delta" => {
                for (key, value) in e["usage"].as_object().unwrap() {
                    if !value.is_null() {
                        usage[key] = value.clone();
                    }
                }
                got.stopped_for_tools = e["delta"]["stop_reason"] == "tool_use";
            }
            "message_stop" => got.clean_end = true,
            "error" => got.error = Some(e),
            _ => {}
        }
    }
    if got.clean_end {
        got.usage = Some(read_usage(Dialect::AnthropicMessages, &usage));
    }
    got.calls = (calls.iter())
        .map(|(_, c)| call(&c.id, &c.name, &c.arguments))
        .collect();
    got
}

/// A Responses stream as the SDKs and Codex read it: the deltas, and the terminal event's
/// response, whose output must say the same as the deltas did.
fn responses_stream(label: &str, text: &str) -> Got {
    let mut got = Got::default();
    let mut calls: Vec<(String, Call)> = Vec::new();
    let events = events(label, text);
    assert_responses_items(label, &events);
    for (at, (name, e)) in events.into_iter().enumerate() {
        assert!(
            !got.clean_end && got.error.is_none(),
            "{label}: an event after the end"
        );
        assert_eq!(name.as_deref(), e["type"].as_str(), "{label}: {e}");
        assert_eq!(e["sequence_number"], at, "{label}: {e}");
        match e["type"].as_str().unwrap() {
            "response.output_text.delta" => got.text += e["delta"].as_str().unwrap(),
            "response.reasoning_summary_text.delta" => {
                got.reasoning += e["delta"].as_str().unwrap();
            }
            "response.output_item.added" if e["item"]["type"] == "function_call" => {
                let item = &e["item"];
                let c = call(
                    item["call_id"].as_str().unwrap(),
                    item["name"].as_str().unwrap(),
                    "",
                );
                calls.push((item["id"].as_str().unwrap().to_owned(), c));
                calls.last_mut().unwrap().1.arguments.clear();
            }
            "response.function_call_arguments.delta" => {
                let item = e["item_id"].as_str().unwrap();
                let at = calls.iter().position(|(id, _)| id == item).unwrap();
                calls[at].1.arguments += e["delta"].as_str().unwrap();
            }
            "response.completed" => {
                got.clean_end = true;
                let whole = responses_json(&e["response"]);
                got.usage = whole.usage.clone();
                got.stopped_for_tools = whole.stopped_for_tools;
                got.opaque = whole.opaque.clone();
                got.calls = (calls.iter())
                    .map(|(_, c)| call(&c.id, &c.name, &c.arguments))
                    .collect();
                let said = |g: &Got| (g.text.clone(), g.reasoning.clone(), g.calls.clone());
                assert_eq!(said(&whole), said(&got), "{label}: the final response");
            }
            "response.failed" => {
                got.usage = Some(read_usage(Dialect::Responses, &e["response"]["usage"]));
                got.error = Some(e);
            }
            _ => {}
        }
    }
    if !got.clean_end {
        got.calls = (calls.iter())
            .map(|(_, c)| call(&c.id, &c.name, &c.arguments))
            .collect();
    }
    got
}

/// One Gemini response's parts into `got`: text, thoughts, whole calls.
fn gemini_parts(got: &mut Got, response: &Value) {
    let candidate = &response["candidates"][0];
    for part in candidate["content"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let Some(text) = part["text"].as_str() {
            if part["thought"] == true {
                got.reasoning += text;
            } else {
                got.text += text;
            }
        }
        let f = &part["functionCall"];
        if f.is_object() {
            let args = f["args"].to_string();
            got.calls.push(call(
                f["id"].as_str().unwrap(),
                f["name"].as_str().unwrap(),
                &args,
            ));
        }
    }
    if let Some(usage) = response.get("usageMetadata") {
        got.usage = Some(read_usage(Dialect::Gemini, usage));
    }
    if candidate["finishReason"].is_string() {
        got.clean_end = true;
        // Gemini ends a call's turn with STOP: the calls say it.
        got.stopped_for_tools = !got.calls.is_empty();
    }
}

/// A Gemini stream as the genai SDK reads it: `data:` events of responses, the finish reason
/// on the last; a failure is Google's error object itself, after the events.
fn gemini_stream(label: &str, text: &str) -> Got {
    let mut got = Got::default();
    let text = text.replace("\r\n", "\n");
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        assert!(
            !got.clean_end && got.error.is_none(),
            "{label}: an event after the end: {block}"
        );
        let block = block.trim();
        if block.starts_with('{') {
            got.error = Some(
                serde_json::from_str(block).unwrap_or_else(|e| panic!("{label}: {e}: {block}")),
            );
            continue;
        }
        let data = block
            .strip_prefix("data: ")
            .unwrap_or_else(|| panic!("{label}: not an event: {block:?}"));
        assert!(
            !data.contains('\n'),
            "{label}: one line per event: {data:?}"
        );
        let response: Value =
            serde_json::from_str(data).unwrap_or_else(|e| panic!("{label}: {e}: {data}"));
        if response["error"].is_object() {
            got.error = Some(response);
            continue;
        }
        gemini_parts(&mut got, &response);
    }
    got
}

fn gemini_json(v: &Value) -> Got {
    let mut got = Got::default();
    gemini_parts(&mut got, v);
    got
}

fn chat_json(v: &Value) -> Got {
    let message = &v["choices"][0]["message"];
    let calls = message["tool_calls"].as_array().into_iter().flatten();
    Got {
        text: message["content"].as_str().unwrap_or("").to_owned(),
        reasoning: message["reasoning_content"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
        calls: calls
            .map(|c| {
                let f = &c["function"];
                call(
                    c["id"].as_str().unwrap(),
                    f["name"].as_str().unwrap(),
                    f["arguments"].as_str().unwrap(),
                )
            })
            .collect(),
        usage: (v.get("usage")).map(|u| read_usage(Dialect::ChatCompletions, u)),
        stopped_for_tools: v["choices"][0]["finish_reason"] == "tool_calls",
        clean_end: true,
        ..Got::default()
    }
}

fn messages_json(v: &Value) -> Got {
    let mut got = Got {
        usage: Some(read_usage(Dialect::AnthropicMessages, &v["usage"])),
        stopped_for_tools: v["stop_reason"] == "tool_use",
        clean_end: true,
        ..Got::default()
    };
    for block in v["content"].as_array().unwrap() {
        match block["type"].as_str().unwrap() {
            "text" => got.text += block["text"].as_str().unwrap(),
            "thinking" => {
                got.reasoning += block["thinking"].as_str().unwrap();
                let signature = block["signature"].as_str().unwrap();
                if !signature.is_empty() {
                    got.opaque.push(json!({"signature": signature}));
                }
            }
            "redacted_thinking" => got.opaque.push(json!({"redacted": block["data"]})),
            "tool_use" => {
                // `input` is the parsed object (a string when the model's was not JSON).
                let input = match &block["input"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                got.calls.push(call(
                    block["id"].as_str().unwrap(),
                    block["name"].as_str().unwrap(),
                    &input,
                ));
            }
            _ => {}
        }
    }
    got
}

fn responses_json(v: &Value) -> Got {
    let mut got = Got {
        usage: Some(read_usage(Dialect::Responses, &v["usage"])),
        clean_end: true,
        ..Got::default()
    };
    for item in v["output"].as_array().unwrap() {
        match item["type"].as_str().unwrap() {
            "message" => {
                for part in item["content"].as_array().unwrap() {
                    got.text += part["text"].as_str().unwrap_or("");
                }
            }
            "reasoning" => {
                for part in item["summary"].as_array().unwrap() {
                    got.reasoning += part["text"].as_str().unwrap_or("");
                }
                if let Some(data) = item.get("encrypted_content") {
                    got.opaque.push(json!({"encrypted": data}));
                }
            }
            "function_call" => {
                got.stopped_for_tools = true;
                let s = |k: &str| item[k].as_str().unwrap().to_owned();
                got.calls
                    .push(call(&s("call_id"), &s("name"), &s("arguments")));
            }
            _ => {}
        }
    }
    got
}

/// What the client of `dialect` got from `status` and `text`.
fn read_answer(label: &str, dialect: Dialect, stream: bool, status: u16, text: &str) -> Got {
    let mut got = if status != 200 {
        Got {
            error: Some(
                serde_json::from_str(text).unwrap_or_else(|e| panic!("{label}: {e}: {text}")),
            ),
            ..Got::default()
        }
    } else if stream {
        match dialect {
            Dialect::ChatCompletions => chat_stream(label, text),
            Dialect::Responses => responses_stream(label, text),
            Dialect::AnthropicMessages => messages_stream(label, text),
            Dialect::Gemini => gemini_stream(label, text),
        }
    } else {
        let v: Value =
            serde_json::from_str(text).unwrap_or_else(|e| panic!("{label}: {e}: {text}"));
        match dialect {
            Dialect::ChatCompletions => chat_json(&v),
            Dialect::Responses => responses_json(&v),
            Dialect::AnthropicMessages => messages_json(&v),
            Dialect::Gemini => gemini_json(&v),
        }
    };
    got.status = status;
    got
}

/// Tool calls are the same: name and joined arguments (Anthropic's whole `input` as JSON),
/// and the id the wire sent — an id the provider layer made up for a call the wire sent
/// without one is made up again for the gateway's request, so it only has to be new.
fn assert_same_calls(
    label: &str,
    recording: &Recording,
    dialect: Dialect,
    stream: bool,
    want: &[Call],
    got: &[Call],
) {
    let show = || format!("{label}\n  library {want:?}\n  gateway {got:?}");
    assert_eq!(want.len(), got.len(), "{}", show());
    let mut ids = HashSet::new();
    for (w, g) in want.iter().zip(got) {
        assert_eq!(w.name, g.name, "{}", show());
        // Anthropic's whole `input` and Gemini's `args` are the parsed object.
        if (dialect == Dialect::AnthropicMessages && !stream) || dialect == Dialect::Gemini {
            let parse = |s: &str| serde_json::from_str::<Value>(s).unwrap_or_else(|_| json!(s));
            assert_eq!(parse(&w.arguments), parse(&g.arguments), "{}", show());
        } else {
            assert_eq!(w.arguments, g.arguments, "{}", show());
        }
        if recording.sent(&w.id) {
            assert_eq!(w.id, g.id, "{}", show());
        } else {
            assert!(!g.id.is_empty() && !recording.sent(&g.id), "{}", show());
        }
        assert!(ids.insert(g.id.clone()), "{}: a repeated id", show());
    }
}

/// The events a client of `dialect` gets from the provider as they came, when the provider
/// takes that dialect's body as it is.
fn forwarded_events(want: &Library, dialect: Dialect) -> Option<&str> {
    match (want.forwarded.as_ref()?, dialect) {
        ((ForwardDialect::ChatCompletions, events), Dialect::ChatCompletions)
        | ((ForwardDialect::AnthropicMessages, events), Dialect::AnthropicMessages)
        | ((ForwardDialect::Gemini, events), Dialect::Gemini) => Some(events.as_str()),
        _ => None,
    }
}

/// The gateway's answer in `dialect` says what the library's stream said.
fn compare(
    label: &str,
    recording: &Recording,
    (dialect, stream): (Dialect, bool),
    want: &Library,
    got: &Got,
) {
    // A cut stream of the provider's own dialect (SPEC R14.2) carries the provider's usage in
    // its events, not the gateway's.
    let forwarded = forwarded_events(want, dialect).filter(|_| stream);
    match &want.error {
        // Failed before content, or a whole answer that failed: the error response.
        Some((error, content)) if !*content || !stream => {
            let (status, body) = error_response(dialect, error);
            assert_eq!(
                (got.status, got.error.as_ref()),
                (status, Some(&body)),
                "{label}"
            );
            return;
        }
        Some((error, _)) => {
            assert_eq!(got.status, 200, "{label}");
            assert!(!got.clean_end, "{label}: a cut answer ended cleanly");
            let event = got
                .error
                .as_ref()
                .unwrap_or_else(|| panic!("{label}: no in-band error"));
            let message = match dialect {
                Dialect::Responses => &event["response"]["error"]["message"],
                _ => &event["error"]["message"],
            };
            let message = message.as_str().unwrap();
            assert!(
                message.starts_with(&error.to_string()),
                "{label}: {message}"
            );
        }
        None => {
            assert_eq!((got.status, &got.error), (200, &None), "{label}");
            assert!(got.clean_end, "{label}: no clean end");
            assert_eq!(got.stopped_for_tools, !want.calls.is_empty(), "{label}");
        }
    }
    assert!(!format!("{got:?}").contains(KEY), "{label}: the key");
    assert_eq!(got.text, want.text, "{label}: text");
    assert_eq!(got.reasoning, want.reasoning, "{label}: reasoning");
    // Gemini gives a call only whole: one whose arguments never became a JSON object, as a
    // stream cut inside them leaves it, is not given.
    let whole: Vec<Call> = (want.calls.iter())
        .filter(|c| {
            dialect != Dialect::Gemini
                || serde_json::from_str::<Value>(&c.arguments).is_ok_and(|v| v.is_object())
        })
        .cloned()
        .collect();
    assert_same_calls(label, recording, dialect, stream, &whole, &got.calls);
    match dialect {
        Dialect::AnthropicMessages => assert_eq!(got.opaque, want.opaque, "{label}: opaque"),
        // A failed response lists only its finished items.
        Dialect::Responses if want.error.is_none() => {
            let encrypted: Vec<Value> = (want.opaque.iter())
                .map(|o| json!({"encrypted": o.as_object().unwrap().values().next().unwrap()}))
                .collect();
            assert_eq!(got.opaque, encrypted, "{label}: encrypted reasoning");
        }
        _ => {}
    }
    // A stream cut by an error: Chat's and Anthropic's error events have no usage.
    // A continued answer's usage is summed over its attempts (tests/continue.rs).
    let carries_usage = want.error.is_none() || (dialect == Dialect::Responses && !want.continued);
    if carries_usage && forwarded.is_none() {
        match &want.usage {
            // The upstream reported none: the gateway's estimate (SPEC R14.4; its figures are
            // checked in tests/continue.rs), never zeros.
            None => assert!(
                (got.usage.as_ref()).is_some_and(|u| *u != carried(dialect, &Usage::default())),
                "{label}: no estimated usage: {:?}",
                got.usage
            ),
            Some(u) => assert_eq!(got.usage, Some(carried(dialect, u)), "{label}: usage"),
        }
    }
}

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

async fn start_gateway(text: &str) -> Running {
    let config = ApiConfiguration::from_toml(text, "serve.toml", |_| Some(KEY.to_owned()))
        .unwrap_or_else(|e| panic!("{e}"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    // Timeouts far beyond the recordings' virtual retry waits (the clock is paused).
    let limits = ServerLimits {
        header_read_timeout: Duration::from_secs(24 * 3600),
        ..ServerLimits::default()
    };
    tokio::spawn(serve(
        listener,
        Arc::new(Gateway::new(config).unwrap()),
        limits,
        shutdown.clone(),
    ));
    Running { base, shutdown }
}

/// The path a request of `dialect` for `model` goes to; Gemini's names the model and the stream.
fn path(dialect: Dialect, model: &str, stream: bool) -> String {
    match dialect {
        Dialect::ChatCompletions => "/v1/chat/completions".to_owned(),
        Dialect::Responses => "/v1/responses".to_owned(),
        Dialect::AnthropicMessages => "/v1/messages".to_owned(),
        Dialect::Gemini if stream => {
            format!("/v1beta/models/{model}:streamGenerateContent?alt=sse")
        }
        Dialect::Gemini => format!("/v1beta/models/{model}:generateContent"),
    }
}

/// How many upstream requests the gateway makes for one client request of `want`'s
/// recording: the library's, or with three continuations (each replaying the one cut reply).
fn attempts(want: &Library) -> usize {
    if want.continued {
        assert_eq!(
            want.requests, 1,
            "a continued recording of more than one reply"
        );
        4
    } else {
        want.requests
    }
}

/// The replies for `runs` requests of `want`'s upstream requests each: the recording's
/// sequence (its last reply repeating) cut into `split`'s writes, once per run; a continued
/// answer's every attempt replays its one cut reply (a sequence such as C85's, whose second
/// reply would complete it, is the library's retry, not the gateway's continuation).
fn replies_for(recording: &Recording, want: &Library, runs: usize, split: &Split) -> Vec<Reply> {
    let requests = attempts(want);
    let last = if want.continued {
        0
    } else {
        recording.replies.len() - 1
    };
    (0..runs * requests)
        .map(|n| {
            recording.replies[(n % requests).min(last)]
                .clone()
                .split(split.clone())
        })
        .collect()
}

/// Every recording through every dialect, streamed and not, its upstream's bodies cut as
/// `split` says.
async fn every_recording_through_every_dialect(split: Split) {
    let recordings = recordings();
    assert!(
        recordings.len() >= 23 + 41,
        "{} recordings",
        recordings.len()
    );
    let runs = DIALECTS.len() * 2;
    let mut table = Vec::new();
    let mut routes = String::new();
    for recording in &recordings {
        let want = library(recording).await;
        let replies = replies_for(recording, &want, runs, &split);
        let upstream = MockServer::start(replies).await;
        routes += &format!(
            "[serve.routes.\"{}\"]\nprovider = \"{}\"\nmodel = \"{}\"\nbase_url = \"{}{}\"\n\n",
            recording.name,
            recording.provider,
            recording.model,
            upstream.url(),
            recording.base_path
        );
        table.push((recording, want, upstream));
    }
    let gateway = start_gateway(&config_text(&routes)).await;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let mut checked = 0;
    for (recording, want, upstream) in &table {
        for (run, (dialect, stream)) in DIALECTS
            .iter()
            .flat_map(|d| [(*d, true), (*d, false)])
            .enumerate()
        {
            let label = format!("{} {split:?} {dialect:?} stream={stream}", recording.name);
            let response = client
                .post(format!(
                    "{}{}",
                    gateway.base,
                    path(dialect, &recording.name, stream)
                ))
                .header("content-type", "application/json")
                .body(body(dialect, &recording.name, stream).to_string())
                .send()
                .await
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            let status = response.status().as_u16();
            let content_type = response.headers()["content-type"].to_str().unwrap();
            let sse = status == 200 && stream;
            let kind = if sse {
                "text/event-stream"
            } else {
                "application/json"
            };
            assert!(content_type.starts_with(kind), "{label}: {content_type}");
            let text = response
                .text()
                .await
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            assert!(!text.contains(KEY), "{label}: the key in the answer");
            // A whole answer in the provider's own dialect is its events as they came (SPEC
            // R14.2), quirks and all (OpenRouter's usage chunk repeats a choice): byte for byte.
            if let (Some(events), true, None) =
                (forwarded_events(want, dialect), stream, &want.error)
            {
                assert_eq!(
                    (status, text.as_str()),
                    (200, events),
                    "{label}: as they came"
                );
            } else {
                let cut = matches!(want.error, Some((_, true)));
                if let (Some(events), true, true) = (forwarded_events(want, dialect), stream, cut) {
                    // Cut: the provider's events up to the cut, then the gateway's own.
                    assert!(text.starts_with(events), "{label}: as they came: {text}");
                }
                let got = read_answer(&label, dialect, stream, status, &text);
                compare(&label, recording, (dialect, stream), want, &got);
            }
            let requests = upstream.request_count();
            assert_eq!(
                requests,
                attempts(want) * (run + 1),
                "{label}: upstream requests"
            );
            checked += 1;
        }
    }
    eprintln!(
        "{checked} answers checked ({} recordings × 4 dialects × streamed and not, {split:?})",
        table.len()
    );
}

#[tokio::test(start_paused = true)]
async fn every_recording_through_every_dialect_whole() {
    every_recording_through_every_dialect(Split::Whole).await;
}

#[tokio::test(start_paused = true)]
async fn every_recording_through_every_dialect_in_1_byte_writes() {
    every_recording_through_every_dialect(Split::Every(1)).await;
}

#[tokio::test(start_paused = true)]
async fn every_recording_through_every_dialect_in_5_byte_writes() {
    every_recording_through_every_dialect(Split::Every(5)).await;
}

#[tokio::test(start_paused = true)]
async fn every_recording_through_every_dialect_in_7_byte_writes() {
    every_recording_through_every_dialect(Split::Every(7)).await;
}

// Public reports of gateways that lost or doubled something in translation, each replayed
// through every dialect here (real clock: these upstreams never wait).

/// Asks a gateway whose route `m` goes to `provider`'s `model` at a scripted upstream that
/// answers `reply` to every request, in every dialect, streamed and not: what each client got.
/// A stream in the provider's own dialect is the upstream's events as they came (SPEC R14.2:
/// checked here, byte for byte) and is not returned: these reports are of translations.
async fn through_every_dialect(
    provider: &str,
    model: &str,
    base_path: &str,
    reply: Reply,
) -> Vec<(String, Dialect, bool, Got, String)> {
    // The relay re-frames each event with LF line ends: Gemini's CRLF framing comes back as LF.
    let events = String::from_utf8(reply.response.body.clone())
        .unwrap()
        .replace("\r\n", "\n");
    let upstream = MockServer::start(vec![reply]).await;
    let url = format!("{}{base_path}", upstream.url());
    let route = format!("provider = \"{provider}\"\nmodel = \"{model}\"\n");
    let forwards = {
        let config = format!("[act]\n{route}\n[providers.\"{provider}\"]\nbase_url = \"{url}\"\n");
        let config = ApiConfiguration::from_toml(&config, "t", |_| Some(KEY.to_owned())).unwrap();
        build_api_handler(&config, Mode::Act).unwrap().forwards()
    };
    let routes = format!("[serve.routes.m]\n{route}base_url = \"{url}\"\n");
    let gateway = start_gateway(&config_text(&routes)).await;
    let client = reqwest::Client::new();
    let mut out = Vec::new();
    for dialect in DIALECTS {
        for stream in [true, false] {
            let label = format!("{dialect:?} stream={stream}");
            let response = client
                .post(format!("{}{}", gateway.base, path(dialect, "m", stream)))
                .header("content-type", "application/json")
                .body(body(dialect, "m", stream).to_string())
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let text = response.text().await.unwrap();
            let own = matches!(
                (forwards, dialect),
                (
                    Some(ForwardDialect::ChatCompletions),
                    Dialect::ChatCompletions
                ) | (
                    Some(ForwardDialect::AnthropicMessages),
                    Dialect::AnthropicMessages
                ) | (Some(ForwardDialect::Gemini), Dialect::Gemini)
            );
            if own && stream {
                assert_eq!((status, text.as_str()), (200, events.as_str()), "{label}");
                continue;
            }
            let got = read_answer(&label, dialect, stream, status, &text);
            assert_eq!((got.status, &got.error), (200, &None), "{label}: {text}");
            out.push((label, dialect, stream, got, text));
        }
    }
    out
}

/// A Chat Completions stream of `events` (each one `data:` payload) then `[DONE]`.
fn chat_sse(events: &[Value]) -> Reply {
    let mut body = String::new();
    for e in events {
        body += &format!("data: {e}\n\n");
    }
    body += "data: [DONE]\n\n";
    Reply::new(HttpResponse::sse(&body))
}

fn chat_chunk(delta: Value, finish_reason: Value) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})
}

/// decolua/9router#2869 (and maximhq/bifrost#5128's doubled tool calls): an upstream that
/// repeats `finish_reason` on its trailing usage chunk made the translator emit the buffered
/// arguments a second time (`{…}{…}`, which Claude Code rejects). Here the call arrives once,
/// whole, in every dialect, and the usage of the repeated chunk is kept.
#[tokio::test]
async fn a_repeated_finish_reason_does_not_send_the_tool_call_twice() {
    let opening = json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
        "id": "call_9r", "type": "function", "function": {"name": "read_file", "arguments": ""}}]});
    let part = |a: &str| json!({"tool_calls": [{"index": 0, "function": {"arguments": a}}]});
    let mut last = chat_chunk(json!({}), json!("tool_calls"));
    last["usage"] = json!({"prompt_tokens": 31, "completion_tokens": 9, "total_tokens": 40});
    let reply = chat_sse(&[
        chat_chunk(opening, Value::Null),
        chat_chunk(part("{\"path\":"), Value::Null),
        chat_chunk(part("\"a.rs\"}"), Value::Null),
        chat_chunk(json!({}), json!("tool_calls")),
        last,
    ]);
    for (label, dialect, _, got, text) in
        through_every_dialect("openai", "gpt-4o", "/v1", reply).await
    {
        assert_eq!(
            got.calls,
            [call("call_9r", "read_file", "{\"path\":\"a.rs\"}")],
            "{label}: {text}"
        );
        assert!(got.stopped_for_tools, "{label}: {text}");
        let usage = Usage {
            input_tokens: 31,
            output_tokens: 9,
            ..Usage::default()
        };
        assert_eq!(got.usage, Some(carried(dialect, &usage)), "{label}: {text}");
    }
}

/// router-for-me/CLIProxyAPI#1579: providers that repeat a call's `id` and send an empty
/// (or the same) `function.name` on later fragments made the OpenAI → Anthropic translator
/// open a second, nameless `tool_use` block. Here each client sees one call with its name.
#[tokio::test]
async fn later_fragments_repeating_the_id_with_an_empty_name_are_one_call() {
    let fragment = |name: &str, a: &str| {
        json!({"tool_calls": [{"index": 0, "id": "call_fw", "type": "function",
               "function": {"name": name, "arguments": a}}]})
    };
    let reply = chat_sse(&[
        chat_chunk(fragment("read_file", ""), Value::Null),
        chat_chunk(fragment("", "{\"path\":"), Value::Null),
        chat_chunk(fragment("read_file", "\"b.rs\"}"), Value::Null),
        chat_chunk(json!({}), json!("tool_calls")),
    ]);
    for (label, dialect, stream, got, text) in
        through_every_dialect("openai", "gpt-4o", "/v1", reply).await
    {
        assert_eq!(
            got.calls,
            [call("call_fw", "read_file", "{\"path\":\"b.rs\"}")],
            "{label}: {text}"
        );
        if dialect == Dialect::AnthropicMessages && stream {
            assert_eq!(
                text.matches("\"type\":\"tool_use\"").count(),
                1,
                "{label}: {text}"
            );
        }
    }
}

/// BerriAI/litellm#25836: a Gemini tool call streamed to an Anthropic client got its
/// `tool_use` block but no `input_json_delta`, so the call ran with no parameters. Gemini's
/// calls without ids (tests/cases H22: two calls in one chunk) reach every client with their
/// arguments, the Anthropic stream's as `input_json_delta`.
#[tokio::test]
async fn a_gemini_tool_call_keeps_its_arguments_in_every_dialect() {
    let reply = case_replies("H22").remove(0);
    for (label, dialect, stream, got, text) in
        through_every_dialect("gemini", "gemini-2.5-flash", "", reply).await
    {
        assert_eq!(got.calls.len(), 2, "{label}: {text}");
        for c in &got.calls {
            assert_eq!(c.name, "create_document", "{label}");
            let arguments: Value = serde_json::from_str(&c.arguments).unwrap();
            assert!(arguments["title"].is_string(), "{label}: {arguments}");
        }
        assert_ne!(got.calls[0].id, got.calls[1].id, "{label}");
        if dialect == Dialect::AnthropicMessages && stream {
            assert_eq!(
                text.matches("input_json_delta").count(),
                2,
                "{label}: {text}"
            );
        }
    }
}

/// envoyproxy/ai-gateway#2352 (`input_tokens: 0` after OpenAI → Anthropic translation) and
/// BerriAI/litellm#31069 (cache reads reported as 0 on `/v1/messages` in front of an
/// OpenAI-format upstream): a Chat Completions upstream's usage (1187 prompt tokens, 1024 of
/// them cached; 214 out, 192 of them reasoning) reaches every client, the Anthropic client's
/// as non-cached input 163 and cache reads 1024 — in its stream, on `message_delta`, which
/// the SDKs' accumulators fold over `message_start`'s.
#[tokio::test]
async fn an_openai_upstreams_usage_and_cache_reads_reach_every_client() {
    let reply = Reply::new(HttpResponse::fixture("openai_chat_text"));
    let usage = Usage {
        input_tokens: 163,
        output_tokens: 214,
        cache_read_tokens: Some(1024),
        thoughts_tokens: Some(192),
        ..Usage::default()
    };
    for (label, dialect, _, got, text) in
        through_every_dialect("openai", "o4-mini", "/v1", reply).await
    {
        assert_eq!(got.usage, Some(carried(dialect, &usage)), "{label}: {text}");
    }
}

/// NVIDIA-NeMo/Switchyard#469 and Soju06/codex-lb#284: a Responses upstream repeats a call's
/// whole arguments in `response.function_call_arguments.done` and `response.output_item.done`
/// after the deltas carried them; translators that appended those too sent `{…}{…}`. The
/// recording `openai_responses` has exactly that shape: every client gets the arguments once.
#[tokio::test]
async fn a_responses_upstreams_done_events_do_not_double_the_arguments() {
    let reply = Reply::new(HttpResponse::fixture("openai_responses"));
    for (label, _, _, got, text) in
        through_every_dialect("openai-native", "gpt-5.4", "/v1", reply).await
    {
        assert_eq!(got.calls.len(), 1, "{label}: {text}");
        let arguments = &got.calls[0].arguments;
        assert!(
            serde_json::from_str::<Value>(arguments).is_ok_and(|v| v.is_object()),
            "{label}: {arguments}"
        );
    }
}
