//! A Chat Completions request body read into one [`GatewayRequest`]. Unknown fields are
//! ignored, and so are harmless ones; fields the gateway cannot carry and that change the
//! answer when left out are named in `dropped`.
//! Spec: R14.1, R14.2, R14.5.

use serde_json::{Value, json};
use switchyard_api::{ContentBlock, ReasoningEffort, RequestOverrides, ToolChoice, ToolSpec};

use super::super::fields::{
    Object, as_object, element, get, member, note_dropped, opt_array, opt_bool, opt_f64,
    opt_object, opt_str, opt_u64, req_str, wrong_kind,
};
use super::super::openai;
use super::super::request::{GatewayRequest, IngressError};
use super::messages;

/// Parses a Chat Completions request body.
pub(crate) fn parse_request(body: &[u8]) -> Result<GatewayRequest, IngressError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| IngressError::new("body", format!("is not valid JSON ({e}).")))?;
    let obj = as_object(&value, "body")?;
    let model = req_str(obj, "model", "")?.to_owned();
    let messages = opt_array(obj, "messages", "")?
        .filter(|m| !m.is_empty())
        .ok_or_else(|| IngressError::new("messages", "must hold at least one message."))?;
    let mut dropped = Vec::new();
    let conversation = messages::conversation(messages, &mut dropped)?;
    // Messages whose content is all empty leave nothing to send, and a provider would answer
    // 400. So do blank text, since an assistant's is sent as "", and reasoning alone: a Chat
    // message's reasoning is unsigned thinking, never a turn of its own.
    let sendable = (conversation.messages.iter().flat_map(|m| &m.content)).any(|b| match b {
        ContentBlock::Text { text } => !text.trim().is_empty(),
        ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => false,
        _ => true,
    });
    if !sendable && conversation.system_prompt.is_empty() {
        return Err(IngressError::new(
            "messages",
            "hold no text, image or tool content to send: give at least one message content.",
        ));
    }
    let tools = tools(obj, &mut dropped)?;
    let mut overrides = overrides(obj, &mut dropped)?;
    overrides.cache = conversation.cache;
    overrides.cache.key = opt_str(obj, "prompt_cache_key", "")?.map(str::to_owned);
    overrides.cache.retention = opt_str(obj, "prompt_cache_retention", "")?.map(str::to_owned);
    // Anthropic refuses a fifth breakpoint, so extras are named rather than sent.
    if overrides.cache.limit() {
        note_dropped(&mut dropped, "cache_control");
    }
    let stream = opt_bool(obj, "stream", "")?.unwrap_or(false);
    let include_usage = match opt_object(obj, "stream_options", "")? {
        Some(options) => opt_bool(options, "include_usage", "stream_options")?.unwrap_or(false),
        None => false,
    };
    for (name, changes_meaning) in CHANGE_MEANING {
        if get(obj, name).is_some_and(changes_meaning) {
            note_dropped(&mut dropped, name);
        }
    }
    Ok(GatewayRequest {
        model,
        system_prompt: conversation.system_prompt,
        messages: conversation.messages,
        tools,
        client_tools: Vec::new(),
        overrides,
        stream,
        include_usage,
        store: false,
        previous_response_id: None,
        dropped,
        ..GatewayRequest::default()
    })
}

/// Whether a parameter's value changes the answer when the parameter is left out.
type ChangesMeaning = fn(&Value) -> bool;

/// Parameters Switchyard's layer cannot carry, each with the test of whether the client's
/// value changes the answer. OpenAI's defaults do not.
const CHANGE_MEANING: &[(&str, ChangesMeaning)] = &[
    ("n", |v| v.as_u64() != Some(1)),
    ("logprobs", |v| v.as_bool() != Some(false)),
    ("top_logprobs", |v| v.as_u64() != Some(0)),
    ("response_format", |v| {
        v.get("type").and_then(Value::as_str) != Some("text")
    }),
    ("seed", |_| true),
    ("frequency_penalty", |v| v.as_f64() != Some(0.0)),
    ("presence_penalty", |v| v.as_f64() != Some(0.0)),
    ("logit_bias", |v| {
        v.as_object().is_none_or(|m| !m.is_empty())
    }),
    ("parallel_tool_calls", |v| v.as_bool() == Some(false)),
    ("functions", |v| v.as_array().is_none_or(|a| !a.is_empty())),
    ("function_call", |_| true),
    ("modalities", |v| {
        v.as_array()
            .is_none_or(|a| a.iter().any(|m| m.as_str() != Some("text")))
    }),
    ("audio", |_| true),
    ("web_search_options", |_| true),
    ("verbosity", |_| true),
];

/// `tools[]`: function tools become [`ToolSpec`]s. Tools of other types are dropped as
/// `tools[i].type=KIND`, and a function's `strict: true` as `strict`.
fn tools(obj: &Object, dropped: &mut Vec<String>) -> Result<Vec<ToolSpec>, IngressError> {
    let mut out = Vec::new();
    for (i, tool) in opt_array(obj, "tools", "")?
        .into_iter()
        .flatten()
        .enumerate()
    {
        let path = element("tools", i);
        let tool = as_object(tool, &path)?;
        let kind = req_str(tool, "type", &path)?;
        if kind != "function" {
            note_dropped(dropped, &format!("{path}.type={kind}"));
            continue;
        }
        let function_path = member(&path, "function");
        let function = opt_object(tool, "function", &path)?
            .ok_or_else(|| IngressError::new(&function_path, "is required in a function tool."))?;
        if opt_bool(function, "strict", &function_path)? == Some(true) {
            note_dropped(dropped, "strict");
        }
        let input_schema = match opt_object(function, "parameters", &function_path)? {
            Some(schema) => Value::Object(schema.clone()),
            None => json!({"type": "object", "properties": {}}),
        };
        out.push(ToolSpec {
            name: req_str(function, "name", &function_path)?.to_owned(),
            description: opt_str(function, "description", &function_path)?
                .unwrap_or_default()
                .to_owned(),
            input_schema,
        });
    }
    Ok(out)
}

/// The output limit, sampling, stop sequences, tool choice and reasoning the client set.
fn overrides(obj: &Object, dropped: &mut Vec<String>) -> Result<RequestOverrides, IngressError> {
    let max_tokens = match opt_u64(obj, "max_completion_tokens", "")? {
        Some(n) => Some((n, "max_completion_tokens")),
        None => opt_u64(obj, "max_tokens", "")?.map(|n| (n, "max_tokens")),
    };
    if let Some((0, field)) = max_tokens {
        return Err(IngressError::new(field, "must be at least 1."));
    }
    let (reasoning_effort, thinking_budget_tokens) = reasoning(obj)?;
    Ok(RequestOverrides {
        max_tokens: max_tokens.map(|(n, _)| n),
        temperature: in_range(obj, "temperature", 2.0)?,
        top_p: in_range(obj, "top_p", 1.0)?,
        stop: stop(obj)?,
        tool_choice: tool_choice(obj, dropped)?,
        reasoning_effort,
        thinking_budget_tokens,
        ..RequestOverrides::default()
    })
}

/// A number between 0 and `max`, when present.
fn in_range(obj: &Object, key: &str, max: f64) -> Result<Option<f64>, IngressError> {
    match opt_f64(obj, key, "")? {
        Some(x) if !(0.0..=max).contains(&x) => Err(IngressError::new(
            key,
            format!("must be between 0 and {max} (got {x})."),
        )),
        other => Ok(other),
    }
}

/// `stop`: one string or an array of strings; empty strings are left out.
fn stop(obj: &Object) -> Result<Vec<String>, IngressError> {
    let strings = match get(obj, "stop") {
        None => return Ok(Vec::new()),
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.as_str()
                    .ok_or_else(|| wrong_kind(&element("stop", i), "a string", s))
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(wrong_kind("stop", "a string or an array of strings", other)),
    };
    Ok(strings
        .into_iter()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect())
}

/// `tool_choice`: a mode or a function by name. `allowed_tools` and custom-tool choices
/// cannot be carried and are dropped as `tool_choice`.
fn tool_choice(
    obj: &Object,
    dropped: &mut Vec<String>,
) -> Result<Option<ToolChoice>, IngressError> {
    let choice = match get(obj, "tool_choice") {
        None => return Ok(None),
        Some(Value::String(s)) => openai::tool_choice(s).ok_or_else(|| {
            IngressError::new(
                "tool_choice",
                format!("must be auto, none, required or a function (got `{s}`)."),
            )
        })?,
        Some(Value::Object(choice)) => {
            if req_str(choice, "type", "tool_choice")? != "function" {
                note_dropped(dropped, "tool_choice");
                return Ok(None);
            }
            let function = opt_object(choice, "function", "tool_choice")?.ok_or_else(|| {
                IngressError::new("tool_choice.function", "is required with type function.")
            })?;
            ToolChoice::Tool(req_str(function, "name", "tool_choice.function")?.to_owned())
        }
        Some(other) => return Err(wrong_kind("tool_choice", "a string or an object", other)),
    };
    Ok(Some(choice))
}

/// `reasoning_effort`, `minimal` carried as `low`, else OpenRouter's `reasoning`; a
/// `thinking` object, as LiteLLM accepts it for Claude models, sets the budget.
fn reasoning(obj: &Object) -> Result<(Option<ReasoningEffort>, Option<u64>), IngressError> {
    let openrouter = opt_object(obj, "reasoning", "")?;
    let effort = match opt_str(obj, "reasoning_effort", "")? {
        Some(effort) => Some(effort_of(effort, "reasoning_effort")?),
        None => match openrouter {
            Some(r) => opt_str(r, "effort", "reasoning")?
                .map(|e| effort_of(e, "reasoning.effort"))
                .transpose()?,
            None => None,
        },
    };
    let mut budget = match openrouter {
        Some(r) => opt_u64(r, "max_tokens", "reasoning")?,
        None => None,
    };
    if let Some(thinking) = opt_object(obj, "thinking", "")? {
        budget = match opt_str(thinking, "type", "thinking")? {
            Some("disabled") => Some(0),
            _ => opt_u64(thinking, "budget_tokens", "thinking")?.or(budget),
        };
    }
    Ok((effort, budget))
}

fn effort_of(effort: &str, field: &str) -> Result<ReasoningEffort, IngressError> {
    openai::effort(effort).ok_or_else(|| {
        IngressError::new(
            field,
            format!("must be none, minimal, low, medium, high or xhigh (got `{effort}`)."),
        )
    })
}
