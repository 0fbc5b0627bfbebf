//! The process's secrets, and scrubbing them from text (SPEC R10.5).
//!
//! Every configured secret — each API key read from the environment or a configuration file
//! (an [`ApiKey`](crate::config::ApiKey) registers itself when made), AWS secrets, the tokens of
//! other tools' sign-ins — is registered here once it is known. Whatever Switchyard shows,
//! logs or stores passes through [`scrub`], which replaces each registered value by
//! [`REDACTED`], wherever the text came from: an error body in which a server echoes the key
//! back, an MCP server's tool result, the model's own answer.
//!
//! The set is process-wide because the places that show, log and store text (the terminal,
//! the log formatter, the task store, the MCP hub) are far from the place a key is read, and a
//! key must not escape through one of them that a caller forgot to hand it to.
//!
//! Values shorter than [`MIN_SECRET_LEN`] bytes are not registered: replacing every `x` of a
//! text because someone set `API_KEY=x` would ruin the text and hide nothing worth hiding.

use std::borrow::Cow;
use std::sync::{Arc, RwLock};

/// What a secret is replaced by.
pub const REDACTED: &str = "[redacted]";

/// Secrets shorter than this (bytes) are not registered (see the module documentation).
pub const MIN_SECRET_LEN: usize = 8;

/// Registered secrets, longest first (so a key that contains another is replaced whole).
static SECRETS: RwLock<Vec<Arc<str>>> = RwLock::new(Vec::new());

/// Registers `value` (trimmed) as a secret to scrub from every text from now on. Values
/// shorter than [`MIN_SECRET_LEN`] bytes are ignored; registering twice is harmless.
pub fn register(value: &str) {
    let value = value.trim();
    if value.len() < MIN_SECRET_LEN {
        return;
    }
    let mut secrets = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    if secrets.iter().any(|s| &**s == value) {
        return;
    }
    secrets.push(Arc::from(value));
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// True when any secret is registered.
pub fn any() -> bool {
    !SECRETS.read().unwrap_or_else(|e| e.into_inner()).is_empty()
}

/// `text` with every registered secret replaced by [`REDACTED`]; borrowed (no copy) when it
/// holds none. Cost: one substring search per registered secret (`memchr::memmem`).
pub fn scrub(text: &str) -> Cow<'_, str> {
    let secrets = SECRETS.read().unwrap_or_else(|e| e.into_inner());
    let mut out: Cow<'_, str> = Cow::Borrowed(text);
    for secret in secrets.iter() {
        if memchr::memmem::find(out.as_bytes(), secret.as_bytes()).is_some() {
            out = Cow::Owned(out.replace(&**secret, REDACTED));
        }
    }
    out
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
