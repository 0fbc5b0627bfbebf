//! One Responses answer built from Switchyard's chunks: its output items, the events each
//! step makes and the response object, shared by the stream encoder and the collector.
//! Spec: R14.1, R14.4.

use std::collections::HashMap;

use serde_json::{Value, json};
use switchyard_api::{ApiError, ApiStreamChunk, ErrorKind, Usage};

use super::input::CUSTOM_INPUT;
use crate::ingress::encode::StopReason;
use crate::ingress::request::ClientTool;

/// One event: its name, which is both the SSE `event:` and the JSON `type`, and its fields.
#[derive(Debug)]
pub(super) struct Event {
    pub(super) name: &'static str,
    pub(super) body: Value,
}

fn event(name: &'static str, body: Value) -> Event {
    Event { name, body }
}

#[derive(Debug)]
enum Kind {
    /// A reasoning item; the client sends its `encrypted_content` back to continue it.
    Reasoning {
        text: String,
        encrypted: Option<String>,
    },
    /// An assistant message with one `output_text` part.
    Message { text: String },
    /// A function call, its fragments joined by the chunk's id. A `custom` one goes back as a
    /// `custom_tool_call` item whose `input` is the arguments' [`CUSTOM_INPUT`] text. `name` is
    /// the client's: a `namespace` member's own name, its group in `namespace`.
    Call {
        call_id: String,
        name: String,
        namespace: Option<String>,
        arguments: String,
        custom: bool,
    },
}

/// One output item; `done` once its `response.output_item.done` was made.
#[derive(Debug)]
struct Item {
    id: String,
    kind: Kind,
    done: bool,
    /// `completed`, or `incomplete` when the output limit cut it.
    status: &'static str,
}

/// The answer so far. Item ids hold the response's id and the item's index: unique, stable.
#[derive(Debug)]
pub(super) struct Output {
    id: String,
    model: String,
    created_at: u64,
    items: Vec<Item>,
    /// The open items: one reasoning or message item, or any number of interleaved calls.
    open: Vec<usize>,
    /// Each function call's item by the chunks' call id.
    calls: HashMap<String, usize>,
    /// The sum of the usage chunks: a continued answer reports each attempt's usage.
    usage: Option<Usage>,
    /// The tools the client declared otherwise than as functions, by their offered name.
    client_tools: HashMap<String, ClientTool>,
}

impl Output {
    pub(super) fn new(model: &str, id: &str) -> Self {
        let created_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Self {
            id: format!("resp_{id}"),
            model: model.to_owned(),
            created_at,
            items: Vec::new(),
            open: Vec::new(),
            calls: HashMap::new(),
            usage: None,
            client_tools: HashMap::new(),
        }
    }

    pub(super) fn set_client_tools(&mut self, tools: &[ClientTool]) {
        self.client_tools = tools.iter().map(|t| (t.name.clone(), t.clone())).collect();
    }

    /// The response object with `status` and its finished items. `usage` is null while the
    /// response is `in_progress`, as OpenAI sends it; a terminal response always has it, zeros
    /// when no provider reported usage, because clients with strict schemas fail the whole turn
    /// on a null: the Vercel AI SDK requires `usage`.
    pub(super) fn response(&self, status: &str) -> Value {
        let output: Vec<Value> = self
            .items
            .iter()
            .filter(|i| i.done)
            .map(Item::json)
            .collect();
        let usage = match (&self.usage, status) {
            (_, "in_progress") => Value::Null,
            (Some(u), _) => usage_json(u),
            (None, _) => usage_json(&Usage::default()),
        };
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "error": null,
            "incomplete_details": null,
            "model": self.model,
            "output": output,
            "usage": usage,
        })
    }

    /// Applies one chunk, appending the events it makes to `ev`.
    pub(super) fn push(&mut self, chunk: &ApiStreamChunk, ev: &mut Vec<Event>) {
        match chunk {
            ApiStreamChunk::Text { text, .. } if !text.is_empty() => self.text(text, ev),
            ApiStreamChunk::Text { .. } => {}
            ApiStreamChunk::Reasoning {
                reasoning,
                signature,
                redacted_data,
                ..
            } => {
                if !reasoning.is_empty() {
                    self.reasoning_text(reasoning, ev);
                }
                for opaque in [signature, redacted_data].into_iter().flatten() {
                    if !opaque.is_empty() {
                        self.reasoning_opaque(opaque, ev);
                    }
                }
            }
            ApiStreamChunk::ToolCalls {
                call_id,
                id,
                name,
                arguments_delta,
                ..
            } => self.call(
                call_id.as_deref().unwrap_or(id),
                id,
                name,
                arguments_delta,
                ev,
            ),
            ApiStreamChunk::Usage(u) => self.add_usage(u),
            // How a cut answer ended reaches the encoder as `finish`'s stop reason.
            ApiStreamChunk::Finish { .. } | ApiStreamChunk::Wire(_) => {}
        }
    }

    /// Closes the open items and returns `response.completed`'s response.
    pub(super) fn finish(&mut self, stop: StopReason, ev: &mut Vec<Event>) -> Value {
        let cut = stop == StopReason::MaxTokens;
        self.close_open(if cut { "incomplete" } else { "completed" }, ev);
        if cut {
            let mut response = self.response("incomplete");
            response["incomplete_details"] = json!({"reason": "max_output_tokens"});
            response
        } else {
            self.response("completed")
        }
    }

    /// `response.failed`'s response. Only finished items are in `output`: the open ones were cut.
    pub(super) fn failed(&self, error: &ApiError) -> Value {
        let mut response = self.response("failed");
        response["error"] =
            json!({"code": error_code(error.kind), "message": error_message(error)});
        response
    }

    fn add_usage(&mut self, u: &Usage) {
        self.usage.get_or_insert_with(Usage::default).add(u);
    }

    fn open_one(&self, is: fn(&Kind) -> bool) -> Option<usize> {
        match self.open.as_slice() {
            [i] if is(&self.items[*i].kind) => Some(*i),
            _ => None,
        }
    }

    /// Opens a new item, closing the open ones first, and announces it.
    fn open_item(&mut self, prefix: &str, kind: Kind, ev: &mut Vec<Event>) -> usize {
        if !matches!(kind, Kind::Call { .. })
            || self.open_one(|k| !matches!(k, Kind::Call { .. })).is_some()
        {
            self.close_open("completed", ev);
        }
        let index = self.items.len();
        let item = Item {
            id: format!("{prefix}_{}_{index}", self.id.trim_start_matches("resp_")),
            kind,
            done: false,
            status: "in_progress",
        };
        ev.push(event(
            "response.output_item.added",
            json!({"output_index": index, "item": item.json()}),
        ));
        self.items.push(item);
        self.open.push(index);
        index
    }

    fn text(&mut self, delta: &str, ev: &mut Vec<Event>) {
        let index = match self.open_one(|k| matches!(k, Kind::Message { .. })) {
            Some(i) => i,
            None => {
                let i = self.open_item(
                    "msg",
                    Kind::Message {
                        text: String::new(),
                    },
                    ev,
                );
                let part = json!({"type": "output_text", "text": "", "annotations": []});
                ev.push(self.part_event("response.content_part.added", i, part));
                i
            }
        };
        let item = &mut self.items[index];
        if let Kind::Message { text } = &mut item.kind {
            text.push_str(delta);
        }
        let body = json!({"item_id": item.id, "output_index": index, "content_index": 0, "delta": delta, "logprobs": []});
        ev.push(event("response.output_text.delta", body));
    }

    /// The open reasoning item, or a new one when the open one is signed: a new block began.
    fn reasoning_item(&mut self, ev: &mut Vec<Event>) -> usize {
        let open = self.open_one(|k| {
            matches!(
                k,
                Kind::Reasoning {
                    encrypted: None,
                    ..
                }
            )
        });
        open.unwrap_or_else(|| {
            let kind = Kind::Reasoning {
                text: String::new(),
                encrypted: None,
            };
            self.open_item("rs", kind, ev)
        })
    }

    fn reasoning_text(&mut self, delta: &str, ev: &mut Vec<Event>) {
        let index = self.reasoning_item(ev);
        let item = &mut self.items[index];
        let Kind::Reasoning { text, .. } = &mut item.kind else {
            return;
        };
        let first = text.is_empty();
        text.push_str(delta);
        let id = item.id.clone();
        if first {
            let part = json!({"type": "summary_text", "text": ""});
            let body =
                json!({"item_id": id, "output_index": index, "summary_index": 0, "part": part});
            ev.push(event("response.reasoning_summary_part.added", body));
        }
        let body =
            json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": delta});
        ev.push(event("response.reasoning_summary_text.delta", body));
    }

    fn reasoning_opaque(&mut self, data: &str, ev: &mut Vec<Event>) {
        let index = self.reasoning_item(ev);
        if let Kind::Reasoning { encrypted, .. } = &mut self.items[index].kind {
            *encrypted = Some(data.to_owned());
        }
    }

    /// A fragment of call `key`. A call closed by interleaved text still gets the fragment in
    /// the final response.
    fn call(&mut self, call_id: &str, key: &str, name: &str, delta: &str, ev: &mut Vec<Event>) {
        let index = match self.calls.get(key) {
            Some(&index) => index,
            None => {
                let client = self.client_tools.get(name);
                let custom = client.is_some_and(|t| t.custom);
                let (namespace, name) = match client.and_then(|t| t.namespace.as_ref()) {
                    Some((namespace, own)) => (Some(namespace.clone()), own.clone()),
                    None => (None, name.to_owned()),
                };
                let kind = Kind::Call {
                    call_id: call_id.to_owned(),
                    name,
                    namespace,
                    arguments: String::new(),
                    custom,
                };
                let index = self.open_item(if custom { "ctc" } else { "fc" }, kind, ev);
                self.calls.insert(key.to_owned(), index);
                index
            }
        };
        let item = &mut self.items[index];
        let mut streamed = true;
        if let Kind::Call {
            arguments, custom, ..
        } = &mut item.kind
        {
            arguments.push_str(delta);
            // A custom call's input is known once its JSON is whole: sent when it closes.
            streamed = !*custom;
        }
        if streamed && !delta.is_empty() && !item.done {
            let body = json!({"item_id": item.id, "output_index": index, "delta": delta});
            ev.push(event("response.function_call_arguments.delta", body));
        }
    }

    fn close_open(&mut self, status: &'static str, ev: &mut Vec<Event>) {
        for index in std::mem::take(&mut self.open) {
            self.close(index, status, ev);
        }
    }

    fn close(&mut self, index: usize, status: &'static str, ev: &mut Vec<Event>) {
        let item = &mut self.items[index];
        item.done = true;
        item.status = status;
        if let Kind::Call { arguments, .. } = &mut item.kind
            && arguments.trim().is_empty()
        {
            // No arguments at all is not JSON; `{}` is what a call without parameters means.
            *arguments = "{}".to_owned();
        }
        let id = item.id.clone();
        match &item.kind {
            Kind::Reasoning { text, .. } if !text.is_empty() => {
                let body =
                    json!({"item_id": id, "output_index": index, "summary_index": 0, "text": text});
                ev.push(event("response.reasoning_summary_text.done", body));
                let part = json!({"type": "summary_text", "text": text});
                let body =
                    json!({"item_id": id, "output_index": index, "summary_index": 0, "part": part});
                ev.push(event("response.reasoning_summary_part.done", body));
            }
            Kind::Reasoning { .. } => {}
            Kind::Message { text } => {
                let body = json!({"item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": []});
                ev.push(event("response.output_text.done", body));
                let part = json!({"type": "output_text", "text": text, "annotations": []});
                ev.push(self.part_event("response.content_part.done", index, part));
            }
            Kind::Call {
                arguments,
                custom: true,
                ..
            } => {
                let input = custom_input(arguments);
                let body = json!({"item_id": id, "output_index": index, "delta": input});
                ev.push(event("response.custom_tool_call_input.delta", body));
                let body = json!({"item_id": id, "output_index": index, "input": input});
                ev.push(event("response.custom_tool_call_input.done", body));
            }
            Kind::Call { arguments, .. } => {
                let body = json!({"item_id": id, "output_index": index, "arguments": arguments});
                ev.push(event("response.function_call_arguments.done", body));
            }
        }
        let item = self.items[index].json();
        ev.push(event(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
    }

    fn part_event(&self, name: &'static str, index: usize, part: Value) -> Event {
        let id = &self.items[index].id;
        event(
            name,
            json!({"item_id": id, "output_index": index, "content_index": 0, "part": part}),
        )
    }
}

impl Item {
    /// The item as `response.output_item.added`, `.done` and `output[]` carry it.
    fn json(&self) -> Value {
        match &self.kind {
            Kind::Reasoning { text, encrypted } => {
                let summary: Vec<Value> = if self.done && !text.is_empty() {
                    vec![json!({"type": "summary_text", "text": text})]
                } else {
                    Vec::new()
                };
                let mut item = json!({"id": self.id, "type": "reasoning", "summary": summary});
                if let (true, Some(data)) = (self.done, encrypted) {
                    item["encrypted_content"] = json!(data);
                }
                item
            }
            Kind::Message { text } => {
                let content: Vec<Value> = if self.done {
                    vec![json!({"type": "output_text", "text": text, "annotations": []})]
                } else {
                    Vec::new()
                };
                json!({"id": self.id, "type": "message", "status": self.status, "role": "assistant", "content": content})
            }
            Kind::Call {
                call_id,
                name,
                namespace,
                arguments,
                custom,
            } => {
                let mut item =
                    json!({"id": self.id, "status": self.status, "call_id": call_id, "name": name});
                if let Some(namespace) = namespace {
                    item["namespace"] = json!(namespace);
                }
                match (*custom, self.done) {
                    (true, done) => {
                        item["type"] = json!("custom_tool_call");
                        item["input"] = json!(if done {
                            custom_input(arguments)
                        } else {
                            String::new()
                        });
                    }
                    (false, done) => {
                        item["type"] = json!("function_call");
                        item["arguments"] = json!(if done { arguments.as_str() } else { "" });
                    }
                }
                item
            }
        }
    }
}

/// The raw text input of a custom tool's call from its function form's `arguments`: the
/// [`CUSTOM_INPUT`] string, and `{}` is an empty input. Arguments of another shape, from a
/// model that ignored the schema, are passed on for the tool to refuse in its own words.
fn custom_input(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(o)) => match o.get(CUSTOM_INPUT) {
            Some(Value::String(s)) => s.clone(),
            None if o.is_empty() => String::new(),
            _ => arguments.to_owned(),
        },
        Ok(Value::String(s)) => s,
        _ => arguments.to_owned(),
    }
}

/// Responses usage from Switchyard's: `input_tokens` includes cache reads and writes, and
/// `output_tokens` includes reasoning. Both details objects are always present: Codex's
/// strict parser rejects one without its count (6Kmfi6HP/opencode2api#11).
/// Spec: R1.3.
fn usage_json(u: &Usage) -> Value {
    let cached = u.cache_read_tokens.unwrap_or(0);
    let input = u.input_tokens + cached + u.cache_write_tokens.unwrap_or(0);
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": u.thoughts_tokens.unwrap_or(0)},
        "total_tokens": input + u.output_tokens,
    })
}

/// The `error.code` of a failed response, as the Responses API sends it and Codex CLI reads
/// it: `context_length_exceeded`, `insufficient_quota` and `invalid_prompt` are not retried,
/// `rate_limit_exceeded` waits for the message's "try again in", the rest is retried.
fn error_code(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ContextWindowExceeded => "context_length_exceeded",
        ErrorKind::SpendLimit | ErrorKind::SpendCap | ErrorKind::QuotaExceeded => {
            "insufficient_quota"
        }
        ErrorKind::RateLimited => "rate_limit_exceeded",
        ErrorKind::Overloaded => "server_is_overloaded",
        ErrorKind::InvalidRequest | ErrorKind::ContentBlocked => "invalid_prompt",
        ErrorKind::Auth => "invalid_api_key",
        ErrorKind::Entitlement => "model_not_found",
        ErrorKind::Server
        | ErrorKind::Network
        | ErrorKind::Timeout
        | ErrorKind::Cancelled
        | ErrorKind::Decode => "server_error",
    }
}

/// Switchyard's sentence for `error`, with OpenAI's "Please try again in Ns." when the wait
/// is known: Codex reads it as its retry delay.
fn error_message(error: &ApiError) -> String {
    let mut message = error.to_string();
    if let Some(wait) = error
        .retry_after
        .filter(|_| error.kind == ErrorKind::RateLimited)
    {
        message.push_str(&format!(" Please try again in {:.3}s.", wait.as_secs_f64()));
    }
    message
}
