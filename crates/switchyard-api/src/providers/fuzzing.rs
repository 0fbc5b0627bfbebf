//! Entry points for the fuzz targets in `fuzz/`, behind the `fuzzing` feature and never part of the
//! library's API. Each is a thin call of the crate's own code.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::error::ApiError;
use crate::stream::ApiStreamChunk;
use crate::transport::EventParser;
use crate::wire::eventstream::EventStreamMessage;
use crate::wire::sse::SseEvent;

/// What a mapper produced for a whole stream: chunks, or errors, in order.
pub type Mapped = Vec<Result<ApiStreamChunk, ApiError>>;

/// The SSE families with a stream mapper of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SseFamily {
    Anthropic,
    OpenAiChat,
    OpenAiResponses,
    Gemini,
}

/// Runs `parser` over `events` then the end of the body, as the transport does.
fn run<P: EventParser>(mut parser: P, mut feed: impl FnMut(&mut P, &mut Mapped)) -> Mapped {
    let mut out = Vec::new();
    feed(&mut parser, &mut out);
    parser.on_end(&mut out);
    out
}

/// `events` as decoded through `family`'s stream mapper, then the end of the body.
pub fn map_sse(family: SseFamily, events: &[SseEvent]) -> Mapped {
    fn feed<P: EventParser<Event = SseEvent>>(
        events: &[SseEvent],
    ) -> impl FnMut(&mut P, &mut Mapped) {
        move |p, out| {
            for e in events {
                let event = crate::wire::sse::SseEventRef {
                    event: &e.event,
                    data: &e.data,
                    id: e.id.as_deref(),
                    retry: e.retry,
                };
                p.on_event(event, out);
            }
        }
    }
    use super::presets::ChatDialect;
    use super::think_tags::ThinkTags;
    match family {
        SseFamily::Anthropic => run(super::anthropic::AnthropicParser::default(), feed(events)),
        SseFamily::OpenAiChat => run(
            super::openai_chat::ChatParser::new(ChatDialect::Generic, ThinkTags::Opening),
            feed(events),
        ),
        SseFamily::OpenAiResponses => run(
            super::openai_responses::ResponsesParser::default(),
            feed(events),
        ),
        SseFamily::Gemini => run(super::gemini::GeminiParser::default(), feed(events)),
    }
}

/// `lines` as decoded through Ollama's stream mapper, then the end of the body.
pub fn map_ollama(lines: &[String]) -> Mapped {
    run(super::ollama::OllamaParser::default(), |p, out| {
        for line in lines {
            p.on_event(line.clone(), out);
        }
    })
}

/// `frames` as decoded through Bedrock's ConverseStream mapper, then the end of the body.
#[cfg(feature = "bedrock")]
pub fn map_bedrock(frames: &[EventStreamMessage]) -> Mapped {
    run(super::bedrock::ConverseStreamParser::default(), |p, out| {
        for frame in frames {
            p.on_event(frame.clone(), out);
        }
    })
}

/// Without the `bedrock` feature there is no Bedrock mapper: nothing is mapped.
#[cfg(not(feature = "bedrock"))]
pub fn map_bedrock(_frames: &[EventStreamMessage]) -> Mapped {
    Vec::new()
}

/// `src` read by the fast JSON scanner as one whole value: `None` where it gives up, else the value
/// it read, which must equal `serde_json::from_str::<Value>(src)`.
pub fn fast_json_scan(src: &str) -> Option<Value> {
    super::fast_json::scan_value(src)
}

/// A `Retry-After`-style header value, seconds, an HTTP date or a duration, read at `now`.
pub fn retry_value(value: &str, now: SystemTime) -> Option<Duration> {
    crate::retry_after::parse_retry_value(value, now)
}

/// The wait a response's headers ask for, read at `now`.
pub fn retry_after_headers(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    crate::retry_after::retry_after_from_headers(headers, now)
}

/// The wait an error message's words ask for, such as "try again in 20s", read at `now`.
pub fn retry_after_message(message: &str, now: SystemTime) -> Option<Duration> {
    crate::retry_after::retry_after_from_message(message, now)
}

/// A failed response's body classified as the transport reads a non-stream answer.
pub fn error_from_body(
    status: u16,
    content_type: &str,
    body: &[u8],
    headers: &HeaderMap,
) -> ApiError {
    crate::error::body::error_from_body(status, content_type, body, headers, "text/event-stream")
}

/// A mid-stream error event's JSON classified.
pub fn error_from_event(event: &Value) -> ApiError {
    crate::error::body::error_from_event(event)
}

/// The provider families a gateway request is sent on, for [`provider_body`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFamily {
    Anthropic,
    OpenAiChat,
    OpenAiResponses,
    Gemini,
}

/// The provider body `family` builds for a gateway's internal request, under a mode resolved from a
/// one-line configuration as `switchyard serve` resolves a route's.
pub fn provider_body(
    family: BodyFamily,
    system_prompt: &str,
    messages: &[crate::Message],
    tools: &[crate::ToolSpec],
    overrides: &crate::RequestOverrides,
) -> Result<Value, crate::ConfigError> {
    let (provider, model) = match family {
        BodyFamily::Anthropic => ("anthropic", "claude-sonnet-4-5"),
        BodyFamily::OpenAiChat => ("openai", "gpt-4o"),
        BodyFamily::OpenAiResponses => ("openai-native", "gpt-5"),
        BodyFamily::Gemini => ("gemini", "gemini-2.5-pro"),
    };
    let text = format!("[act]\nprovider = \"{provider}\"\nmodel = \"{model}\"\n");
    let config = crate::ApiConfiguration::from_toml(&text, "fuzz", |_| Some("k".into()))?;
    let mode = super::resolve_mode(&config, crate::Mode::Act)?;
    let prompt = super::provider::Prompt {
        system_prompt,
        messages,
        tools,
        overrides,
    };
    Ok(match family {
        BodyFamily::Anthropic => super::anthropic::request_body(&mode, &prompt),
        BodyFamily::OpenAiChat => super::chat_body::request_body(&mode, &prompt),
        BodyFamily::OpenAiResponses => super::openai_responses::request_body(&mode, &prompt),
        BodyFamily::Gemini => super::gemini::request_body(&mode, &prompt),
    })
}

/// `text` read as another CLI's sign-in file every way Switchyard reads one: as Codex's `auth.json`
/// and Qwen's `oauth_creds.json`, as a JWT, as an RFC 3339 time and as an OAuth refusal body;
/// returns the refusal's sentence. Panics if writing a sign-in file back loses or changes a
/// non-null field, or if a time written as `last_refresh` does not read back the same.
pub fn signin_file(text: &str) -> String {
    use crate::auth::signin_file::{jwt_claims, parse_rfc3339, refusal, rfc3339};
    crate::auth::codex::fuzz_auth_file(text);
    crate::auth::qwen::fuzz_credentials(text);
    let _ = jwt_claims(text);
    // Up to the year 9999: the format's four digits.
    if let Some(at) = parse_rfc3339(text).filter(|at| *at < 253_402_300_800) {
        assert_eq!(parse_rfc3339(&rfc3339(at, 0)), Some(at), "{text:?}");
    }
    refusal(400, text.as_bytes())
}
