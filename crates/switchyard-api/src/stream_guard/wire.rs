//! The guard of a forwarded stream: the provider's own events carry the same text as the
//! chunks, so they wait while the scrubber holds back a possible secret. When a secret spanned
//! two events, the events end and the consumer writes the rest from its scrubbed chunks.
//! Spec: R10.5, R14.2.

use super::guard::StreamGuard;
use crate::error::ApiError;
use crate::secrets::scrub;
use crate::stream::{ApiStreamChunk, WireEvent};

/// The most events held while a possible secret is resolved, so that a provider cannot make a
/// gateway hold an answer.
const MAX_HELD_EVENTS: usize = 4096;

/// A [`StreamGuard`] that also guards the provider's events of a forwarded stream.
pub(super) struct WireGuard {
    inner: StreamGuard,
    forwarding: bool,
    hold: Option<Hold>,
    ended: bool,
    /// The last event said the mapper holds content not given as chunks yet, such as tool-call
    /// arguments before the call's name.
    mapper_holds: bool,
}

/// The events held since the scrubber began holding back a possible secret's start, and the
/// content pushed and released meanwhile; equal content means nothing was redacted.
struct Hold {
    events: Vec<WireEvent>,
    pushed: Content,
    released: Content,
}

/// The content of chunks in two parts compared apart: OpenRouter sends the same reasoning as
/// text and as structured details, and each part is released in its own order.
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

    /// [`StreamGuard::finish`]: what is held, then the held events or their end.
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

    /// Hands on what the inner guard released for a chunk whose content was `pushed`, holding the
    /// events while the scrubber holds back. The chunks go on at once for the first-content probe.
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

    /// Ends the hold: its events as they came when nothing was redacted, else the events' end.
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

    /// No more events: their end; the consumer writes the chunks the held ones carried.
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
