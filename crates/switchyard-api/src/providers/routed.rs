//! The stream mapper of a provider that routes each model to one of several families: that family's
//! own mapper, unchanged, with the default `on_error`.
//! Spec: R4.1, R4.2.

use crate::providers::anthropic::AnthropicParser;
use crate::providers::gemini::GeminiParser;
use crate::providers::mapper::Chunks;
use crate::providers::openai_chat::ChatParser;
use crate::providers::openai_responses::ResponsesParser;
use crate::providers::sapaicore::stream::{CohereParser, ConverseParser};
use crate::transport::EventParser;
use crate::wire::sse::{SseEvent, SseEventRef};

/// The mapper of the family a model was routed to.
pub(crate) enum FamilyParser {
    Anthropic(AnthropicParser),
    Gemini(GeminiParser),
    Responses(ResponsesParser),
    Chat(ChatParser),
    /// Bedrock Converse events as SSE data, for SAP AI Core.
    Converse(ConverseParser),
    /// Cohere v2 chat events, for SAP AI Core.
    Cohere(CohereParser),
}

impl EventParser for FamilyParser {
    type Event = SseEvent;

    #[inline]
    fn on_event(&mut self, event: SseEventRef<'_>, out: &mut Chunks) {
        match self {
            Self::Anthropic(p) => p.on_event(event, out),
            Self::Gemini(p) => p.on_event(event, out),
            Self::Responses(p) => p.on_event(event, out),
            Self::Chat(p) => p.on_event(event, out),
            Self::Converse(p) => p.on_event(event, out),
            Self::Cohere(p) => p.on_event(event, out),
        }
    }

    #[inline]
    fn on_end(&mut self, out: &mut Chunks) {
        match self {
            Self::Anthropic(p) => p.on_end(out),
            Self::Gemini(p) => p.on_end(out),
            Self::Responses(p) => p.on_end(out),
            Self::Chat(p) => p.on_end(out),
            Self::Converse(p) => p.on_end(out),
            Self::Cohere(p) => p.on_end(out),
        }
    }
}
