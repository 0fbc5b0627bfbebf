//! The client dialects, and the one place a dialect is matched: its rules.
//! Spec: R14.1.

use super::rules::DialectRules;

/// The request dialects `switchyard serve` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// OpenAI Chat Completions.
    ChatCompletions,
    /// OpenAI Responses.
    Responses,
    /// Anthropic Messages.
    AnthropicMessages,
    /// Google's Gemini API.
    Gemini,
}

impl Dialect {
    /// Every dialect.
    pub const ALL: [Dialect; 4] = [
        Dialect::ChatCompletions,
        Dialect::Responses,
        Dialect::AnthropicMessages,
        Dialect::Gemini,
    ];

    /// What this dialect does its own way.
    pub(crate) fn rules(self) -> &'static dyn DialectRules {
        match self {
            Dialect::ChatCompletions => &super::chat::ChatRules,
            Dialect::Responses => &super::responses::ResponsesRules,
            Dialect::AnthropicMessages => &super::messages::MessagesRules,
            Dialect::Gemini => &super::gemini::GeminiRules,
        }
    }

    /// The dialect whose client sent `headers` and `query`, on a path dialects share.
    pub(crate) fn claiming(headers: &hyper::HeaderMap, query: Option<&str>) -> Option<Dialect> {
        Self::ALL
            .into_iter()
            .find(|d| d.rules().claims(headers, query))
    }
}
