//! The fast reading of a `chat.completion.chunk` with the `fast_json` scanner: only the fields the
//! mapping reads, strings borrowed when they have no escapes. A non-string reads as absent, as
//! `as_str` does on the general path, which reads any chunk with an error or an odd shape.
//! Spec: R4.4, R4.5.

use std::borrow::Cow;

use serde_json::Value;

use super::view::{ChunkView, Content};
use crate::providers::fast_json::Scanner;

/// `delta.content`: a string, typed parts, or absent for any other value.
#[derive(Default)]
enum StrOrParts<'a> {
    #[default]
    Absent,
    Str(Cow<'a, str>),
    Parts(Vec<Value>),
}

#[derive(Default)]
pub(super) struct Chunk<'a> {
    has_choice: bool,
    finish_reason: Option<Cow<'a, str>>,
    content: StrOrParts<'a>,
    reasoning_content: Option<Cow<'a, str>>,
    reasoning: Option<Cow<'a, str>>,
    reasoning_details: Option<Value>,
    tool_calls: Vec<Value>,
    usage: Option<Value>,
    /// Groq's `x_groq.usage` and Moonshot's `choices[0].usage`, as [`super::view::usage_of`] reads.
    x_groq: Option<Value>,
    choice_usage: Option<Value>,
}

impl<'a> Chunk<'a> {
    /// Reads one chunk, or `None` when the general path must: a non-null `error` at the top or in
    /// `choices[0]`, `object: "error"`, more than one choice, or what the scanner leaves to serde.
    pub(super) fn read(data: &'a str) -> Option<Self> {
        let mut chunk = Chunk::default();
        let names = ["choices", "usage", "error", "object", "x_groq"];
        Scanner::new(data).document(&names, |s, name| match name {
            "choices" => {
                if s.null() {
                    return Some(());
                }
                s.array(|s, i| if i == 0 { chunk.read_choice(s) } else { None })
            }
            "usage" => {
                chunk.usage = s.opt_value()?;
                Some(())
            }
            "x_groq" => {
                chunk.x_groq = s.opt_value()?;
                Some(())
            }
            "error" => s.null().then_some(()),
            _ => (s.maybe_str()?.as_deref() != Some("error")).then_some(()),
        })?;
        Some(chunk)
    }

    fn read_choice(&mut self, s: &mut Scanner<'a>) -> Option<()> {
        self.has_choice = true;
        let names = ["delta", "finish_reason", "error", "usage"];
        s.fields(&names, |s, name| match name {
            "usage" => {
                self.choice_usage = s.opt_value()?;
                Some(())
            }
            "delta" => {
                if s.null() {
                    Some(())
                } else {
                    self.read_delta(s)
                }
            }
            "finish_reason" => {
                self.finish_reason = s.maybe_str()?;
                Some(())
            }
            _ => s.null().then_some(()),
        })
    }

    fn read_delta(&mut self, s: &mut Scanner<'a>) -> Option<()> {
        let names = [
            "content",
            "reasoning_content",
            "reasoning",
            "reasoning_details",
            "tool_calls",
        ];
        s.fields(&names, |s, name| {
            match name {
                "content" if s.at_array() => self.content = StrOrParts::Parts(s.values()?),
                "content" => {
                    self.content = s.maybe_str()?.map_or(StrOrParts::Absent, StrOrParts::Str);
                }
                "reasoning_content" => self.reasoning_content = s.maybe_str()?,
                "reasoning" => self.reasoning = s.maybe_str()?,
                "reasoning_details" => self.reasoning_details = s.opt_value()?,
                _ => {
                    if !s.null() {
                        self.tool_calls = s.values()?;
                    }
                }
            }
            Some(())
        })
    }

    pub(super) fn view(&'a self) -> ChunkView<'a> {
        ChunkView {
            has_choice: self.has_choice,
            reasoning_content: self.reasoning_content.as_deref(),
            reasoning: self.reasoning.as_deref(),
            reasoning_details: self.reasoning_details.as_ref(),
            content: match &self.content {
                StrOrParts::Str(t) => Content::Text(t),
                StrOrParts::Parts(parts) => Content::Parts(parts),
                StrOrParts::Absent => Content::None,
            },
            tool_calls: &self.tool_calls,
            finish_reason: self.finish_reason.as_deref(),
            usage: super::view::usage_of(
                self.usage.as_ref(),
                self.x_groq.as_ref(),
                self.choice_usage.as_ref(),
            ),
        }
    }
}
