//! The process's secrets, and scrubbing them from whatever Switchyard shows, logs or stores.
//! Every key, AWS secret and sign-in token registers here once known. The set is process-wide
//! so that a key cannot escape through a place its reader forgot to hand it to.
//! Spec: R10.5.

mod matcher;
mod registry;
pub mod scrubber;
mod whole;

use std::borrow::Cow;

use registry::matcher;
pub use registry::{MIN_SECRET_LEN, REDACTED, any, register};
pub use scrubber::Scrubber;
use whole::joined;

/// `text` with every registered secret replaced by [`REDACTED`]; borrowed when it holds none.
pub fn scrub(text: &str) -> Cow<'_, str> {
    match matcher().filter(|m| m.is_match(text)) {
        None => Cow::Borrowed(text),
        Some(m) => Cow::Owned(joined(&m, &[text], "")),
    }
}

/// `parts` joined by `separator`, scrubbed as if the separators were not there, so that a
/// secret split across parts is hidden whole.
pub fn scrub_joined<S: AsRef<str>>(parts: &[S], separator: &str) -> String {
    let parts: Vec<&str> = parts.iter().map(AsRef::as_ref).collect();
    match matcher() {
        Some(m) => joined(&m, &parts, separator),
        None => parts.join(separator),
    }
}

pub fn scrub_in_place(text: &mut String) -> bool {
    match scrub(text) {
        Cow::Borrowed(_) => false,
        Cow::Owned(clean) => {
            *text = clean;
            true
        }
    }
}

/// Scrubs every string and key of a JSON value in place; true when something was replaced.
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

/// Whether `value` serialised as JSON shows a registered secret, found in one pass without
/// building the JSON; true whenever a secret holds a character JSON escapes.
pub fn serde_holds_secret<T: serde::Serialize + ?Sized>(value: &T) -> bool {
    let Some(matcher) = matcher() else {
        return false;
    };
    if !registry::json_plain() {
        return true;
    }
    let mut finder = Finder {
        state: matcher.start(),
        matcher: &matcher,
        found: false,
    };
    serde_json::to_writer(&mut finder, value).is_err() || finder.found
}

/// The sink of [`serde_holds_secret`], failing the write at the first secret.
struct Finder<'a> {
    matcher: &'a matcher::Matcher,
    state: aho_corasick::automaton::StateID,
    found: bool,
}

impl std::io::Write for Finder<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        for &byte in buf {
            self.state = self.matcher.next(self.state, byte);
            if self.matcher.ending_here(self.state).next().is_some() {
                self.found = true;
                return Err(std::io::Error::other("a secret"));
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Scrubs a serialisable value by way of JSON; `None` when it holds no secret.
pub fn scrub_serde<T>(value: &T) -> Option<T>
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    if !serde_holds_secret(value) {
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
        // Found in any string or key of a value's JSON without building it.
        assert!(serde_holds_secret(
            &serde_json::json!({"k": ["x", "a sk-scrub-test-aaaaaaaa"]})
        ));
        assert!(serde_holds_secret(
            &serde_json::json!({"sk-scrub-test-aaaaaaaa": 1})
        ));
        assert!(!serde_holds_secret(
            &serde_json::json!({"k": ["sk-scrub-test-aaaaaaa"]})
        ));
    }
}
