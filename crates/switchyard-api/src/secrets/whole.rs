//! Scrubbing a whole text, or parts joined, in one pass.

use super::matcher::Matcher;
use super::registry::REDACTED;

/// `parts` joined by `separator`, with every secret in their concatenation hidden.
pub(super) fn joined(m: &Matcher, parts: &[&str], separator: &str) -> String {
    let text: String = parts.concat();
    let mut boundaries = Vec::with_capacity(parts.len());
    let mut at = 0;
    for part in &parts[..parts.len().saturating_sub(1)] {
        at += part.len();
        boundaries.push(at);
    }
    let mut boundaries = boundaries.into_iter().peekable();
    let mut out = String::with_capacity(text.len() + separator.len() * parts.len());
    // Text from `from` to `to`, with a separator at each part boundary on the way.
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
