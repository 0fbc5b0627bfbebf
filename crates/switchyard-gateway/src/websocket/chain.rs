//! What one socket remembers between turns: its last response's input and output, so a
//! `response.create` that continues it may send only its new items, even with `store: false`.
//! Spec: R14.1b.

use serde_json::{Map, Value, json};

use super::events::{error_event, now_seconds};

/// A client message, read.
pub(super) enum Read {
    /// A Responses request body to run, the whole conversation in its `input`.
    Run(Vec<u8>),
    /// Events answered without a model: a warm-up's.
    Answer(Vec<Value>),
    /// An error event for a message the socket cannot run.
    Refuse(Value),
    /// A message that needs no answer.
    Nothing,
}

/// The last response on this socket.
struct Last {
    id: String,
    input: Vec<Value>,
    output: Vec<Value>,
}

/// One socket's conversation state.
pub(super) struct Chain {
    last: Option<Last>,
    /// The whole input of the turn being run, kept for its `response.completed`.
    running: Vec<Value>,
    body_limit: usize,
    warmups: u64,
}

impl Chain {
    pub(super) fn new(body_limit: usize) -> Self {
        Self {
            last: None,
            running: Vec::new(),
            body_limit,
            warmups: 0,
        }
    }

    /// What to do with the client message `text`.
    pub(super) fn read(&mut self, text: &[u8]) -> Read {
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
        let generate = create.remove("generate");
        let own = create
            .get("input")
            .and_then(Value::as_array)
            .map_or(1, Vec::len);
        let input = self.whole_input(&mut create);
        tracing::debug!(
            "a socket's response.create: items of its own {own}, in all {}, generate {generate:?}",
            input.len()
        );
        if generate.as_ref().and_then(Value::as_bool) == Some(false) {
            return Read::Answer(self.warm_up(&create, input));
        }
        create.insert("input".to_owned(), Value::Array(input.clone()));
        // Always streamed: the events are what the socket carries.
        create.insert("stream".to_owned(), Value::Bool(true));
        let body = Value::Object(create).to_string().into_bytes();
        if body.len() > self.body_limit {
            let mib = self.body_limit as f64 / (1024.0 * 1024.0);
            let message = format!(
                "The conversation on this socket is larger than this gateway's {mib} MiB: open a new one and send it whole, or compact it."
            );
            return Read::Refuse(error_event(413, "invalid_request_error", None, &message));
        }
        self.running = input;
        Read::Run(body)
    }

    /// Notes an event of the turn being run: a completed response becomes the socket's last.
    pub(super) fn saw(&mut self, event: &Value) {
        if event["type"] != "response.completed" {
            return;
        }
        let response = &event["response"];
        let Some(id) = response["id"].as_str() else {
            return;
        };
        let output = response["output"].as_array().cloned().unwrap_or_default();
        self.last = Some(Last {
            id: id.to_owned(),
            input: std::mem::take(&mut self.running),
            output,
        });
    }

    /// `create`'s input as items, after the last response's input and output when it continues
    /// that response; its `previous_response_id` is then taken out. Another id is left for the
    /// pipeline, which looks it up among the stored responses.
    fn whole_input(&mut self, create: &mut Map<String, Value>) -> Vec<Value> {
        let own = match create.remove("input") {
            Some(Value::Array(items)) => items,
            Some(Value::String(text)) => {
                vec![json!({"type": "message", "role": "user", "content": text})]
            }
            _ => Vec::new(),
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
        let mut input = last.input.clone();
        input.extend(last.output.iter().cloned());
        input.extend(own);
        input
    }

    /// A warm-up's events: a response with no output that a later turn may continue.
    fn warm_up(&mut self, create: &Map<String, Value>, input: Vec<Value>) -> Vec<Value> {
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
        self.last = Some(Last {
            id,
            input,
            output: Vec::new(),
        });
        events
    }
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
}
