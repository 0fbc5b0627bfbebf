//! Reasoning in a Chat Completions delta (SPEC R4.4, R4.5): the fields that carry it
//! (`reasoning_content`, `reasoning`, `reasoning_details`) and the typed content parts of
//! Mistral's Magistral.

use serde_json::Value;

use super::view::ChunkView;
use crate::providers::mapper::Chunks;
use crate::providers::think_tags::ThinkSplitter;
use crate::stream::ApiStreamChunk;

/// Reasoning, from the first field that carries it: `reasoning_content` (DeepSeek, vLLM,
/// Z.ai, xAI), `reasoning` (OpenRouter, Ollama), or the text of `reasoning_details`
/// (OpenRouter). Some servers send the same text in two of them; it is shown once.
/// `reasoning_details` also carry signatures and encrypted reasoning, kept for replay.
pub(super) fn on_reasoning(c: &ChunkView<'_>, out: &mut Chunks) {
    let details = c
        .reasoning_details
        .filter(|d| d.as_array().is_some_and(|a| !a.is_empty()));
    let reasoning_text = c
        .reasoning_content
        .filter(|s| !s.is_empty())
        .or(c.reasoning.filter(|s| !s.is_empty()));
    if let Some(r) = reasoning_text {
        out.push(Ok(ApiStreamChunk::Reasoning {
            reasoning: r.to_owned(),
            details: details.cloned(),
            signature: None,
            redacted_data: None,
            id: None,
        }));
    }
    for d in details.and_then(Value::as_array).into_iter().flatten() {
        let text = d
            .get("text")
            .or_else(|| d.get("summary"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let signature = d
            .get("signature")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let encrypted = (d.get("type").and_then(Value::as_str) == Some("reasoning.encrypted"))
            .then(|| d.get("data").and_then(Value::as_str))
            .flatten();
        if reasoning_text.is_none() && text.is_some() {
            out.push(Ok(ApiStreamChunk::Reasoning {
                reasoning: text.unwrap_or_default().to_owned(),
                details: Some(d.clone()),
                signature: signature.map(str::to_owned),
                redacted_data: None,
                id: None,
            }));
        } else if signature.is_some() || encrypted.is_some() {
            out.push(Ok(ApiStreamChunk::Reasoning {
                reasoning: String::new(),
                details: Some(d.clone()),
                signature: signature.map(str::to_owned),
                redacted_data: encrypted.map(str::to_owned),
                id: None,
            }));
        }
    }
}

/// `delta.content` as an array of typed parts (Mistral's Magistral, tests/cases C47):
/// `text` parts are text, `thinking` parts (a string, or parts of their own) reasoning.
pub(super) fn on_content_parts(think: &mut ThinkSplitter, parts: &[Value], out: &mut Chunks) {
    for part in parts {
        match part.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = part.get("text").and_then(Value::as_str) {
                    think.push(t, out);
                }
            }
            Some("thinking" | "reasoning") => {
                let inner = part.get("thinking").or_else(|| part.get("reasoning"));
                let text = match inner {
                    Some(Value::String(t)) => t.clone(),
                    Some(Value::Array(items)) => items
                        .iter()
                        .filter_map(|i| i.get("text").and_then(Value::as_str))
                        .collect(),
                    _ => String::new(),
                };
                if !text.is_empty() {
                    out.push(Ok(ApiStreamChunk::reasoning(text)));
                }
            }
            _ => {} // images, references and future part types
        }
    }
}
