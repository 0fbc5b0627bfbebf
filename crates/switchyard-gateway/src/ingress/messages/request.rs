//! An Anthropic Messages request body, as Claude Code and the SDKs send it, read into a
//! [`GatewayRequest`]; `messages[]` is read by `content.rs`.
//! Spec: R14.1, R14.2.

use serde_json::Value;
use switchyard_api::{CacheAt, CacheHints, ReasoningEffort, ToolChoice, ToolSpec};

use super::super::content::cache_ttl;
use super::super::fields::{Object, get, note_dropped, str_at, typed};
use super::super::request::{GatewayRequest, IngressError};
use super::content::{mark_system, parse_messages, text_of};

/// Parses an Anthropic Messages request body; `max_tokens` is required, as Anthropic does.
pub(crate) fn parse_request(body: &[u8]) -> Result<GatewayRequest, IngressError> {
    parse(body, true)
}

/// Parses a `count_tokens` body, which Anthropic takes without `max_tokens`.
pub(crate) fn parse_count_request(body: &[u8]) -> Result<GatewayRequest, IngressError> {
    parse(body, false)
}

fn parse(body: &[u8], needs_max_tokens: bool) -> Result<GatewayRequest, IngressError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| IngressError::new("body", format!("the body is not valid JSON ({e}).")))?;
    let Value::Object(obj) = value else {
        return Err(IngressError::new("body", "the body must be a JSON object."));
    };
    let mut req = GatewayRequest {
        model: str_at(&obj, "", "model")?.to_owned(),
        ..GatewayRequest::default()
    };
    if needs_max_tokens || get(&obj, "max_tokens").is_some() {
        req.overrides.max_tokens = Some(max_tokens(&obj)?);
    }
    if let Some(system) = get(&obj, "system") {
        let text = text_of(system, "system")?;
        mark_system(system, &mut req.overrides.cache);
        push_system(&mut req.system_prompt, &text);
    }
    let parsed = parse_messages(
        get(&obj, "messages"),
        &mut req.dropped,
        &mut req.overrides.cache,
    )?;
    for text in &parsed.system {
        push_system(&mut req.system_prompt, text);
    }
    req.messages = parsed.messages;
    if let Some(tools) = get(&obj, "tools") {
        req.tools = parse_tools(tools, &mut req.dropped, &mut req.overrides.cache)?;
    }
    if let Some(choice) = get(&obj, "tool_choice") {
        req.overrides.tool_choice = Some(parse_tool_choice(choice, &mut req.dropped)?);
    }
    parse_sampling(&obj, &mut req)?;
    if let Some(thinking) = get(&obj, "thinking") {
        req.overrides.thinking_budget_tokens = parse_thinking(thinking)?;
    }
    if let Some(config) = get(&obj, "output_config") {
        parse_output_config(config, &mut req)?;
    }
    req.stream = typed(&obj, "stream", Value::as_bool)
        .map_err(|_| IngressError::new("stream", "must be true or false."))?
        .unwrap_or(false);
    // `speed` and `inference_geo` are parameters of the Anthropic SDKs that no provider of a
    // route takes.
    for name in [
        "context_management",
        "mcp_servers",
        "container",
        "service_tier",
        "speed",
        "inference_geo",
    ] {
        if get(&obj, name).is_some() {
            note_dropped(&mut req.dropped, name);
        }
    }
    // Anthropic refuses a fifth breakpoint, so extras are named rather than sent.
    if req.overrides.cache.limit() {
        note_dropped(&mut req.dropped, "cache_control");
    }
    Ok(req)
}

fn push_system(prompt: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    if !prompt.is_empty() {
        prompt.push_str("\n\n");
    }
    prompt.push_str(text);
}

fn max_tokens(obj: &Object) -> Result<u64, IngressError> {
    match get(obj, "max_tokens") {
        None => Err(IngressError::new(
            "max_tokens",
            "is required: the most output tokens, a positive integer (Anthropic's Messages API requires it).",
        )),
        Some(v) => v
            .as_u64()
            .filter(|&n| n > 0)
            .ok_or_else(|| IngressError::new("max_tokens", "must be a positive integer (tokens).")),
    }
}

/// `temperature`, `top_p`, `stop_sequences`; `top_k` cannot be carried.
fn parse_sampling(obj: &Object, req: &mut GatewayRequest) -> Result<(), IngressError> {
    let number = |key: &str| {
        typed(obj, key, Value::as_f64).map_err(|_| IngressError::new(key, "must be a number."))
    };
    req.overrides.temperature = number("temperature")?;
    req.overrides.top_p = number("top_p")?;
    if get(obj, "top_k").is_some() {
        note_dropped(&mut req.dropped, "top_k");
    }
    if let Some(stops) = get(obj, "stop_sequences") {
        let Value::Array(items) = stops else {
            return Err(IngressError::new(
                "stop_sequences",
                "must be an array of strings.",
            ));
        };
        for (i, item) in items.iter().enumerate() {
            let s = item.as_str().ok_or_else(|| {
                IngressError::new(format!("stop_sequences[{i}]"), "must be a string.")
            })?;
            req.overrides.stop.push(s.to_owned());
        }
    }
    Ok(())
}

/// `tools[]`: custom tools; server tools are named in `dropped` by their type, since
/// Switchyard's providers run function tools only.
fn parse_tools(
    tools: &Value,
    dropped: &mut Vec<String>,
    cache: &mut CacheHints,
) -> Result<Vec<ToolSpec>, IngressError> {
    let Value::Array(items) = tools else {
        return Err(IngressError::new("tools", "must be an array of tools."));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, tool) in items.iter().enumerate() {
        let path = format!("tools[{i}]");
        let Value::Object(t) = tool else {
            return Err(IngressError::new(path, "must be an object."));
        };
        match get(t, "type").map(|v| v.as_str()) {
            None | Some(Some("custom")) => {}
            Some(Some(kind)) => {
                note_dropped(dropped, kind);
                continue;
            }
            Some(None) => {
                return Err(IngressError::new(
                    format!("{path}.type"),
                    "must be a string.",
                ));
            }
        }
        let name = str_at(t, &path, "name")?.to_owned();
        let description = typed(t, "description", Value::as_str)
            .map_err(|_| IngressError::new(format!("{path}.description"), "must be a string."))?
            .unwrap_or_default()
            .to_owned();
        let input_schema = match get(t, "input_schema") {
            Some(schema @ Value::Object(_)) => schema.clone(),
            _ => {
                return Err(IngressError::new(
                    format!("{path}.input_schema"),
                    "is required: the JSON Schema object of the tool's input.",
                ));
            }
        };
        if let Some(ttl) = cache_ttl(t) {
            cache.mark(CacheAt::Tool(out.len()), ttl);
        }
        if t.get("strict").and_then(Value::as_bool) == Some(true) {
            note_dropped(dropped, "strict");
        }
        out.push(ToolSpec {
            name,
            description,
            input_schema,
        });
    }
    Ok(out)
}

/// `tool_choice`; `disable_parallel_tool_use: true` cannot be carried.
fn parse_tool_choice(
    choice: &Value,
    dropped: &mut Vec<String>,
) -> Result<ToolChoice, IngressError> {
    let Value::Object(c) = choice else {
        return Err(IngressError::new(
            "tool_choice",
            "must be an object such as {\"type\": \"auto\"}.",
        ));
    };
    if c.get("disable_parallel_tool_use").and_then(Value::as_bool) == Some(true) {
        note_dropped(dropped, "disable_parallel_tool_use");
    }
    match str_at(c, "tool_choice", "type")? {
        "auto" => Ok(ToolChoice::Auto),
        "any" => Ok(ToolChoice::Required),
        "none" => Ok(ToolChoice::None),
        "tool" => Ok(ToolChoice::Tool(
            str_at(c, "tool_choice", "name")?.to_owned(),
        )),
        other => Err(IngressError::new(
            "tool_choice.type",
            format!("`{other}` is not one of auto, any, tool, none."),
        )),
    }
}

/// `thinking`: `enabled` sets its budget, `disabled` a budget of 0, and Claude Code's
/// `adaptive` keeps the route's default.
fn parse_thinking(thinking: &Value) -> Result<Option<u64>, IngressError> {
    let Value::Object(t) = thinking else {
        return Err(IngressError::new(
            "thinking",
            "must be an object such as {\"type\": \"enabled\", \"budget_tokens\": 2048}.",
        ));
    };
    match str_at(t, "thinking", "type")? {
        "enabled" => match get(t, "budget_tokens").and_then(Value::as_u64) {
            Some(n) => Ok(Some(n)),
            None => Err(IngressError::new(
                "thinking.budget_tokens",
                "is required with `enabled`: the thinking budget, a positive integer of tokens.",
            )),
        },
        "disabled" => Ok(Some(0)),
        "adaptive" => Ok(None),
        other => Err(IngressError::new(
            "thinking.type",
            format!("`{other}` is not one of enabled, disabled, adaptive."),
        )),
    }
}

/// `output_config`, which Claude Code sends with the `effort` beta: its `effort` is the
/// reasoning effort, `max` read as `xhigh`; a `format` cannot be carried.
fn parse_output_config(config: &Value, req: &mut GatewayRequest) -> Result<(), IngressError> {
    let Value::Object(c) = config else {
        return Err(IngressError::new("output_config", "must be an object."));
    };
    if let Some(effort) = get(c, "effort") {
        req.overrides.reasoning_effort = Some(match effort.as_str() {
            Some("low") => ReasoningEffort::Low,
            Some("medium") => ReasoningEffort::Medium,
            Some("high") => ReasoningEffort::High,
            Some("max") => ReasoningEffort::Xhigh,
            _ => {
                return Err(IngressError::new(
                    "output_config.effort",
                    "must be one of low, medium, high, max.",
                ));
            }
        });
    }
    if get(c, "format").is_some() {
        note_dropped(&mut req.dropped, "output_config.format");
    }
    Ok(())
}
