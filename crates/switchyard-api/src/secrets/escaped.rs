//! Scrubbing JSON text whose strings may spell a secret with escapes, such as `\u0073k-…`.
//! Spec: R10.5.

use std::borrow::Cow;

use super::registry::{json_plain, matcher};
use super::whole::scrub;

/// How deep JSON held in a JSON string, such as tool arguments, is decoded again.
const MAX_DEPTH: u8 = 4;

/// `text` with every registered secret replaced, also one spelled with JSON escapes inside a
/// string literal: such a literal is decoded, scrubbed and written again, JSON held in it
/// included. Text that shows no secret however it is decoded comes back borrowed.
pub fn scrub_json_text(text: &str) -> Cow<'_, str> {
    if matcher().is_none() {
        return Cow::Borrowed(text);
    }
    // A secret JSON writes plainly is found raw unless an escape spells one of its characters:
    // only `\u` and `\/` can.
    let every_escape = !json_plain();
    escaped(text, every_escape, MAX_DEPTH)
}

fn escaped(text: &str, every_escape: bool, depth: u8) -> Cow<'_, str> {
    if depth == 0 || !text.contains('\\') {
        return scrub(text);
    }
    let mut out = String::new();
    let mut copied = 0;
    for (start, end) in literals(text) {
        let literal = &text[start..end];
        if !every_escape && !literal.contains("\\u") && !literal.contains("\\/") {
            continue;
        }
        let Ok(decoded) = serde_json::from_str::<String>(literal) else {
            continue;
        };
        if let Cow::Owned(clean) = escaped(&decoded, every_escape, depth - 1) {
            out.push_str(&text[copied..start]);
            out.push_str(&serde_json::Value::String(clean).to_string());
            copied = end;
        }
    }
    if copied == 0 {
        return scrub(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(scrub(&out).into_owned())
}

/// The byte ranges of the string literals of `text` that hold an escape, quotes included.
fn literals(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(open) = memchr::memchr(b'"', &bytes[at..]).map(|i| at + i) {
        let mut i = open + 1;
        let mut has_escape = false;
        loop {
            match bytes.get(i) {
                None => return found,
                Some(b'\\') => {
                    has_escape = true;
                    i += 2;
                }
                Some(b'"') => break,
                Some(_) => i += 1,
            }
        }
        if has_escape {
            found.push((open, i + 1));
        }
        at = i + 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-escaped-test-3f9a1c77";

    #[test]
    fn a_secret_spelled_with_escapes_is_replaced_and_clean_text_is_untouched() {
        crate::secrets::register(KEY);
        let spelled = [
            r#"data: {"text":"key \u0073k-escaped-test-3f9a1c77 here"}"#,
            r#"data: {"text":"key sk\u002descaped-test-3f9a1c77"}"#,
            r#"data: {"text":"\u0073\u006B-escaped-test-3f9a1c77"}"#,
            r#"data: {"args":"{\"k\":\"\\u0073k-escaped-test-3f9a1c77\"}"}"#,
        ];
        for text in spelled {
            let clean = scrub_json_text(text);
            assert!(matches!(clean, Cow::Owned(_)), "{text}");
            assert!(clean.contains(crate::secrets::REDACTED), "{clean}");
            let value: serde_json::Value =
                serde_json::from_str(clean.trim_start_matches("data: ")).unwrap();
            assert!(!value.to_string().contains(KEY), "{clean}");
        }
        for text in [
            r#"data: {"text":"line\nnext \u00e9t\u00e9"}"#,
            r#"data: {"text":"sk-escaped-test-3f9a1c7"}"#,
            "event: ping\ndata: {}\n\n",
        ] {
            assert!(matches!(scrub_json_text(text), Cow::Borrowed(_)), "{text}");
        }
    }
}
