//! The agent upstream's answers on the wire: an [`AgentTurn`] as each dialect's SSE events or
//! JSON object, in the shapes of `tests/fixtures` (`openai_chat_tool_calls.http`,
//! `anthropic_tool_use.http`, `openai_responses.http`), and its JSON errors.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use super::{AgentTurn, AgentTurnRequest, UpstreamDialect};

/// A response ready to write: status, content type, and either one JSON body or SSE events.
pub(super) struct Reply {
    pub(super) status: u16,
    body: Vec<u8>,
    pub(super) events: Option<Vec<String>>,
}

impl Reply {
    /// The body bytes as the client reads them (events joined; no chunked framing).
    pub(super) fn body_len(&self) -> usize {
        match &self.events {
            Some(events) => events.iter().map(String::len).sum(),
            None => self.body.len(),
        }
    }

    /// The pieces to write, each flushed: the head, then (for a stream) one chunk per event
    /// and the last chunk.
    pub(super) fn to_wire(&self) -> Vec<Vec<u8>> {
        let reason = match self.status {
            200 => "OK",
            400 => "Bad Request",
            404 => "Not Found",
            413 => "Payload Too Large",
            _ => "Internal Server Error",
        };
        let id = next_id();
        let mut head = format!("HTTP/1.1 {} {reason}\r\n", self.status);
        let Some(events) = &self.events else {
            head.push_str(&format!(
                "content-type: application/json\r\nx-request-id: req_agent{id:06}\r\ncontent-length: {}\r\n\r\n",
                self.body.len()
            ));
            let mut bytes = head.into_bytes();
            bytes.extend_from_slice(&self.body);
            return vec![bytes];
        };
        head.push_str(&format!(
            "content-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\nx-request-id: req_agent{id:06}\r\ntransfer-encoding: chunked\r\n\r\n"
        ));
        let mut pieces = vec![head.into_bytes()];
        for event in events {
            pieces.push(format!("{:x}\r\n{event}\r\n", event.len()).into_bytes());
        }
        pieces.push(b"0\r\n\r\n".to_vec());
        pieces
    }
}

static IDS: AtomicU64 = AtomicU64::new(1);

/// A process-wide counter for ids (`call_agent000003`, …): unique across servers in a test.
fn next_id() -> u64 {
    IDS.fetch_add(1, Ordering::Relaxed)
}

/// A JSON error in the shape both families read (`error.type`, `error.message`; Anthropic's
/// `type: "error"` at the top).
pub(super) fn error(status: u16, kind: &str, message: &str) -> Reply {
    let body = json!({"type": "error", "error": {"type": kind, "message": message, "code": null}});
    Reply {
        status,
        body: body.to_string().into_bytes(),
        events: None,
    }
}

/// Deterministic usage: (input tokens, output tokens).
fn usage(request_bytes: usize, turn: &AgentTurn) -> (u64, u64) {
    let said = turn.said().map_or(0, str::len);
    let args = turn.call().map_or(0, |(_, a)| a.to_string().len());
    ((request_bytes / 4) as u64, ((said + args) / 4 + 1) as u64)
}

/// `text` in two pieces (the first char boundary at or after the middle), so a stream has
/// more than one delta; one piece when it is shorter than 2 bytes.
fn halves(text: &str) -> Vec<&str> {
    let mut mid = text.len() / 2;
    while !text.is_char_boundary(mid) {
        mid += 1;
    }
    [&text[..mid], &text[mid..]]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect()
}

/// The closure's turn as `dialect`'s answer to `request` (streamed when it asked).
pub(super) fn turn(
    dialect: UpstreamDialect,
    request: &AgentTurnRequest,
    turn: &AgentTurn,
    request_bytes: usize,
    cache: (u64, u64),
) -> Reply {
    let usage = usage(request_bytes, turn);
    let model = if request.model.is_empty() {
        "agent-upstream-model"
    } else {
        &request.model
    };
    let id = next_id();
    let (events, object) = match dialect {
        UpstreamDialect::ChatCompletions => chat(request, turn, model, id, usage, cache.0),
        UpstreamDialect::Messages => messages(turn, model, id, usage, cache),
        UpstreamDialect::Responses => responses(turn, model, id, usage, cache.0),
        UpstreamDialect::Gemini => gemini(turn, model, id, usage),
    };
    Reply {
        status: 200,
        body: object.to_string().into_bytes(),
        events: request.stream.then_some(events),
    }
}

fn arguments_text(arguments: &Value) -> String {
    arguments.to_string()
}

// ---- OpenAI Chat Completions ----

/// OpenAI's usage, whose prompt tokens include the `cached` ones.
fn chat_usage((input, output): (u64, u64), cached: u64) -> Value {
    json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output,
           "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
           "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
               "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}})
}

/// The SSE events and the `chat.completion` object for a Chat Completions turn.
fn chat(
    request: &AgentTurnRequest,
    turn: &AgentTurn,
    model: &str,
    id: u64,
    usage: (u64, u64),
    cached: u64,
) -> (Vec<String>, Value) {
    let include_usage = request.body["stream_options"]["include_usage"] == true;
    let chunk_id = format!("chatcmpl-agent{id:06}");
    let call_id = format!("call_agent{id:06}");
    let chunk = |delta: Value, finish: Value, usage: Value| {
        let choices = if delta.is_null() {
            json!([])
        } else {
            json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}])
        };
        let c = json!({"id": chunk_id, "object": "chat.completion.chunk", "created": 1756289702,
            "model": model, "service_tier": "default", "system_fingerprint": "fp_agent0upstream",
            "choices": choices, "usage": usage});
        format!("data: {c}\n\n")
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        Value::Null,
        Value::Null,
    )];
    for piece in turn.said().map(halves).unwrap_or_default() {
        events.push(chunk(json!({"content": piece}), Value::Null, Value::Null));
    }
    let mut tool_calls = Vec::new();
    if let Some((name, arguments)) = turn.call() {
        let args = arguments_text(arguments);
        let start = json!({"index": 0, "id": call_id, "type": "function",
                           "function": {"name": name, "arguments": ""}});
        events.push(chunk(
            json!({"tool_calls": [start]}),
            Value::Null,
            Value::Null,
        ));
        for piece in halves(&args) {
            let d = json!({"index": 0, "function": {"arguments": piece}});
            events.push(chunk(json!({"tool_calls": [d]}), Value::Null, Value::Null));
        }
        tool_calls.push(json!({"id": call_id, "type": "function",
                               "function": {"name": name, "arguments": args}}));
    }
    let finish = if tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    events.push(chunk(json!({}), json!(finish), Value::Null));
    if include_usage {
        events.push(chunk(Value::Null, Value::Null, chat_usage(usage, cached)));
    }
    events.push("data: [DONE]\n\n".to_owned());
    let mut message = json!({"role": "assistant", "content": turn.said(), "refusal": null,
                             "annotations": []});
    if !tool_calls.is_empty() {
        message["tool_calls"] = json!(tool_calls);
    }
    let object = json!({"id": chunk_id, "object": "chat.completion", "created": 1756289702,
        "model": model, "choices": [{"index": 0, "message": message, "logprobs": null,
        "finish_reason": finish}], "usage": chat_usage(usage, cached), "service_tier": "default",
        "system_fingerprint": "fp_agent0upstream"});
    (events, object)
}

// ---- Anthropic Messages ----

fn sse(event: &str, data: &Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

/// The SSE events and the `message` object for a Messages turn.
/// Anthropic's input tokens are the uncached ones, beside the cache's `(read, write)`.
fn messages(
    turn: &AgentTurn,
    model: &str,
    id: u64,
    usage: (u64, u64),
    (read, write): (u64, u64),
) -> (Vec<String>, Value) {
    let (input, output) = usage;
    let input = input.saturating_sub(read + write);
    let msg_id = format!("msg_agent{id:06}");
    let tool_id = format!("toolu_agent{id:06}");
    let start_usage = json!({"input_tokens": input, "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read, "output_tokens": 1, "service_tier": "standard"});
    let start = json!({"type": "message_start", "message": {"id": msg_id, "type": "message",
        "role": "assistant", "model": model, "content": [], "stop_reason": null,
        "stop_sequence": null, "usage": start_usage}});
    let mut events = vec![sse("message_start", &start)];
    let mut content = Vec::new();
    if let Some(text) = turn.said() {
        let index = content.len();
        let block = json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "text", "text": ""}});
        events.push(sse("content_block_start", &block));
        events.push(sse("ping", &json!({"type": "ping"})));
        for piece in halves(text) {
            let d = json!({"type": "content_block_delta", "index": index,
                           "delta": {"type": "text_delta", "text": piece}});
            events.push(sse("content_block_delta", &d));
        }
        let stop = json!({"type": "content_block_stop", "index": index});
        events.push(sse("content_block_stop", &stop));
        content.push(json!({"type": "text", "text": text}));
    }
    if let Some((name, arguments)) = turn.call() {
        let index = content.len();
        let block = json!({"type": "content_block_start", "index": index, "content_block":
            {"type": "tool_use", "id": tool_id, "name": name, "input": {}}});
        events.push(sse("content_block_start", &block));
        let args = arguments_text(arguments);
        for piece in std::iter::once("").chain(halves(&args)) {
            let d = json!({"type": "content_block_delta", "index": index,
                           "delta": {"type": "input_json_delta", "partial_json": piece}});
            events.push(sse("content_block_delta", &d));
        }
        let stop = json!({"type": "content_block_stop", "index": index});
        events.push(sse("content_block_stop", &stop));
        content.push(json!({"type": "tool_use", "id": tool_id, "name": name, "input": arguments}));
    }
    let stop_reason = if turn.call().is_some() {
        "tool_use"
    } else {
        "end_turn"
    };
    let delta = json!({"type": "message_delta", "delta": {"stop_reason": stop_reason,
        "stop_sequence": null}, "usage": {"output_tokens": output}});
    events.push(sse("message_delta", &delta));
    events.push(sse("message_stop", &json!({"type": "message_stop"})));
    let object = json!({"id": msg_id, "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop_reason, "stop_sequence": null,
        "usage": {"input_tokens": input, "cache_creation_input_tokens": write,
                  "cache_read_input_tokens": read, "output_tokens": output,
                  "service_tier": "standard"}});
    (events, object)
}

// ---- OpenAI Responses ----

/// Numbers the Responses events (`sequence_number`) as they are made.
struct Sequence {
    events: Vec<String>,
}

impl Sequence {
    fn push(&mut self, mut event: Value) {
        event["sequence_number"] = json!(self.events.len());
        let name = event["type"].as_str().unwrap_or_default().to_owned();
        self.events.push(sse(&name, &event));
    }
}

fn response_object(id: &str, model: &str, status: &str, output: &[Value], usage: Value) -> Value {
    json!({"id": id, "object": "response", "created_at": 1756289702, "status": status,
        "background": false, "error": null, "incomplete_details": null, "instructions": null,
        "max_output_tokens": null, "max_tool_calls": null, "model": model, "output": output,
        "parallel_tool_calls": true, "previous_response_id": null, "prompt_cache_key": null,
        "reasoning": {"effort": null, "summary": null}, "safety_identifier": null,
        "service_tier": "default", "store": false, "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"}, "tool_choice": "auto",
        "tools": [], "top_logprobs": 0, "top_p": 1.0, "truncation": "disabled",
        "usage": usage, "user": null, "metadata": {}})
}

/// The events of one output message holding `text` at `output_index`; gives the done item.
fn response_message(seq: &mut Sequence, text: &str, item_id: &str, output_index: usize) -> Value {
    let at = |v: Value| {
        let mut v = v;
        v["item_id"] = json!(item_id);
        v["output_index"] = json!(output_index);
        v["content_index"] = json!(0);
        v
    };
    let item = json!({"id": item_id, "type": "message", "status": "in_progress", "content": [],
                      "role": "assistant"});
    seq.push(
        json!({"type": "response.output_item.added", "output_index": output_index,
                    "item": item}),
    );
    let part =
        |t: &str| json!({"type": "output_text", "annotations": [], "logprobs": [], "text": t});
    seq.push(at(
        json!({"type": "response.content_part.added", "part": part("")}),
    ));
    for piece in halves(text) {
        seq.push(at(
            json!({"type": "response.output_text.delta", "delta": piece, "logprobs": []}),
        ));
    }
    seq.push(at(
        json!({"type": "response.output_text.done", "text": text, "logprobs": []}),
    ));
    seq.push(at(
        json!({"type": "response.content_part.done", "part": part(text)}),
    ));
    let done = json!({"id": item_id, "type": "message", "status": "completed",
                      "content": [part(text)], "role": "assistant"});
    seq.push(
        json!({"type": "response.output_item.done", "output_index": output_index,
                    "item": done.clone()}),
    );
    done
}

/// The events of one function call at `output_index`; gives the done item.
fn response_call(seq: &mut Sequence, call: (&str, &Value), id: u64, output_index: usize) -> Value {
    let (name, arguments) = call;
    let item_id = format!("fc_agent{id:06}");
    let call_id = format!("call_agent{id:06}");
    let args = arguments_text(arguments);
    let item = |status: &str, args: &str| {
        json!({"id": item_id, "type": "function_call", "status": status, "arguments": args,
               "call_id": call_id, "name": name})
    };
    seq.push(
        json!({"type": "response.output_item.added", "output_index": output_index,
                    "item": item("in_progress", "")}),
    );
    for piece in halves(&args) {
        seq.push(
            json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
                        "output_index": output_index, "delta": piece}),
        );
    }
    seq.push(
        json!({"type": "response.function_call_arguments.done", "item_id": item_id,
                    "output_index": output_index, "name": name, "arguments": args}),
    );
    let done = item("completed", &args);
    seq.push(
        json!({"type": "response.output_item.done", "output_index": output_index,
                    "item": done.clone()}),
    );
    done
}

/// The SSE events and the response object for a Responses turn.
fn responses(
    turn: &AgentTurn,
    model: &str,
    id: u64,
    usage: (u64, u64),
    cached: u64,
) -> (Vec<String>, Value) {
    let (input, output_tokens) = usage;
    let resp_id = format!("resp_agent{id:06}");
    let usage = json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + output_tokens});
    let mut seq = Sequence { events: Vec::new() };
    let started = response_object(&resp_id, model, "in_progress", &[], Value::Null);
    seq.push(json!({"type": "response.created", "response": started.clone()}));
    seq.push(json!({"type": "response.in_progress", "response": started}));
    let mut output = Vec::new();
    if let Some(text) = turn.said() {
        let item_id = format!("msg_agent{id:06}");
        output.push(response_message(&mut seq, text, &item_id, output.len()));
    }
    if let Some(call) = turn.call() {
        output.push(response_call(&mut seq, call, id, output.len()));
    }
    let completed = response_object(&resp_id, model, "completed", &output, usage);
    seq.push(json!({"type": "response.completed", "response": completed.clone()}));
    (seq.events, completed)
}

// ---- Gemini ----

/// The `data:` events and the whole response for a Gemini turn, in the shape of
/// `gemini_stream.http`: each event one `GenerateContentResponse`, the call whole with its id
/// and a thought signature, as Gemini 3 sends it.
fn gemini(turn: &AgentTurn, model: &str, id: u64, usage: (u64, u64)) -> (Vec<String>, Value) {
    let (input, output) = usage;
    let response_id = format!("agent{id:06}");
    let response = |parts: Vec<Value>, end: bool| {
        let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        let mut r = json!({"candidates": [], "modelVersion": model, "responseId": response_id});
        if end {
            candidate["finishReason"] = json!("STOP");
            r["usageMetadata"] = json!({"promptTokenCount": input, "candidatesTokenCount": output,
                                        "totalTokenCount": input + output});
        }
        r["candidates"] = json!([candidate]);
        r
    };
    let mut events = Vec::new();
    let mut parts = Vec::new();
    if let Some(text) = turn.said() {
        for piece in halves(text) {
            events.push(response(vec![json!({"text": piece})], false));
        }
        parts.push(json!({"text": text}));
    }
    if let Some((name, arguments)) = turn.call() {
        parts.push(json!({"functionCall": {"name": name, "args": arguments,
            "id": format!("call_agent{id:06}")}, "thoughtSignature": "YWdlbnQtdXBzdHJlYW0="}));
    }
    let last = match turn.call() {
        Some(_) => vec![parts[parts.len() - 1].clone()],
        None => Vec::new(),
    };
    events.push(response(last, true));
    let events = events
        .iter()
        .map(|e| format!("data: {e}\r\n\r\n"))
        .collect();
    (events, response(parts, true))
}
