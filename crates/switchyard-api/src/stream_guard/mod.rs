//! The guard every answer passes before it is printed, stored or handed on: secrets scrubbed
//! across chunk boundaries, and its size bounded. The transport guards every HTTP provider's
//! stream; a consumer of chunks from elsewhere makes a [`StreamGuard`] of its own.
//! Spec: R10.5, R4.0b.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::Stream;

mod bounds;
mod details;
mod guard;
mod wire;

pub use bounds::{
    DEFAULT_MAX_ANSWER_BYTES, DEFAULT_MAX_TOOL_ARGUMENTS_BYTES, StreamBounds, TOO_LARGE,
    size_in_words, too_large,
};
pub(crate) use bounds::{answer_too_large, arguments_too_large};
pub use guard::StreamGuard;

use crate::error::ApiError;
use crate::stream::{ApiStream, ApiStreamChunk};

/// `stream` with every chunk through a [`StreamGuard`] of `bounds`, ended by the error of a
/// bound it passes; the inner stream is then dropped, which closes its connection.
pub fn guard_stream(stream: ApiStream, bounds: StreamBounds) -> ApiStream {
    guard_stream_of(stream, bounds, None, false)
}

/// [`guard_stream`] of a stream from `origin`, whose provider and model a bound's error names.
/// With `forwarding`, the provider's own events are guarded with it.
pub(crate) fn guard_stream_of(
    stream: ApiStream,
    bounds: StreamBounds,
    origin: Option<(String, String)>,
    forwarding: bool,
) -> ApiStream {
    Box::pin(Guarded {
        inner: Some(stream),
        guard: wire::WireGuard::new(StreamGuard::new(bounds), forwarding),
        ready: VecDeque::new(),
        out: Vec::new(),
        origin,
    })
}

struct Guarded {
    inner: Option<ApiStream>,
    guard: wire::WireGuard,
    ready: VecDeque<Result<ApiStreamChunk, ApiError>>,
    out: Vec<ApiStreamChunk>,
    origin: Option<(String, String)>,
}

impl Guarded {
    fn queue(&mut self, last: Option<ApiError>) {
        self.ready.extend(self.out.drain(..).map(Ok));
        if let Some(mut e) = last {
            if let Some((provider, model)) = &self.origin {
                e = e.with_origin(provider, model);
            }
            self.ready.push_back(Err(e));
        }
    }
}

impl Stream for Guarded {
    type Item = Result<ApiStreamChunk, ApiError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(item) = this.ready.pop_front() {
                return Poll::Ready(Some(item));
            }
            let Some(inner) = this.inner.as_mut() else {
                return Poll::Ready(None);
            };
            match std::task::ready!(inner.as_mut().poll_next(cx)) {
                Some(Ok(chunk)) => {
                    if let Some(e) = this.guard.chunk(chunk, &mut this.out) {
                        this.inner = None;
                        this.queue(Some(e));
                    } else {
                        this.queue(None);
                    }
                }
                Some(Err(e)) => {
                    this.guard.finish(&mut this.out);
                    this.inner = None;
                    this.queue(Some(e));
                }
                None => {
                    this.guard.finish(&mut this.out);
                    this.inner = None;
                    this.queue(None);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt;

    use super::*;

    const KEY: &str = "sk-guard-test-3c9f1a7e";

    fn run(
        chunks: Vec<ApiStreamChunk>,
        bounds: StreamBounds,
    ) -> Vec<Result<ApiStreamChunk, ApiError>> {
        crate::secrets::register(KEY);
        let inner: ApiStream = Box::pin(futures_util::stream::iter(chunks.into_iter().map(Ok)));
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
            .block_on(guard_stream(inner, bounds).collect())
    }

    fn text_of(items: &[Result<ApiStreamChunk, ApiError>]) -> String {
        items
            .iter()
            .filter_map(|i| match i {
                Ok(ApiStreamChunk::Text { text, .. }) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_key_split_across_channels_and_calls_is_scrubbed_and_order_is_kept() {
        let (a, b) = KEY.split_at(7);
        let items = run(
            vec![
                ApiStreamChunk::reasoning(format!("think {a}")),
                ApiStreamChunk::reasoning(format!("{b} done")),
                ApiStreamChunk::text(format!("say {a}")),
                ApiStreamChunk::text(b),
                ApiStreamChunk::tool_call("c1", "t", format!("{{\"k\": \"{a}")),
                ApiStreamChunk::tool_call("c2", "u", format!("{{\"k\": \"{KEY}\"}}")),
                ApiStreamChunk::tool_call("c1", "t", format!("{b}\"}}")),
                ApiStreamChunk::text(format!(" then {a}")),
            ],
            StreamBounds::default(),
        );
        let all = format!("{items:?}");
        assert!(!all.contains(KEY), "{all}");
        // The text before the first tool call is released before it (a channel change).
        let kinds: Vec<&str> = items
            .iter()
            .map(|i| match i {
                Ok(ApiStreamChunk::Text { .. }) => "text",
                Ok(ApiStreamChunk::Reasoning { .. }) => "reasoning",
                Ok(ApiStreamChunk::ToolCalls { .. }) => "tool",
                _ => "other",
            })
            .collect();
        let first_tool = kinds.iter().position(|k| *k == "tool").unwrap();
        assert!(kinds[..first_tool].contains(&"text"), "{kinds:?}");
        assert_eq!(text_of(&items), format!("say [redacted] then {a}"));
        let mut calls = crate::stream::ToolCallAccumulator::default();
        for chunk in items.iter().flatten() {
            calls.push_chunk(chunk);
        }
        let calls = calls.finish();
        assert_eq!(calls.len(), 2);
        for call in calls {
            assert_eq!(call.arguments, "{\"k\": \"[redacted]\"}", "{}", call.id);
        }
    }

    #[test]
    fn a_signature_releases_the_held_reasoning_with_it() {
        let items = run(
            vec![
                ApiStreamChunk::reasoning("ends with sk-gu"),
                ApiStreamChunk::reasoning_signature("sig"),
            ],
            StreamBounds::default(),
        );
        assert!(
            matches!(
                &items[..],
                [Ok(ApiStreamChunk::Reasoning { reasoning: r1, .. }), Ok(ApiStreamChunk::Reasoning { reasoning: r2, signature: Some(_), .. })]
                    if r1 == "ends with " && r2 == "sk-gu"
            ),
            "{items:?}"
        );
    }

    #[test]
    fn bounds_end_the_stream_with_an_error_naming_the_setting() {
        let bounds = StreamBounds {
            max_tool_arguments_bytes: 10,
            max_answer_bytes: 25,
            max_line_bytes: 100,
        };
        let items = run(
            vec![
                ApiStreamChunk::tool_call("c1", "t", "0123456789"),
                ApiStreamChunk::tool_call("c1", "t", "x"),
                ApiStreamChunk::text("never"),
            ],
            bounds,
        );
        let Some(Err(e)) = items.last() else {
            panic!("{items:?}")
        };
        assert_eq!(items.len(), 2, "{items:?}");
        assert_eq!(e.code.as_deref(), Some(TOO_LARGE));
        assert!(!e.is_retryable());
        assert!(
            e.message.contains("`t`") && e.message.contains("max_tool_arguments_bytes"),
            "{e}"
        );
        let items = run(
            vec![
                ApiStreamChunk::text("0123456789"),
                ApiStreamChunk::reasoning("0123456789"),
                ApiStreamChunk::text("0123456789"),
            ],
            bounds,
        );
        let Some(Err(e)) = items.last() else {
            panic!("{items:?}")
        };
        assert!(
            e.message.contains("25 bytes limit") && e.message.contains("max_answer_bytes"),
            "{e}"
        );
        assert_eq!(
            text_of(&items),
            "0123456789",
            "what came before the bound is kept"
        );
    }

    #[test]
    fn usage_that_arrives_while_text_is_held_follows_that_text() {
        let items = run(
            vec![
                ApiStreamChunk::text("three failure"),
                ApiStreamChunk::text("s"),
                ApiStreamChunk::Usage(crate::stream::Usage::default()),
            ],
            StreamBounds::default(),
        );
        let kinds: Vec<String> = items
            .iter()
            .map(|i| match i {
                Ok(ApiStreamChunk::Text { text, .. }) => text.clone(),
                Ok(ApiStreamChunk::Usage(_)) => "usage".to_owned(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(kinds, ["three failure", "s", "usage"]);
    }

    #[test]
    fn sizes_read_in_mebibytes_when_whole() {
        assert_eq!(size_in_words(4 << 20), "4 MiB");
        assert_eq!(size_in_words(65536), "65536 bytes");
    }
}
