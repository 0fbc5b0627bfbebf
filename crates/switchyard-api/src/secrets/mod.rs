//! The process's secrets, and scrubbing them from text (SPEC R10.5).
//!
//! Every configured secret — each API key read from the environment or a configuration file
//! (an [`ApiKey`](crate::config::ApiKey) registers itself when made), AWS secrets, the tokens of
//! other tools' sign-ins — is registered here once it is known. Whatever Switchyard shows,
//! logs or stores passes through [`scrub`], which replaces each registered value by
//! [`REDACTED`], wherever the text came from: an error body in which a server echoes the key
//! back, an MCP server's tool result, the model's own answer. Text that arrives in pieces (a
//! stream's events) goes through a [`Scrubber`] per channel, which finds a secret split at
//! any offset across pieces ([`scrubber`]); MCP result blocks through [`scrub_joined`].
//!
//! The set is process-wide because the places that show, log and store text (the terminal,
//! the log formatter, the task store, the MCP hub) are far from the place a key is read, and a
//! key must not escape through one of them that a caller forgot to hand it to.
//!
//! Values shorter than [`MIN_SECRET_LEN`] bytes are not registered: replacing every `x` of a
//! text because someone set `API_KEY=x` would ruin the text and hide nothing worth hiding.
//!
//! What is hidden: every byte inside an occurrence of a secret; overlapping occurrences (one
//! secret containing, or overlapping, another) make one marker where the first starts.

mod matcher;
pub mod scrubber;

use std::borrow::Cow;
use std::sync::{Arc, RwLock};

use matcher::Matcher;
pub use scrubber::Scrubber;

/// What a secret is replaced by.
pub const REDACTED: &str = "[redacted]";

/// Secrets shorter than this (bytes) are not registered (see the module documentation).
pub const MIN_SECRET_LEN: usize = 8;

/// Registered secrets, and their automaton (rebuilt when the set changes).
struct Registry {
    secrets: Vec<Arc<str>>,
    matcher: Option<Arc<Matcher>>,
}

static REGISTRY: RwLock<Registry> = RwLock::new(Registry {
    secrets: Vec::new(),
    matcher: None,
});

/// Registers `value` (trimmed) as a secret to scrub from every text from now on. Values
/// shorter than [`MIN_SECRET_LEN`] bytes are ignored; registering twice is harmless.
/// Scrubbers already made keep the secrets they were made with.
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

/// True when any secret is registered.
pub fn any() -> bool {
    !REGISTRY
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .secrets
        .is_empty()
}

/// The automaton of the secrets registered now.
fn matcher() -> Option<Arc<Matcher>> {
    REGISTRY
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .matcher
        .clone()
}

/// `text` with every registered secret replaced by [`REDACTED`]; borrowed (no copy) when it
/// holds none. Cost: one pass of the secrets' automaton (with its prefilter) over `text`.
pub fn scrub(text: &str) -> Cow<'_, str> {
    match matcher().filter(|m| m.is_match(text)) {
        None => Cow::Borrowed(text),
        Some(m) => Cow::Owned(joined(&m, &[text], "")),
    }
}

/// `parts` joined by `separator`, scrubbed as if the separators were not there: a secret
/// split across two parts (an MCP result's content blocks, joined by newlines) is found and
/// hidden whole, and a separator inside it goes with it. Separators are never searched.
pub fn scrub_joined<S: AsRef<str>>(parts: &[S], separator: &str) -> String {
    let parts: Vec<&str> = parts.iter().map(AsRef::as_ref).collect();
    match matcher() {
        Some(m) => joined(&m, &parts, separator),
        None => parts.join(separator),
    }
}

/// `parts` joined by `separator`, every byte of the parts' concatenation that lies inside an
/// occurrence of a secret hidden (overlapping occurrences make one marker).
fn joined(m: &Matcher, parts: &[&str], separator: &str) -> String {
    let text: String = parts.concat();
    let mut boundaries = Vec::with_capacity(parts.len());
    let mut at = 0;
    for part in &parts[..parts.len().saturating_sub(1)] {
        at += part.len();
        boundaries.push(at);
    }
    let mut boundaries = boundaries.into_iter().peekable();
    let mut out = String::with_capacity(text.len() + separator.len() * parts.len());
    // Text from `from` to `to`, a separator at each part boundary on the way (ends included).
    let mut plain = |out: &mut String, mut from: usize, to: usize| {
        while let Some(b) = boundaries.next_if(|&b| b <= to) {
            if b < from {
                continue; // inside the marker just written
            }
            out.push_str(&text[from..b]);
            out.push_str(separator);
            from = b;
        }
        out.push_str(&text[from..to]);
    };
    let mut pos = 0;
    for (start, end) in hidden_spans(m, &text) {
        plain(&mut out, pos, start);
        out.push_str(REDACTED);
        pos = end;
    }
    plain(&mut out, pos, text.len());
    out
}

/// The byte ranges of `text` to hide, in order: every occurrence of a secret, overlapping
/// ones merged.
fn hidden_spans(m: &Matcher, text: &str) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut state = m.start();
    for (i, &byte) in text.as_bytes().iter().enumerate() {
        state = m.next(state, byte);
        found.extend(m.ending_here(state).map(|len| (i + 1 - len, i + 1)));
    }
    found.sort_unstable();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for (start, end) in found {
        match spans.last_mut() {
            Some(last) if start < last.1 => last.1 = last.1.max(end),
            _ => spans.push((start, end)),
        }
    }
    spans
}

/// Scrubs `text` in place; true when something was replaced.
pub fn scrub_in_place(text: &mut String) -> bool {
    match scrub(text) {
        Cow::Borrowed(_) => false,
        Cow::Owned(clean) => {
            *text = clean;
            true
        }
    }
}

/// Scrubs every string (keys included) of a JSON value in place; true when something was
/// replaced.
pub fn scrub_json(value: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::String(s) => scrub_in_place(s),
        Value::Array(items) => items.iter_mut().fold(false, |c, v| scrub_json(v) | c),
        Value::Object(map) => {
            let dirty: Vec<String> = map
                .keys()
                .filter(|k| matches!(scrub(k), Cow::Owned(_)))
                .cloned()
                .collect();
            let mut changed = !dirty.is_empty();
            for key in dirty {
                if let Some(v) = map.remove(&key) {
                    map.insert(scrub(&key).into_owned(), v);
                }
            }
            for v in map.values_mut() {
                changed |= scrub_json(v);
            }
            changed
        }
        _ => false,
    }
}

/// Scrubs a serialisable value by way of JSON: the value itself when it holds no secret, else
/// its scrubbed copy (`None` when it does not round-trip through JSON, which is then kept as
/// it was).
pub fn scrub_serde<T>(value: &T) -> Option<T>
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    if !any() {
        return None;
    }
    let mut json = serde_json::to_value(value).ok()?;
    if !scrub_json(&mut json) {
        return None;
    }
    serde_json::from_value(json).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_every_registered_secret_longest_first() {
        register("sk-scrub-test-aaaaaaaa");
        register("sk-scrub-test-aaaaaaaa-longer");
        register("short");
        let text = "key sk-scrub-test-aaaaaaaa-longer and sk-scrub-test-aaaaaaaa; short stays";
        assert_eq!(
            scrub(text),
            "key [redacted] and [redacted]; short stays",
            "a short value is not a secret to scrub"
        );
        assert!(matches!(scrub("nothing here"), Cow::Borrowed(_)));
        let mut v =
            serde_json::json!({"a": ["x sk-scrub-test-aaaaaaaa"], "sk-scrub-test-aaaaaaaa": 1});
        assert!(scrub_json(&mut v));
        assert_eq!(
            v,
            serde_json::json!({"a": ["x [redacted]"], "[redacted]": 1})
        );
    }
}
