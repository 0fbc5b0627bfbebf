//! Scrubbing a text that arrives in pieces, so that a split key is hidden as surely as a whole one.
//! Spec: R10.5.

use std::borrow::Cow;
use std::sync::Arc;

use aho_corasick::automaton::StateID;

use super::matcher::Matcher;
use super::registry::{REDACTED, matcher};

/// The state of one scrubbed stream of text: `push` each piece and hand on what it returns,
/// then `finish`. It holds back only a tail that could still become a secret.
/// ```
/// use switchyard_api::secrets::{Scrubber, register};
/// register("sk-doc-example-0123456789");
/// let mut s = Scrubber::new();
/// let mut shown = String::new();
/// for piece in ["key: sk-doc-exa", "mple-0123", "456789 done"] {
///     shown.push_str(&s.push(piece));
/// }
/// shown.push_str(&s.finish());
/// assert_eq!(shown, "key: [redacted] done");
/// ```
pub struct Scrubber {
    matcher: Option<Arc<Matcher>>,
    state: Option<StateID>,
    /// The text not yet released or hidden, from stream offset `base` to the end.
    held: String,
    base: u64,
    end: u64,
    /// Bytes before this offset are inside a marker already released.
    hidden_end: u64,
    /// Occurrences found but not placed yet, as start and end offsets.
    found: Vec<(u64, u64)>,
}

impl Default for Scrubber {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The held tail may be part of a secret: never shown.
        f.debug_struct("Scrubber")
            .field("held_bytes", &self.held.len())
            .finish_non_exhaustive()
    }
}

impl Scrubber {
    pub fn new() -> Self {
        Self::with_matcher(matcher())
    }

    pub(super) fn with_matcher(matcher: Option<Arc<Matcher>>) -> Self {
        Self {
            state: matcher.as_ref().map(|m| m.start()),
            matcher,
            held: String::new(),
            base: 0,
            end: 0,
            hidden_end: 0,
            found: Vec::new(),
        }
    }

    pub fn is_inert(&self) -> bool {
        self.matcher.is_none()
    }

    pub fn held_len(&self) -> usize {
        self.held.len()
    }

    /// Takes the next piece and returns the text that can be released now, scrubbed.
    pub fn push<'a>(&mut self, piece: &'a str) -> Cow<'a, str> {
        let (Some(m), Some(mut state)) = (self.matcher.clone(), self.state) else {
            return Cow::Borrowed(piece);
        };
        let start = self.end;
        for (i, &byte) in piece.as_bytes().iter().enumerate() {
            state = m.next(state, byte);
            let at = start + i as u64 + 1;
            for len in m.ending_here(state) {
                self.found.push((at - len as u64, at));
            }
        }
        self.state = Some(state);
        self.end += piece.len() as u64;
        let release_to = self.end - m.depth(state) as u64;
        if self.held.is_empty() && self.found.is_empty() && release_to == self.end {
            self.base = self.end;
            return Cow::Borrowed(piece);
        }
        self.held.push_str(piece);
        let mut out = String::new();
        self.release(release_to, &mut out);
        Cow::Owned(out)
    }

    /// The stream ended: the rest of the text, scrubbed. The scrubber starts afresh after it.
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        self.release(self.end, &mut out);
        *self = Self::with_matcher(self.matcher.take());
        out
    }

    /// Places every found occurrence that can no longer grow an earlier start, and releases the
    /// text before `release_to` that no marker hides.
    fn release(&mut self, release_to: u64, out: &mut String) {
        self.found.sort_unstable();
        let mut cursor = self.base;
        let mut placed = 0;
        for &(start, end) in &self.found {
            // An occurrence that starts where all the text before it is decided is placed at
            // once; one that starts later waits: an earlier-starting secret may still cover it.
            if start > release_to.max(cursor) {
                break;
            }
            if start < self.hidden_end {
                self.hidden_end = self.hidden_end.max(end);
            } else {
                out.push_str(&self.held[self.at(cursor)..self.at(start.max(cursor))]);
                out.push_str(REDACTED);
                self.hidden_end = end;
            }
            cursor = cursor.max(self.hidden_end);
            placed += 1;
        }
        self.found.drain(..placed);
        if cursor < release_to {
            out.push_str(&self.held[self.at(cursor)..self.at(release_to)]);
            cursor = release_to;
        }
        let done = self.at(cursor);
        self.held.drain(..done);
        self.base = cursor;
    }

    fn at(&self, offset: u64) -> usize {
        (offset - self.base) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(secrets: &[&str]) -> Arc<Matcher> {
        let secrets: Vec<Arc<str>> = secrets.iter().map(|s| Arc::from(*s)).collect();
        Arc::new(Matcher::new(&secrets).expect("secrets compile"))
    }

    /// The whole text scrubbed at once (the other implementation, in `super::joined`).
    fn whole(m: &Matcher, text: &str) -> String {
        super::super::whole::joined(m, &[text], "")
    }

    /// `text` pushed in `pieces` (cut at the given byte offsets), then finished.
    fn streamed(m: &Arc<Matcher>, text: &str, cuts: &[usize]) -> String {
        let mut s = Scrubber::with_matcher(Some(Arc::clone(m)));
        let mut out = String::new();
        let mut from = 0;
        for &cut in cuts.iter().chain(std::iter::once(&text.len())) {
            out.push_str(&s.push(&text[from..cut]));
            from = cut;
        }
        out.push_str(&s.finish());
        out
    }

    fn boundaries(text: &str) -> Vec<usize> {
        (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect()
    }

    /// Every cut into two and three pieces gives what scrubbing the whole text gives, and the
    /// secret never survives.
    fn check_every_split(secrets: &[&str], text: &str, expected: &str) {
        let m = matcher(secrets);
        assert_eq!(whole(&m, text), expected, "whole text");
        let cuts = boundaries(text);
        for &a in &cuts {
            assert_eq!(streamed(&m, text, &[a]), expected, "cut at {a}");
            for &b in cuts.iter().filter(|&&b| b >= a) {
                assert_eq!(streamed(&m, text, &[a, b]), expected, "cuts at {a}, {b}");
            }
        }
    }

    #[test]
    fn a_secret_split_at_every_offset_into_two_and_three_pieces_is_hidden() {
        check_every_split(
            &["sk-split-0123456789"],
            "before sk-split-0123456789 after",
            "before [redacted] after",
        );
        check_every_split(
            &["sk-split-0123456789"],
            "sk-split-0123456789sk-split-0123456789 sk-split-012345678",
            "[redacted][redacted] sk-split-012345678",
        );
    }

    #[test]
    fn overlapping_secrets_and_a_secret_that_is_a_prefix_of_another() {
        // One is a prefix of the other: the longer is hidden whole, the shorter alone too.
        check_every_split(
            &["sk-prefix-abcdef", "sk-prefix-abcdef-longer"],
            "a sk-prefix-abcdef-longer b sk-prefix-abcdef-long c",
            "a [redacted] b [redacted]-long c",
        );
        // Two secrets that overlap: one marker covers both.
        check_every_split(
            &["AAAA-1111-BBBB", "BBBB-2222-CCCC"],
            "x AAAA-1111-BBBB-2222-CCCC y",
            "x [redacted] y",
        );
        // One inside another.
        check_every_split(
            &["outer-secret-inner-secret-end", "inner-secret"],
            "(outer-secret-inner-secret-end) (inner-secret)",
            "([redacted]) ([redacted])",
        );
        // A repeating secret overlapping itself.
        check_every_split(&["abababab"], "ababababab!", "[redacted]!");
    }

    #[test]
    fn non_ascii_text_around_and_inside_a_secret() {
        check_every_split(
            &["clé-secrète-ü-0123"],
            "日本語 clé-secrète-ü-0123 – ok ✓",
            "日本語 [redacted] – ok ✓",
        );
        check_every_split(
            &["sk-ascii-key-42"],
            "ééésk-ascii-key-42ééé",
            "ééé[redacted]ééé",
        );
    }

    #[test]
    fn text_is_released_as_soon_as_it_cannot_be_a_secret() {
        let m = matcher(&["sk-early-0123456789"]);
        let mut s = Scrubber::with_matcher(Some(Arc::clone(&m)));
        // Nothing that could start a secret: all of it at once, borrowed.
        assert!(matches!(
            s.push("hello world"),
            Cow::Borrowed("hello world")
        ));
        // Only the tail that could start the secret is held.
        assert_eq!(s.push(" and sk-ea"), " and ");
        assert_eq!(s.held_len(), "sk-ea".len());
        // It turns out not to be one: released at once, with what follows.
        assert_eq!(s.push("sy text"), "sk-easy text");
        assert_eq!(s.held_len(), 0);
        // A secret is replaced as soon as it is complete.
        assert_eq!(s.push("sk-early-01234"), "");
        assert_eq!(s.push("56789 then"), "[redacted] then");
        // A held prefix is released by finish: it was never a secret.
        assert_eq!(s.push(" sk-early"), " ");
        assert_eq!(s.finish(), "sk-early");
        // A complete secret that could still grow into a longer one is placed at once too.
        let m = matcher(&["sk-grow-0123456789", "sk-grow-0123456789-more"]);
        let mut s = Scrubber::with_matcher(Some(m));
        assert_eq!(s.push("x sk-grow-0123456789"), "x [redacted]");
        assert_eq!(s.push("-mo"), "");
        assert_eq!(s.push("re!"), "!");
        assert_eq!(s.finish(), "");
    }

    #[test]
    fn byte_by_byte_and_memory_held_is_shorter_than_the_longest_secret() {
        let m = matcher(&["sk-bytes-0123456789"]);
        let text = "sk-bytes-0123456789 ".repeat(50) + "sk-bytes-01234";
        let mut s = Scrubber::with_matcher(Some(Arc::clone(&m)));
        let mut out = String::new();
        for (i, _) in text.char_indices() {
            let next = text[i..].chars().next().map_or(0, char::len_utf8);
            out.push_str(&s.push(&text[i..i + next]));
            assert!(s.held_len() < "sk-bytes-0123456789".len());
        }
        out.push_str(&s.finish());
        assert_eq!(out, whole(&m, &text));
        assert!(!out.contains("sk-bytes-0123456789"));
    }

    #[test]
    fn joined_parts_hide_a_secret_split_across_them_and_keep_other_separators() {
        let m = matcher(&["sk-joined-0123456789"]);
        let joined = |parts: &[&str]| super::super::whole::joined(&m, parts, "\n");
        assert_eq!(joined(&["a", "b"]), "a\nb");
        assert_eq!(
            joined(&["key sk-joined-01", "23456789 end", "next"]),
            "key [redacted] end\nnext"
        );
        assert_eq!(
            joined(&["sk-joined-", "0123456789", "", "x"]),
            "[redacted]\n\nx"
        );
        assert_eq!(
            joined(&["x", "sk-joined-0123456789", "y"]),
            "x\n[redacted]\ny"
        );
    }
}

#[cfg(test)]
mod props {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Any text over a small alphabet, cut anywhere: streamed equals whole.
        #[test]
        fn streamed_equals_whole(text in "[ab-]{0,40}", cuts in proptest::collection::vec(0usize..40, 0..5)) {
            let secrets: Vec<Arc<str>> = ["abab-aba", "ba-ab-ab", "aaaaaaaa", "abab-aba-b"]
                .iter().map(|s| Arc::from(*s)).collect();
            let m = Arc::new(Matcher::new(&secrets).expect("compiles"));
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(text.len())).collect();
            cuts.sort_unstable();
            let mut s = Scrubber::with_matcher(Some(Arc::clone(&m)));
            let mut out = String::new();
            let mut from = 0;
            for cut in cuts.into_iter().chain(std::iter::once(text.len())) {
                out.push_str(&s.push(&text[from..cut]));
                from = cut;
            }
            out.push_str(&s.finish());
            prop_assert_eq!(out, super::super::whole::joined(&m, &[text.as_str()], ""));
        }
    }
}
