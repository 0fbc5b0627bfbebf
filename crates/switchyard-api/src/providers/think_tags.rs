//! Reasoning inside `<think>…</think>` in the answer text, from models served without a reasoning
//! field. A tag split across chunks is held until the next piece decides, and the tags and the
//! whitespace after each are not shown.
//! Spec: R1.2.

use crate::error::ApiError;
use crate::stream::ApiStreamChunk;

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// Where `<think>` starts reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ThinkTags {
    /// Only when the answer opens with it, after whitespace. A later `<think>` is text: a model
    /// explaining the tag must not lose its words.
    Opening,
    /// Anywhere in the answer, the reference's Fireworks rule.
    Anywhere,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing but whitespace seen yet.
    Start,
    Text,
    Think,
}

/// Splits streamed answer text into text and reasoning chunks.
#[derive(Debug)]
pub(crate) struct ThinkSplitter {
    rule: ThinkTags,
    state: State,
    /// Text held back: leading whitespace at the start, or the possible beginning of a tag.
    held: String,
    /// Whitespace right after a tag is dropped until the first other character.
    trim_next: bool,
}

impl ThinkSplitter {
    pub(crate) fn new(rule: ThinkTags) -> Self {
        Self {
            rule,
            state: State::Start,
            held: String::new(),
            trim_next: false,
        }
    }

    /// Adds one piece of answer text, appending text and reasoning chunks to `out`.
    pub(crate) fn push(&mut self, piece: &str, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        if piece.is_empty() {
            return;
        }
        // Common case: an answer that did not open with `<think>` passes through uncopied.
        if self.state == State::Text && self.rule == ThinkTags::Opening && !self.trim_next {
            return emit(State::Text, piece, out);
        }
        let mut rest: String = std::mem::take(&mut self.held);
        rest.push_str(piece);
        let mut rest = rest.as_str();
        loop {
            if self.trim_next {
                rest = rest.trim_start();
                if rest.is_empty() {
                    return;
                }
                self.trim_next = false;
            }
            match self.state {
                State::Start => {
                    let trimmed = rest.trim_start();
                    if let Some(after) = trimmed.strip_prefix(OPEN) {
                        self.state = State::Think;
                        self.trim_next = true;
                        rest = after;
                        continue;
                    }
                    if trimmed.is_empty() || OPEN.starts_with(trimmed) {
                        // Whitespace, or the start of `<think>`: wait for more.
                        self.held = rest.to_owned();
                        return;
                    }
                    self.state = State::Text;
                }
                State::Text if self.rule == ThinkTags::Opening => {
                    emit(State::Text, rest, out);
                    return;
                }
                State::Text | State::Think => {
                    let tag = if self.state == State::Text {
                        OPEN
                    } else {
                        CLOSE
                    };
                    if let Some(at) = rest.find(tag) {
                        emit(self.state, &rest[..at], out);
                        rest = &rest[at + tag.len()..];
                        self.state = if self.state == State::Text {
                            State::Think
                        } else {
                            State::Text
                        };
                        self.trim_next = true;
                        continue;
                    }
                    let keep = partial_tag_len(rest, tag);
                    emit(self.state, &rest[..rest.len() - keep], out);
                    self.held = rest[rest.len() - keep..].to_owned();
                    return;
                }
            }
        }
    }

    /// The end of the answer: whatever was held back is what it looked like.
    pub(crate) fn finish(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        let held = std::mem::take(&mut self.held);
        let state = match self.state {
            State::Start => State::Text,
            s => s,
        };
        if !held.trim().is_empty() {
            emit(state, &held, out);
        }
    }
}

/// The length of the longest suffix of `text` that is a proper prefix of `tag`.
fn partial_tag_len(text: &str, tag: &str) -> usize {
    (1..tag.len())
        .rev()
        .find(|&n| text.is_char_boundary(text.len().saturating_sub(n)) && text.ends_with(&tag[..n]))
        .unwrap_or(0)
}

fn emit(state: State, text: &str, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
    if text.is_empty() {
        return;
    }
    out.push(Ok(match state {
        State::Think => ApiStreamChunk::reasoning(text),
        State::Start | State::Text => ApiStreamChunk::text(text),
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pushes `pieces` and returns ("text", "reasoning") as joined, plus the chunk kinds.
    fn split(rule: ThinkTags, pieces: &[&str]) -> (String, String) {
        let mut s = ThinkSplitter::new(rule);
        let mut out = Vec::new();
        for p in pieces {
            s.push(p, &mut out);
        }
        s.finish(&mut out);
        let (mut text, mut reasoning) = (String::new(), String::new());
        for c in out {
            match c.unwrap() {
                ApiStreamChunk::Text { text: t, .. } => text.push_str(&t),
                ApiStreamChunk::Reasoning { reasoning: r, .. } => reasoning.push_str(&r),
                other => panic!("{other:?}"),
            }
        }
        (text, reasoning)
    }

    #[test]
    fn an_opening_think_block_is_reasoning_in_any_split() {
        let whole = "\n<think>\nThe user wants 4.\n</think>\n\nIt is 4.";
        for size in [1, 2, 3, 5, 7, whole.len()] {
            let pieces: Vec<String> = whole
                .as_bytes()
                .chunks(size)
                .map(|c| String::from_utf8(c.to_vec()).unwrap())
                .collect();
            let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
            for rule in [ThinkTags::Opening, ThinkTags::Anywhere] {
                assert_eq!(
                    split(rule, &pieces),
                    ("It is 4.".to_owned(), "The user wants 4.\n".to_owned()),
                    "{size} {rule:?}"
                );
            }
        }
    }

    #[test]
    fn a_later_tag_is_text_unless_the_rule_is_anywhere() {
        let pieces = ["Use the ", "<thi", "nk> tag: <think>x</think> done"];
        assert_eq!(
            split(ThinkTags::Opening, &pieces),
            (
                "Use the <think> tag: <think>x</think> done".to_owned(),
                String::new()
            )
        );
        // The reference's Fireworks rule: the first `<think>` opens reasoning up to `</think>`.
        assert_eq!(
            split(ThinkTags::Anywhere, &pieces),
            ("Use the done".to_owned(), "tag: <think>x".to_owned())
        );
    }

    #[test]
    fn near_misses_and_unfinished_blocks() {
        // A `<` that starts no tag is text, held only until the next piece.
        assert_eq!(
            split(ThinkTags::Opening, &["<", "b>bold</b>"]),
            ("<b>bold</b>".to_owned(), String::new())
        );
        assert_eq!(
            split(ThinkTags::Anywhere, &["a <", "thin", "g"]),
            ("a <thing".to_owned(), String::new())
        );
        // A block the stream never closes stays reasoning; a held `</thi` too.
        assert_eq!(
            split(ThinkTags::Opening, &["<think>still thinking</thi"]),
            (String::new(), "still thinking</thi".to_owned())
        );
        // Only whitespace: nothing.
        assert_eq!(
            split(ThinkTags::Opening, &["  ", "\n"]),
            (String::new(), String::new())
        );
        // Multi-byte characters next to a tag.
        assert_eq!(
            split(ThinkTags::Anywhere, &["é<think>ü</think>ß"]),
            ("éß".to_owned(), "ü".to_owned())
        );
    }
}
