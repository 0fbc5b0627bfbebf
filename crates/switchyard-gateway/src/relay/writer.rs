//! The client's stream as it is written: the dialect's encoder for what the gateway writes,
//! and for a forwarded answer the provider's own events, whose chunks the encoder mirrors so
//! that whatever the gateway writes next goes on from where they left off.
//! Spec: R14.2, R14.4.

use switchyard_api::{ApiError, ApiStreamChunk};

use crate::ingress::{StopReason, StreamEncoder};

pub(super) struct Writer {
    encoder: Box<dyn StreamEncoder>,
    out: Vec<u8>,
    /// Forwarded chunks whose events have not reached the client: a chunk is the client's once
    /// an event after it went out.
    unbacked: Vec<ApiStreamChunk>,
}

impl Writer {
    /// A writer of `encoder`'s dialect; `forwarded` when the provider's events bring the start.
    pub(super) fn new(mut encoder: Box<dyn StreamEncoder>, forwarded: bool) -> Self {
        let (mut out, mut mirrored) = (Vec::new(), Vec::new());
        encoder.start(if forwarded { &mut mirrored } else { &mut out });
        Self {
            encoder,
            out,
            unbacked: Vec::new(),
        }
    }

    pub(super) fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// A chunk the gateway writes, after any unbacked ones.
    pub(super) fn chunk(&mut self, chunk: &ApiStreamChunk) {
        self.back_by_writing();
        self.encoder.chunk(chunk, &mut self.out);
    }

    pub(super) fn mirror(&mut self, chunk: ApiStreamChunk) {
        self.unbacked.push(chunk);
    }

    /// A provider event as it came: the chunks before it are the client's now.
    pub(super) fn wire(&mut self, event: &[u8]) {
        for chunk in self.unbacked.drain(..) {
            self.encoder.mirror(&chunk);
        }
        self.encoder.relay(event, &mut self.out);
    }

    /// A complete answer's end, unless the provider's own last events were the end.
    pub(super) fn finish(&mut self, stop: StopReason, forwarded: bool) {
        if forwarded {
            return self.encoder.end_relayed(&mut self.out);
        }
        self.back_by_writing();
        self.encoder.finish(stop, &mut self.out);
    }

    pub(super) fn error(&mut self, error: &ApiError) {
        self.back_by_writing();
        self.encoder.error(error, &mut self.out);
    }

    /// Writes the unbacked chunks, whose events never came: the gateway writes from here on.
    fn back_by_writing(&mut self) {
        for chunk in std::mem::take(&mut self.unbacked) {
            self.encoder.chunk(&chunk, &mut self.out);
        }
    }
}
