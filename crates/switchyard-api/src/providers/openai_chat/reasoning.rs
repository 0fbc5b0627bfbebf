//! Reasoning in a Chat Completions delta, in whichever field carries it.
//! Spec: R4.4, R4.5.

use serde_json::Value;

use super::view::ChunkView;
use crate::providers::mapper::Chunks;
use crate::providers::think_tags::ThinkSplitter;
use crate::stream::ApiStreamChunk;

/// Reasoning from the first field that carries it, `reasoning_content`, `reasoning` or the text of
/// `reasoning_details`, so text sent in two of them shows once. A non-empty `reasoning_details`
/// array is kept whole for replay on the delta's one reasoning chunk, as the reference yields it;
/// extra signatures and encrypted parts follow in chunks of their own.
pub(super) fn on_reasoning(c: &ChunkView<'_>, out: &mut Chunks) {
    let details = c
        .reasoning_details
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty());
    let entries = details.map(Vec::as_slice).unwrap_or_default();
    let reasoning_text = c
        .reasoning_content
        .filter(|s| !s.is_empty())
        .or(c.reasoning.filter(|s| !s.is_empty()));
    let text = match reasoning_text {
        Some(r) => r.to_owned(),
        None => entries
            .iter()
            .filter_map(|d| d.get("text").or_else(|| d.get("summary")))
            .filter_map(Value::as_str)
            .collect(),
    };
    let Some(array) = c.reasoning_details.filter(|_| details.is_some()) else {
        if !text.is_empty() {
            out.push(Ok(ApiStreamChunk::reasoning(text)));
        }
        return;
    };
    let mut signatures = entries
        .iter()
        .filter_map(|d| d.get("signature").and_then(Value::as_str))
        .filter(|s| !s.is_empty());
    let mut encrypted = entries
        .iter()
        .filter(|d| d.get("type").and_then(Value::as_str) == Some("reasoning.encrypted"))
        .filter_map(|d| d.get("data").and_then(Value::as_str));
    out.push(Ok(ApiStreamChunk::Reasoning {
        reasoning: text,
        details: Some(array.clone()),
        signature: signatures.next().map(str::to_owned),
        redacted_data: encrypted.next().map(str::to_owned),
        id: None,
    }));
    for signature in signatures {
        out.push(Ok(ApiStreamChunk::reasoning_signature(signature)));
    }
    for data in encrypted {
        out.push(Ok(ApiStreamChunk::redacted_reasoning(data)));
    }
}

/// `delta.content` as typed parts, as Mistral's Magistral sends: `text` is text, `thinking`
/// reasoning.
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
