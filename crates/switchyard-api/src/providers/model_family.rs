//! What a model id says about its family's reasoning: OpenAI's reasoning models, Claude's adaptive
//! thinking and the effort it runs at.
//! Spec: R4.5.

use crate::config::ReasoningEffort;

/// Whether the id is an OpenAI reasoning model's: o1, o3, o4 or gpt-5 anywhere in it, but not a
/// "chat" variant, as the reference's `isReasoningModelFamily`.
pub(crate) fn is_reasoning_family(model_id: &str) -> bool {
    ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|p| model_id.contains(p))
        && !model_id.contains("chat")
}

/// Claude models that think adaptively, not with a budget: Sonnet 5, Fable 5, Opus 4.6 and later.
pub(crate) fn is_adaptive_thinking_claude(model_id: &str) -> bool {
    let id = model_id.to_ascii_lowercase();
    let versions = ["4-6", "4.6", "4-7", "4.7", "4-8", "4.8"];
    id.contains("claude-fable-5")
        || id.contains("claude-sonnet-5")
        || id.contains("claude-5-sonnet")
        || versions.iter().any(|v| {
            id.contains(&format!("claude-opus-{v}")) || id.contains(&format!("claude-{v}-opus"))
        })
}

/// Adaptive thinking's effort from the mode, as the reference's `resolveClaudeAdaptiveThinking`: a
/// set effort decides, `none` turning thinking off; else a budget means `high`; else off.
pub(crate) fn adaptive_effort(
    effort: Option<ReasoningEffort>,
    budget: u64,
) -> Option<ReasoningEffort> {
    match effort {
        Some(ReasoningEffort::None) => None,
        Some(e) => Some(e),
        None if budget > 0 => Some(ReasoningEffort::High),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_family_ids() {
        for id in [
            "o1",
            "o3-mini",
            "o4-mini",
            "gpt-5",
            "gpt-5-mini",
            "openai/o3",
            "azure-o1",
        ] {
            assert!(is_reasoning_family(id), "{id}");
        }
        for id in [
            "gpt-4o",
            "gpt-5-chat-latest",
            "gpt-4.1",
            "deepseek-chat",
            "smollm2",
        ] {
            assert!(!is_reasoning_family(id), "{id}");
        }
    }

    #[test]
    fn adaptive_claude_ids() {
        for id in [
            "anthropic/claude-sonnet-5",
            "anthropic/claude-opus-4.6",
            "claude-opus-4-7",
            "anthropic/claude-4.8-opus",
            "anthropic/claude-fable-5",
        ] {
            assert!(is_adaptive_thinking_claude(id), "{id}");
        }
        for id in [
            "anthropic/claude-opus-4.5",
            "anthropic/claude-sonnet-4.6",
            "claude-3-7-sonnet",
        ] {
            assert!(!is_adaptive_thinking_claude(id), "{id}");
        }
        assert_eq!(adaptive_effort(None, 0), None);
        assert_eq!(adaptive_effort(None, 2048), Some(ReasoningEffort::High));
        assert_eq!(adaptive_effort(Some(ReasoningEffort::None), 2048), None);
        assert_eq!(
            adaptive_effort(Some(ReasoningEffort::Low), 0),
            Some(ReasoningEffort::Low)
        );
    }
}
