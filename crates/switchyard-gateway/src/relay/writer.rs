//! The client's stream as it is written (SPEC R14.2, R14.4): the dialect's encoder for the
//! chunks the gateway writes, and for a forwarded answer the provider's own events, with the
//! encoder mirroring their chunks so that whatever the gateway writes next — a continuation,
//! the rest of an answer whose events ended, an in-band error — goes on from where the
//! provider's events left off.
//!
//! A forwarded chunk is *unbacked* until an event after it reaches the client (a provider
//! event follows the chunks mapped from it): only then is it the client's, and mirrored.
//! When the gateway writes instead, the unbacked chunks are written first: their events
//! never came.

use switchyard_api::{ApiError, ApiStreamChunk};

use crate::ingress::{StopReason, StreamEncoder};

pub(super) struct Writer {
    encoder: Box<dyn StreamEncoder>,
    /// The bytes for the client, taken by [`Writer::take`].
    out: Vec<u8>,
    /// What the encoder writes while mirroring (discarded).
    mirrored: Vec<u8>,
    /// Forwarded chunks whose events have not reached the client.
    unbacked: Vec<ApiStreamChunk>,
}

impl Writer {
    /// A writer of `encoder`'s dialect; `forwarded` when the answer starts as the provider's
    /// own events (which bring their own first events).
    pub(super) fn new(mut encoder: Box<dyn StreamEncoder>, forwarded: bool) -> Self {
        let (mut out, mut mirrored) = (Vec::new(), Vec::new());
        encoder.start(if forwarded { &mut mirrored } else { &mut out });
        mirrored.clear();
        Self {
            encoder,
            out,
            mirrored,
            unbacked: Vec::new(),
        }
    }

    /// The bytes written so far, for the client.
    pub(super) fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// A chunk the gateway writes (after any unbacked ones).
    pub(super) fn chunk(&mut self, chunk: &ApiStreamChunk) {
        self.back_by_writing();
        self.encoder.chunk(chunk, &mut self.out);
    }

    /// A forwarded chunk, which its event will bring.
    pub(super) fn mirror(&mut self, chunk: ApiStreamChunk) {
        self.unbacked.push(chunk);
    }

    /// A provider event, as it came: the chunks before it are the client's now.
    pub(super) fn wire(&mut self, event: &[u8]) {
        for chunk in self.unbacked.drain(..) {
            self.encoder.chunk(&chunk, &mut self.mirrored);
        }
        self.mirrored.clear();
        self.encoder.adopt(event);
        self.out.extend_from_slice(event);
    }

    /// A complete answer's end: the dialect's, unless the provider's own last events were
    /// the end (`forwarded`).
    pub(super) fn finish(&mut self, stop: StopReason, forwarded: bool) {
        if forwarded {
            return;
        }
        self.back_by_writing();
        self.encoder.finish(stop, &mut self.out);
    }

    /// The in-band error of an answer nothing could complete.
    pub(super) fn error(&mut self, error: &ApiError) {
        self.back_by_writing();
        self.encoder.error(error, &mut self.out);
    }

    /// Writes the unbacked chunks: the gateway writes from here on.
    fn back_by_writing(&mut self) {
        for chunk in std::mem::take(&mut self.unbacked) {
            self.encoder.chunk(&chunk, &mut self.out);
        }
    }
}
