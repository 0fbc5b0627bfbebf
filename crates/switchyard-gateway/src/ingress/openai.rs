//! The option vocabulary the two OpenAI dialects share (SPEC R14.1): `reasoning_effort` /
//! `reasoning.effort` names and `tool_choice` strings, each dialect wording its own error.

use switchyard_api::{ReasoningEffort, ToolChoice};

/// An OpenAI reasoning effort: `none`, `minimal` (carried as `low`, the least Switchyard's
/// efforts offer), `low`, `medium`, `high`, `xhigh`; `None` for any other name.
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

/// A `tool_choice` string: `auto`, `none`, `required`; `None` for any other.
pub(crate) fn tool_choice(name: &str) -> Option<ToolChoice> {
    Some(match name {
        "auto" => ToolChoice::Auto,
        "none" => ToolChoice::None,
        "required" => ToolChoice::Required,
        _ => return None,
    })
}
