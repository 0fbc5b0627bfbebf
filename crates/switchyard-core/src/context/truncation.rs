//! The next deleted range, which only ever grows.
//! Spec: R8.3.

use switchyard_api::{Message, Role};

/// How much of the not-yet-hidden history after messages 0 and 1 to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TruncationKeep {
    /// Hide every message after the first pair.
    None,
    /// Keep only the last two messages after the first pair.
    LastTwo,
    /// Keep about half: `floor(n/4)·2` removed, an even number.
    Half,
    /// Keep about a quarter: `floor(3n/8)·2` removed, an even number.
    Quarter,
}

/// An inclusive `(start, end)` pair of stored indices hidden; `end < start` hides nothing.
pub type DeletedRange = (usize, usize);

/// The canonical range that hides nothing.
pub const EMPTY_RANGE: DeletedRange = (2, 1);

/// True when `range` hides no message.
pub fn range_is_empty(range: DeletedRange) -> bool {
    range.1 < range.0
}

/// The deleted range after one more truncation step, ending on an assistant message.
pub fn get_next_truncation_range(
    messages: &[Message],
    current: Option<DeletedRange>,
    keep: TruncationKeep,
) -> DeletedRange {
    // Never below 1, so messages 0 and 1 stay kept.
    let last_hidden = match current {
        Some(r) if !range_is_empty(r) => r.1.max(1),
        _ => 1,
    };
    let n = messages.len().saturating_sub(last_hidden).saturating_sub(1);
    let removed = match keep {
        TruncationKeep::None => n,
        TruncationKeep::LastTwo => n.saturating_sub(2),
        TruncationKeep::Half => n / 4 * 2,
        TruncationKeep::Quarter => n * 3 / 8 * 2,
    };
    if removed == 0 {
        return (2, last_hidden);
    }
    let mut end = last_hidden + removed;
    // Moving back only after a removal means a range never shrinks, as the reference's could.
    if messages.get(end).is_some_and(|m| m.role != Role::Assistant) {
        end -= 1;
    }
    (2, end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::test_support::alternating;

    use TruncationKeep::{Half, LastTwo, None as KeepNone, Quarter};

    #[test]
    fn ten_messages_quarter() {
        // n = 8, removed = floor(24/8)·2 = 6, end = 7 (assistant). Visible: 0, 1, 8, 9.
        assert_eq!(
            get_next_truncation_range(&alternating(10), None, Quarter),
            (2, 7)
        );
    }

    #[test]
    fn ten_messages_half() {
        // n = 8, removed = floor(8/4)·2 = 4, end = 5. Visible: 0, 1, 6..=9.
        assert_eq!(
            get_next_truncation_range(&alternating(10), None, Half),
            (2, 5)
        );
    }

    #[test]
    fn twenty_messages_with_current_range_quarter() {
        // start = 6, n = 14, removed = floor(42/8)·2 = 10, end = 15. Visible: 0, 1, 16..=19.
        assert_eq!(
            get_next_truncation_range(&alternating(20), Some((2, 5)), Quarter),
            (2, 15)
        );
    }

    #[test]
    fn twenty_messages_with_current_range_half() {
        // start = 6, n = 14, removed = floor(14/4)·2 = 6, end = 11.
        assert_eq!(
            get_next_truncation_range(&alternating(20), Some((2, 5)), Half),
            (2, 11)
        );
    }

    #[test]
    fn last_two() {
        // n = 10, removed = 8, end = 9. Visible: 0, 1, 10, 11.
        assert_eq!(
            get_next_truncation_range(&alternating(12), None, LastTwo),
            (2, 9)
        );
    }

    #[test]
    fn keep_none() {
        // n = 8, removed = 8, end = 9: only the first pair stays visible.
        assert_eq!(
            get_next_truncation_range(&alternating(10), None, KeepNone),
            (2, 9)
        );
    }

    #[test]
    fn end_on_user_message_moves_back() {
        // 9 messages, none: n = 7, removed = 7, end = 8 is a user message → 7.
        assert_eq!(
            get_next_truncation_range(&alternating(9), None, KeepNone),
            (2, 7)
        );
        // 9 messages, lastTwo: removed = 5, end = 6 (user) → 5.
        assert_eq!(
            get_next_truncation_range(&alternating(9), None, LastTwo),
            (2, 5)
        );
    }

    #[test]
    fn end_on_user_message_in_irregular_history_moves_back() {
        // Two user messages in a row shift the parity: 0u 1a 2u 3u 4a 5u 6a 7u 8a 9u.
        let roles = "uauuauauau";
        let msgs: Vec<Message> = roles
            .chars()
            .map(|c| {
                if c == 'u' {
                    Message::user_text("u")
                } else {
                    Message::assistant_text("a")
                }
            })
            .collect();
        // n = 8, half removes 4, end = 5 is a user message → 4 (assistant).
        assert_eq!(get_next_truncation_range(&msgs, None, Half), (2, 4));
    }

    #[test]
    fn current_range_ending_on_user_message() {
        // start = 5, n = 15, half removes floor(15/4)·2 = 6, end = 10 (user) → 9.
        assert_eq!(
            get_next_truncation_range(&alternating(20), Some((2, 4)), Half),
            (2, 9)
        );
    }

    #[test]
    fn three_messages_hide_nothing() {
        let msgs = alternating(3);
        for keep in [KeepNone, LastTwo, Half, Quarter] {
            let r = get_next_truncation_range(&msgs, None, keep);
            assert!(range_is_empty(r), "{keep:?} gave {r:?}");
            assert_eq!(r, EMPTY_RANGE);
        }
    }

    #[test]
    fn four_messages() {
        let msgs = alternating(4);
        // n = 2: quarter removes floor(6/8)·2 = 0, half floor(2/4)·2 = 0, lastTwo 0.
        for keep in [LastTwo, Half, Quarter] {
            assert_eq!(get_next_truncation_range(&msgs, None, keep), EMPTY_RANGE);
        }
        // none removes both: (2, 3).
        assert_eq!(get_next_truncation_range(&msgs, None, KeepNone), (2, 3));
    }

    #[test]
    fn five_and_six_messages_quarter() {
        // n = 3: floor(9/8)·2 = 2 → (2, 3); visible 0, 1, 4.
        assert_eq!(
            get_next_truncation_range(&alternating(5), None, Quarter),
            (2, 3)
        );
        // n = 4: floor(12/8)·2 = 2 → (2, 3).
        assert_eq!(
            get_next_truncation_range(&alternating(6), None, Quarter),
            (2, 3)
        );
    }

    #[test]
    fn tiny_histories_do_not_panic() {
        for len in 0..3 {
            for keep in [KeepNone, LastTwo, Half, Quarter] {
                assert_eq!(
                    get_next_truncation_range(&alternating(len), None, keep),
                    EMPTY_RANGE
                );
            }
        }
    }

    #[test]
    fn nothing_left_keeps_the_current_range() {
        // The whole rest is already hidden: the range stays as it is.
        assert_eq!(
            get_next_truncation_range(&alternating(10), Some((2, 7)), Quarter),
            (2, 7)
        );
        // A range past the end (the history was shortened since) is kept unchanged.
        assert_eq!(
            get_next_truncation_range(&alternating(6), Some((2, 9)), KeepNone),
            (2, 9)
        );
        assert_eq!(
            get_next_truncation_range(&alternating(6), Some((2, usize::MAX)), KeepNone),
            (2, usize::MAX)
        );
    }

    #[test]
    fn empty_or_degenerate_current_range_counts_as_none() {
        let msgs = alternating(10);
        assert_eq!(
            get_next_truncation_range(&msgs, Some(EMPTY_RANGE), Quarter),
            (2, 7)
        );
        // A range ending at 0 never exposes message 1 to deletion.
        assert_eq!(get_next_truncation_range(&msgs, Some((0, 0)), Half), (2, 5));
    }

    #[test]
    fn repeated_quarter_steps_grow_and_converge() {
        let msgs = alternating(40);
        let mut range = None;
        let mut seen = Vec::new();
        for _ in 0..10 {
            let next = get_next_truncation_range(&msgs, range, Quarter);
            if let Some(prev) = range {
                assert!(next.1 >= prev.1, "range shrank: {prev:?} → {next:?}");
            }
            // Always ends on an assistant message (or is the empty range).
            assert!(next.1 == 1 || msgs[next.1].role == Role::Assistant);
            seen.push(next);
            range = Some(next);
        }
        // n = 38 removes 28 → (2, 29); n = 10 removes 6 → (2, 35); n = 4 removes 2 → (2, 37);
        // n = 2 removes 0 from then on.
        assert_eq!(&seen[..4], &[(2, 29), (2, 35), (2, 37), (2, 37)]);
    }
}
