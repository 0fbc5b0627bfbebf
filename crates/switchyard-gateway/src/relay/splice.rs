//! The splice that joins a continuation to the text the client already has, with no repeated
//! text.
//! Spec: R14.4.

/// The longest prefix of a continuation kept back to compare with the answer's tail, in bytes.
const WINDOW: usize = 512;
/// The longest partial answer whose whole repetition at a continuation's start is looked for.
const RESTART_LIMIT: usize = 16 * 1024;
/// The shortest repeated tail stripped when it does not start and end on word boundaries.
const UNALIGNED_OVERLAP: usize = 16;

/// Joins a continuation's text to the answer so far. Its start is held back until it can be
/// compared with the answer's tail, and what it repeats is left out: the whole answer when
/// the model started over, the tail when it repeated the last words, leading whitespace when
/// the answer already ended in some.
#[derive(Debug, Default)]
pub(super) struct Splice {
    /// The answer so far, its last [`RESTART_LIMIT`] bytes at most, or empty once released.
    answer: String,
    head: String,
    holding: bool,
}

impl Splice {
    /// A splice after `answer`, the text the client has.
    pub(super) fn after(answer: &str) -> Self {
        let mut from = answer.len().saturating_sub(RESTART_LIMIT);
        while !answer.is_char_boundary(from) {
            from += 1;
        }
        Self {
            answer: answer[from..].to_owned(),
            head: String::new(),
            holding: true,
        }
    }

    /// Adds continuation text; gives the text to send now, if any.
    pub(super) fn push(&mut self, text: &str) -> Option<String> {
        if !self.holding {
            return Some(text.to_owned());
        }
        self.head.push_str(text);
        let may_restart = self.answer.starts_with(self.head.trim_start())
            || self.head.trim_start().starts_with(&self.answer);
        if self.head.len() < WINDOW.min(self.answer.len())
            || (may_restart && self.head.len() <= self.answer.len())
        {
            return None;
        }
        self.release()
    }

    /// Gives what is held back: the continuation ended, or something other than text came.
    pub(super) fn release(&mut self) -> Option<String> {
        if !self.holding {
            return None;
        }
        self.holding = false;
        let head = std::mem::take(&mut self.head);
        let kept = strip_repeat(&self.answer, &head).to_owned();
        self.answer.clear();
        (!kept.is_empty()).then_some(kept)
    }
}

fn strip_repeat<'h>(answer: &str, head: &'h str) -> &'h str {
    let mut head = head;
    if answer.ends_with(char::is_whitespace) {
        head = head.trim_start();
    }
    if let Some(rest) = head.strip_prefix(answer.trim_start()) {
        return rest;
    }
    let longest = head.len().min(answer.len()).min(WINDOW);
    for k in (1..=longest).rev() {
        if !head.is_char_boundary(k) || !answer.ends_with(&head[..k]) {
            continue;
        }
        let starts = answer[..answer.len() - k]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric())
            || !head[..k].starts_with(char::is_alphanumeric);
        let ends = head[k..]
            .chars()
            .next()
            .is_none_or(|c| !c.is_alphanumeric())
            || !head[..k].ends_with(char::is_alphanumeric);
        if k >= UNALIGNED_OVERLAP || (starts && ends) {
            return &head[k..];
        }
    }
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spliced(answer: &str, pieces: &[&str]) -> String {
        let mut splice = Splice::after(answer);
        let mut out = String::new();
        for piece in pieces {
            out.extend(splice.push(piece));
        }
        out.extend(splice.release());
        out
    }

    #[test]
    fn an_exact_continuation_is_kept_whole() {
        assert_eq!(
            spliced("The capital", &[" of France", " is Paris."]),
            " of France is Paris."
        );
        assert_eq!(spliced("datab", &["ase, then"]), "ase, then");
    }

    #[test]
    fn a_repeated_tail_or_a_restart_is_left_out() {
        let answer = "The migration has three steps: first back up the database, then";
        assert_eq!(
            spliced(answer, &[" then", " stop the app."]),
            " stop the app."
        );
        assert_eq!(
            spliced(
                answer,
                &[
                    "The migration has three",
                    " steps: first back up the database, then stop it."
                ]
            ),
            " stop it."
        );
        assert_eq!(spliced("Hello there. ", &[" World"]), "World");
        assert_eq!(
            spliced(answer, &["up the database, then restore."]),
            " restore."
        );
    }

    #[test]
    fn a_short_overlap_inside_a_word_is_not_taken_for_a_repeat() {
        assert_eq!(spliced("I said hel", &["lo"]), "lo");
        assert_eq!(spliced("a tool", &["s and more"]), "s and more");
    }
}
