//! A provider's Chat Completions request body, per provider and model family, as Cline v4.0.10's
//! `providers/{id}.ts` sends it: one `chat_style` row per provider, and a [`Reasoning`] rule here
//! per model family. Where Switchyard differs on purpose, the line says why.
//! Spec: R4.5.

use serde_json::{Map, Value, json};

use crate::config::ReasoningEffort;
use crate::message::{ContentBlock, Message, Role};
use crate::providers::chat_messages::{
    CachePoint, add_tools, has_tool_blocks, mark_cache_points, r1_messages,
};
use crate::providers::chat_style::{ChatStyle, Limit, Parallel, Reasoning, Temperature, style};
use crate::providers::model_family::{adaptive_effort, is_adaptive_thinking_claude};
use crate::providers::overrides;
use crate::providers::provider::Prompt;
use crate::providers::resolve::ResolvedMode;
use crate::providers::router_body::{self, Router};

// Re-exported at their old paths for `ollama.rs` and `sapaicore.rs`.
pub(crate) use crate::providers::chat_messages::{function_tools, openai_messages};
pub(crate) use crate::providers::model_family::is_reasoning_family;

/// Claude ids Requesty sends a `thinking` object for, by substring.
const REQUESTY_BUDGET_CLAUDE: &[&str] = &[
    "claude-3-7-sonnet",
    "claude-4.6-sonnet",
    "claude-sonnet-4",
    "claude-opus-4",
];

/// The limit of a model Groq's table does not know, by family substring as the reference's
/// `MODEL_FAMILIES`, kimi-k2 first as there. Others get 8,192.
const GROQ_FAMILY_LIMITS: &[(&str, u64)] = &[
    ("kimi-k2", 8192),
    ("llama-4", 8192),
    ("llama-3.3", 32_768),
    ("llama-3.1", 131_072),
    ("deepseek", 8192),
    ("qwen", 32_768),
];

/// The JSON request body: a model router's own, else the provider's [`ChatStyle`] row's.
pub(crate) fn request_body(mode: &ResolvedMode, prompt: &Prompt<'_>) -> Value {
    match mode.provider_id.as_str() {
        "openrouter" => router_body::request_body(Router::OpenRouter, mode, prompt),
        "vercel-ai-gateway" => router_body::request_body(Router::Vercel, mode, prompt),
        id => styled_body(&style(id), mode, prompt),
    }
}

/// What a body's reasoning rules decide before it is assembled: the reasoning fields, sent first in
/// this order, and the temperature, limit, system role and message format they may change.
struct Draft {
    fields: Map<String, Value>,
    temperature: Option<f64>,
    max_tokens: Limit,
    system_role: &'static str,
    r1: bool,
    /// Whether the model takes a caller's temperature and `top_p`; reasoning models do not.
    sampling: bool,
}

pub(crate) fn styled_body(style: &ChatStyle, mode: &ResolvedMode, prompt: &Prompt<'_>) -> Value {
    let id = mode.model_id.as_str();
    let mut draft = Draft {
        fields: Map::new(),
        temperature: temperature(style.temperature, mode.model_info.temperature),
        max_tokens: style.max_tokens,
        system_role: "system",
        r1: matches_r1(style, id),
        sampling: true,
    };
    apply_reasoning(style.reasoning, &mut draft, mode);
    let messages = messages(style, &draft, mode, prompt);

    let mut body = draft.fields;
    body.insert("model".into(), json!(id));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    // LiteLLM's Codex models only speak Responses, which takes no `stream_options`.
    let codex_on_litellm =
        style.reasoning == Reasoning::LiteLlm && id.to_ascii_lowercase().contains("codex");
    if !codex_on_litellm {
        body.insert("stream_options".into(), json!({ "include_usage": true }));
    }
    if let Some(t) = draft.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some((field, n)) = limit(draft.max_tokens, mode.model_info.max_tokens) {
        body.insert(field.into(), json!(n));
    }
    add_tools(&mut body, prompt.tools, parallel(style.parallel, id));
    let completion =
        draft.max_tokens == Limit::MaxCompletionTokens || draft.system_role == "developer";
    overrides::apply_chat(&mut body, prompt.overrides, completion, draft.sampling);
    // Only OpenAI's own API is known to take the key; a compatible server may refuse a field.
    if mode.provider_id == "openai-native" {
        let session = (prompt.system_prompt, prompt.messages);
        prompt.overrides.cache.insert_key(&mut body, Some(session));
    }
    Value::Object(body)
}

fn temperature(rule: Temperature, model: Option<f64>) -> Option<f64> {
    match rule {
        Temperature::Zero => Some(0.0),
        Temperature::ModelOrZero => Some(model.unwrap_or(0.0)),
        Temperature::Model => model,
        Temperature::ModelOrOne => Some(model.unwrap_or(1.0)),
        Temperature::One => Some(1.0),
        Temperature::Omit => None,
        Temperature::OpenAiCompatible => match model {
            Some(0.0) => None,
            Some(t) => Some(t),
            None => Some(0.0),
        },
    }
}

/// Whether the row sends model `id`'s conversations in the R1 format.
fn matches_r1(style: &ChatStyle, id: &str) -> bool {
    let lowered = id.to_ascii_lowercase();
    let id = if style.r1_lowercase {
        lowered.as_str()
    } else {
        id
    };
    style.r1_models.iter().any(|p| id.contains(p))
}

/// The output limit's field and value under `rule`, given the model's max output or 0.
fn limit(rule: Limit, model_max: u64) -> Option<(&'static str, u64)> {
    let model_max = (model_max > 0).then_some(model_max);
    match rule {
        Limit::Omit => None,
        Limit::MaxTokens => model_max.map(|n| ("max_tokens", n)),
        Limit::MaxCompletionTokens => model_max.map(|n| ("max_completion_tokens", n)),
        Limit::MaxTokensOr(fallback) => Some(("max_tokens", model_max.unwrap_or(fallback))),
        Limit::Fixed(n) => Some(("max_tokens", n)),
    }
}

fn parallel(rule: Parallel, id: &str) -> Option<bool> {
    match rule {
        Parallel::False => Some(false),
        Parallel::Gpt5 => Some(id.contains("gpt-5") || id.contains("gpt5")),
        Parallel::Absent => None,
    }
}

/// The conversation, system prompt first, in the format the draft chose, with DeepSeek's
/// `reasoning_content` and LiteLLM's cache marks where they apply.
fn messages(
    style: &ChatStyle,
    draft: &Draft,
    mode: &ResolvedMode,
    prompt: &Prompt<'_>,
) -> Vec<Value> {
    let id = mode.model_id.as_str();
    // The R1 format has no place for tool calls, and dropping them would show the model answers to
    // calls it cannot see.
    let use_r1 = draft.r1 && !has_tool_blocks(prompt.messages);
    let mut messages = if use_r1 {
        r1_messages(prompt.system_prompt, prompt.messages)
    } else {
        // No blank system message: llama.cpp and LM Studio refuse one with a 400. A task always has
        // a system prompt; a gateway's client may send none.
        let system = (!prompt.system_prompt.is_empty())
            .then(|| json!({ "role": draft.system_role, "content": prompt.system_prompt }));
        let mut m: Vec<Value> = system.into_iter().collect();
        m.extend(openai_messages(prompt.messages));
        m
    };
    if style.reasoning == Reasoning::DeepSeek && id.contains("deepseek-reasoner") && !use_r1 {
        add_reasoning_content(&mut messages, prompt.messages);
    }
    if style.reasoning == Reasoning::LiteLlm && mode.model_info.supports_prompt_cache {
        mark_cache_points(&mut messages, CachePoint::LastPart);
    }
    messages
}

fn apply_reasoning(reasoning: Reasoning, draft: &mut Draft, mode: &ResolvedMode) {
    let id = mode.model_id.as_str();
    let (effort, budget) = (mode.reasoning_effort, mode.thinking_budget_tokens);
    match reasoning {
        Reasoning::Plain => {}
        Reasoning::OpenAiFamily { default_medium } => {
            openai_family(draft, id, effort, default_medium);
        }
        Reasoning::DeepSeek => deepseek(draft, id, effort),
        Reasoning::Qwen => qwen(draft, id, budget),
        Reasoning::Requesty => requesty(draft, id, effort, budget),
        Reasoning::LiteLlm => litellm(draft, id, effort, budget),
        Reasoning::Groq => groq(draft, id),
        Reasoning::Xai => xai(draft, id, effort),
    }
}

fn insert_effort(draft: &mut Draft, effort: Option<ReasoningEffort>) {
    if let Some(e) = effort.filter(|e| *e != ReasoningEffort::None) {
        draft
            .fields
            .insert("reasoning_effort".into(), json!(e.as_str()));
    }
}

fn openai_family(
    draft: &mut Draft,
    id: &str,
    effort: Option<ReasoningEffort>,
    default_medium: bool,
) {
    if !is_reasoning_family(id) {
        return;
    }
    draft.system_role = "developer";
    draft.temperature = None;
    draft.sampling = false;
    // OpenAI refuses `max_tokens` for its reasoning models.
    if draft.max_tokens != Limit::Omit {
        draft.max_tokens = Limit::MaxCompletionTokens;
    }
    let effort = if default_medium {
        Some(effort.unwrap_or_default())
    } else {
        effort
    };
    insert_effort(draft, effort);
}

fn deepseek(draft: &mut Draft, id: &str, effort: Option<ReasoningEffort>) {
    let thinking =
        id.contains("deepseek-reasoner") || id == "deepseek-v4-flash" || id == "deepseek-v4-pro";
    if thinking {
        draft.temperature = None;
        draft.sampling = false;
        insert_effort(draft, effort);
    }
}

fn qwen(draft: &mut Draft, id: &str, budget: u64) {
    let family = id.contains("qwen3") || ["qwen-plus-latest", "qwen-turbo-latest"].contains(&id);
    if family {
        draft
            .fields
            .insert("enable_thinking".into(), json!(budget > 0));
        if budget > 0 {
            draft.fields.insert("thinking_budget".into(), json!(budget));
            draft.r1 = true;
        }
    }
    if draft.r1 {
        draft.temperature = None;
    }
}

/// Claude's adaptive thinking on Requesty and LiteLLM: no temperature, and with thinking on the
/// `thinking` and `output_config` objects.
fn adaptive_thinking(draft: &mut Draft, effort: Option<ReasoningEffort>, budget: u64) {
    draft.temperature = None;
    draft.sampling = false;
    if let Some(e) = adaptive_effort(effort, budget) {
        draft
            .fields
            .insert("thinking".into(), json!({ "type": "adaptive" }));
        draft
            .fields
            .insert("output_config".into(), json!({ "effort": e.as_str() }));
    }
}

fn requesty(draft: &mut Draft, id: &str, effort: Option<ReasoningEffort>, budget: u64) {
    if id.starts_with("openai/o") {
        draft.fields.insert(
            "reasoning_effort".into(),
            json!(effort.unwrap_or_default().as_str()),
        );
    }
    if is_adaptive_thinking_claude(id) {
        adaptive_thinking(draft, effort, budget);
    } else if REQUESTY_BUDGET_CLAUDE.iter().any(|p| id.contains(p)) {
        let thinking = if budget > 0 {
            json!({ "type": "enabled", "budget_tokens": budget })
        } else {
            json!({ "type": "disabled" })
        };
        draft.fields.insert("thinking".into(), thinking);
    }
}

fn litellm(draft: &mut Draft, id: &str, effort: Option<ReasoningEffort>, budget: u64) {
    let o_mini = ["o1-mini", "o3-mini", "o4-mini"]
        .iter()
        .any(|p| id.contains(p));
    let claude = ["sonnet", "opus", "haiku"].iter().any(|p| id.contains(p));
    if is_adaptive_thinking_claude(id) {
        adaptive_thinking(draft, effort, budget);
    } else if budget > 0 {
        draft.fields.insert(
            "thinking".into(),
            json!({ "type": "enabled", "budget_tokens": budget }),
        );
        if o_mini || claude {
            draft.temperature = None;
            draft.sampling = false;
        }
    }
    draft.fields.insert("drop_params".into(), json!(true));
}

fn groq(draft: &mut Draft, id: &str) {
    let fallback = GROQ_FAMILY_LIMITS
        .iter()
        .find(|(family, _)| id.contains(family))
        .map_or(8192, |(_, n)| *n);
    draft.max_tokens = Limit::MaxTokensOr(fallback);
    if id.contains("deepseek") {
        draft.fields.insert("top_p".into(), json!(0.95));
        draft
            .fields
            .insert("reasoning_format".into(), json!("parsed"));
    }
}

/// `reasoning_effort` reaches `grok-3-mini` models, as the reference's handler means to; its copy
/// is shadowed and never sent.
fn xai(draft: &mut Draft, id: &str, effort: Option<ReasoningEffort>) {
    let effort = effort.filter(|e| matches!(e, ReasoningEffort::Low | ReasoningEffort::High));
    if let Some(e) = effort {
        if id.contains("3-mini") {
            draft
                .fields
                .insert("reasoning_effort".into(), json!(e.as_str()));
        }
    }
}

/// DeepSeek's reasoner: the thinking of each assistant message since the last user message goes
/// back as `reasoning_content`, as its API asks during tool use.
fn add_reasoning_content(wire: &mut [Value], messages: &[Message]) {
    let thinking: Vec<String> = messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| {
            m.content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Thinking { thinking, .. } => Some(thinking.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    let last_user = wire.iter().rposition(|m| m["role"] == "user");
    let mut assistant = 0;
    for (i, msg) in wire.iter_mut().enumerate() {
        if msg["role"] != "assistant" {
            continue;
        }
        let text = thinking.get(assistant).filter(|t| !t.is_empty());
        assistant += 1;
        if let Some(text) = text {
            if last_user.is_none_or(|u| i >= u) {
                msg["reasoning_content"] = json!(text);
            }
        }
    }
}
