//! What one socket remembers between turns: its last response's input and output, so a
//! `response.create` that continues it may send only its new items, even with `store: false`.
//! Spec: R14.1b.

use serde_json::{Map, Value, json};

use super::events::{error_event, now_seconds};

/// A client message, read.
pub(crate) enum Read {
    /// A Responses request body to run, the whole conversation in its `input`.
    Run(Vec<u8>),
    /// Events answered without a model: a warm-up's.
    Answer(Vec<Value>),
    /// An error event for a message the socket cannot run.
    Refuse(Value),
    /// A message that needs no answer.
    Nothing,
}

/// The last response on this socket: its id and its whole conversation, input then output, as
/// the JSON text of its items without the brackets around them. Text, not a tree: what a socket
/// keeps between turns is as large as what was sent, as R14.10 asks of every request.
struct Last {
    id: String,
    items: String,
}

/// One socket's conversation state.
pub(crate) struct Chain {
    last: Option<Last>,
    /// The whole input of the turn being run, as [`Last::items`], kept for its
    /// `response.completed`.
    running: String,
    body_limit: usize,
    warmups: u64,
}

impl Chain {
    pub(crate) fn new(body_limit: usize) -> Self {
        Self {
            last: None,
            running: String::new(),
            body_limit,
            warmups: 0,
        }
    }

    /// What to do with the client message `text`, whose shape the caller has checked.
    pub(crate) fn read(&mut self, text: &[u8]) -> Read {
        let mut create = match serde_json::from_slice::<Value>(text) {
            Ok(Value::Object(create)) => create,
            Ok(_) => return Read::Refuse(invalid("A message must be a JSON object.")),
            Err(e) => return Read::Refuse(invalid(&format!("The message is not JSON: {e}."))),
        };
        match create.remove("type").as_ref().and_then(Value::as_str) {
            Some("response.create") => {}
            // Codex tells the server it has taken an answer in; nothing is owed back.
            Some("response.processed") => return Read::Nothing,
            other => {
                let said = other.map_or("no `type`".to_owned(), |t| format!("`type` {t:?}"));
                let message =
                    format!("This socket takes `response.create` messages; this one has {said}.");
                return Read::Refuse(invalid(&message));
            }
        }
        let warm_up = create.remove("generate").as_ref().and_then(Value::as_bool) == Some(false);
        let items = self.whole_input(&mut create);
        // Always streamed: the events are what the socket carries.
        create.insert("stream".to_owned(), Value::Bool(true));
        let body = with_input(&create, &items);
        // A warm-up is kept as a run is, so it has the same bounds: warm-ups that continue each
        // other would otherwise grow what the socket keeps by a message each.
        if body.len() > self.body_limit {
            let mib = self.body_limit as f64 / (1024.0 * 1024.0);
            let message = format!(
                "The conversation on this socket is larger than this gateway's {mib} MiB: open a new one and send it whole, or compact it."
            );
            return Read::Refuse(error_event(413, "invalid_request_error", None, &message));
        }
        tracing::debug!(
            "a socket's response.create: {} bytes in all, a warm-up: {warm_up}",
            body.len()
        );
        if warm_up {
            // A run's body is shaped by the pipeline it goes through; a warm-up goes through
            // none, so its conversation is shaped here before the socket keeps it.
            if let Err(e) = crate::ingress::shape(&body) {
                return Read::Refuse(invalid(&e.to_string()));
            }
            return Read::Answer(self.warm_up(&create, items));
        }
        self.running = items;
        Read::Run(body)
    }

    /// Notes an event of the turn being run: a completed response becomes the socket's last.
    pub(crate) fn saw(&mut self, event: &Value) {
        if event["type"] != "response.completed" {
            return;
        }
        let response = &event["response"];
        let Some(id) = response["id"].as_str() else {
            return;
        };
        let output = match response["output"].as_array() {
            Some(output) => items_text(output),
            None => String::new(),
        };
        self.last = Some(Last {
            id: id.to_owned(),
            items: joined(std::mem::take(&mut self.running), &output),
        });
    }

    /// `create`'s input as item text, after the last response's items when it continues that
    /// response; its `previous_response_id` is then taken out. Another id is left for the
    /// pipeline, which looks it up among the stored responses.
    fn whole_input(&mut self, create: &mut Map<String, Value>) -> String {
        let own = match create.remove("input") {
            Some(Value::Array(items)) => items_text(&items),
            Some(Value::String(text)) => {
                json!({"type": "message", "role": "user", "content": text}).to_string()
            }
            _ => String::new(),
        };
        let previous = create.get("previous_response_id").and_then(Value::as_str);
        let Some(last) = self
            .last
            .as_ref()
            .filter(|l| previous == Some(l.id.as_str()))
        else {
            return own;
        };
        create.remove("previous_response_id");
        joined(last.items.clone(), &own)
    }

    /// A warm-up's events: a response with no output that a later turn may continue.
    fn warm_up(&mut self, create: &Map<String, Value>, items: String) -> Vec<Value> {
        self.warmups += 1;
        let id = format!("resp_warmup_{:x}_{}", now_seconds(), self.warmups);
        let model = create.get("model").cloned().unwrap_or(Value::Null);
        let response = |status: &str| {
            json!({
                "id": id, "object": "response", "created_at": now_seconds(), "status": status,
                "model": model, "output": [],
                "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0,
                          "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens_details": {"reasoning_tokens": 0}},
            })
        };
        let events = vec![
            json!({"type": "response.created", "sequence_number": 0, "response": response("in_progress")}),
            json!({"type": "response.completed", "sequence_number": 1, "response": response("completed")}),
        ];
        self.last = Some(Last { id, items });
        events
    }
}

/// `items` as JSON text separated by commas, without brackets.
fn items_text(items: &[Value]) -> String {
    let mut text = String::new();
    for item in items {
        if !text.is_empty() {
            text.push(',');
        }
        text.push_str(&item.to_string());
    }
    text
}

/// Item text `first` then `then`, a comma between them when both hold items.
fn joined(mut first: String, then: &str) -> String {
    if !first.is_empty() && !then.is_empty() {
        first.push(',');
    }
    first.push_str(then);
    first
}

/// The body of `create` with `input` the array of `items`.
fn with_input(create: &Map<String, Value>, items: &str) -> Vec<u8> {
    // A map always serialises; its text ends in the closing brace the input goes before.
    let mut body = serde_json::to_vec(create).unwrap_or_else(|_| b"{}".to_vec());
    body.pop();
    if body.len() > 1 {
        body.push(b',');
    }
    body.extend_from_slice(b"\"input\":[");
    body.extend_from_slice(items.as_bytes());
    body.extend_from_slice(b"]}");
    body
}

fn invalid(message: &str) -> Value {
    error_event(400, "invalid_request_error", None, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chain: &mut Chain, message: Value) -> Value {
        match chain.read(message.to_string().as_bytes()) {
            Read::Run(body) => serde_json::from_slice(&body).unwrap(),
            _ => panic!("not run: {message}"),
        }
    }

    fn refused(chain: &mut Chain, text: &str) -> Value {
        match chain.read(text.as_bytes()) {
            Read::Refuse(event) => event,
            _ => panic!("not refused: {text}"),
        }
    }

    #[test]
    fn a_continued_response_is_sent_whole_and_another_id_is_left_for_the_store() {
        let mut chain = Chain::new(1 << 20);
        let create =
            json!({"type": "response.create", "model": "m", "input": "hi", "generate": true});
        let body = run(&mut chain, create);
        assert_eq!(body["input"][0]["content"], "hi");
        assert_eq!(
            (
                body["stream"].as_bool(),
                body.get("type"),
                body.get("generate")
            ),
            (Some(true), None, None)
        );
        let call =
            json!({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"});
        chain.saw(
            &json!({"type": "response.completed", "response": {"id": "r1", "output": [call]}}),
        );
        let output = json!({"type": "function_call_output", "call_id": "c1", "output": "ok"});
        let next = json!({"type": "response.create", "model": "m", "previous_response_id": "r1", "input": [output]});
        let body = run(&mut chain, next);
        assert_eq!(body["input"].as_array().unwrap().len(), 3, "{body}");
        assert_eq!(body.get("previous_response_id"), None);
        let stored = json!({"type": "response.create", "model": "m", "previous_response_id": "r0", "input": []});
        assert_eq!(run(&mut chain, stored)["previous_response_id"], "r0");
    }

    #[test]
    fn messages_that_are_not_a_response_create_are_refused_or_need_nothing() {
        let mut chain = Chain::new(64);
        assert_eq!(refused(&mut chain, "{")["status"], 400);
        assert_eq!(refused(&mut chain, "[]")["status"], 400);
        assert_eq!(refused(&mut chain, r#"{"type": "x"}"#)["status"], 400);
        let processed = br#"{"type": "response.processed", "response_id": "r1"}"#;
        assert!(matches!(chain.read(processed), Read::Nothing));
        let big = json!({"type": "response.create", "model": "m", "input": "x".repeat(100)});
        assert_eq!(refused(&mut chain, &big.to_string())["status"], 413);
    }

    /// Each warm-up that continues the last keeps the whole conversation: past the body cap it
    /// is refused as a run is, so one socket cannot grow what it keeps by a message each time.
    #[test]
    fn warm_ups_that_continue_each_other_stop_at_the_body_cap() {
        let mut chain = Chain::new(4_096);
        let mut previous: Option<String> = None;
        let mut refused_at = None;
        for turn in 0..50 {
            let warm = json!({"type": "response.create", "model": "m", "generate": false,
                "input": "x".repeat(500), "previous_response_id": previous});
            match chain.read(warm.to_string().as_bytes()) {
                Read::Answer(events) => {
                    previous = events[1]["response"]["id"].as_str().map(str::to_owned);
                }
                Read::Refuse(event) => {
                    assert_eq!(event["status"], 413, "{event}");
                    refused_at = Some(turn);
                    break;
                }
                _ => panic!("a warm-up neither answered nor refused"),
            }
        }
        // 4,096 bytes hold seven of these 530-byte items, not eight.
        assert_eq!(
            refused_at,
            Some(7),
            "the warm-ups were refused at {refused_at:?}"
        );
        let kept = chain.last.as_ref().map_or(0, |l| l.items.len());
        assert!(kept <= 4_096, "the socket kept {kept} bytes");
    }
}
