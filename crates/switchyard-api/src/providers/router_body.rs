//! The Chat Completions body of the model routers OpenRouter and the Vercel AI Gateway, per model
//! family, as the reference's `openrouter-stream.ts` and `vercel-ai-gateway-stream.ts` build it.
//! Spec: R4.5.

use serde_json::{Map, Value, json};

use crate::config::ReasoningEffort;
use crate::providers::chat_messages::{
    CachePoint, add_tools, client_marked_messages, has_tool_blocks, mark_cache_points,
    openai_messages, r1_messages,
};
use crate::providers::model_family::{adaptive_effort, is_adaptive_thinking_claude};
use crate::providers::overrides;
use crate::providers::provider::Prompt;
use crate::providers::resolve::ResolvedMode;

/// Which model router a body is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Router {
    OpenRouter,
    Vercel,
}

/// The provider order OpenRouter is asked to keep for these models, without fallbacks; tests
/// compare it with the reference's `OPENROUTER_PROVIDER_PREFERENCES`.
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

/// Where OpenRouter routes a `:1m` Claude id, the only hosts of its 1M-token context.
const CLAUDE_1M_ROUTE: &[&str] = &["anthropic", "google-vertex/global"];

/// OpenRouter ids outside `anthropic/` and `minimax/` whose providers need explicit cache marks.
const EXPLICIT_CACHE_IDS: &[&str] = &[
    "deepseek/deepseek-v3.2",
    "qwen/qwen-plus",
    "qwen/qwen3-max",
    "qwen/qwen3.6-plus",
    "qwen/qwen3.7-max",
    "qwen/qwen3-coder-plus",
    "qwen/qwen3-coder-flash",
];

/// Claude ids that take a thinking budget as `reasoning.max_tokens` on OpenRouter.
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

/// Ids whose conversations go in the R1 format, DeepSeek R1's and similar.
fn needs_r1_format(id: &str) -> bool {
    id.starts_with("deepseek/deepseek-r1")
        || [
            "perplexity/sonar-reasoning",
            "qwen/qwq-32b:free",
            "qwen/qwq-32b",
        ]
        .contains(&id)
}

/// Model ids that take a reasoning `effort`, as the reference's `supportsReasoningEffortForModel`.
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

/// Models whose reasoning stream is noise or unsupported, Grok 4 and Devstral.
pub(crate) fn skips_reasoning(id: &str) -> bool {
    id.contains("grok-4") || id.contains("devstral")
}

/// Gemini Flash models, whose output OpenRouter caps at 8,192 tokens.
fn is_gemini_flash(id: &str) -> bool {
    let id = id.trim().to_ascii_lowercase();
    (id.starts_with("google/gemini") || id.starts_with("gemini-")) && id.contains("flash")
}

/// The id sent and whether it had `:1m`, taken on any `anthropic/` id, not the reference's eight.
fn strip_1m(model_id: &str) -> (&str, bool) {
    match model_id.strip_suffix(":1m") {
        Some(base) if base.starts_with("anthropic/") => (base, true),
        _ => (model_id, false),
    }
}

impl Router {
    /// Whether `id` gets cache marks: Claude, MiniMax, and OpenRouter's [`EXPLICIT_CACHE_IDS`].
    fn caches(self, id: &str) -> bool {
        let family = id.starts_with("anthropic/") || id.starts_with("minimax/");
        match self {
            Self::OpenRouter => family || EXPLICIT_CACHE_IDS.contains(&id),
            Self::Vercel => family,
        }
    }

    /// The temperature sent before any model rule: 0 on OpenRouter, the model's or 0 on Vercel's.
    fn temperature(self, model: Option<f64>) -> Option<f64> {
        match self {
            Self::OpenRouter => Some(0.0),
            Self::Vercel => Some(model.unwrap_or(0.0)),
        }
    }

    /// Whether Claude model `id` takes its budget as `reasoning.max_tokens` on this router.
    fn takes_budget(self, id: &str, thinks: bool) -> bool {
        match self {
            Self::OpenRouter => BUDGET_THINKING_CLAUDE.contains(&id),
            Self::Vercel => id.starts_with("anthropic/claude") && thinks,
        }
    }

    /// The `max_tokens` sent: Gemini Flash's 8,192 cap on OpenRouter, the model's known max on
    /// Vercel's.
    fn max_tokens(self, id: &str, model_max: u64) -> Option<u64> {
        match self {
            Self::OpenRouter => is_gemini_flash(id).then(|| {
                let limit = if model_max > 0 { model_max } else { 8192 };
                limit.min(8192)
            }),
            Self::Vercel => (model_max > 0).then_some(model_max),
        }
    }

    /// `parallel_tool_calls`: OpenRouter's setting, true by default, false on Vercel's.
    fn parallel_tool_calls(self, mode: &ResolvedMode) -> bool {
        match self {
            Self::OpenRouter => mode.options.parallel_tool_calls.unwrap_or(true),
            Self::Vercel => false,
        }
    }
}

struct Sampling {
    temperature: Option<f64>,
    top_p: Option<f64>,
}

struct Thinking {
    include_reasoning: bool,
    reasoning: Option<Value>,
    /// Claude's adaptive thinking, when on: its effort as `verbosity`.
    verbosity: Option<ReasoningEffort>,
}

pub(crate) fn request_body(router: Router, mode: &ResolvedMode, prompt: &Prompt<'_>) -> Value {
    let info = &mode.model_info;
    let (id, is_1m) = strip_1m(&mode.model_id);
    let mut sampling = sampling(router, id, info.temperature);
    let thinking = thinking(router, id, mode, &mut sampling);

    let mut body = Map::new();
    body.insert("model".into(), json!(id));
    if let Some(n) = router.max_tokens(id, info.max_tokens) {
        body.insert("max_tokens".into(), json!(n));
    }
    if let Some(t) = sampling.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = sampling.top_p {
        body.insert("top_p".into(), json!(p));
    }
    body.insert(
        "messages".into(),
        Value::Array(messages(router, id, prompt)),
    );
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({ "include_usage": true }));
    body.insert(
        "include_reasoning".into(),
        json!(thinking.include_reasoning),
    );
    if let Some(r) = thinking.reasoning {
        body.insert("reasoning".into(), r);
    }
    if let Some(e) = thinking.verbosity {
        body.insert("verbosity".into(), json!(e.as_str()));
    }
    if router == Router::OpenRouter {
        if let Some(p) = provider_routing(id, is_1m, mode) {
            body.insert("provider".into(), p);
        }
    }
    add_tools(
        &mut body,
        prompt.tools,
        Some(router.parallel_tool_calls(mode)),
    );
    // The rules take the temperature away from the models that think or refuse it.
    let sampling = sampling.temperature.is_some();
    overrides::apply_chat(&mut body, prompt.overrides, false, sampling);
    Value::Object(body)
}

/// The conversation, system prompt first: in the R1 format for the models that need it when it has
/// no tool calls, else with cache marks. Tool calls go as they are even to Gemini, where the
/// reference drops those lacking the `reasoning_details` Switchyard never stores.
fn messages(router: Router, id: &str, prompt: &Prompt<'_>) -> Vec<Value> {
    if needs_r1_format(id) && !has_tool_blocks(prompt.messages) {
        return r1_messages(prompt.system_prompt, prompt.messages);
    }
    let hints = &prompt.overrides.cache;
    if router.caches(id) && hints.placed() {
        return client_marked_messages(prompt.system_prompt, prompt.messages, hints);
    }
    let mut messages = vec![json!({ "role": "system", "content": prompt.system_prompt })];
    messages.extend(openai_messages(prompt.messages));
    if router.caches(id) {
        mark_cache_points(&mut messages, CachePoint::LastText);
    }
    messages
}

/// The sampling fields before the reasoning rules: the router's temperature, R1 models' `top_p`
/// 0.95 and on OpenRouter temperature 0.7, Gemini 3's temperature 1.
fn sampling(router: Router, id: &str, model_temperature: Option<f64>) -> Sampling {
    let mut sampling = Sampling {
        temperature: router.temperature(model_temperature),
        top_p: None,
    };
    if needs_r1_format(id) {
        if router == Router::OpenRouter {
            sampling.temperature = Some(0.7);
        }
        sampling.top_p = Some(0.95);
    }
    if id.starts_with("google/gemini-3") {
        sampling.temperature = Some(1.0);
    }
    sampling
}

/// The reasoning fields for `id`: Claude's adaptive thinking without sampling fields, else a budget
/// as `reasoning.max_tokens` without temperature where taken, else the effort where taken.
fn thinking(router: Router, id: &str, mode: &ResolvedMode, sampling: &mut Sampling) -> Thinking {
    let (effort, budget) = (mode.reasoning_effort, mode.thinking_budget_tokens);
    if is_adaptive_thinking_claude(id) {
        sampling.temperature = None;
        sampling.top_p = None;
        let on = adaptive_effort(effort, budget);
        return Thinking {
            include_reasoning: on.is_some(),
            reasoning: on.map(|_| json!({ "enabled": true })),
            verbosity: on,
        };
    }
    let info = &mode.model_info;
    let thinks = info.supports_reasoning || info.thinking_config.is_some();
    let effort_ok = supports_reasoning_effort(id);
    let mut budget_reasoning = None;
    if budget > 0 && (router.takes_budget(id, thinks) || (thinks && !effort_ok)) {
        sampling.temperature = None;
        budget_reasoning = Some(json!({ "max_tokens": budget }));
    }
    let sent_effort = effort.filter(|_| effort_ok);
    Thinking {
        include_reasoning: !skips_reasoning(id) && sent_effort != Some(ReasoningEffort::None),
        reasoning: budget_reasoning.or_else(|| {
            sent_effort
                .filter(|e| *e != ReasoningEffort::None)
                .map(|e| json!({ "effort": e.as_str() }))
        }),
        verbosity: None,
    }
}

/// OpenRouter's `provider` routing for model `id`: a `:1m` Claude id's route or the
/// [`PROVIDER_PREFERENCES`] order, both without fallbacks, else the configured `provider_sorting`.
fn provider_routing(id: &str, is_1m: bool, mode: &ResolvedMode) -> Option<Value> {
    let preferences = PROVIDER_PREFERENCES.iter().find(|(m, _)| *m == id);
    if is_1m {
        Some(json!({ "order": CLAUDE_1M_ROUTE, "allow_fallbacks": false }))
    } else if let Some((_, order)) = preferences {
        Some(json!({ "order": order, "allow_fallbacks": false }))
    } else {
        mode.options
            .provider_sorting
            .as_ref()
            .map(|sort| json!({ "sort": sort }))
    }
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
