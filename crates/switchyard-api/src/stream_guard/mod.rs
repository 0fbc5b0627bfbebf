//! The guard every answer passes before it is printed, stored or handed on (SPEC R10.5,
//! R4.0b): configured secrets are scrubbed from its text, reasoning and tool-call arguments
//! across chunk boundaries, and its size is bounded — one tool call's arguments, the whole
//! answer — with an error that names the setting raising the bound and is never retried.
//!
//! [`StreamGuard`] is the per-answer state (one [`Scrubber`] per content channel: the text, the
//! reasoning, each tool call's arguments); [`guard_stream`] applies it to an [`ApiStream`].
//! The transport guards every HTTP provider's stream with it, so a consumer of
//! [`ApiHandler::create_message`](crate::ApiHandler::create_message) gets scrubbed, bounded
//! chunks; a consumer of chunks from elsewhere makes a `StreamGuard` of its own.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::Stream;

mod wire;

use crate::error::{ApiError, ErrorKind};
use crate::secrets::{Scrubber, scrub_json};
use crate::stream::{ApiStream, ApiStreamChunk};

/// The default bound on one tool call's arguments, in bytes (4 MiB).
pub const DEFAULT_MAX_TOOL_ARGUMENTS_BYTES: usize = 4 << 20;
/// The default bound on one answer's text, reasoning and tool-call arguments together, in
/// bytes (64 MiB).
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 64 << 20;

/// The error code of an answer or line past its bound (kind [`ErrorKind::Decode`], never
/// retried: the same request meets the same bound).
pub const TOO_LARGE: &str = "too_large";

/// Size bounds of one streamed answer (SPEC R4.0b), in bytes. Set from `[limits]`
/// (`max_tool_arguments_bytes`, `max_answer_bytes`, `max_line_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamBounds {
    /// One tool call's arguments (default [`DEFAULT_MAX_TOOL_ARGUMENTS_BYTES`]).
    pub max_tool_arguments_bytes: usize,
    /// The answer's text, reasoning and tool-call arguments together (default
    /// [`DEFAULT_MAX_ANSWER_BYTES`]).
    pub max_answer_bytes: usize,
    /// One line (or event, frame, document) of the streamed body (default
    /// [`DEFAULT_MAX_LINE_BYTES`](crate::wire::DEFAULT_MAX_LINE_BYTES)); the wire decoders
    /// enforce it.
    pub max_line_bytes: usize,
}

impl Default for StreamBounds {
    fn default() -> Self {
        Self {
            max_tool_arguments_bytes: DEFAULT_MAX_TOOL_ARGUMENTS_BYTES,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            max_line_bytes: crate::wire::DEFAULT_MAX_LINE_BYTES,
        }
    }
}

/// A size in words: `4 MiB` for whole mebibytes, else bytes.
pub fn size_in_words(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// The error of a stream past one of its bounds: `what` passed `limit` bytes, raised by the
/// `[limits]` setting `setting`. Never retried.
pub fn too_large(what: &str, limit: usize, setting: &str) -> ApiError {
    ApiError::new(
        ErrorKind::Decode,
        format!(
            "{what} passed the {} limit; if the answer really is this long, raise `{setting}` \
             under [limits] in the configuration (or -c limits.{setting}=BYTES)",
            size_in_words(limit)
        ),
    )
    .with_code(TOO_LARGE)
    .permanent()
}

impl From<crate::wire::WireError> for ApiError {
    /// A line past its cap is [`too_large`](crate::stream_guard::too_large), never retried
    /// (SPEC R4.0b, R7.4); a corrupt frame is a decode error.
    fn from(e: crate::wire::WireError) -> Self {
        match e {
            crate::wire::WireError::LineTooLong { limit } => {
                too_large("one line of the response", limit, "max_line_bytes")
            }
            other => ApiError::decode(other.to_string()),
        }
    }
}

/// The content channel a chunk belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Channel {
    Text,
    Reasoning,
    Tools,
}

/// One tool call's arguments as they stream.
struct ToolArguments {
    id: String,
    name: String,
    call_id: Option<String>,
    scrubber: Scrubber,
    bytes: usize,
}

/// The guard's state for one answer: feed it every chunk in order ([`StreamGuard::chunk`]),
/// and [`StreamGuard::finish`] when the stream ends or fails; hand on what they return, in
/// order. A bound error ends the answer: what was released before it is whole.
pub struct StreamGuard {
    bounds: StreamBounds,
    text: Scrubber,
    text_id: Option<String>,
    reasoning: Scrubber,
    reasoning_id: Option<String>,
    tools: Vec<ToolArguments>,
    /// The channel of the last content chunk: a change releases the text and reasoning held,
    /// so the answer's order is kept.
    last: Option<Channel>,
    answer_bytes: usize,
    /// Usage that arrived while content before it was held: handed on after that content.
    deferred: Vec<ApiStreamChunk>,
}

impl StreamGuard {
    /// A guard of the secrets registered now, with `bounds`.
    pub fn new(bounds: StreamBounds) -> Self {
        Self {
            bounds,
            text: Scrubber::new(),
            text_id: None,
            reasoning: Scrubber::new(),
            reasoning_id: None,
            tools: Vec::new(),
            last: None,
            answer_bytes: 0,
            deferred: Vec::new(),
        }
    }

    /// Takes the next chunk; `out` gets the chunks to hand on now (none, while a piece that
    /// could start a secret is held). The error (`Some`) when the chunk passes a bound: the
    /// chunk is not handed on, what was held is in `out` first, and the answer is over.
    pub fn chunk(
        &mut self,
        chunk: ApiStreamChunk,
        out: &mut Vec<ApiStreamChunk>,
    ) -> Option<ApiError> {
        let content = match &chunk {
            ApiStreamChunk::Text { text, .. } => Some((Channel::Text, text.len())),
            ApiStreamChunk::Reasoning { reasoning, .. } => {
                Some((Channel::Reasoning, reasoning.len()))
            }
            ApiStreamChunk::ToolCalls {
                arguments_delta, ..
            } => Some((Channel::Tools, arguments_delta.len())),
            ApiStreamChunk::Usage(_) => None,
            ApiStreamChunk::Finish { .. } => {
                self.finish(out);
                out.push(chunk);
                return None;
            }
            // A provider's own event: [`wire::WireGuard`] guards those.
            ApiStreamChunk::Wire(_) => {
                out.push(chunk);
                return None;
            }
        };
        let Some((channel, bytes)) = content else {
            if self.holding() {
                self.deferred.push(chunk);
            } else {
                out.push(chunk);
            }
            return None;
        };
        if self.last.is_some_and(|last| last != channel) {
            self.release_text(channel, out);
        }
        self.last = Some(channel);
        self.answer_bytes = self.answer_bytes.saturating_add(bytes);
        if self.answer_bytes > self.bounds.max_answer_bytes {
            self.finish(out);
            return Some(too_large(
                "the answer (its text, reasoning and tool-call arguments)",
                self.bounds.max_answer_bytes,
                "max_answer_bytes",
            ));
        }
        match chunk {
            ApiStreamChunk::Text {
                text,
                id,
                signature,
            } => self.on_text(text, id, signature, out),
            ApiStreamChunk::Reasoning {
                reasoning,
                details,
                signature,
                redacted_data,
                id,
            } => self.on_reasoning(reasoning, details, signature, redacted_data, id, out),
            ApiStreamChunk::ToolCalls {
                call_id,
                id,
                name,
                arguments_delta,
                signature,
            } => {
                if let Some(e) =
                    self.on_tool_call(call_id, id, name, arguments_delta, signature, out)
                {
                    return Some(e);
                }
            }
            ApiStreamChunk::Usage(_) | ApiStreamChunk::Finish { .. } | ApiStreamChunk::Wire(_) => {}
        }
        if !self.deferred.is_empty() && !self.holding() {
            out.append(&mut self.deferred);
        }
        None
    }

    /// Whether any channel holds back text now.
    fn holding(&self) -> bool {
        self.text.held_len() > 0
            || self.reasoning.held_len() > 0
            || self.tools.iter().any(|t| t.scrubber.held_len() > 0)
    }

    fn on_tool_call(
        &mut self,
        call_id: Option<String>,
        id: String,
        name: String,
        arguments_delta: String,
        signature: Option<String>,
        out: &mut Vec<ApiStreamChunk>,
    ) -> Option<ApiError> {
        let limit = self.bounds.max_tool_arguments_bytes;
        let call = self.tool(call_id.as_deref(), &id, &name);
        call.bytes += arguments_delta.len();
        if call.bytes > limit {
            let what = format!("the arguments of the tool call `{name}`");
            self.finish(out);
            return Some(too_large(&what, limit, "max_tool_arguments_bytes"));
        }
        out.push(ApiStreamChunk::ToolCalls {
            arguments_delta: release(&mut call.scrubber, arguments_delta),
            call_id,
            id,
            name,
            signature,
        });
        None
    }

    fn on_text(
        &mut self,
        text: String,
        id: Option<String>,
        signature: Option<String>,
        out: &mut Vec<ApiStreamChunk>,
    ) {
        let mut shown = release(&mut self.text, text);
        if signature.is_some() {
            // A signature closes the part it belongs to: nothing of it stays held.
            shown.push_str(&self.text.finish());
        }
        if id.is_some() {
            self.text_id.clone_from(&id);
        }
        if !shown.is_empty() || signature.is_some() {
            out.push(ApiStreamChunk::Text {
                text: shown,
                id,
                signature,
            });
        }
    }

    fn on_reasoning(
        &mut self,
        reasoning: String,
        mut details: Option<serde_json::Value>,
        signature: Option<String>,
        redacted_data: Option<String>,
        id: Option<String>,
        out: &mut Vec<ApiStreamChunk>,
    ) {
        let mut shown = release(&mut self.reasoning, reasoning);
        // A signature or redacted block closes the thinking block: nothing of it stays held.
        // (Structured details, sent with every piece by OpenRouter, do not: they are
        // scrubbed piece by piece.)
        let closes = signature.is_some() || redacted_data.is_some();
        if closes {
            shown.push_str(&self.reasoning.finish());
        }
        if let Some(details) = details.as_mut() {
            scrub_json(details);
        }
        if id.is_some() {
            self.reasoning_id.clone_from(&id);
        }
        if !shown.is_empty() || closes || details.is_some() {
            out.push(ApiStreamChunk::Reasoning {
                reasoning: shown,
                details,
                signature,
                redacted_data,
                id,
            });
        }
    }

    /// The state of tool call `id`, made on its first fragment.
    fn tool(&mut self, call_id: Option<&str>, id: &str, name: &str) -> &mut ToolArguments {
        let at = match self.tools.iter().position(|t| t.id == id) {
            Some(at) => at,
            None => {
                self.tools.push(ToolArguments {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    call_id: None,
                    scrubber: Scrubber::new(),
                    bytes: 0,
                });
                self.tools.len() - 1
            }
        };
        let call = &mut self.tools[at];
        if call.call_id.is_none() {
            call.call_id = call_id.map(str::to_owned);
        }
        call
    }

    /// Releases the text and the reasoning held, except `next`'s own channel.
    fn release_text(&mut self, next: Channel, out: &mut Vec<ApiStreamChunk>) {
        if next != Channel::Text {
            let text = self.text.finish();
            if !text.is_empty() {
                out.push(ApiStreamChunk::Text {
                    text,
                    id: self.text_id.clone(),
                    signature: None,
                });
            }
        }
        if next != Channel::Reasoning {
            let reasoning = self.reasoning.finish();
            if !reasoning.is_empty() {
                let mut chunk = ApiStreamChunk::reasoning(reasoning);
                if let ApiStreamChunk::Reasoning { id, .. } = &mut chunk {
                    id.clone_from(&self.reasoning_id);
                }
                out.push(chunk);
            }
        }
    }

    /// The answer ended (or failed): everything still held, scrubbed, in `out`.
    pub fn finish(&mut self, out: &mut Vec<ApiStreamChunk>) {
        self.release_text(Channel::Tools, out);
        for call in &mut self.tools {
            let rest = call.scrubber.finish();
            if !rest.is_empty() {
                out.push(ApiStreamChunk::ToolCalls {
                    call_id: call.call_id.clone(),
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments_delta: rest,
                    signature: None,
                });
            }
        }
        out.append(&mut self.deferred);
        self.last = None;
    }
}

/// `piece` through `scrubber`, reusing its allocation when nothing changed.
fn release(scrubber: &mut Scrubber, piece: String) -> String {
    match scrubber.push(&piece) {
        std::borrow::Cow::Borrowed(_) => piece,
        std::borrow::Cow::Owned(shown) => shown,
    }
}

/// `stream` with every chunk through a [`StreamGuard`] of `bounds`: scrubbed across chunk
/// boundaries, and ended by the error of a bound it passes (the inner stream is dropped then,
/// which closes its connection).
pub fn guard_stream(stream: ApiStream, bounds: StreamBounds) -> ApiStream {
    guard_stream_of(stream, bounds, None, false)
}

/// [`guard_stream`] of a stream from `origin` (provider id, model id): a bound's error names
/// them as the stream's own errors do. With `forwarding`, the stream gives the provider's
/// own events too ([`ApiStreamChunk::Wire`]), which are guarded with it (`wire.rs`).
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
    /// Moves what the guard released to the ready queue, then `last` if any.
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
