//! [`ChunkStream`], the stream one request yields, decoding and mapping each body piece at once.
//! Spec: R1.4, R6.4.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_util::Stream;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::deadline::{cancelled, deadline_after, first_content_timeout, idle_timeout};
use super::request::{EventParser, Origin};
use super::streaming::{Body, Response};
use crate::error::body::request_id;
use crate::error::{ApiError, ErrorKind};
use crate::handler::ResolvedDeadlines;
use crate::stream::ApiStreamChunk;
use crate::wire::Framing;

type Item = Result<ApiStreamChunk, ApiError>;

/// The response head once sent, and the first-content deadline running since the request was made.
pub(super) struct Opened {
    pub(super) response: Response,
    pub(super) deadline: Option<Instant>,
}

/// Sends the request: the response that says a stream follows, or the error to yield.
pub(super) type Opening = Pin<Box<dyn Future<Output = Result<Opened, ApiError>> + Send>>;

enum State {
    Opening(Opening),
    Reading(Body),
    Done,
}

/// The chunks of one request: the first poll sends it, and each later poll hands over the next
/// mapped chunk or reads the next piece. It is written by hand because an `async_stream`
/// generator's yield slot cost about 17 % of the stream's CPU in copies.
pub(super) struct ChunkStream<P: EventParser> {
    state: State,
    parser: P,
    decoder: <P::Event as Framing>::Decoder,
    /// Mapped chunks not handed over yet; the allocation is reused as the next piece's output
    /// buffer.
    pending: VecDeque<Item>,
    /// Whether a cancellation is checked before each pending chunk; not for those a final error
    /// flushed.
    check_cancel: bool,
    cancel: CancellationToken,
    /// Wakes the stream when `cancel` fires while it waits for the body.
    cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
    origin: Origin,
    deadlines: ResolvedDeadlines,
    /// When waiting for a piece fails: the first-content deadline until content, then the idle one.
    deadline: Option<Instant>,
    /// The timer of `deadline`, made on the first wait and reset when the deadline moves.
    sleep: Option<Pin<Box<Sleep>>>,
    request_id: Option<String>,
    content_seen: bool,
    restart_idle: bool,
}

impl<P: EventParser> ChunkStream<P> {
    pub(super) fn new(
        opening: Opening,
        parser: P,
        cancel: CancellationToken,
        origin: Origin,
        deadlines: ResolvedDeadlines,
        max_line_bytes: usize,
    ) -> Self {
        Self {
            state: State::Opening(opening),
            parser,
            decoder: <P::Event as Framing>::decoder(max_line_bytes),
            pending: VecDeque::new(),
            check_cancel: true,
            cancelled: Box::pin(cancel.clone().cancelled_owned()),
            cancel,
            origin,
            deadlines,
            deadline: None,
            sleep: None,
            request_id: None,
            content_seen: false,
            restart_idle: false,
        }
    }

    fn end(&mut self) {
        self.state = State::Done;
        self.pending.clear();
    }

    /// An error as it is yielded, with the response's request id and the origin.
    fn finish_err(&self, mut e: ApiError) -> ApiError {
        if e.request_id.is_none() {
            e.request_id = self.request_id.clone();
        }
        e.with_origin(&self.origin.provider_id, &self.origin.model_id)
    }

    /// Hands over one pending item; an error, or a cancellation seen before it, ends the stream.
    fn hand_over(&mut self, item: Item) -> Poll<Option<Item>> {
        if self.check_cancel && self.cancel.is_cancelled() {
            // A cancellation between two chunks of one read takes effect at once.
            self.end();
            return Poll::Ready(Some(Err(cancelled(&self.origin))));
        }
        Poll::Ready(Some(match item {
            Ok(chunk) => {
                self.content_seen |= chunk.is_content();
                self.restart_idle = self.content_seen;
                Ok(chunk)
            }
            Err(e) => {
                self.end();
                Err(self.finish_err(e))
            }
        }))
    }

    /// Queues a failed body's last items: the chunks mapped, the usage held back, then the error.
    fn fail(&mut self, mut out: Vec<Item>, e: ApiError) {
        self.parser.on_error(&mut out);
        out.retain(Result::is_ok);
        out.push(Err(e));
        self.state = State::Done;
        self.check_cancel = false;
        self.pending = out.into();
    }

    fn timed_out(&self) -> ApiError {
        if self.content_seen {
            idle_timeout(self.deadlines.idle, &self.origin)
        } else {
            first_content_timeout(self.deadlines.first_content, &self.origin)
        }
    }

    /// Reads one body piece and maps it into the pending chunks. The cancellation is polled first,
    /// then the body, then the deadline, as the request's were.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let State::Reading(body) = &mut self.state else {
            return Poll::Ready(());
        };
        if self.restart_idle {
            self.deadline = deadline_after(self.deadlines.idle);
            self.restart_idle = false;
        }
        let piece = if self.cancelled.as_mut().poll(cx).is_ready() {
            Err(cancelled(&self.origin))
        } else if let Poll::Ready(piece) = body.poll_chunk(cx) {
            piece.map_err(|cause| {
                ApiError::new(
                    ErrorKind::Network,
                    format!(
                        "the connection to {} broke while streaming ({cause})",
                        self.origin.base_url
                    ),
                )
            })
        } else {
            let Some(at) = self.deadline else {
                return Poll::Pending;
            };
            let sleep = self
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            if sleep.deadline() != at {
                sleep.as_mut().reset(at);
            }
            ready!(sleep.as_mut().poll(cx));
            Err(self.timed_out())
        };
        let piece = match piece {
            Ok(piece) => piece,
            Err(e) => {
                self.fail(Vec::new(), e);
                return Poll::Ready(());
            }
        };
        // Events go to the parser borrowed from the piece; `pending`'s empty buffer takes the
        // output.
        let mut out = Vec::from(std::mem::take(&mut self.pending));
        let parser = &mut self.parser;
        let decoded = match &piece {
            Some(bytes) => <P::Event as Framing>::feed_each(&mut self.decoder, bytes, |event| {
                parser.on_event(event, &mut out);
            }),
            None => <P::Event as Framing>::finish_each(&mut self.decoder, |event| {
                parser.on_event(event, &mut out);
            }),
        };
        if let Err(e) = decoded {
            self.fail(out, e.into());
            return Poll::Ready(());
        }
        if piece.is_none() {
            self.parser.on_end(&mut out);
            self.state = State::Done;
        }
        self.pending = out.into();
        Poll::Ready(())
    }
}

impl<P: EventParser> Stream for ChunkStream<P> {
    type Item = Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        let this = self.get_mut();
        loop {
            if let Some(item) = this.pending.pop_front() {
                return this.hand_over(item);
            }
            match &mut this.state {
                State::Done => return Poll::Ready(None),
                State::Opening(opening) => match ready!(opening.as_mut().poll(cx)) {
                    Ok(Opened { response, deadline }) => {
                        this.request_id = request_id(response.headers());
                        this.deadline = deadline;
                        this.state = State::Reading(response.into_body());
                    }
                    Err(e) => {
                        this.end();
                        return Poll::Ready(Some(Err(e)));
                    }
                },
                State::Reading(_) => ready!(this.poll_read(cx)),
            }
        }
    }
}
