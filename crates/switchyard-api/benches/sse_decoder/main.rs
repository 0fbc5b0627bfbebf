//! Throughput of Switchyard's SSE decoder against the `eventsource-stream` crate (DESIGN.md).
//!
//! The input is the benchmark's OpenAI Chat Completions stream, `openai_full.sse` of
//! `bench/gen_streams.py` (16.8 MB, 50,001 `data: {chat.completion.chunk}\n\n` events: small
//! text deltas, some non-ASCII, two tool calls in 5,000 argument fragments, a usage chunk and
//! `data: [DONE]`), rebuilt byte for byte in memory by `openai_stream.rs` (its SHA-256 is
//! checked) and cut into 16 KiB `Bytes` pieces as network reads would deliver it.
//!
//! - `switchyard_borrowed`: `SseDecoder::feed_with` over the pieces, each event handed to a
//!   closure borrowed (from the piece, or from the decoder where an event spans two pieces).
//! - `switchyard_owned`: `SseDecoder::feed` over the pieces, each event an owned `SseEvent`
//!   pushed to a `Vec` (what the transport consumes today; named `switchyard_sync` before).
//! - `switchyard_stream`: `feed` wrapped as a `Stream` of owned events, driven by a
//!   current-thread tokio runtime exactly like the next one.
//! - `eventsource_stream`: `eventsource_stream::EventStream` over the same pieces.
//! - `memchr_upper_bound`: only counts `\n\n` with `memchr::memmem`, the floor of any decoder.
//!
//! Every variant counts the events it saw; the counts are checked equal before measuring, and
//! the events themselves are checked equal between Switchyard's two APIs and
//! `eventsource-stream`.
//! Run: `cargo bench --bench sse_decoder -- --warm-up-time 1 --measurement-time 3`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::hint::black_box;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures_util::{Stream, StreamExt, stream};
use switchyard_api::wire::WireError;
use switchyard_api::wire::sse::{SseDecoder, SseEvent};

mod openai_stream;

/// The content events `bench/gen_streams.py` puts in `openai_full.sse` (plus role, finish,
/// usage and `[DONE]`: 50,001 events in all).
const EVENTS: usize = 50_000;
/// The SHA-256 of `openai_full.sse` as `bench/gen_streams.py --size full` writes it.
const OPENAI_FULL_SHA256: &str = "61c62d09383b064ec483f592d5d0d7aaa0171bea11b14fa8bac79df124fe3783";
/// Network reads as hyper delivers them from a fast local server.
const PIECE_BYTES: usize = 16 * 1024;

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The body cut into network-sized pieces.
fn pieces(body: Vec<u8>) -> Vec<Bytes> {
    let body = Bytes::from(body);
    (0..body.len())
        .step_by(PIECE_BYTES)
        .map(|start| body.slice(start..body.len().min(start + PIECE_BYTES)))
        .collect()
}

/// Our decoder, borrowed events.
#[inline(never)]
fn switchyard_borrowed(pieces: &[Bytes]) -> usize {
    let mut decoder = SseDecoder::new();
    let mut count = 0;
    for piece in pieces {
        let fed = decoder.feed_with(piece, |event| {
            count += 1;
            black_box(event);
        });
        if fed.is_err() {
            return 0;
        }
    }
    if decoder.finish() {
        return 0;
    }
    count
}

/// Our decoder, owned events.
#[inline(never)]
fn switchyard_owned(pieces: &[Bytes]) -> usize {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    let mut count = 0;
    for piece in pieces {
        if decoder.feed(piece, &mut events).is_err() {
            return 0;
        }
        count += events.len();
        for event in events.drain(..) {
            black_box(event);
        }
    }
    if decoder.finish() {
        return 0;
    }
    count
}

/// Our decoder as a `Stream` of events, as a provider would wrap it.
struct SseStream<S> {
    body: S,
    decoder: SseDecoder,
    batch: Vec<SseEvent>,
    ready: VecDeque<SseEvent>,
    done: bool,
}

impl<S> SseStream<S> {
    fn new(body: S) -> Self {
        Self {
            body,
            decoder: SseDecoder::new(),
            batch: Vec::new(),
            ready: VecDeque::new(),
            done: false,
        }
    }
}

impl<S> Stream for SseStream<S>
where
    S: Stream<Item = Result<Bytes, Infallible>> + Unpin,
{
    type Item = Result<SseEvent, WireError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(event) = this.ready.pop_front() {
                return Poll::Ready(Some(Ok(event)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            match ready!(this.body.poll_next_unpin(cx)) {
                Some(Ok(bytes)) => {
                    if let Err(err) = this.decoder.feed(&bytes, &mut this.batch) {
                        this.done = true;
                        return Poll::Ready(Some(Err(err)));
                    }
                    this.ready.extend(this.batch.drain(..));
                }
                Some(Err(never)) => match never {},
                None => {
                    this.done = true;
                    this.decoder.finish();
                }
            }
        }
    }
}

fn body_stream(pieces: &[Bytes]) -> impl Stream<Item = Result<Bytes, Infallible>> + Unpin + '_ {
    stream::iter(pieces.iter().cloned().map(Ok))
}

/// Drains a stream of events, counting the good ones.
async fn count_events<T, E>(events: impl Stream<Item = Result<T, E>>) -> usize {
    let mut events = pin!(events);
    let mut count = 0;
    while let Some(event) = events.next().await {
        if event.is_ok() {
            count += 1;
        }
        black_box(event).ok();
    }
    count
}

#[inline(never)]
async fn switchyard_stream(pieces: &[Bytes]) -> usize {
    count_events(SseStream::new(body_stream(pieces))).await
}

#[inline(never)]
async fn eventsource_stream(pieces: &[Bytes]) -> usize {
    count_events(eventsource_stream::EventStream::new(body_stream(pieces))).await
}

/// Counts blank lines only: no decoder can be faster than this scan.
#[inline(never)]
fn memchr_upper_bound(pieces: &[Bytes]) -> usize {
    let finder = memchr::memmem::Finder::new(b"\n\n");
    let mut count = 0;
    let mut last = 0u8;
    for piece in pieces {
        if last == b'\n' && piece.first() == Some(&b'\n') {
            count += 1;
        }
        count += finder.find_iter(piece).count();
        last = piece.last().copied().unwrap_or(last);
    }
    count
}

/// Checks, once, that both of Switchyard's APIs and `eventsource-stream` see the same events.
fn check_same_events(runtime: &tokio::runtime::Runtime, pieces: &[Bytes]) {
    let mut decoder = SseDecoder::new();
    let mut owned = Vec::new();
    let mut borrowed = Vec::new();
    for piece in pieces {
        assert!(decoder.feed(piece, &mut owned).is_ok());
    }
    assert!(!decoder.finish());
    for piece in pieces {
        let fed = decoder.feed_with(piece, |event| borrowed.push(event.into_owned()));
        assert!(fed.is_ok());
    }
    assert!(!decoder.finish());
    assert!(owned == borrowed, "feed and feed_with differ");
    let theirs: Vec<SseEvent> = runtime.block_on(
        eventsource_stream::EventStream::new(body_stream(pieces))
            .map(|event| match event {
                Ok(event) => SseEvent {
                    event: event.event,
                    data: event.data,
                    id: Some(event.id).filter(|id| !id.is_empty()),
                    retry: None,
                },
                Err(err) => panic!("eventsource-stream: {err}"),
            })
            .collect(),
    );
    assert!(owned == theirs, "Switchyard and eventsource-stream differ");
}

fn bench(c: &mut Criterion) {
    let (body, expected) = openai_stream::openai_stream(EVENTS, 1);
    assert_eq!(
        sha256_hex(&body),
        OPENAI_FULL_SHA256,
        "the generator no longer writes bench/gen_streams.py's openai_full.sse"
    );
    let len = body.len();
    let pieces = pieces(body);
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().build() else {
        panic!("cannot build a tokio runtime");
    };

    check_same_events(&runtime, &pieces);
    assert_eq!(
        switchyard_borrowed(&pieces),
        expected,
        "switchyard_borrowed"
    );
    assert_eq!(switchyard_owned(&pieces), expected, "switchyard_owned");
    assert_eq!(
        runtime.block_on(switchyard_stream(&pieces)),
        expected,
        "switchyard_stream"
    );
    assert_eq!(
        runtime.block_on(eventsource_stream(&pieces)),
        expected,
        "eventsource_stream"
    );
    assert_eq!(memchr_upper_bound(&pieces), expected, "memchr_upper_bound");

    let mut group = c.benchmark_group(format!(
        "sse_openai_{:.1}MB_{}KiB_pieces",
        len as f64 / 1e6,
        PIECE_BYTES / 1024
    ));
    group.throughput(Throughput::Bytes(len as u64));
    group.sample_size(20);
    group.bench_function("switchyard_borrowed", |b| {
        b.iter(|| switchyard_borrowed(black_box(&pieces)));
    });
    group.bench_function("switchyard_owned", |b| {
        b.iter(|| switchyard_owned(black_box(&pieces)));
    });
    group.bench_function("switchyard_stream", |b| {
        b.iter(|| runtime.block_on(switchyard_stream(black_box(&pieces))));
    });
    group.bench_function("eventsource_stream", |b| {
        b.iter(|| runtime.block_on(eventsource_stream(black_box(&pieces))));
    });
    group.bench_function("memchr_upper_bound", |b| {
        b.iter(|| memchr_upper_bound(black_box(&pieces)));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
