//! The prompt-cache hints a client sent: its own cache breakpoints and OpenAI's cache key.
//! Spec: R14.2b.

use sha2::{Digest, Sha256};

use crate::message::Message;

/// The most breakpoints Anthropic and Bedrock take in one request.
pub const MAX_CACHE_MARKS: usize = 4;

/// Where a client put one cache breakpoint: the cached prefix ends after this point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheAt {
    /// The end of the tool list up to this tool.
    Tool(usize),
    /// The end of the system prompt.
    System,
    /// This block of this message, both counted in Switchyard's messages.
    Block { message: usize, block: usize },
}

/// One breakpoint with the lifetime the client asked for, such as `1h`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheMark {
    pub at: CacheAt,
    pub ttl: Option<String>,
}

/// The client's caching hints; empty when it sent none, and the provider then places its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheHints {
    /// Breakpoints in prompt order: tools, system, then messages.
    pub marks: Vec<CacheMark>,
    /// OpenAI's `prompt_cache_key`.
    pub key: Option<String>,
    /// OpenAI's `prompt_cache_retention`.
    pub retention: Option<String>,
}

impl CacheHints {
    /// Adds a breakpoint unless one is already at the same point.
    pub fn mark(&mut self, at: CacheAt, ttl: Option<String>) {
        if !self.marks.iter().any(|m| m.at == at) {
            self.marks.push(CacheMark { at, ttl });
        }
    }

    /// Puts the marks in prompt order and keeps the last [`MAX_CACHE_MARKS`], since a later
    /// breakpoint caches a longer prefix; returns whether any was dropped.
    pub fn limit(&mut self) -> bool {
        self.marks.sort_by_key(|m| match m.at {
            CacheAt::Tool(i) => (0, i, 0),
            CacheAt::System => (1, 0, 0),
            CacheAt::Block { message, block } => (2, message, block),
        });
        let extra = self.marks.len().saturating_sub(MAX_CACHE_MARKS);
        self.marks.drain(..extra);
        extra > 0
    }

    pub fn at(&self, at: &CacheAt) -> Option<&CacheMark> {
        self.marks.iter().find(|m| &m.at == at)
    }

    /// Sets OpenAI's `prompt_cache_key` and `prompt_cache_retention` in a body from the client's.
    /// A client that sent no key gets one derived from `session` when it is given.
    pub(crate) fn insert_key(
        &self,
        body: &mut serde_json::Map<String, serde_json::Value>,
        session: Option<(&str, &[Message])>,
    ) {
        let derived = || session.map(|(system, messages)| session_key(system, messages));
        if let Some(key) = self.key.clone().or_else(derived) {
            body.insert("prompt_cache_key".into(), key.into());
        }
        if let Some(retention) = &self.retention {
            body.insert("prompt_cache_retention".into(), retention.as_str().into());
        }
    }

    pub fn placed(&self) -> bool {
        !self.marks.is_empty()
    }
}

/// A cache key for a conversation: a hash of its system prompt and first message, which stay
/// the same on every turn. OpenAI sends requests under one key to the same cache machine, so
/// a session whose client sent no key still finds the prefix its last turn left.
pub fn session_key(system: &str, messages: &[Message]) -> String {
    let mut hash = Sha256::new();
    hash.update(system.as_bytes());
    if let Some(first) = messages.first() {
        // The separator keeps the system prompt's end from running into the message's start.
        hash.update([0]);
        hash.update(serde_json::to_vec(first).unwrap_or_default());
    }
    let digest = hash.finalize();
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    format!("switchyard-{hex}")
}

impl CacheMark {
    /// Anthropic's `cache_control` for this mark.
    pub fn cache_control(&self) -> serde_json::Value {
        match &self.ttl {
            Some(ttl) => serde_json::json!({ "type": "ephemeral", "ttl": ttl }),
            None => serde_json::json!({ "type": "ephemeral" }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(message: usize) -> CacheAt {
        CacheAt::Block { message, block: 0 }
    }

    #[test]
    fn limit_keeps_the_last_four_in_prompt_order() {
        let mut h = CacheHints::default();
        for at in [
            block(3),
            CacheAt::System,
            block(1),
            CacheAt::Tool(2),
            block(5),
        ] {
            h.mark(at, None);
        }
        h.mark(CacheAt::System, Some("1h".into()));
        assert!(h.limit());
        let kept: Vec<CacheAt> = h.marks.iter().map(|m| m.at.clone()).collect();
        assert_eq!(kept, [CacheAt::System, block(1), block(3), block(5)]);
        assert!(!h.limit(), "four are within the limit");
    }

    #[test]
    fn cache_control_carries_the_ttl() {
        let m = CacheMark {
            at: CacheAt::System,
            ttl: Some("1h".into()),
        };
        assert_eq!(
            m.cache_control(),
            serde_json::json!({"type": "ephemeral", "ttl": "1h"})
        );
    }
}
