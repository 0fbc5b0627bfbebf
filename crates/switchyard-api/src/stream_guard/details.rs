//! OpenRouter's structured reasoning, scrubbed across chunks: a key streamed over two deltas is
//! split across two details objects, so their texts in stream order are one channel. The held
//! tail moves on to the next object of the same type, or into a copy of its own object when the
//! type changes, so every chunk's details stay a valid array.
//! Spec: R10.5.

use serde_json::{Map, Value};

use crate::secrets::{Scrubber, scrub_json};

pub(super) const TEXT_FIELDS: [&str; 2] = ["text", "summary"];

#[derive(Default)]
pub(super) struct Details {
    scrubber: Scrubber,
    /// The object the held tail came from, less its text and signature, and that text's field.
    owner: Option<(Map<String, Value>, &'static str)>,
}

impl Details {
    pub(super) fn held_len(&self) -> usize {
        self.scrubber.held_len()
    }

    /// One chunk's details, scrubbed; a value that is not an array is scrubbed whole.
    pub(super) fn push(&mut self, details: Value) -> Value {
        let Value::Array(items) = details else {
            let mut details = details;
            scrub_json(&mut details);
            return details;
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let Value::Object(object) = item else {
                let mut item = item;
                scrub_json(&mut item);
                out.push(item);
                continue;
            };
            // Consumers join a block's deltas until the type changes: the tail goes first, in a
            // copy of its own object.
            let owner_type = self.owner.as_ref().map(|(t, _)| t.get("type"));
            if self.held_len() > 0 && owner_type != Some(object.get("type")) {
                out.extend(self.finish_object().map(Value::Object));
            }
            out.push(Value::Object(self.object(object)));
        }
        Value::Array(out)
    }

    /// One details object: its text through the scrubber, its other strings scrubbed whole.
    fn object(&mut self, mut object: Map<String, Value>) -> Map<String, Value> {
        let field = TEXT_FIELDS
            .into_iter()
            .find(|f| object.get(*f).is_some_and(Value::is_string));
        let text = field.and_then(|f| object.remove(f));
        let mut rest = Value::Object(object);
        scrub_json(&mut rest);
        let Value::Object(mut object) = rest else {
            return Map::new(); // an object scrubbed stays an object
        };
        let closes = object.contains_key("signature");
        let (Some(field), Some(Value::String(text))) = (field, text) else {
            if closes && self.held_len() > 0 {
                // A signature without text of its own: the held tail of its part goes in it.
                let (_, field) = self.owner.take().unwrap_or_else(text_owner);
                object.insert(field.into(), Value::String(self.scrubber.finish()));
            }
            return object;
        };
        let mut shown = match self.scrubber.push(&text) {
            std::borrow::Cow::Borrowed(_) => text,
            std::borrow::Cow::Owned(shown) => shown,
        };
        if closes {
            shown.push_str(&self.scrubber.finish());
            self.owner = None;
        } else if self.held_len() > 0 {
            let mut template = object.clone();
            template.remove("signature");
            self.owner = Some((template, field));
        } else {
            self.owner = None;
        }
        object.insert(field.into(), Value::String(shown));
        object
    }

    /// The held tail, released as a details array of one object.
    pub(super) fn finish(&mut self) -> Option<Value> {
        let object = self.finish_object()?;
        Some(Value::Array(vec![Value::Object(object)]))
    }

    fn finish_object(&mut self) -> Option<Map<String, Value>> {
        let tail = self.scrubber.finish();
        let (mut template, field) = self.owner.take().unwrap_or_else(text_owner);
        if tail.is_empty() {
            return None;
        }
        template.insert(field.into(), Value::String(tail));
        Some(template)
    }
}

fn text_owner() -> (Map<String, Value>, &'static str) {
    (Map::new(), TEXT_FIELDS[0])
}

#[cfg(test)]
mod tests;
