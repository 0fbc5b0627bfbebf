//! Gemini's `generationConfig`: sampling, the output limit, stop sequences and thinking are
//! carried; what Switchyard's layer cannot carry is named dropped when its value would change
//! the answer.
//! Spec: R14.12, R14.2.

use serde_json::Value;
use switchyard_api::ReasoningEffort;

use super::super::fields::{
    Object, element, get, member, note_dropped, opt_array, opt_bool, opt_f64, opt_object, opt_str,
    opt_u64, typed, wrong_kind,
};
use super::super::request::{GatewayRequest, IngressError};

/// Whether a parameter's value changes the answer when the parameter is left out.
type ChangesMeaning = fn(&Value) -> bool;

/// Parameters Switchyard's layer cannot carry, each with the test of whether the client's
/// value changes the answer. Google's defaults do not.
const CHANGE_MEANING: &[(&str, ChangesMeaning)] = &[
    ("topK", |_| true),
    ("candidateCount", |v| v.as_u64() != Some(1)),
    ("presencePenalty", |v| v.as_f64() != Some(0.0)),
    ("frequencyPenalty", |v| v.as_f64() != Some(0.0)),
    ("seed", |_| true),
    ("responseLogprobs", |v| v.as_bool() != Some(false)),
    ("logprobs", |_| true),
    ("responseMimeType", |v| v.as_str() != Some("text/plain")),
    ("responseSchema", |_| true),
    ("responseJsonSchema", |_| true),
    ("_responseJsonSchema", |_| true),
    ("responseModalities", |v| {
        v.as_array()
            .is_none_or(|a| a.iter().any(|m| m.as_str() != Some("TEXT")))
    }),
    ("speechConfig", |_| true),
    ("mediaResolution", |_| true),
    ("imageConfig", |_| true),
    ("routingConfig", |_| true),
    ("enableEnhancedCivicAnswers", |v| v.as_bool() == Some(true)),
];

/// Reads `generationConfig`, at `at`, into `req`.
pub(super) fn read(
    config: &Object,
    at: &str,
    req: &mut GatewayRequest,
) -> Result<(), IngressError> {
    let o = &mut req.overrides;
    o.temperature = opt_f64(config, "temperature", at)?;
    o.top_p = opt_f64(config, "topP", at)?;
    o.max_tokens = opt_u64(config, "maxOutputTokens", at)?;
    let stops_at = member(at, "stopSequences");
    for (i, stop) in opt_array(config, "stopSequences", at)?
        .into_iter()
        .flatten()
        .enumerate()
    {
        let stop =
            (stop.as_str()).ok_or_else(|| wrong_kind(&element(&stops_at, i), "a string", stop))?;
        o.stop.push(stop.to_owned());
    }
    if let Some(thinking) = opt_object(config, "thinkingConfig", at)? {
        read_thinking(thinking, &member(at, "thinkingConfig"), req)?;
    }
    for (name, changes) in CHANGE_MEANING {
        if get(config, name).is_some_and(changes) {
            note_dropped(&mut req.dropped, name);
        }
    }
    Ok(())
}

/// `thinkingConfig`: a budget (-1: the route's, 0: off), a level for Gemini 3, and whether the
/// client is shown the thoughts.
fn read_thinking(t: &Object, at: &str, req: &mut GatewayRequest) -> Result<(), IngressError> {
    req.hide_thoughts = opt_bool(t, "includeThoughts", at)? != Some(true);
    let budget = typed(t, "thinkingBudget", Value::as_i64).map_err(|_| {
        IngressError::new(
            member(at, "thinkingBudget"),
            "must be -1 (the model decides), 0 (off) or a number of tokens.",
        )
    })?;
    req.overrides.thinking_budget_tokens = match budget {
        None | Some(-1) => None,
        Some(n) if n >= 0 => Some(n.unsigned_abs()),
        Some(_) => {
            return Err(IngressError::new(
                member(at, "thinkingBudget"),
                "must be -1 (the model decides), 0 (off) or a number of tokens.",
            ));
        }
    };
    if let Some(level) = opt_str(t, "thinkingLevel", at)? {
        req.overrides.reasoning_effort = match level.to_ascii_uppercase().as_str() {
            "THINKING_LEVEL_UNSPECIFIED" => None,
            // The least effort Switchyard's efforts offer.
            "MINIMAL" | "LOW" => Some(ReasoningEffort::Low),
            "MEDIUM" => Some(ReasoningEffort::Medium),
            "HIGH" => Some(ReasoningEffort::High),
            _ => {
                return Err(IngressError::new(
                    member(at, "thinkingLevel"),
                    format!("`{level}` is not one of MINIMAL, LOW, MEDIUM, HIGH."),
                ));
            }
        };
    }
    Ok(())
}
