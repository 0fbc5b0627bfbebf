//! What a Chat Completions request body holds, per provider and model family, as the
//! reference sends it (issue 11 item 6): the output limit and the field that carries it, the
//! temperature, the reasoning fields, the message format, and the tool parameters.
//!
//! Facts from Cline v4.0.10, `apps/vscode/src/core/api/providers/{id}.ts` and
//! `transform/{openai-format,r1-format,tool-call-processor}.ts`; OpenRouter and the Vercel AI
//! Gateway have their own rules in [`gateway_body`](super::gateway_body). Each provider's
//! handful of choices is one row of [`style`]; the few that depend on the model family are
//! named [`Reasoning`] rules.
//!
//! Deliberate differences from the reference, each for a request the reference gets wrong or
//! cannot make:
//! - Tools are sent whenever the task has any (the reference leaves them out for fireworks,
//!   doubao, requesty, cerebras, hicap and nousResearch, whose models it drives with XML tool
//!   prompts instead; Switchyard's tools are MCP tools and have no other way in), always with
//!   `tool_choice: "auto"` (the reference forces `"any"` on Mistral, which would make every
//!   answer a tool call).
//! - OpenAI reasoning models get `max_completion_tokens`, never `max_tokens`, which OpenAI
//!   rejects for them ("Unsupported parameter: 'max_tokens' is not supported with this model").
//! - A user message of text only is sent as a string, not a one-part array: the same request
//!   for every OpenAI-compatible server, and llama.cpp-style chat templates render arrays
//!   badly. Parts are used where cache marks need them (gateways, LiteLLM).
//! - xAI: `reasoning_effort` (`low`/`high`) reaches `grok-3-mini` models, as the reference's
//!   handler means to (its copy is shadowed and never sent).
//! - The R1 message format (system prompt as the first user message, same-role messages
//!   merged) is used only for conversations without tool calls: it has no place for them,
//!   and dropping them would show the model answers to calls it cannot see.

use serde_json::{Map, Value, json};

use crate::config::ReasoningEffort;
use crate::message::{ContentBlock, Message, Role, ToolSpec};
use crate::providers::gateway_body;
use crate::providers::provider::Prompt;
use crate::providers::resolve::ResolvedMode;

/// Which field carries the output limit, and where the limit comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    /// No limit is sent.
    Omit,
    /// `max_tokens` = the model's max output, when known.
    MaxTokens,
    /// `max_completion_tokens` = the model's max output, when known.
    MaxCompletionTokens,
    /// `max_tokens` = the model's max output, else this many tokens (baseten, groq).
    MaxTokensOr(u64),
    /// `max_tokens` = this many tokens whatever the model (cerebras' default, 16,384).
    Fixed(u64),
}

/// The temperature sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Temperature {
    /// 0.
    Zero,
    /// The model's, else 0.
    ModelOrZero,
    /// The model's, else none.
    Model,
    /// The model's, else 1 (LiteLLM).
    ModelOrOne,
    /// 1 (hicap).
    One,
    /// None.
    Omit,
    /// The `openai` provider's rule: a configured 0 means "none", unset means 0.
    OpenAiCompatible,
}

/// Reasoning fields, by model family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reasoning {
    /// None.
    Plain,
    /// OpenAI reasoning models (ids containing o1/o3/o4/gpt-5, not "chat"): `developer` role,
    /// no temperature, `max_completion_tokens`, `reasoning_effort` (`none` sends none). With
    /// `default_medium`, an unset effort is sent as `medium` (the `openai` provider).
    OpenAiFamily { default_medium: bool },
    /// DeepSeek: thinking models (`deepseek-reasoner`, `deepseek-v4-*`) get no temperature and
    /// the effort when set; `deepseek-reasoner`'s own thinking of the current turn goes back
    /// as `reasoning_content`.
    DeepSeek,
    /// Qwen (DashScope): the qwen3 family gets `enable_thinking` and `thinking_budget`; with
    /// thinking on, the R1 format and no temperature.
    Qwen,
    /// Requesty: `reasoning_effort` for `openai/o*`; Claude's `thinking` object.
    Requesty,
    /// LiteLLM: Claude's `thinking` object with a budget, no temperature with thinking, cache
    /// marks when the model caches, `drop_params`.
    LiteLlm,
    /// Groq: the DeepSeek family's `top_p` 0.95 and `reasoning_format: parsed`.
    Groq,
    /// xAI: `reasoning_effort` `low` or `high` for `grok-3-mini`.
    Xai,
}

/// `parallel_tool_calls` next to the tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parallel {
    /// `false` (the reference's default, `getOpenAIToolParams(tools)`).
    False,
    /// `true` for GPT-5 models (openai-native).
    Gpt5,
    /// Not sent (baseten).
    Absent,
}

/// One provider's body rules (a row of [`style`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChatStyle {
    pub(crate) max_tokens: Limit,
    pub(crate) temperature: Temperature,
    /// Model id substrings whose conversations go in the R1 format.
    pub(crate) r1_models: &'static [&'static str],
    /// Compare `r1_models` with the lowercased id (sambanova) instead of the id as typed.
    pub(crate) r1_lowercase: bool,
    pub(crate) reasoning: Reasoning,
    pub(crate) parallel: Parallel,
}

const fn row(max_tokens: Limit, temperature: Temperature) -> ChatStyle {
    ChatStyle {
        max_tokens,
        temperature,
        r1_models: &[],
        r1_lowercase: false,
        reasoning: Reasoning::Plain,
        parallel: Parallel::False,
    }
}

/// The body rules of `provider_id` (its reference handler's `chat.completions.create`
/// arguments). Ids without a row (none today) get the `openai` provider's.
pub(crate) fn style(provider_id: &str) -> ChatStyle {
    use Limit as M;
    use Temperature as T;
    match provider_id {
        "openai-native" => ChatStyle {
            reasoning: Reasoning::OpenAiFamily {
                default_medium: false,
            },
            parallel: Parallel::Gpt5,
            ..row(M::MaxTokens, T::ModelOrZero)
        },
        "deepseek" => ChatStyle {
            reasoning: Reasoning::DeepSeek,
            ..row(M::MaxCompletionTokens, T::Zero)
        },
        "requesty" => ChatStyle {
            reasoning: Reasoning::Requesty,
            ..row(M::MaxTokens, T::Zero)
        },
        "together" => ChatStyle {
            r1_models: &["deepseek-reasoner"],
            ..row(M::Omit, T::Zero)
        },
        "qwen" => ChatStyle {
            r1_models: &["deepseek-r1"],
            reasoning: Reasoning::Qwen,
            ..row(M::MaxCompletionTokens, T::Zero)
        },
        "litellm" => ChatStyle {
            reasoning: Reasoning::LiteLlm,
            ..row(M::Omit, T::ModelOrOne)
        },
        "nebius" => ChatStyle {
            r1_models: &["DeepSeek-R1"],
            ..row(M::Omit, T::Zero)
        },
        "sambanova" => ChatStyle {
            r1_models: &["deepseek", "qwen3"],
            r1_lowercase: true,
            ..row(M::Omit, T::ModelOrZero)
        },
        "groq" => ChatStyle {
            reasoning: Reasoning::Groq,
            ..row(M::MaxTokensOr(8192), T::Zero)
        },
        "xai" => ChatStyle {
            reasoning: Reasoning::Xai,
            ..row(M::MaxCompletionTokens, T::Zero)
        },
        "baseten" => ChatStyle {
            parallel: Parallel::Absent,
            ..row(M::MaxTokensOr(8192), T::Zero)
        },
        "fireworks" | "mistral" | "nousResearch" | "wandb" | "aihubmix" => row(M::Omit, T::Zero),
        "doubao" | "huawei-cloud-maas" | "qwen-code" => row(M::MaxCompletionTokens, T::Zero),
        "zai" => row(M::MaxCompletionTokens, T::Omit),
        "moonshot" => row(M::MaxTokens, T::Model),
        "huggingface" => row(M::MaxTokens, T::Zero),
        "cerebras" => row(M::Fixed(16_384), T::ModelOrZero),
        "hicap" => row(M::Omit, T::One),
        // LM Studio's limit is a user setting (`model_info.max_tokens`), its temperature none.
        "lmstudio" => row(M::MaxCompletionTokens, T::Omit),
        // `openai` (OpenAI Compatible) and anything else.
        _ => ChatStyle {
            r1_models: &["deepseek-reasoner"],
            reasoning: Reasoning::OpenAiFamily {
                default_medium: true,
            },
            ..row(M::MaxTokens, T::OpenAiCompatible)
        },
    }
}

/// True for OpenAI reasoning-family model ids: o1/o3/o4/gpt-5 anywhere in the id, but not
/// "chat" variants (SPEC R4.5; the reference's `isReasoningModelFamily` in `openai.ts`).
pub(crate) fn is_reasoning_family(model_id: &str) -> bool {
    ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|p| model_id.contains(p))
        && !model_id.contains("chat")
}

/// Claude models that think adaptively instead of with a budget: Sonnet 5, Fable 5 and Opus
/// 4.6 and later (the reference's `isClaudeAdaptiveThinkingModel`).
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

/// Adaptive thinking settings from the mode (the reference's `resolveClaudeAdaptiveThinking`):
/// a set effort decides (`none` turns thinking off); else a thinking budget means `high`;
/// else off. `Some(effort)` when thinking is on.
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

/// The JSON request body of `mode`'s provider.
pub(crate) fn request_body(mode: &ResolvedMode, prompt: &Prompt<'_>) -> Value {
    match mode.provider_id.as_str() {
        "openrouter" => gateway_body::request_body(gateway_body::Gateway::OpenRouter, mode, prompt),
        "vercel-ai-gateway" => {
            gateway_body::request_body(gateway_body::Gateway::Vercel, mode, prompt)
        }
        id => styled_body(&style(id), mode, prompt),
    }
}

/// The body of a provider whose rules are a [`ChatStyle`] row.
pub(crate) fn styled_body(style: &ChatStyle, mode: &ResolvedMode, prompt: &Prompt<'_>) -> Value {
    let info = &mode.model_info;
    let id = mode.model_id.as_str();
    let budget = mode.thinking_budget_tokens;
    let effort = mode.reasoning_effort;
    let mut body = Map::new();
    let mut temperature = match style.temperature {
        Temperature::Zero => Some(0.0),
        Temperature::ModelOrZero => Some(info.temperature.unwrap_or(0.0)),
        Temperature::Model => info.temperature,
        Temperature::ModelOrOne => Some(info.temperature.unwrap_or(1.0)),
        Temperature::One => Some(1.0),
        Temperature::Omit => None,
        Temperature::OpenAiCompatible => match info.temperature {
            Some(0.0) => None,
            Some(t) => Some(t),
            None => Some(0.0),
        },
    };
    let mut max_tokens = style.max_tokens;
    let mut system_role = "system";
    let matches_r1 = |patterns: &[&str]| {
        let lowered = id.to_ascii_lowercase();
        let id = if style.r1_lowercase {
            lowered.as_str()
        } else {
            id
        };
        patterns.iter().any(|p| id.contains(p))
    };
    let mut r1 = matches_r1(style.r1_models);

    match style.reasoning {
        Reasoning::Plain => {}
        Reasoning::OpenAiFamily { default_medium } => {
            if is_reasoning_family(id) {
                system_role = "developer";
                temperature = None;
                if max_tokens != Limit::Omit {
                    max_tokens = Limit::MaxCompletionTokens;
                }
                let effort = if default_medium {
                    Some(effort.unwrap_or_default())
                } else {
                    effort
                };
                if let Some(e) = effort.filter(|e| *e != ReasoningEffort::None) {
                    body.insert("reasoning_effort".into(), json!(e.as_str()));
                }
            }
        }
        Reasoning::DeepSeek => {
            let thinking = id.contains("deepseek-reasoner")
                || id == "deepseek-v4-flash"
                || id == "deepseek-v4-pro";
            if thinking {
                temperature = None;
                if let Some(e) = effort.filter(|e| *e != ReasoningEffort::None) {
                    body.insert("reasoning_effort".into(), json!(e.as_str()));
                }
            }
        }
        Reasoning::Qwen => {
            let family =
                id.contains("qwen3") || ["qwen-plus-latest", "qwen-turbo-latest"].contains(&id);
            if family {
                body.insert("enable_thinking".into(), json!(budget > 0));
                if budget > 0 {
                    body.insert("thinking_budget".into(), json!(budget));
                    r1 = true;
                }
            }
            if r1 {
                temperature = None;
            }
        }
        Reasoning::Requesty => {
            if id.starts_with("openai/o") {
                body.insert(
                    "reasoning_effort".into(),
                    json!(effort.unwrap_or_default().as_str()),
                );
            }
            if is_adaptive_thinking_claude(id) {
                temperature = None;
                if let Some(e) = adaptive_effort(effort, budget) {
                    body.insert("thinking".into(), json!({ "type": "adaptive" }));
                    body.insert("output_config".into(), json!({ "effort": e.as_str() }));
                }
            } else if [
                "claude-3-7-sonnet",
                "claude-4.6-sonnet",
                "claude-sonnet-4",
                "claude-opus-4",
            ]
            .iter()
            .any(|p| id.contains(p))
            {
                let thinking = if budget > 0 {
                    json!({ "type": "enabled", "budget_tokens": budget })
                } else {
                    json!({ "type": "disabled" })
                };
                body.insert("thinking".into(), thinking);
            }
        }
        Reasoning::LiteLlm => {
            let o_mini = ["o1-mini", "o3-mini", "o4-mini"]
                .iter()
                .any(|p| id.contains(p));
            let claude = ["sonnet", "opus", "haiku"].iter().any(|p| id.contains(p));
            if is_adaptive_thinking_claude(id) {
                temperature = None;
                if let Some(e) = adaptive_effort(effort, budget) {
                    body.insert("thinking".into(), json!({ "type": "adaptive" }));
                    body.insert("output_config".into(), json!({ "effort": e.as_str() }));
                }
            } else if budget > 0 {
                body.insert(
                    "thinking".into(),
                    json!({ "type": "enabled", "budget_tokens": budget }),
                );
                if o_mini || claude {
                    temperature = None;
                }
            }
            body.insert("drop_params".into(), json!(true));
        }
        Reasoning::Groq => {
            // The limit of a model Groq's table does not know, by family (`MODEL_FAMILIES`
            // in the reference's groq.ts); kimi-k2 first, as there.
            let families: [(&str, u64); 6] = [
                ("kimi-k2", 8192),
                ("llama-4", 8192),
                ("llama-3.3", 32_768),
                ("llama-3.1", 131_072),
                ("deepseek", 8192),
                ("qwen", 32_768),
            ];
            let fallback = families
                .iter()
                .find(|(family, _)| id.contains(family))
                .map_or(8192, |(_, n)| *n);
            max_tokens = Limit::MaxTokensOr(fallback);
            if id.contains("deepseek") {
                body.insert("top_p".into(), json!(0.95));
                body.insert("reasoning_format".into(), json!("parsed"));
            }
        }
        Reasoning::Xai => {
            if let Some(e) =
                effort.filter(|e| matches!(e, ReasoningEffort::Low | ReasoningEffort::High))
            {
                if id.contains("3-mini") {
                    body.insert("reasoning_effort".into(), json!(e.as_str()));
                }
            }
        }
    }

    let use_r1 = r1 && !has_tool_blocks(prompt.messages);
    let mut messages = if use_r1 {
        r1_messages(prompt.system_prompt, prompt.messages)
    } else {
        let mut m = vec![json!({ "role": system_role, "content": prompt.system_prompt })];
        m.extend(openai_messages(prompt.messages));
        m
    };
    if style.reasoning == Reasoning::DeepSeek && id.contains("deepseek-reasoner") && !use_r1 {
        add_reasoning_content(&mut messages, prompt.messages);
    }
    if style.reasoning == Reasoning::LiteLlm && mode.model_info.supports_prompt_cache {
        mark_cache_points(&mut messages, CachePoint::LastPart);
    }

    body.insert("model".into(), json!(id));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    // LiteLLM's Codex models only speak Responses, which takes no `stream_options`.
    let codex_on_litellm =
        style.reasoning == Reasoning::LiteLlm && id.to_ascii_lowercase().contains("codex");
    if !codex_on_litellm {
        body.insert("stream_options".into(), json!({ "include_usage": true }));
    }
    if let Some(t) = temperature {
        body.insert("temperature".into(), json!(t));
    }
    let model_max = (info.max_tokens > 0).then_some(info.max_tokens);
    let limit = match max_tokens {
        Limit::Omit => None,
        Limit::MaxTokens => model_max.map(|n| ("max_tokens", n)),
        Limit::MaxCompletionTokens => model_max.map(|n| ("max_completion_tokens", n)),
        Limit::MaxTokensOr(fallback) => Some(("max_tokens", model_max.unwrap_or(fallback))),
        Limit::Fixed(n) => Some(("max_tokens", n)),
    };
    if let Some((field, n)) = limit {
        body.insert(field.into(), json!(n));
    }
    let parallel = match style.parallel {
        Parallel::False => Some(false),
        Parallel::Gpt5 => Some(id.contains("gpt-5") || id.contains("gpt5")),
        Parallel::Absent => None,
    };
    add_tools(&mut body, prompt.tools, parallel);
    Value::Object(body)
}

/// Adds `tools`, `tool_choice: "auto"` and `parallel_tool_calls` (when `Some`) for a
/// non-empty tool list (the reference's `getOpenAIToolParams`).
pub(crate) fn add_tools(body: &mut Map<String, Value>, tools: &[ToolSpec], parallel: Option<bool>) {
    if tools.is_empty() {
        return;
    }
    body.insert("tools".into(), function_tools(tools));
    body.insert("tool_choice".into(), json!("auto"));
    if let Some(p) = parallel {
        body.insert("parallel_tool_calls".into(), json!(p));
    }
}

/// Tools in the Chat Completions shape, `[{type: function, function: {name, description,
/// parameters}}]` (also Ollama's `/api/chat`).
pub(crate) fn function_tools(tools: &[ToolSpec]) -> Value {
    tools
        .iter()
        .map(|t| {
            json!({ "type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.input_schema } })
        })
        .collect()
}

fn image_part(source: &crate::message::ImageSource) -> Value {
    json!({
        "type": "image_url",
        "image_url": { "url": format!("data:{};base64,{}", source.media_type, source.data) },
    })
}

/// Converts Anthropic-shaped messages into Chat Completions messages (the reference's
/// `convertToOpenAiMessages`): a user message's tool results become `tool` messages first,
/// then its text and images (text alone as a string, else `text` and `image_url` parts); an
/// assistant message's text blocks are joined with a blank line and its tool uses become
/// `tool_calls`, with `content: null` when there is no text. Thinking is not sent back.
pub(crate) fn openai_messages(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::new();
    for m in messages {
        match m.role {
            Role::User => {
                let mut texts: Vec<&str> = Vec::new();
                let mut parts: Vec<Value> = Vec::new();
                let mut images = false;
                for block in &m.content {
                    match block {
                        ContentBlock::ToolResult {
                            tool_use_id,
                            content,
                            ..
                        } => out.push(
                            json!({ "role": "tool", "tool_call_id": tool_use_id, "content": content }),
                        ),
                        ContentBlock::Text { text } => {
                            texts.push(text);
                            parts.push(json!({ "type": "text", "text": text }));
                        }
                        ContentBlock::Image { source } => {
                            images = true;
                            parts.push(image_part(source));
                        }
                        _ => {}
                    }
                }
                if images {
                    out.push(json!({ "role": "user", "content": parts }));
                } else if !texts.is_empty() {
                    out.push(json!({ "role": "user", "content": texts.join("\n\n") }));
                }
            }
            Role::Assistant => {
                let mut texts: Vec<&str> = Vec::new();
                let mut tool_calls: Vec<Value> = Vec::new();
                for block in &m.content {
                    match block {
                        ContentBlock::Text { text } => texts.push(text),
                        ContentBlock::ToolUse {
                            id, name, input, ..
                        } => tool_calls.push(json!({
                            "id": id, "type": "function",
                            "function": { "name": name, "arguments": input.to_string() },
                        })),
                        _ => {}
                    }
                }
                // A blank line between blocks: the task layer keeps "[Response interrupted
                // by API Error]" as a block of its own, which the reference stores in the same
                // text after a blank line.
                let text = texts.join("\n\n");
                let content = if !text.trim().is_empty() {
                    json!(text)
                } else if !tool_calls.is_empty() {
                    Value::Null
                } else {
                    json!("")
                };
                let mut msg = json!({ "role": "assistant", "content": content });
                if !tool_calls.is_empty() {
                    msg["tool_calls"] = Value::Array(tool_calls);
                }
                out.push(msg);
            }
        }
    }
    out
}

/// True when the conversation holds a tool call or a tool result.
fn has_tool_blocks(messages: &[Message]) -> bool {
    messages.iter().flat_map(|m| &m.content).any(|b| {
        matches!(
            b,
            ContentBlock::ToolUse { .. } | ContentBlock::ToolResult { .. }
        )
    })
}

/// The R1 format (the reference's `convertToR1Format`, for DeepSeek R1 and similar): the
/// system prompt as the first user message, each message's text joined with newlines (with
/// images, a text part and `image_url` parts), and consecutive messages of one role merged
/// (strings with a newline, else their parts).
pub(crate) fn r1_messages(system_prompt: &str, messages: &[Message]) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::new();
    let system = [Message::user_text(system_prompt)];
    for m in system.iter().chain(messages) {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let mut texts: Vec<&str> = Vec::new();
        let mut images: Vec<Value> = Vec::new();
        for block in &m.content {
            match block {
                ContentBlock::Text { text } => texts.push(text),
                ContentBlock::Image { source } => images.push(image_part(source)),
                _ => {}
            }
        }
        let content = if images.is_empty() {
            json!(texts.join("\n"))
        } else {
            let mut parts = Vec::new();
            if !texts.is_empty() {
                parts.push(json!({ "type": "text", "text": texts.join("\n") }));
            }
            parts.extend(images);
            Value::Array(parts)
        };
        match merged.last_mut() {
            Some(last) if last["role"] == role => {
                let previous = last["content"].take();
                last["content"] = match (previous, content) {
                    (Value::String(a), Value::String(b)) => json!(format!("{a}\n{b}")),
                    (a, b) => {
                        let as_parts = |v: Value| match v {
                            Value::Array(parts) => parts,
                            other => vec![
                                json!({ "type": "text", "text": other.as_str().unwrap_or("") }),
                            ],
                        };
                        let mut parts = as_parts(a);
                        parts.extend(as_parts(b));
                        Value::Array(parts)
                    }
                };
            }
            _ => merged.push(json!({ "role": role, "content": content })),
        }
    }
    merged
}

/// DeepSeek's reasoner: the thinking of each assistant message of the current turn (after
/// the last user message) goes back as `reasoning_content`, as its API asks during tool use
/// (the reference's `addReasoningContent`). `wire` is the converted conversation, system
/// message first.
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

/// Where a cache mark goes in a user message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CachePoint {
    /// On the last text part, adding a `"..."` text part when there is none (OpenRouter and
    /// the Vercel gateway).
    LastText,
    /// On the last part, whatever it is (LiteLLM).
    LastPart,
}

/// Prompt-caching marks (`cache_control: ephemeral`) on the system message (as one text part)
/// and on the last two user messages, their content made parts (SPEC R4.3's placement, the
/// reference's for OpenRouter, the Vercel gateway and LiteLLM).
pub(crate) fn mark_cache_points(messages: &mut [Value], point: CachePoint) {
    let ephemeral = json!({ "type": "ephemeral" });
    if let Some(system) = messages.first_mut().filter(|m| m["role"] == "system") {
        let text = system["content"].take();
        system["content"] = json!([{ "type": "text", "text": text, "cache_control": ephemeral }]);
    }
    let users: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m["role"] == "user")
        .map(|(i, _)| i)
        .rev()
        .take(2)
        .collect();
    for i in users {
        let content = &mut messages[i]["content"];
        if let Value::String(text) = content {
            *content = json!([{ "type": "text", "text": text }]);
        }
        let Some(parts) = content.as_array_mut() else {
            continue;
        };
        let target = match point {
            CachePoint::LastText => match parts.iter().rposition(|p| p["type"] == "text") {
                Some(j) => j,
                None => {
                    parts.push(json!({ "type": "text", "text": "..." }));
                    parts.len() - 1
                }
            },
            CachePoint::LastPart => match parts.len().checked_sub(1) {
                Some(j) => j,
                None => continue,
            },
        };
        parts[target]["cache_control"] = ephemeral.clone();
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

    #[test]
    fn r1_format_merges_roles_and_puts_the_system_prompt_first() {
        let messages = [
            Message::user_text("a"),
            Message::user_text("b"),
            Message::assistant_text("c"),
        ];
        assert_eq!(
            r1_messages("SYS", &messages),
            vec![
                json!({"role": "user", "content": "SYS\na\nb"}),
                json!({"role": "assistant", "content": "c"}),
            ]
        );
    }

    #[test]
    fn cache_marks_go_on_the_system_prompt_and_the_last_two_user_messages() {
        let mut messages = vec![
            json!({"role": "system", "content": "S"}),
            json!({"role": "user", "content": "u1"}),
            json!({"role": "assistant", "content": "a"}),
            json!({"role": "user", "content": "u2"}),
            json!({"role": "tool", "tool_call_id": "t", "content": "r"}),
            json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}),
        ];
        mark_cache_points(&mut messages, CachePoint::LastText);
        let mark = json!({"type": "ephemeral"});
        assert_eq!(messages[0]["content"][0]["cache_control"], mark);
        assert_eq!(messages[1]["content"], "u1");
        assert_eq!(messages[3]["content"][0]["cache_control"], mark);
        // No text part: a "..." part carries the mark.
        assert_eq!(
            messages[5]["content"][1],
            json!({"type": "text", "text": "...", "cache_control": mark})
        );
    }
}
