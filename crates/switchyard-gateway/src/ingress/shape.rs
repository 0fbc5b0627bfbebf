//! A body's shape counted before it is parsed: how many messages, content parts, tools and JSON
//! values it holds, read in one pass that keeps nothing, so a body past a cap is refused before
//! a tree of it is built.
//! Spec: R14.10.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::request::IngressError;

/// The most messages, Responses input items or Gemini contents one request may hold.
pub const MESSAGES_MAX: usize = 10_000;
/// The most content parts one request's messages may hold together: every element of an array
/// inside a message, such as content blocks, tool calls and a tool result's blocks.
pub const PARTS_MAX: usize = 50_000;
pub const TOOLS_MAX: usize = 1_000;
/// The most JSON values one body may hold: objects, arrays, strings, numbers and the rest.
pub const VALUES_MAX: usize = 250_000;

/// What a body holds, counted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub values: usize,
    pub messages: usize,
    pub parts: usize,
    pub tools: usize,
}

/// Counts `body`'s shape; a body past a cap is an error naming the field that holds too much.
pub fn shape(body: &[u8]) -> Result<Shape, IngressError> {
    let scan = Scan::default();
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let walked = Walk::new(&scan, Role::Top)
        .deserialize(&mut deserializer)
        .and_then(|()| deserializer.end());
    if let Some(over) = scan.over.take() {
        return Err(over);
    }
    walked.map_err(|e| IngressError::new("body", format!("is not valid JSON ({e}).")))?;
    Ok(scan.shape.get())
}

#[derive(Default)]
struct Scan {
    shape: Cell<Shape>,
    over: Cell<Option<IngressError>>,
}

impl Scan {
    /// Counts one more of what `pick` selects; past `max`, the error naming `field`.
    fn count<E: de::Error>(
        &self,
        pick: fn(&mut Shape) -> &mut usize,
        max: usize,
        field: &str,
        what: &str,
    ) -> Result<(), E> {
        let mut shape = self.shape.get();
        let n = pick(&mut shape);
        *n += 1;
        let over = *n > max;
        self.shape.set(shape);
        if over {
            let message = format!(
                "holds more than {max} {what}, the most this gateway takes in one request: shorten the conversation (compact it, or start a new one) or send fewer."
            );
            self.over.set(Some(IngressError::new(field, message)));
            return Err(E::custom("over a cap"));
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Role {
    /// The body itself.
    Top,
    /// A top-level array of messages or input items, named by its key.
    Conversation(&'static str),
    /// Inside one message: every array element below is a content part.
    Message(&'static str),
    Tools,
    Other,
}

struct Walk<'a> {
    scan: &'a Scan,
    role: Role,
    /// Set on an array's element: the array's role, which counts the element once it is there.
    element_of: Option<Role>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(mut self, deserializer: D) -> Result<(), D::Error> {
        if let Some(array) = self.element_of.take() {
            self.role = self.element(array)?;
        }
        deserializer.deserialize_any(self)
    }
}

impl<'a> Walk<'a> {
    fn new(scan: &'a Scan, role: Role) -> Self {
        Self {
            scan,
            role,
            element_of: None,
        }
    }

    fn value<E: de::Error>(&self) -> Result<(), E> {
        self.scan
            .count(|s| &mut s.values, VALUES_MAX, "body", "JSON values")
    }

    /// The role of an element of an array of role `array`, counted as what it is.
    fn element<E: de::Error>(&self, array: Role) -> Result<Role, E> {
        match array {
            Role::Conversation(field) => {
                let what = "messages";
                self.scan
                    .count(|s| &mut s.messages, MESSAGES_MAX, field, what)?;
                Ok(Role::Message(field))
            }
            Role::Message(field) => {
                let what = "content parts";
                self.scan.count(|s| &mut s.parts, PARTS_MAX, field, what)?;
                Ok(Role::Message(field))
            }
            Role::Tools => {
                self.scan
                    .count(|s| &mut s.tools, TOOLS_MAX, "tools", "tools")?;
                Ok(Role::Other)
            }
            Role::Top | Role::Other => Ok(Role::Other),
        }
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.value()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.value()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.value()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.value()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.value()
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.value()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.value()?;
        loop {
            let walk = Walk {
                scan: self.scan,
                role: Role::Other,
                element_of: Some(self.role),
            };
            if seq.next_element_seed(walk)?.is_none() {
                return Ok(());
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.value()?;
        loop {
            let role = match self.role {
                Role::Top => match map.next_key::<std::borrow::Cow<'de, str>>()? {
                    None => return Ok(()),
                    Some(key) => match key.as_ref() {
                        "messages" => Role::Conversation("messages"),
                        "input" => Role::Conversation("input"),
                        "contents" => Role::Conversation("contents"),
                        "tools" => Role::Tools,
                        _ => Role::Other,
                    },
                },
                role => match map.next_key::<IgnoredAny>()? {
                    None => return Ok(()),
                    Some(_) => match role {
                        Role::Message(field) => Role::Message(field),
                        _ => Role::Other,
                    },
                },
            };
            map.next_value_seed(Walk::new(self.scan, role))?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(messages: usize) -> Vec<u8> {
        let one = r#"{"role":"user","content":"a"}"#;
        let list = vec![one; messages].join(",");
        format!(r#"{{"model":"m","messages":[{list}]}}"#).into_bytes()
    }

    #[test]
    fn a_body_is_counted_without_being_kept() {
        let body = br#"{"model": "m", "tools": [{"name": "a"}, {"name": "b"}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"},
                         {"type": "tool_result", "content": [{"type": "text", "text": "x"}]}]}]}"#;
        let shape = shape(body).unwrap();
        assert_eq!((shape.messages, shape.parts, shape.tools), (1, 3, 2));
        assert_eq!(shape.values, 20);
    }

    #[test]
    fn a_million_messages_are_refused_at_the_first_past_the_cap_naming_the_field() {
        let error = shape(&chat(MESSAGES_MAX + 1)).unwrap_err();
        assert_eq!(error.field, "messages");
        assert!(
            error.message.contains("more than 10000 messages"),
            "{error}"
        );
        assert!(shape(&chat(MESSAGES_MAX)).is_ok());
        let input = format!(
            r#"{{"model":"m","input":[{}]}}"#,
            vec![r#"{"type":"message","role":"user","content":"a"}"#; MESSAGES_MAX + 1].join(",")
        );
        assert_eq!(shape(input.as_bytes()).unwrap_err().field, "input");
        let contents = format!(
            r#"{{"contents":[{}]}}"#,
            vec![r#"{"role":"user","parts":[{"text":"a"}]}"#; MESSAGES_MAX + 1].join(",")
        );
        assert_eq!(shape(contents.as_bytes()).unwrap_err().field, "contents");
    }

    #[test]
    fn parts_tools_and_values_each_have_their_cap() {
        let parts = vec![r#"{"type":"text","text":"a"}"#; PARTS_MAX + 1].join(",");
        let body = format!(r#"{{"messages":[{{"role":"user","content":[{parts}]}}]}}"#);
        let error = shape(body.as_bytes()).unwrap_err();
        assert!(error.message.contains("content parts"), "{error}");
        let tools = vec![r#"{"name":"t"}"#; TOOLS_MAX + 1].join(",");
        let body = format!(r#"{{"tools":[{tools}]}}"#);
        assert_eq!(shape(body.as_bytes()).unwrap_err().field, "tools");
        let junk = vec!["1"; VALUES_MAX + 1].join(",");
        let body = format!(r#"{{"metadata":[{junk}]}}"#);
        assert_eq!(shape(body.as_bytes()).unwrap_err().field, "body");
    }

    #[test]
    fn a_malformed_body_is_the_same_400_as_the_parsers() {
        let error = shape(b"{\"model\": ").unwrap_err();
        assert_eq!(error.field, "body");
        assert!(error.message.starts_with("is not valid JSON"), "{error}");
    }
}
