//! Switchyard's chunks as one `GenerateContentResponse`, the answer of `generateContent`.
//! Spec: R14.12.

use serde_json::Value;
use switchyard_api::{ApiStreamChunk, Usage};

use super::super::encode::{ResponseCollector, StopReason};
use super::parts::Parts;
use super::wire::{finish_reason, response};

/// The collector of one whole Gemini answer: text continues the text part before it, as one
/// answer's text is one part.
pub(crate) struct Collector {
    model: String,
    id: String,
    parts: Parts,
    usage: Usage,
}

impl Collector {
    pub(crate) fn new(model: &str, id: &str, hide_thoughts: bool) -> Self {
        Self {
            model: model.to_owned(),
            id: id.to_owned(),
            parts: Parts::new(hide_thoughts),
            usage: Usage::default(),
        }
    }
}

/// `parts` with each text part joined to the one before it when both are text of the same kind
/// and the later has no signature of its own.
fn joined(parts: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(parts.len());
    for part in parts {
        let plain = |p: &Value| {
            let keys_ok =
                (p.as_object()).is_some_and(|o| o.keys().all(|k| k == "text" || k == "thought"));
            keys_ok.then(|| p["thought"] == Value::Bool(true))
        };
        if let (Some(last), Some(thought)) = (out.last_mut(), plain(&part)) {
            let last_thought = last["thought"] == Value::Bool(true);
            if last["text"].is_string() && last_thought == thought {
                let text = format!(
                    "{}{}",
                    last["text"].as_str().unwrap_or(""),
                    part["text"].as_str().unwrap_or("")
                );
                last["text"] = Value::String(text);
                continue;
            }
        }
        out.push(part);
    }
    out
}

impl ResponseCollector for Collector {
    fn chunk(&mut self, chunk: &ApiStreamChunk) {
        match chunk {
            ApiStreamChunk::Usage(usage) => self.usage = usage.clone(),
            other => self.parts.push(other),
        }
    }

    fn finish(&mut self, stop: StopReason) -> Value {
        let parts = joined(self.parts.close());
        let reason = finish_reason(stop, self.parts.malformed);
        response(parts, Some((reason, &self.usage)), &self.model, &self.id)
    }
}
