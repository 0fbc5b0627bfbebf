//! Faithful forwarding: a client's own body in a provider's dialect, sent with only what the route
//! decides changed, and the provider's events given back beside the chunks mapped from them.
//! Unknown fields, `cache_control`, server tools and signatures go as the client sent them.
//! Spec: R14.2, R14.3.

use serde_json::{Map, Value, json};

use crate::config::ReasoningEffort;
use crate::error::ApiError;
use crate::handler::{ForwardDialect, RequestOverrides};
use crate::providers::resolve::ResolvedMode;
use crate::stream::{ApiStreamChunk, WireEvent};
use crate::transport::EventParser;
use crate::wire::Framing;

/// `body` as sent for `mode` with `model`, the provider's own id. `stream` is set so the answer is
/// read as written, the gateway collecting it for a client that asked for one JSON body; the limit
/// and reasoning change only as `overrides` and the route say.
pub(crate) fn prepare(
    dialect: ForwardDialect,
    body: &mut Map<String, Value>,
    model: Value,
    mode: &ResolvedMode,
    overrides: &RequestOverrides,
) {
    // Gemini's URL names the model and the streaming method, so its body has neither.
    if dialect != ForwardDialect::Gemini {
        body.insert("model".into(), model);
        body.insert("stream".into(), json!(true));
    }
    match dialect {
        ForwardDialect::AnthropicMessages => prepare_messages(body, mode, overrides),
        ForwardDialect::ChatCompletions => prepare_chat(body, mode, overrides),
        ForwardDialect::Gemini => prepare_gemini(body, mode, overrides),
    }
}

fn prepare_messages(body: &mut Map<String, Value>, mode: &ResolvedMode, o: &RequestOverrides) {
    if let Some(max) = o.max_tokens {
        body.insert("max_tokens".into(), json!(max));
    }
    let max = body.get("max_tokens").and_then(Value::as_u64);
    let budget = o
        .thinking_budget_tokens
        .unwrap_or(mode.thinking_budget_tokens);
    let thinking = body.get_mut("thinking").and_then(Value::as_object_mut);
    let kind = thinking
        .as_ref()
        .and_then(|t| t.get("type"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    match (thinking, kind.as_deref()) {
        (Some(thinking), Some("enabled")) => {
            let asked = thinking.get("budget_tokens").and_then(Value::as_u64);
            let budget = o.thinking_budget_tokens.or(asked);
            if let Some(budget) = budget {
                let fitted = max.map_or(budget, |max| budget.min(max.saturating_sub(1)));
                thinking.insert("budget_tokens".into(), json!(fitted));
            }
        }
        // `adaptive` asks the gateway for its route's thinking, as a body with none does;
        // `disabled` and other kinds go as sent.
        (None, _) | (Some(_), Some("adaptive")) if budget > 0 => {
            // Anthropic refuses a `temperature` other than 1 beside thinking, so the client's goes.
            let budget = max.map_or(budget, |max| budget.min(max.saturating_sub(1)));
            body.insert(
                "thinking".into(),
                json!({ "type": "enabled", "budget_tokens": budget }),
            );
            body.remove("temperature");
        }
        _ => {}
    }
}

fn prepare_chat(body: &mut Map<String, Value>, mode: &ResolvedMode, o: &RequestOverrides) {
    // Without `include_usage` the stream carries no usage to bill.
    let options = body.entry("stream_options").or_insert_with(|| json!({}));
    if let Some(options) = options.as_object_mut() {
        options.insert("include_usage".into(), json!(true));
    } else {
        *options = json!({ "include_usage": true });
    }
    if let Some(max) = o.max_tokens {
        for field in ["max_completion_tokens", "max_tokens"] {
            if let Some(value) = body.get_mut(field)
                && value.is_u64()
            {
                *value = json!(max);
            }
        }
    }
    let effort = o.reasoning_effort.or(mode.reasoning_effort);
    if let Some(effort) = effort
        && !body.contains_key("reasoning_effort")
        && effort.as_str() != "none"
    {
        body.insert("reasoning_effort".into(), json!(effort.as_str()));
    }
}

/// A Gemini body's `generationConfig`: its output limit fitted, its thinking budget below it, and
/// the route's thinking where the body sets none.
fn prepare_gemini(body: &mut Map<String, Value>, mode: &ResolvedMode, o: &RequestOverrides) {
    let route = route_thinking(mode);
    let config = match body.get_mut("generationConfig") {
        Some(Value::Object(config)) => config,
        // A config that is no object goes as it came, for Google to refuse.
        Some(_) => return,
        None if route.is_some() => {
            body.insert("generationConfig".into(), json!({}));
            let Some(Value::Object(config)) = body.get_mut("generationConfig") else {
                return;
            };
            config
        }
        None => return,
    };
    if let Some(max) = o.max_tokens
        && config.get("maxOutputTokens").is_some_and(Value::is_u64)
    {
        config.insert("maxOutputTokens".into(), json!(max));
    }
    match config
        .get_mut("thinkingConfig")
        .and_then(Value::as_object_mut)
    {
        Some(thinking) => {
            // A budget of 0 turns thinking off and -1 lets the model decide: both go as sent.
            let set = thinking.get("thinkingBudget").and_then(Value::as_u64);
            if let (Some(budget), Some(1..)) = (o.thinking_budget_tokens, set) {
                thinking.insert("thinkingBudget".into(), json!(budget));
            }
        }
        None => {
            if let Some(route) = route {
                config.insert("thinkingConfig".into(), route);
            }
        }
    }
}

/// The route's thinking as Gemini takes it: a level for Gemini 3, else a budget; no thoughts are
/// asked for, since the client asked for none.
fn route_thinking(mode: &ResolvedMode) -> Option<Value> {
    if mode.model_id.contains("gemini-3") {
        let level = match mode.reasoning_effort? {
            ReasoningEffort::None | ReasoningEffort::Low => "low",
            _ => "high",
        };
        return Some(json!({ "thinkingLevel": level }));
    }
    (mode.thinking_budget_tokens > 0)
        .then(|| json!({ "thinkingBudget": mode.thinking_budget_tokens }))
}

/// The caller's `extra` headers with the provider's own `anthropic-beta` flags joined in, each
/// once, as a `:1m` model's flag must go with the client's; other extra headers replace the
/// provider's.
pub(crate) fn merge_headers(own: &[(String, String)], extra: &mut [(String, String)]) {
    for (name, value) in extra.iter_mut() {
        if !name.eq_ignore_ascii_case("anthropic-beta") {
            continue;
        }
        let theirs = own.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name));
        let mut flags: Vec<&str> = theirs
            .flat_map(|(_, v)| v.split(','))
            .map(str::trim)
            .collect();
        flags.extend(value.split(',').map(str::trim));
        let mut seen = std::collections::HashSet::new();
        flags.retain(|f| !f.is_empty() && seen.insert(*f));
        *value = flags.join(",");
    }
}

/// A provider's stream mapper that also gives each event as it came, after its chunks. An event
/// whose mapping is an error, or after the answer failed, is not given: the gateway answers the
/// error its own way.
/// Spec: R14.4.
pub(crate) struct Forwarding<P> {
    inner: P,
}

impl<P> Forwarding<P> {
    pub(crate) fn new(inner: P) -> Self {
        Self { inner }
    }
}

impl<P: EventParser> EventParser for Forwarding<P> {
    type Event = P::Event;

    fn on_event(
        &mut self,
        event: <P::Event as Framing>::Item<'_>,
        out: &mut Vec<Result<ApiStreamChunk, ApiError>>,
    ) {
        let bytes = <P::Event as Framing>::reframe(&event);
        let before = out.len();
        self.inner.on_event(event, out);
        // Chat's `finish_reason: "error"` and the `[DONE]` after it would tell the client the
        // answer ended well.
        if out[before..].iter().any(Result::is_err) || self.inner.failing() {
            return;
        }
        if let Some(bytes) = bytes {
            out.push(Ok(ApiStreamChunk::Wire(WireEvent {
                bytes: bytes.into(),
                ends: false,
                held: self.inner.holds_content(),
            })));
        }
    }

    fn on_end(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        self.inner.on_end(out);
    }

    fn on_error(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        self.inner.on_error(out);
    }

    fn failing(&self) -> bool {
        self.inner.failing()
    }

    fn forwards_events(&self) -> bool {
        true
    }

    fn set_bounds(&mut self, bounds: crate::stream_guard::StreamBounds) {
        self.inner.set_bounds(bounds);
    }

    fn holds_content(&self) -> bool {
        self.inner.holds_content()
    }
}

#[cfg(test)]
mod tests;
