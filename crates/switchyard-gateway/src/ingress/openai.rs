//! The option names the two OpenAI dialects share; each dialect words its own error.
//! Spec: R14.1.

use switchyard_api::{ReasoningEffort, ToolChoice};

/// An OpenAI reasoning effort. `minimal` is carried as `low`, the least Switchyard's efforts
/// offer.
pub(crate) fn effort(name: &str) -> Option<ReasoningEffort> {
    Some(match name {
        "none" => ReasoningEffort::None,
        "minimal" | "low" => ReasoningEffort::Low,
        "medium" => ReasoningEffort::Medium,
        "high" => ReasoningEffort::High,
        "xhigh" => ReasoningEffort::Xhigh,
        _ => return None,
    })
}

/// A `tool_choice` string: `auto`, `none`, `required`.
pub(crate) fn tool_choice(name: &str) -> Option<ToolChoice> {
    Some(match name {
        "auto" => ToolChoice::Auto,
        "none" => ToolChoice::None,
        "required" => ToolChoice::Required,
        _ => return None,
    })
}
