//! The Chat Completions body of the two model gateways, OpenRouter and the Vercel AI Gateway,
//! per model family (issue 11 item 6): reasoning as `effort` or `max_tokens` with
//! `include_reasoning`, no temperature with thinking, prompt-cache marks for the families
//! that need them, the `:1m` suffix, OpenRouter's provider routing, and `parallel_tool_calls`.
//!
//! Facts from Cline v4.0.10, `apps/vscode/src/core/api/transform/openrouter-stream.ts` and
//! `vercel-ai-gateway-stream.ts`, `shared/utils/reasoning-support.ts` and
//! `utils/model-utils.ts` (`supportsReasoningEffortForModel`,
//! `shouldSkipReasoningForModel`, `isGeminiFlashModel`), and `shared/api.ts`
//! (`OPENROUTER_PROVIDER_PREFERENCES`, also in `tests/reference/cline-v4.0.10-models.json`).
//!
//! Differences from the reference, on purpose:
//! - `:1m` is recognised on any `anthropic/…` id, not only the eight the reference lists, so a
//!   newer Claude model gets the same routing instead of an id OpenRouter does not know.
//! - The reference drops, for Gemini models, every earlier tool call that lacks the
//!   `reasoning_details` it stores beside it (`sanitizeGeminiMessages`); Switchyard's messages
//!   carry no `reasoning_details`, so doing the same would drop every tool call of the
//!   conversation. Tool calls are sent as they are.

use serde_json::{Map, Value, json};

use crate::config::ReasoningEffort;
use crate::providers::chat_body::{
    self, CachePoint, adaptive_effort, is_adaptive_thinking_claude, mark_cache_points,
};
use crate::providers::provider::Prompt;
use crate::providers::resolve::ResolvedMode;

/// Which gateway a body is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gateway {
    /// OpenRouter (`openrouter-stream.ts`).
    OpenRouter,
    /// The Vercel AI Gateway (`vercel-ai-gateway-stream.ts`).
    Vercel,
}

/// The provider order OpenRouter is asked to keep for these models, without fallbacks
/// (`OPENROUTER_PROVIDER_PREFERENCES`); tests compare it with the reference JSON.
pub(crate) const PROVIDER_PREFERENCES: &[(&str, &[&str])] = &[
    ("moonshotai/kimi-k2:exacto", &["groq", "moonshotai"]),
    ("z-ai/glm-4.6:exacto", &["z-ai", "novita"]),
    (
        "deepseek/deepseek-v3.1-terminus:exacto",
        &["novita", "deepinfra"],
    ),
    ("qwen/qwen3-coder:exacto", &["baseten"]),
    ("openai/gpt-oss-120b:exacto", &["groq", "novita"]),
    (
        "moonshotai/kimi-k2",
        &[
            "groq",
            "fireworks",
            "baseten",
            "parasail",
            "novita",
            "deepinfra",
        ],
    ),
    ("qwen/qwen3-coder", QWEN_HOSTS),
    ("qwen/qwen3-235b-a22b-thinking-2507", QWEN_HOSTS),
    ("qwen/qwen3-235b-a22b-07-25", QWEN_HOSTS),
    ("qwen/qwen3-30b-a3b-thinking-2507", QWEN_HOSTS),
    ("qwen/qwen3-30b-a3b-instruct-2507", QWEN_HOSTS),
    ("qwen/qwen3-30b-a3b:free", QWEN_HOSTS),
    ("qwen/qwen3-next-80b-a3b-thinking", QWEN_HOSTS),
    ("qwen/qwen3-next-80b-a3b-instruct", QWEN_HOSTS),
    ("qwen/qwen3-max", QWEN_HOSTS),
    (
        "deepseek/deepseek-v3.2-exp",
        &["deepseek", "novita", "fireworks", "nebius"],
    ),
    ("z-ai/glm-4.6", GLM_HOSTS),
    ("z-ai/glm-4.5v", GLM_HOSTS),
    ("z-ai/glm-4.5", GLM_HOSTS),
    ("z-ai/glm-4.5-air", GLM_HOSTS),
];

const QWEN_HOSTS: &[&str] = &["nebius", "baseten", "fireworks", "together", "deepinfra"];
const GLM_HOSTS: &[&str] = &["z-ai", "novita", "baseten", "fireworks", "chutes"];

/// Where OpenRouter routes a `:1m` Claude id (its 1M-token context is served there only).
const CLAUDE_1M_ROUTE: &[&str] = &["anthropic", "google-vertex/global"];

/// OpenRouter ids outside `anthropic/` and `minimax/` whose providers need explicit cache
/// marks (`openRouterExplicitCacheControlModelIds`).
const EXPLICIT_CACHE_IDS: &[&str] = &[
    "deepseek/deepseek-v3.2",
    "qwen/qwen-plus",
    "qwen/qwen3-max",
    "qwen/qwen3.6-plus",
    "qwen/qwen3.7-max",
    "qwen/qwen3-coder-plus",
    "qwen/qwen3-coder-flash",
];

/// Claude ids that take a thinking budget as `reasoning.max_tokens` on OpenRouter (the
/// reference's explicit list).
const BUDGET_THINKING_CLAUDE: &[&str] = &[
    "anthropic/claude-haiku-4.5",
    "anthropic/claude-4.5-haiku",
    "anthropic/claude-sonnet-5",
    "anthropic/claude-5-sonnet",
    "anthropic/claude-sonnet-4.6",
    "anthropic/claude-4.6-sonnet",
    "anthropic/claude-sonnet-4.5",
    "anthropic/claude-4.5-sonnet",
    "anthropic/claude-sonnet-4",
    "anthropic/claude-opus-4.1",
    "anthropic/claude-opus-4",
    "anthropic/claude-3.7-sonnet",
    "anthropic/claude-3.7-sonnet:beta",
    "anthropic/claude-3.7-sonnet:thinking",
    "anthropic/claude-3-7-sonnet",
    "anthropic/claude-3-7-sonnet:beta",
];

/// Ids whose conversations go in the R1 format (DeepSeek R1 and similar).
fn needs_r1_format(id: &str) -> bool {
    id.starts_with("deepseek/deepseek-r1")
        || [
            "perplexity/sonar-reasoning",
            "qwen/qwq-32b:free",
            "qwen/qwq-32b",
        ]
        .contains(&id)
}

/// Model ids that take a reasoning `effort` (`supportsReasoningEffortForModel`).
pub(crate) fn supports_reasoning_effort(id: &str) -> bool {
    let id = id.to_ascii_lowercase();
    [
        "deepseek", "gemini", "glm", "gpt", "kimi", "mimo", "minimax", "moonshot", "/o", "qwen",
        "z-ai", "zai", "grok",
    ]
    .iter()
    .any(|p| id.contains(p))
        || id.starts_with('o')
}

/// Models whose reasoning stream is noise (Grok 4 sends only "thinking") or unsupported
/// (Devstral): `include_reasoning` is false for them (`shouldSkipReasoningForModel`).
pub(crate) fn skips_reasoning(id: &str) -> bool {
    id.contains("grok-4") || id.contains("devstral")
}

/// Gemini Flash models, whose output OpenRouter caps at 8,192 tokens (`isGeminiFlashModel`).
fn is_gemini_flash(id: &str) -> bool {
    let id = id.trim().to_ascii_lowercase();
    (id.starts_with("google/gemini") || id.starts_with("gemini-")) && id.contains("flash")
}

/// The id sent for `model_id`: a `:1m` Claude id without its suffix, and whether it had one.
fn strip_1m(model_id: &str) -> (&str, bool) {
    match model_id.strip_suffix(":1m") {
        Some(base) if base.starts_with("anthropic/") => (base, true),
        _ => (model_id, false),
    }
}

/// The JSON request body for `gateway`.
pub(crate) fn request_body(gateway: Gateway, mode: &ResolvedMode, prompt: &Prompt<'_>) -> Value {
    let info = &mode.model_info;
    let (id, is_1m) = strip_1m(&mode.model_id);
    let budget = mode.thinking_budget_tokens;
    let effort = mode.reasoning_effort;
    let thinks = info.supports_reasoning || info.thinking_config.is_some();

    let mut messages = vec![json!({ "role": "system", "content": prompt.system_prompt })];
    messages.extend(chat_body::openai_messages(prompt.messages));
    let cache = match gateway {
        Gateway::OpenRouter => {
            id.starts_with("anthropic/")
                || id.starts_with("minimax/")
                || EXPLICIT_CACHE_IDS.contains(&id)
        }
        Gateway::Vercel => id.starts_with("anthropic/") || id.starts_with("minimax/"),
    };
    if cache {
        mark_cache_points(&mut messages, CachePoint::LastText);
    }

    let mut temperature = match gateway {
        Gateway::OpenRouter => Some(0.0),
        Gateway::Vercel => Some(info.temperature.unwrap_or(0.0)),
    };
    let mut top_p = None;
    let r1 = needs_r1_format(id) && !has_tools(prompt);
    if needs_r1_format(id) {
        if gateway == Gateway::OpenRouter {
            temperature = Some(0.7);
        }
        top_p = Some(0.95);
    }
    if r1 {
        messages = chat_body::r1_messages(prompt.system_prompt, prompt.messages);
    }
    if id.starts_with("google/gemini-3") {
        temperature = Some(1.0);
    }
    let adaptive = is_adaptive_thinking_claude(id);
    let adaptive_on = if adaptive {
        temperature = None;
        top_p = None;
        adaptive_effort(effort, budget)
    } else {
        None
    };

    let effort_ok = supports_reasoning_effort(id);
    let mut budget_reasoning = None;
    if !adaptive && budget > 0 {
        let claude_listed = match gateway {
            Gateway::OpenRouter => BUDGET_THINKING_CLAUDE.contains(&id),
            Gateway::Vercel => id.starts_with("anthropic/claude") && thinks,
        };
        if claude_listed || (thinks && !effort_ok) {
            temperature = None;
            budget_reasoning = Some(json!({ "max_tokens": budget }));
        }
    }
    let sent_effort = effort.filter(|_| effort_ok);
    let include_reasoning = if adaptive {
        adaptive_on.is_some()
    } else {
        !skips_reasoning(id) && sent_effort != Some(ReasoningEffort::None)
    };
    let reasoning = if adaptive {
        adaptive_on.map(|_| json!({ "enabled": true }))
    } else {
        budget_reasoning.or_else(|| {
            sent_effort
                .filter(|e| *e != ReasoningEffort::None)
                .map(|e| json!({ "effort": e.as_str() }))
        })
    };

    let mut body = Map::new();
    body.insert("model".into(), json!(id));
    let max_tokens = match gateway {
        Gateway::OpenRouter => is_gemini_flash(id).then(|| {
            let limit = if info.max_tokens > 0 {
                info.max_tokens
            } else {
                8192
            };
            limit.min(8192)
        }),
        Gateway::Vercel => (info.max_tokens > 0).then_some(info.max_tokens),
    };
    if let Some(n) = max_tokens {
        body.insert("max_tokens".into(), json!(n));
    }
    if let Some(t) = temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = top_p {
        body.insert("top_p".into(), json!(p));
    }
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({ "include_usage": true }));
    body.insert("include_reasoning".into(), json!(include_reasoning));
    if let Some(r) = reasoning {
        body.insert("reasoning".into(), r);
    }
    if let Some(e) = adaptive_on {
        body.insert("verbosity".into(), json!(e.as_str()));
    }
    if gateway == Gateway::OpenRouter {
        let preferences = PROVIDER_PREFERENCES.iter().find(|(m, _)| *m == id);
        let provider = if is_1m {
            Some(json!({ "order": CLAUDE_1M_ROUTE, "allow_fallbacks": false }))
        } else if let Some((_, order)) = preferences {
            Some(json!({ "order": order, "allow_fallbacks": false }))
        } else {
            mode.options
                .provider_sorting
                .as_ref()
                .map(|sort| json!({ "sort": sort }))
        };
        if let Some(p) = provider {
            body.insert("provider".into(), p);
        }
    }
    let parallel = match gateway {
        Gateway::OpenRouter => mode.options.parallel_tool_calls.unwrap_or(true),
        Gateway::Vercel => false,
    };
    chat_body::add_tools(&mut body, prompt.tools, Some(parallel));
    Value::Object(body)
}

fn has_tools(prompt: &Prompt<'_>) -> bool {
    use crate::message::ContentBlock;
    prompt.messages.iter().flat_map(|m| &m.content).any(|b| {
        matches!(
            b,
            ContentBlock::ToolUse { .. } | ContentBlock::ToolResult { .. }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effort_support_and_skips() {
        for id in [
            "openai/o3",
            "google/gemini-2.5-pro",
            "x-ai/grok-4",
            "z-ai/glm-4.6",
            "o4-mini",
        ] {
            assert!(supports_reasoning_effort(id), "{id}");
        }
        for id in [
            "anthropic/claude-sonnet-4.5",
            "meta-llama/llama-3.3-70b-instruct",
        ] {
            assert!(!supports_reasoning_effort(id), "{id}");
        }
        assert!(skips_reasoning("x-ai/grok-4-fast"));
        assert!(skips_reasoning("mistralai/devstral-medium"));
        assert!(!skips_reasoning("x-ai/grok-3"));
        assert!(is_gemini_flash("google/gemini-2.5-flash"));
        assert!(!is_gemini_flash("google/gemini-2.5-pro"));
        assert_eq!(
            strip_1m("anthropic/claude-sonnet-4.5:1m"),
            ("anthropic/claude-sonnet-4.5", true)
        );
        assert_eq!(strip_1m("qwen/qwen3:1m"), ("qwen/qwen3:1m", false));
    }
}
