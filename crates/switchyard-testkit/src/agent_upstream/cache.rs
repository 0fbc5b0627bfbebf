//! A provider's prompt cache as the agent upstream plays it, so a test can tell whether the
//! caching hints a client sent reached the upstream where the client put them.
//!
//! * Anthropic Messages: the prompt is read as Anthropic orders it (tools, system, then each
//!   message's blocks). Each block carrying `cache_control` ends a prefix; a prefix seen at an
//!   earlier breakpoint is read from the cache, the prefix of the last breakpoint not yet
//!   cached is written. Without a breakpoint nothing is cached, as on Anthropic's API.
//! * A Chat Completions body for a Claude model, as a router such as OpenRouter takes it, is
//!   cached as Anthropic's: at the `cache_control` marks on its messages' parts.
//! * OpenAI Chat Completions and Responses: requests with the same `prompt_cache_key` share a
//!   cache, and the prompt's common prefix with the previous request under that key is read.
//!   A request without the key reads nothing, which is stricter than OpenAI, on purpose.
//!
//! Sizes are bytes of the prompt's JSON over four, as the upstream's other usage figures.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use serde_json::Value;

use super::UpstreamDialect;

/// How many blocks before a breakpoint Anthropic checks for a cached prefix.
const LOOKBACK: usize = 20;

/// The cached prefixes and the last prompt of each cache key.
#[derive(Debug, Default)]
pub(super) struct PromptCache {
    prefixes: HashSet<u64>,
    keyed: HashMap<String, String>,
}

impl PromptCache {
    /// The tokens of `body` read from and written to the cache, in that order.
    pub(super) fn account(&mut self, dialect: UpstreamDialect, body: &Value) -> (u64, u64) {
        match dialect {
            UpstreamDialect::Messages => self.breakpoints(body),
            UpstreamDialect::ChatCompletions if is_claude(body) => self.breakpoints(body),
            UpstreamDialect::ChatCompletions | UpstreamDialect::Responses => self.keyed(body),
            UpstreamDialect::Gemini => (0, 0),
        }
    }

    fn breakpoints(&mut self, body: &Value) -> (u64, u64) {
        let mut prefix = String::new();
        // Each block boundary's prefix hash and length, and the boundaries that are breakpoints.
        let mut ends: Vec<(u64, usize)> = Vec::new();
        let mut marks: Vec<usize> = Vec::new();
        for (role, piece) in pieces(body) {
            prefix.push_str(role);
            // A string content is one text block to the provider, marked or not.
            let mut clean = match piece {
                Value::String(text) => serde_json::json!({"type": "text", "text": text}),
                other => other.clone(),
            };
            if let Some(fields) = clean.as_object_mut() {
                fields.remove("cache_control");
            }
            prefix.push_str(&clean.to_string());
            let mut h = DefaultHasher::new();
            prefix.hash(&mut h);
            ends.push((h.finish(), prefix.len()));
            if piece.get("cache_control").is_some() {
                marks.push(ends.len() - 1);
            }
        }
        // Anthropic looks back up to twenty blocks from a breakpoint for a cached prefix.
        let read = (marks.iter())
            .flat_map(|&m| &ends[m.saturating_sub(LOOKBACK)..=m])
            .filter(|(h, _)| self.prefixes.contains(h))
            .map(|(_, len)| *len)
            .max()
            .unwrap_or(0);
        let write = match marks.last().map(|&m| ends[m]) {
            Some((h, len)) if !self.prefixes.contains(&h) => len.saturating_sub(read),
            _ => 0,
        };
        self.prefixes.extend(marks.iter().map(|&m| ends[m].0));
        ((read / 4) as u64, (write / 4) as u64)
    }

    fn keyed(&mut self, body: &Value) -> (u64, u64) {
        let Some(key) = body.get("prompt_cache_key").and_then(Value::as_str) else {
            return (0, 0);
        };
        let prompt = [
            &body["instructions"],
            &body["tools"],
            &body["messages"],
            &body["input"],
        ]
        .map(Value::to_string)
        .concat();
        let common = match self.keyed.get(key) {
            Some(last) => (last.bytes().zip(prompt.bytes()))
                .take_while(|(a, b)| a == b)
                .count(),
            None => 0,
        };
        self.keyed.insert(key.to_owned(), prompt);
        ((common / 4) as u64, 0)
    }
}

fn is_claude(body: &Value) -> bool {
    body["model"].as_str().is_some_and(|m| m.contains("claude"))
}

/// The blocks of a Messages body in the order Anthropic caches them, each with its role.
fn pieces(body: &Value) -> Vec<(&'static str, &Value)> {
    let mut out = Vec::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        out.push(("tool", tool));
    }
    match &body["system"] {
        Value::Array(blocks) => out.extend(blocks.iter().map(|b| ("system", b))),
        Value::Null => {}
        text => out.push(("system", text)),
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = if message["role"] == "assistant" {
            "assistant"
        } else {
            "user"
        };
        match &message["content"] {
            Value::Array(blocks) => out.extend(blocks.iter().map(|b| (role, b))),
            text => out.push((role, text)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn turn(texts: &[&str], mark_last: bool) -> Value {
        let mut messages: Vec<Value> = (texts.iter())
            .map(|t| json!({"role": "user", "content": [{"type": "text", "text": t}]}))
            .collect();
        if mark_last {
            if let Some(last) = messages.last_mut() {
                last["content"][0]["cache_control"] = json!({"type": "ephemeral"});
            }
        }
        json!({"system": "s", "messages": messages})
    }

    #[test]
    fn a_breakpoint_is_written_then_read_and_none_caches_nothing() {
        let mut cache = PromptCache::default();
        let (read, write) = cache.account(UpstreamDialect::Messages, &turn(&["a"], true));
        assert_eq!(read, 0);
        assert!(write > 0);
        // Without a breakpoint nothing is read, though the prefix is cached.
        let (read, _) = cache.account(UpstreamDialect::Messages, &turn(&["a", "b"], false));
        assert_eq!(read, 0, "no breakpoint, no read");
        // A breakpoint after the cached prefix finds it by looking back.
        let (read, write) = cache.account(UpstreamDialect::Messages, &turn(&["a", "b"], true));
        assert!(read > 0 && write > 0, "{read} {write}");
    }

    #[test]
    fn only_a_shared_key_reads() {
        let mut cache = PromptCache::default();
        let body = |key: Option<&str>, n: usize| {
            let mut b = json!({"messages": vec![json!({"role": "user", "content": "hello"}); n]});
            if let Some(k) = key {
                b["prompt_cache_key"] = json!(k);
            }
            b
        };
        assert_eq!(
            cache
                .account(UpstreamDialect::ChatCompletions, &body(None, 1))
                .0,
            0
        );
        assert_eq!(
            cache
                .account(UpstreamDialect::ChatCompletions, &body(None, 2))
                .0,
            0
        );
        assert_eq!(
            cache
                .account(UpstreamDialect::ChatCompletions, &body(Some("k"), 1))
                .0,
            0
        );
        assert!(
            cache
                .account(UpstreamDialect::ChatCompletions, &body(Some("k"), 2))
                .0
                > 0
        );
    }
}
