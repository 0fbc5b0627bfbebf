//! A request's [`RequestOverrides`] in each wire family's own fields, and what a body did not
//! carry, for `x-switchyard-dropped`; unset overrides change no body.
//! Spec: R14.1, R14.2.

use std::borrow::Cow;

use serde_json::{Map, Value, json};

use crate::config::ReasoningEffort;
use crate::handler::{RequestOverrides, ToolChoice};
use crate::providers::resolve::ResolvedMode;

/// A family's names of the output limit, temperature, nucleus sampling and stop sequences, in the
/// object that holds them; `stop` is `None` when the family has none.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sampling {
    pub(crate) max_tokens: &'static str,
    pub(crate) temperature: &'static str,
    pub(crate) top_p: &'static str,
    pub(crate) stop: Option<&'static str>,
}

/// Anthropic Messages, also SAP AI Core's Claude `invoke`.
pub(crate) const ANTHROPIC: Sampling = Sampling {
    max_tokens: "max_tokens",
    temperature: "temperature",
    top_p: "top_p",
    stop: Some("stop_sequences"),
};
/// Chat Completions with `max_tokens`.
pub(crate) const CHAT: Sampling = Sampling {
    max_tokens: "max_tokens",
    temperature: "temperature",
    top_p: "top_p",
    stop: Some("stop"),
};
pub(crate) const RESPONSES: Sampling = Sampling {
    max_tokens: "max_output_tokens",
    temperature: "temperature",
    top_p: "top_p",
    stop: None,
};
/// Gemini's `generationConfig`.
pub(crate) const GEMINI: Sampling = Sampling {
    max_tokens: "maxOutputTokens",
    temperature: "temperature",
    top_p: "topP",
    stop: Some("stopSequences"),
};
/// Bedrock Converse's `inferenceConfig`.
pub(crate) const CONVERSE: Sampling = Sampling {
    max_tokens: "maxTokens",
    temperature: "temperature",
    top_p: "topP",
    stop: Some("stopSequences"),
};
/// Ollama's `options`.
pub(crate) const OLLAMA: Sampling = Sampling {
    max_tokens: "num_predict",
    temperature: "temperature",
    top_p: "top_p",
    stop: Some("stop"),
};

/// Cohere's v2 chat, SAP AI Core's Cohere route.
pub(crate) const COHERE: Sampling = Sampling {
    max_tokens: "max_tokens",
    temperature: "temperature",
    top_p: "p",
    stop: Some("stop_sequences"),
};

/// Sets `o`'s limit and stop sequences in `target`, and its temperature and `top_p` if `sampling`.
pub(crate) fn apply_sampling(
    target: &mut Map<String, Value>,
    o: &RequestOverrides,
    names: Sampling,
    sampling: bool,
) {
    if let Some(n) = o.max_tokens {
        target.insert(names.max_tokens.into(), json!(n));
    }
    if sampling {
        if let Some(t) = o.temperature {
            target.insert(names.temperature.into(), json!(t));
        }
        if let Some(p) = o.top_p {
            target.insert(names.top_p.into(), json!(p));
        }
    }
    if let (Some(field), false) = (names.stop, o.stop.is_empty()) {
        target.insert(field.into(), json!(o.stop));
    }
}

/// [`apply_sampling`] on `target` when it is an object.
pub(crate) fn apply_sampling_to(
    target: &mut Value,
    o: &RequestOverrides,
    names: Sampling,
    sampling: bool,
) {
    if let Some(map) = target.as_object_mut() {
        apply_sampling(map, o, names, sampling);
    }
}

/// Claude's `top_p` with extended thinking, which it takes only from 0.95 to 1.
pub(crate) fn thinking_top_p(target: &mut Map<String, Value>, o: &RequestOverrides, field: &str) {
    if let Some(p) = o.top_p.filter(|p| (0.95..=1.0).contains(p)) {
        target.insert(field.into(), json!(p));
    }
}

/// A Chat Completions body's overrides: the limit in `max_completion_tokens` when `completion`,
/// else `max_tokens`, sampling only when `sampling`, `tool_choice` only with tools.
pub(crate) fn apply_chat(
    body: &mut Map<String, Value>,
    o: &RequestOverrides,
    completion: bool,
    sampling: bool,
) {
    if o.max_tokens.is_some() {
        body.remove("max_tokens");
        body.remove("max_completion_tokens");
    }
    if let (Some(choice), true) = (&o.tool_choice, body.contains_key("tools")) {
        body.insert("tool_choice".into(), chat_tool_choice(choice));
    }
    let max_tokens = if completion {
        "max_completion_tokens"
    } else {
        CHAT.max_tokens
    };
    apply_sampling(body, o, Sampling { max_tokens, ..CHAT }, sampling);
}

pub(crate) fn chat_tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({ "type": "function", "function": { "name": name } }),
    }
}

pub(crate) fn responses_tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Tool(name) => json!({ "type": "function", "name": name }),
        other => chat_tool_choice(other),
    }
}

/// Anthropic's `tool_choice`; `None` for a forced tool with `thinking` on, which Claude refuses.
pub(crate) fn anthropic_tool_choice(choice: &ToolChoice, thinking: bool) -> Option<Value> {
    match choice {
        ToolChoice::Auto => Some(json!({ "type": "auto" })),
        ToolChoice::None => Some(json!({ "type": "none" })),
        ToolChoice::Required | ToolChoice::Tool(_) if thinking => None,
        ToolChoice::Required => Some(json!({ "type": "any" })),
        ToolChoice::Tool(name) => Some(json!({ "type": "tool", "name": name })),
    }
}

/// Converse's `toolChoice`; `None` for `none`, which Converse lacks, or a forced tool while
/// thinking.
pub(crate) fn converse_tool_choice(choice: &ToolChoice, thinking: bool) -> Option<Value> {
    match choice {
        ToolChoice::Auto => Some(json!({ "auto": {} })),
        ToolChoice::None => None,
        ToolChoice::Required | ToolChoice::Tool(_) if thinking => None,
        ToolChoice::Required => Some(json!({ "any": {} })),
        ToolChoice::Tool(name) => Some(json!({ "tool": { "name": name } })),
    }
}

/// A request's overrides in a Bedrock Converse body, Bedrock's or SAP AI Core's: sampling in
/// `inferenceConfig` as for Anthropic and the tool choice in `toolConfig`. A choice Converse cannot
/// take removes `toolChoice`, so it defaults to auto and is reported dropped.
pub(crate) fn apply_converse(body: &mut Value, o: &RequestOverrides, thinking: bool) {
    if let Some(inference) = body["inferenceConfig"].as_object_mut() {
        apply_sampling(inference, o, CONVERSE, !thinking);
        if thinking {
            thinking_top_p(inference, o, CONVERSE.top_p);
        }
    }
    let Some(config) = body.get_mut("toolConfig").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(choice) = &o.tool_choice {
        match converse_tool_choice(choice, thinking) {
            Some(v) => config.insert("toolChoice".into(), v),
            None => config.remove("toolChoice"),
        };
    }
}

pub(crate) fn gemini_tool_config(choice: &ToolChoice) -> Value {
    let config = match choice {
        ToolChoice::Auto => json!({ "mode": "AUTO" }),
        ToolChoice::None => json!({ "mode": "NONE" }),
        ToolChoice::Required => json!({ "mode": "ANY" }),
        ToolChoice::Tool(name) => json!({ "mode": "ANY", "allowedFunctionNames": [name] }),
    };
    json!({ "functionCallingConfig": config })
}

/// `mode` with `o`'s reasoning effort and thinking budget, so each family's reasoning rules apply.
pub(crate) fn reasoning_mode<'a>(
    mode: &'a ResolvedMode,
    o: &RequestOverrides,
) -> Cow<'a, ResolvedMode> {
    if o.reasoning_effort.is_none() && o.thinking_budget_tokens.is_none() {
        return Cow::Borrowed(mode);
    }
    let mut mode = mode.clone();
    if let Some(e) = o.reasoning_effort {
        mode.reasoning_effort = Some(e);
    }
    if let Some(b) = o.thinking_budget_tokens {
        mode.thinking_budget_tokens = b;
    }
    Cow::Owned(mode)
}

/// Where the bodies carry each override, as JSON pointers; no two families share a pointer's
/// meaning.
struct Carried {
    max_tokens: &'static [&'static str],
    temperature: &'static [&'static str],
    top_p: &'static [&'static str],
    stop: &'static [&'static str],
    tool_choice: &'static [&'static str],
    /// Any of these present: the effort was sent.
    effort: &'static [&'static str],
    /// Budget-like fields, present and neither zero nor false when thinking is on.
    thinking: &'static [&'static str],
}

const CARRIED: Carried = Carried {
    max_tokens: &[
        "/max_tokens",
        "/max_completion_tokens",
        "/max_output_tokens",
        "/generationConfig/maxOutputTokens",
        "/inferenceConfig/maxTokens",
        "/options/num_predict",
    ],
    temperature: &[
        "/temperature",
        "/generationConfig/temperature",
        "/inferenceConfig/temperature",
        "/options/temperature",
    ],
    top_p: &[
        "/top_p",
        "/p",
        "/generationConfig/topP",
        "/inferenceConfig/topP",
        "/options/top_p",
    ],
    stop: &[
        "/stop",
        "/stop_sequences",
        "/generationConfig/stopSequences",
        "/inferenceConfig/stopSequences",
        "/options/stop",
    ],
    tool_choice: &[
        "/tool_choice",
        "/toolConfig/toolChoice",
        "/toolConfig/functionCallingConfig",
    ],
    effort: &[
        "/reasoning_effort",
        "/reasoning/effort",
        "/output_config/effort",
        "/verbosity",
        "/generationConfig/thinkingConfig/thinkingLevel",
    ],
    thinking: &[
        "/thinking/budget_tokens",
        "/thinking/type",
        "/thinking_budget",
        "/enable_thinking",
        "/reasoning/max_tokens",
        "/reasoning/enabled",
        "/additionalModelRequestFields/thinking/budget_tokens",
        "/generationConfig/thinkingConfig/thinkingBudget",
        "/generationConfig/thinkingConfig/thinkingLevel",
        "/generationConfig/thinkingConfig/includeThoughts",
        "/think",
    ],
};

/// The overrides of `o` that `body`, built with them and one tool, does not carry, in the client
/// spelling: sampling values as set, `stop`, `tool_choice` and the effort present, thinking as the
/// budget asks; an effort of `none` is carried by sending none.
pub(crate) fn dropped(body: &Value, o: &RequestOverrides) -> Vec<&'static str> {
    let c = &CARRIED;
    let equal = |pointers: &[&str], want: Option<f64>| {
        want.is_none_or(|w| values(body, pointers).any(|v| v.as_f64() == Some(w)))
    };
    let limit = o
        .max_tokens
        .is_none_or(|n| values(body, c.max_tokens).any(|v| v.as_u64() == Some(n)));
    let effort = match o.reasoning_effort {
        None => true,
        Some(ReasoningEffort::None) => {
            values(body, c.effort).all(|v| v == "none") && !thinking_on(body)
        }
        Some(_) => values(body, c.effort).next().is_some(),
    };
    let checks = [
        ("max_tokens", limit),
        ("temperature", equal(c.temperature, o.temperature)),
        ("top_p", equal(c.top_p, o.top_p)),
        (
            "stop",
            o.stop.is_empty() || values(body, c.stop).next().is_some(),
        ),
        (
            "tool_choice",
            o.tool_choice.is_none() || values(body, c.tool_choice).next().is_some(),
        ),
        ("reasoning_effort", effort),
        (
            "thinking",
            o.thinking_budget_tokens
                .is_none_or(|b| thinking_on(body) == (b > 0)),
        ),
    ];
    checks
        .into_iter()
        .filter(|(_, carried)| !carried)
        .map(|(name, _)| name)
        .collect()
}

fn values<'v>(body: &'v Value, pointers: &'v [&str]) -> impl Iterator<Item = &'v Value> {
    pointers
        .iter()
        .filter_map(|p| body.pointer(p))
        .filter(|v| !v.is_null())
}

/// Whether `body` asks for thinking: a budget-like field that is not zero, false or `disabled`.
fn thinking_on(body: &Value) -> bool {
    values(body, CARRIED.thinking)
        .any(|v| !(v == &json!(0) || v == &json!(false) || v == "disabled"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effort(e: ReasoningEffort) -> RequestOverrides {
        RequestOverrides {
            reasoning_effort: Some(e),
            ..RequestOverrides::default()
        }
    }

    fn budget(b: u64) -> RequestOverrides {
        RequestOverrides {
            thinking_budget_tokens: Some(b),
            ..RequestOverrides::default()
        }
    }

    #[test]
    fn an_effort_of_none_is_carried_where_nothing_reasons() {
        let quiet = json!({ "model": "m" });
        assert!(dropped(&quiet, &effort(ReasoningEffort::None)).is_empty());
        assert_eq!(
            dropped(&quiet, &effort(ReasoningEffort::High)),
            ["reasoning_effort"]
        );
        let thinking = json!({ "thinking": { "type": "enabled", "budget_tokens": 2048 } });
        assert_eq!(
            dropped(&thinking, &effort(ReasoningEffort::None)),
            ["reasoning_effort"]
        );
    }

    #[test]
    fn a_budget_is_carried_when_thinking_is_on_or_off_as_asked() {
        let off = json!({ "generationConfig": { "thinkingConfig": { "thinkingBudget": 0 } } });
        assert!(dropped(&off, &budget(0)).is_empty());
        assert_eq!(dropped(&off, &budget(2048)), ["thinking"]);
        let disabled = json!({ "thinking": { "type": "disabled" }, "enable_thinking": false });
        assert!(dropped(&disabled, &budget(0)).is_empty());
        let dynamic =
            json!({ "generationConfig": { "thinkingConfig": { "includeThoughts": true } } });
        assert_eq!(dropped(&dynamic, &budget(0)), ["thinking"]);
    }

    #[test]
    fn values_must_be_as_set_and_null_is_absent() {
        let body = json!({ "max_tokens": 100, "temperature": 0.0, "stop": null });
        let o = RequestOverrides {
            max_tokens: Some(200),
            temperature: Some(0.0),
            stop: vec!["x".into()],
            ..RequestOverrides::default()
        };
        assert_eq!(dropped(&body, &o), ["max_tokens", "stop"]);
    }

    #[test]
    fn converse_has_no_none_and_no_forced_tool_while_thinking() {
        assert_eq!(converse_tool_choice(&ToolChoice::None, false), None);
        assert_eq!(
            converse_tool_choice(&ToolChoice::Required, false),
            Some(json!({ "any": {} }))
        );
        assert_eq!(converse_tool_choice(&ToolChoice::Required, true), None);
        assert_eq!(
            anthropic_tool_choice(&ToolChoice::Auto, true),
            Some(json!({ "type": "auto" }))
        );
        assert_eq!(
            responses_tool_choice(&ToolChoice::Required),
            json!("required")
        );
    }
}
