//! The guard of a forwarded stream (SPEC R10.5, R14.2): the provider's own events
//! ([`ApiStreamChunk::Wire`]) carry the same text as the chunks, so a secret inside one event
//! is scrubbed from its bytes, and while the scrubber holds back what could be the start of a
//! secret the events are held with it. When the held text turns out clean the events go on as
//! they came; when a secret spanned two of them, they cannot be given as they came: the
//! events end there (a [`WireEvent`] with `ends`) and the rest of the answer is given only as
//! its scrubbed chunks, for the consumer to write in the dialect.

use super::StreamGuard;
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
}

/// What was held since the scrubber began holding: the chunks released and the events, in
/// order, and the content pushed and released meanwhile (equal when nothing was redacted).
struct Hold {
    items: Vec<ApiStreamChunk>,
    pushed: String,
    released: String,
}

impl WireGuard {
    pub(super) fn new(inner: StreamGuard, forwarding: bool) -> Self {
        Self {
            inner,
            forwarding,
            hold: None,
            ended: false,
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
        let pushed = content(&chunk).to_owned();
        let mut released = Vec::new();
        let error = self.inner.chunk(chunk, &mut released);
        self.settle(&pushed, released, error.is_some(), out);
        error
    }

    /// [`StreamGuard::finish`]: what is held, then the events held (or their end).
    pub(super) fn finish(&mut self, out: &mut Vec<ApiStreamChunk>) {
        let mut released = Vec::new();
        self.inner.finish(&mut released);
        self.settle("", released, true, out);
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
        let event = ApiStreamChunk::Wire(WireEvent { bytes, ends: false });
        match self.hold.as_mut() {
            Some(hold) => {
                hold.items.push(event);
                if hold.items.len() > MAX_HELD_EVENTS {
                    self.end_events(out);
                }
            }
            None => out.push(event),
        }
    }

    /// Takes what the inner guard released for a chunk whose content was `pushed`: into
    /// `out`, or into the hold while the scrubber holds back; resolves the hold when it no
    /// longer does (or the answer is over).
    fn settle(
        &mut self,
        pushed: &str,
        released: Vec<ApiStreamChunk>,
        over: bool,
        out: &mut Vec<ApiStreamChunk>,
    ) {
        let holding = self.inner.holding() && !over;
        match self.hold.as_mut() {
            None if holding && self.forwarding && !self.ended => {
                let released_text = released.iter().map(content).collect();
                self.hold = Some(Hold {
                    items: released,
                    pushed: pushed.to_owned(),
                    released: released_text,
                });
            }
            None => out.extend(released),
            Some(hold) => {
                hold.pushed.push_str(pushed);
                hold.released.extend(released.iter().map(content));
                hold.items.extend(released);
                if !holding {
                    self.resolve(out);
                }
            }
        }
    }

    /// The hold ends: its items as they were when nothing was redacted, else the events'
    /// end and its chunks alone.
    fn resolve(&mut self, out: &mut Vec<ApiStreamChunk>) {
        let Some(hold) = self.hold.take() else {
            return;
        };
        if hold.pushed == hold.released {
            out.extend(hold.items);
        } else {
            self.hold = Some(hold);
            self.end_events(out);
        }
    }

    /// No more events: their end, then the held chunks without their events.
    fn end_events(&mut self, out: &mut Vec<ApiStreamChunk>) {
        self.ended = true;
        out.push(ApiStreamChunk::Wire(WireEvent {
            bytes: bytes::Bytes::new(),
            ends: true,
        }));
        if let Some(hold) = self.hold.take() {
            let chunks = hold.items.into_iter();
            out.extend(chunks.filter(|c| !matches!(c, ApiStreamChunk::Wire(_))));
        }
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
