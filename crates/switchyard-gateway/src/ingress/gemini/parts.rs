//! Switchyard's chunks as Gemini `parts`, for the stream and the whole answer alike: a function
//! call is one whole part, held until its arguments end, and a signature goes on the part it
//! signs.
//! Spec: R14.12.

use serde_json::{Value, json};
use switchyard_api::ApiStreamChunk;

/// One function call as it is gathered.
struct Call {
    id: String,
    name: String,
    args: String,
    signature: Option<String>,
}

/// The parts of one answer as its chunks come.
pub(super) struct Parts {
    hide_thoughts: bool,
    /// Calls whose arguments may still come, in the order they began.
    calls: Vec<Call>,
    /// The signature of thinking the client is not shown, for the next part, where Gemini puts
    /// it when it shows no thoughts.
    signature: Option<String>,
    ready: Vec<Value>,
    /// A call whose arguments were no JSON object was left out.
    pub(super) malformed: bool,
}

impl Parts {
    pub(super) fn new(hide_thoughts: bool) -> Self {
        Self {
            hide_thoughts,
            calls: Vec::new(),
            signature: None,
            ready: Vec::new(),
            malformed: false,
        }
    }

    pub(super) fn push(&mut self, chunk: &ApiStreamChunk) {
        match chunk {
            ApiStreamChunk::Text {
                text, signature, ..
            } => self.text(text, signature.as_deref(), false),
            ApiStreamChunk::Reasoning {
                reasoning,
                signature,
                ..
            } => {
                let signature = signature.as_deref().filter(|s| !s.is_empty());
                if !self.hide_thoughts {
                    self.text(reasoning, signature, true);
                } else if let Some(signature) = signature {
                    self.signature = Some(signature.to_owned());
                }
            }
            ApiStreamChunk::ToolCalls {
                id,
                name,
                arguments_delta,
                signature,
                ..
            } => self.call(id, name, arguments_delta, signature.as_deref()),
            _ => {}
        }
    }

    /// The parts ready to write; calls stay open until something else comes or the answer ends.
    pub(super) fn take(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.ready)
    }

    /// Every part left, the open calls closed.
    pub(super) fn close(&mut self) -> Vec<Value> {
        self.close_calls();
        self.take()
    }

    fn text(&mut self, text: &str, signature: Option<&str>, thought: bool) {
        let signature = signature.filter(|s| !s.is_empty());
        if text.is_empty() && signature.is_none() {
            return;
        }
        self.close_calls();
        let mut part = json!({"text": text});
        if thought {
            part["thought"] = json!(true);
        }
        self.sign(&mut part, signature);
        self.ready.push(part);
    }

    fn call(&mut self, id: &str, name: &str, delta: &str, signature: Option<&str>) {
        let signature = signature.filter(|s| !s.is_empty()).map(str::to_owned);
        let Some(call) = self.calls.iter_mut().find(|c| c.id == id) else {
            return self.calls.push(Call {
                id: id.to_owned(),
                name: name.to_owned(),
                args: delta.to_owned(),
                signature,
            });
        };
        // Some upstreams send a call's whole arguments again after their fragments: kept once.
        let repeat = delta == call.args && serde_json::from_str::<Value>(delta).is_ok();
        if !repeat {
            call.args.push_str(delta);
        }
        call.signature = call.signature.take().or(signature);
    }

    fn close_calls(&mut self) {
        for call in std::mem::take(&mut self.calls) {
            let args = if call.args.trim().is_empty() {
                Some(json!({}))
            } else {
                serde_json::from_str::<Value>(&call.args)
                    .ok()
                    .filter(Value::is_object)
            };
            let Some(args) = args else {
                self.malformed = true;
                continue;
            };
            let mut part =
                json!({"functionCall": {"name": call.name, "args": args, "id": call.id}});
            self.sign(&mut part, call.signature.as_deref());
            self.ready.push(part);
        }
    }

    /// Puts the part's own signature on it, else a hidden thought's that waits.
    fn sign(&mut self, part: &mut Value, own: Option<&str>) {
        let signature = own.map(str::to_owned).or_else(|| self.signature.take());
        if let Some(signature) = signature {
            part["thoughtSignature"] = json!(signature);
        }
    }
}
