//! The guard of a forwarded stream (SPEC R10.5, R14.2): the provider's own events
//! ([`ApiStreamChunk::Wire`]) carry the same text as the chunks, so a secret inside one event
//! is scrubbed from its bytes, and while the scrubber holds back what could be the start of a
//! secret the events wait (the chunks go on: a consumer mirrors them). When the held text
//! turns out clean the events go on as they came; when a secret spanned two of them, they
//! cannot: the events end there (a [`WireEvent`] with `ends`) and the consumer writes the
//! answer from its scrubbed chunks — those whose events it never gave, then the rest.
//!
//! The mapper may hold content back too (Chat tool-call arguments that arrive before the
//! call's name): its events come marked [`WireEvent::held`], and wait in the same way until
//! that content has come as chunks and passed the scrubber; content the mapper never gave
//! (a call whose name never came) ends the events.

use super::guard::StreamGuard;
use crate::error::ApiError;
use crate::secrets::scrub;
use crate::stream::{ApiStreamChunk, WireEvent};

/// The most events held while a possible secret is resolved; past it the events end (a
/// provider cannot make a gateway hold an answer).
const MAX_HELD_EVENTS: usize = 4096;

/// A [`StreamGuard`] that also guards the provider's events of a forwarded stream.
pub(super) struct WireGuard {
    inner: StreamGuard,
    /// Whether the stream gives the provider's events (a forwarded request).
    forwarding: bool,
    hold: Option<Hold>,
    /// The events ended: none is given any more.
    ended: bool,
    /// The last event said the mapper holds content not given as chunks yet.
    mapper_holds: bool,
}

/// The events held since the scrubber began holding back a possible secret's start, and the
/// content pushed and released meanwhile, per part ([`content`]; equal when nothing was
/// redacted).
struct Hold {
    events: Vec<WireEvent>,
    pushed: Content,
    released: Content,
}

/// The content of chunks, in two parts compared apart: the text, reasoning and arguments,
/// and the text of the reasoning's structured details (OpenRouter sends the same reasoning
/// in both, and each part is released in its own order).
#[derive(Default, PartialEq)]
struct Content([String; 2]);

impl Content {
    fn of(chunks: &[ApiStreamChunk]) -> Self {
        let mut all = Self::default();
        for chunk in chunks {
            all.add(chunk);
        }
        all
    }

    fn add(&mut self, chunk: &ApiStreamChunk) {
        let [main, details] = &mut self.0;
        main.push_str(content(chunk));
        if let ApiStreamChunk::Reasoning {
            details: Some(d), ..
        } = chunk
        {
            details_text(d, details);
        }
    }

    fn append(&mut self, other: Content) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            mine.push_str(&theirs);
        }
    }
}

/// The text-bearing strings of a details value (`text`, `summary`), in order, onto `out`.
fn details_text(details: &serde_json::Value, out: &mut String) {
    let items = details.as_array().map(Vec::as_slice).unwrap_or_default();
    for item in items {
        let text = super::details::TEXT_FIELDS
            .iter()
            .find_map(|f| item.get(*f).and_then(serde_json::Value::as_str));
        out.push_str(text.unwrap_or_default());
    }
}

impl WireGuard {
    pub(super) fn new(inner: StreamGuard, forwarding: bool) -> Self {
        Self {
            inner,
            forwarding,
            hold: None,
            ended: false,
            mapper_holds: false,
        }
    }

    /// [`StreamGuard::chunk`], with the provider's events guarded.
    pub(super) fn chunk(
        &mut self,
        chunk: ApiStreamChunk,
        out: &mut Vec<ApiStreamChunk>,
    ) -> Option<ApiError> {
        if let ApiStreamChunk::Wire(event) = chunk {
            self.on_wire(event, out);
            return None;
        }
        if !self.forwarding {
            return self.inner.chunk(chunk, out);
        }
        let pushed = Content::of(std::slice::from_ref(&chunk));
        let mut released = Vec::new();
        let error = self.inner.chunk(chunk, &mut released);
        self.settle(pushed, released, error.is_some(), out);
        error
    }

    /// [`StreamGuard::finish`]: what is held, then the events held (or their end).
    pub(super) fn finish(&mut self, out: &mut Vec<ApiStreamChunk>) {
        let mut released = Vec::new();
        self.inner.finish(&mut released);
        self.settle(Content::default(), released, true, out);
    }

    fn on_wire(&mut self, event: WireEvent, out: &mut Vec<ApiStreamChunk>) {
        if self.ended {
            return;
        }
        let bytes = match std::str::from_utf8(&event.bytes).map(scrub) {
            Ok(std::borrow::Cow::Owned(clean)) => clean.into(),
            Ok(std::borrow::Cow::Borrowed(_)) => event.bytes,
            // Events are re-framed from text: not UTF-8 is not an event to give on.
            Err(_) => return,
        };
        self.mapper_holds = event.held;
        let event = WireEvent {
            bytes,
            ends: false,
            held: false,
        };
        if self.hold.is_none() && self.mapper_holds {
            self.hold = Some(Hold {
                events: Vec::new(),
                pushed: Content::default(),
                released: Content::default(),
            });
        }
        match self.hold.as_mut() {
            Some(hold) => {
                hold.events.push(event);
                if hold.events.len() > MAX_HELD_EVENTS {
                    self.end_events(out);
                } else if !self.mapper_holds && !self.inner.holding() {
                    self.resolve(out);
                }
            }
            None => out.push(ApiStreamChunk::Wire(event)),
        }
    }

    /// Hands on what the inner guard released for a chunk whose content was `pushed` (the
    /// chunks always go on at once: the consumer's first-content probe and its mirror of the
    /// answer need them), starts holding the events while the scrubber holds back, and
    /// resolves the hold when it no longer does (or the answer is over).
    fn settle(
        &mut self,
        pushed: Content,
        released: Vec<ApiStreamChunk>,
        over: bool,
        out: &mut Vec<ApiStreamChunk>,
    ) {
        let holding = (self.inner.holding() || self.mapper_holds) && !over;
        let released_text = Content::of(&released);
        out.extend(released);
        match self.hold.as_mut() {
            None if holding && self.forwarding && !self.ended => {
                self.hold = Some(Hold {
                    events: Vec::new(),
                    pushed,
                    released: released_text,
                });
            }
            None => {}
            Some(hold) => {
                hold.pushed.append(pushed);
                hold.released.append(released_text);
                if !holding {
                    self.resolve(out);
                }
            }
        }
    }

    /// The hold ends: its events as they came when nothing was redacted (and the mapper gave
    /// all it held), else the events' end.
    fn resolve(&mut self, out: &mut Vec<ApiStreamChunk>) {
        let Some(hold) = self.hold.take() else {
            return;
        };
        if hold.pushed == hold.released && !self.mapper_holds {
            out.extend(hold.events.into_iter().map(ApiStreamChunk::Wire));
        } else {
            self.end_events(out);
        }
    }

    /// No more events: their end (the held ones are dropped; the consumer writes the
    /// chunks they carried).
    fn end_events(&mut self, out: &mut Vec<ApiStreamChunk>) {
        self.ended = true;
        self.hold = None;
        out.push(ApiStreamChunk::Wire(WireEvent {
            bytes: bytes::Bytes::new(),
            ends: true,
            held: false,
        }));
    }
}

/// The text a content chunk carries (its text, reasoning or arguments); empty for others.
fn content(chunk: &ApiStreamChunk) -> &str {
    match chunk {
        ApiStreamChunk::Text { text, .. } => text,
        ApiStreamChunk::Reasoning { reasoning, .. } => reasoning,
        ApiStreamChunk::ToolCalls {
            arguments_delta, ..
        } => arguments_delta,
        _ => "",
    }
}

#[cfg(test)]
mod tests;
