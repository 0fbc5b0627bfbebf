//! The registry of the process's secrets, and the automaton over them that every scrub uses.

use std::sync::{Arc, RwLock};

use super::matcher::Matcher;

/// What a secret is replaced by.
pub const REDACTED: &str = "[redacted]";

/// Secrets shorter than this in bytes are not registered: hiding every `x` because someone set
/// `API_KEY=x` would ruin the text and hide nothing.
pub const MIN_SECRET_LEN: usize = 8;

/// Registered secrets, and their automaton, rebuilt when the set changes.
struct Registry {
    secrets: Vec<Arc<str>>,
    matcher: Option<Arc<Matcher>>,
}

static REGISTRY: RwLock<Registry> = RwLock::new(Registry {
    secrets: Vec::new(),
    matcher: None,
});

/// Registers trimmed `value` as a secret to scrub from every text from now on; registering
/// twice is harmless. Scrubbers already made keep the secrets they were made with.
pub fn register(value: &str) {
    let value = value.trim();
    if value.len() < MIN_SECRET_LEN {
        return;
    }
    let mut registry = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    if registry.secrets.iter().any(|s| &**s == value) {
        return;
    }
    registry.secrets.push(Arc::from(value));
    let matcher = Matcher::new(&registry.secrets);
    if matcher.is_none() {
        tracing::error!("the automaton of the configured secrets could not be built");
    }
    registry.matcher = matcher.map(Arc::new);
}

pub fn any() -> bool {
    !REGISTRY
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .secrets
        .is_empty()
}

/// Whether every registered secret shows in JSON text as it is, with no character JSON escapes.
pub(super) fn json_plain() -> bool {
    let registry = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    (registry.secrets.iter()).all(|s| !s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20))
}

pub(super) fn matcher() -> Option<Arc<Matcher>> {
    REGISTRY
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .matcher
        .clone()
}
