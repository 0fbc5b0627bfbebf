//! The client dialects, and the one place a dialect is matched: its rules.
//! Spec: R14.1.

use super::rules::DialectRules;

/// The three request dialects `switchyard serve` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// OpenAI Chat Completions.
    ChatCompletions,
    /// OpenAI Responses.
    Responses,
    /// Anthropic Messages.
    AnthropicMessages,
}

impl Dialect {
    /// What this dialect does its own way.
    pub(crate) fn rules(self) -> &'static dyn DialectRules {
        match self {
            Dialect::ChatCompletions => &super::chat::ChatRules,
            Dialect::Responses => &super::responses::ResponsesRules,
            Dialect::AnthropicMessages => &super::messages::MessagesRules,
        }
    }
}
