//! Throughput of Switchyard's SSE decoder against the `eventsource-stream` crate (DESIGN.md).
//!
//! The input is a deterministic ~15 MB OpenAI Chat Completions stream in memory: 50,000
//! `data: {chat.completion.chunk}\n\n` events with small deltas (some non-ASCII), a usage chunk
//! and `data: [DONE]`, cut into 16 KiB `Bytes` pieces as network reads would deliver it.
//!
//! - `switchyard_sync`: `SseDecoder::feed` over the pieces, the raw loop.
//! - `switchyard_stream`: the same decoder wrapped as a `Stream` of events, driven by a
//!   current-thread tokio runtime exactly like the next one.
//! - `eventsource_stream`: `eventsource_stream::EventStream` over the same pieces.
//! - `memchr_upper_bound`: only counts `\n\n` with `memchr::memmem`, the floor of any decoder.
//!
//! Every variant counts the events it saw; the counts are checked equal before measuring.
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

const EVENTS: usize = 50_000;
const PIECE_BYTES: usize = 16 * 1024;

/// Small deltas as models stream them, some non-ASCII.
const DELTAS: &[&str] = &[
    "The",
    " weather",
    " in",
    " Tokyo",
    " (東京)",
    " is",
    " 21",
    "°C",
    " with",
    " light",
    " rain",
    " —",
    " «",
    "umbrella",
    "»",
    " advised",
    ".",
    "\\n\\n",
    " CO₂",
    " levels",
    " are",
    " \\\"normal\\\"",
    " today",
    "!",
];

/// A deterministic OpenAI-style stream of `events` content chunks plus usage and `[DONE]`.
/// Returns the body and the number of events in it.
fn openai_stream(events: usize) -> (Vec<u8>, usize) {
    let mut body = Vec::with_capacity(events * 330);
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        // xorshift64*: deterministic, no dependency.
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        seed.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let head = r#"{"id":"chatcmpl-C9qBenchStream000000000000001","object":"chat.completion.chunk","created":1756289702,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","choices":[{"index":0,"#;
    for i in 0..events {
        let delta = if i == 0 {
            r#""role":"assistant","content":"","refusal":null"#.to_owned()
        } else {
            let mut text = String::new();
            for _ in 0..=(next() % 3) {
                let pick = usize::try_from(next() % DELTAS.len() as u64).unwrap_or(0);
                text.push_str(DELTAS[pick]);
            }
            format!(r#""content":"{text}""#)
        };
        let obfuscation: String = (0..(next() % 12))
            .map(|_| char::from(b'a' + u8::try_from(next() % 26).unwrap_or(0)))
            .collect();
        body.extend_from_slice(
            format!(
                "data: {head}\"delta\":{{{delta}}},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":null,\"obfuscation\":\"{obfuscation}\"}}\n\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!("data: {head}\"delta\":{{}},\"logprobs\":null,\"finish_reason\":\"stop\"}}],\"usage\":{{\"prompt_tokens\":1187,\"completion_tokens\":{events},\"total_tokens\":{},\"prompt_tokens_details\":{{\"cached_tokens\":1024}}}}}}\n\ndata: [DONE]\n\n", events + 1187)
            .as_bytes(),
    );
    (body, events + 2)
}

/// The body cut into network-sized pieces.
fn pieces(body: Vec<u8>) -> Vec<Bytes> {
    let body = Bytes::from(body);
    (0..body.len())
        .step_by(PIECE_BYTES)
        .map(|start| body.slice(start..body.len().min(start + PIECE_BYTES)))
        .collect()
}

/// Our decoder, the plain loop.
fn switchyard_sync(pieces: &[Bytes]) -> usize {
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

async fn switchyard_stream(pieces: &[Bytes]) -> usize {
    let mut events = SseStream::new(body_stream(pieces));
    let mut count = 0;
    while let Some(event) = events.next().await {
        if event.is_ok() {
            count += 1;
        }
        black_box(event).ok();
    }
    count
}

async fn eventsource_stream(pieces: &[Bytes]) -> usize {
    let mut events = pin!(eventsource_stream::EventStream::new(body_stream(pieces)));
    let mut count = 0;
    while let Some(event) = events.next().await {
        if event.is_ok() {
            count += 1;
        }
        black_box(event).ok();
    }
    count
}

/// Counts blank lines only: no decoder can be faster than this scan.
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

fn bench(c: &mut Criterion) {
    let (body, expected) = openai_stream(EVENTS);
    let len = body.len();
    let pieces = pieces(body);
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().build() else {
        panic!("cannot build a tokio runtime");
    };

    assert_eq!(switchyard_sync(&pieces), expected, "switchyard_sync");
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
    group.bench_function("switchyard_sync", |b| {
        b.iter(|| switchyard_sync(black_box(&pieces)));
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
