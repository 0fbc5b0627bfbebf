//! The messages the model sees: the history minus the deleted range, tool pairs repaired.
//! Spec: R8.4, R8.5.

use std::collections::HashMap;

use switchyard_api::{ContentBlock, Message, Role};

use super::truncation::DeletedRange;

/// Appended to the first user message when the range hides any, so the gap reads as deliberate.
pub const TRUNCATION_NOTICE: &str = "[NOTE] Some previous conversation history has been \
removed to keep this conversation within the model's context window. The user's original task \
and the most recent messages are kept; the messages in between were removed. Keep this in mind \
as you continue, and pay particular attention to the user's latest messages.";

/// The content of the error result added for a kept tool call whose result is missing.
pub const MISSING_TOOL_RESULT: &str = "result missing: the result of this tool call is not in \
the conversation history (it was interrupted or removed to save context).";

/// Replaces a user message left with no blocks where dropping it would break role alternation.
pub const REMOVED_TOOL_RESULTS: &str =
    "[Tool results for tool calls in removed conversation history were omitted.]";

/// The messages to send without the ones `range` hides, each tool call paired with a result,
/// since providers such as Anthropic reject an unpaired call or result.
pub fn apply_deleted_range(messages: &[Message], range: Option<DeletedRange>) -> Vec<Message> {
    let is_hidden = |i: usize| match range {
        Some((start, end)) => i >= start.max(2) && i <= end,
        None => false,
    };
    let visible: Vec<Message> = messages
        .iter()
        .enumerate()
        .filter(|(i, _)| !is_hidden(*i))
        .map(|(_, m)| m.clone())
        .collect();
    let any_hidden = visible.len() < messages.len();

    let mut out = repair_tool_pairing(visible);

    if any_hidden {
        if let Some(first_user) = out.iter_mut().find(|m| m.role == Role::User) {
            first_user.content.push(ContentBlock::Text {
                text: TRUNCATION_NOTICE.to_owned(),
            });
        }
    }
    out
}

fn repair_tool_pairing(visible: Vec<Message>) -> Vec<Message> {
    let next_roles: Vec<Option<Role>> = visible
        .iter()
        .skip(1)
        .map(|m| Some(m.role))
        .chain(std::iter::once(None))
        .collect();
    let mut out: Vec<Message> = Vec::with_capacity(visible.len());
    for (mut message, next_role) in visible.into_iter().zip(next_roles) {
        if message.role == Role::User {
            let calls = match out.last() {
                Some(prev) if prev.role == Role::Assistant => tool_use_ids(prev),
                _ => Vec::new(),
            };
            message.content = pair_results(message.content, &calls);
            // No provider may see an empty message or two assistant messages in a row.
            if message.content.is_empty() {
                let prev_role = out.last().map(|m| m.role);
                if prev_role == Some(Role::User) || next_role == Some(Role::User) {
                    continue;
                }
                message.content.push(ContentBlock::Text {
                    text: REMOVED_TOOL_RESULTS.to_owned(),
                });
            }
        }
        out.push(message);
    }
    out
}

fn tool_use_ids(message: &Message) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for block in &message.content {
        if let ContentBlock::ToolUse { id, .. } = block {
            if !ids.contains(id) {
                ids.push(id.clone());
            }
        }
    }
    ids
}

fn pair_results(content: Vec<ContentBlock>, calls: &[String]) -> Vec<ContentBlock> {
    let mut results: HashMap<String, ContentBlock> = HashMap::new();
    let mut others: Vec<ContentBlock> = Vec::new();
    for block in content {
        match block {
            ContentBlock::ToolResult {
                ref tool_use_id, ..
            } => {
                if calls.contains(tool_use_id) {
                    results.insert(tool_use_id.clone(), block);
                }
            }
            other => others.push(other),
        }
    }
    let mut paired: Vec<ContentBlock> = calls
        .iter()
        .map(|id| {
            results
                .remove(id)
                .unwrap_or_else(|| ContentBlock::ToolResult {
                    tool_use_id: id.clone(),
                    content: MISSING_TOOL_RESULT.to_owned(),
                    is_error: true,
                })
        })
        .collect();
    paired.extend(others);
    paired
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::test_support::{alternating, assistant, user};
    use serde_json::json;

    fn text(t: &str) -> ContentBlock {
        ContentBlock::Text { text: t.into() }
    }

    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolUse {
            id: id.into(),
            name: "read_file".into(),
            input: json!({"path": id}),
            signature: None,
        }
    }

    fn result(id: &str) -> ContentBlock {
        ContentBlock::ToolResult {
            tool_use_id: id.into(),
            content: format!("result of {id}"),
            is_error: false,
        }
    }

    fn missing(id: &str) -> ContentBlock {
        ContentBlock::ToolResult {
            tool_use_id: id.into(),
            content: MISSING_TOOL_RESULT.into(),
            is_error: true,
        }
    }

    fn notice() -> ContentBlock {
        text(TRUNCATION_NOTICE)
    }

    /// The messages of `msgs` at `kept`, the first with the truncation notice: what a range
    /// leaves visible of a history without tool calls.
    fn shown(msgs: &[Message], kept: &[usize]) -> Vec<Message> {
        let mut out = picked(msgs, kept);
        out[0].content.push(notice());
        out
    }

    /// The messages of `msgs` at `kept`, unchanged.
    fn picked(msgs: &[Message], kept: &[usize]) -> Vec<Message> {
        kept.iter().map(|&i| msgs[i].clone()).collect()
    }

    /// A tool-calling conversation: every assistant message after the first calls tool `t{i}`
    /// and the next user message answers it.
    ///
    /// 0 u task · 1 a calls t1 · 2 u result t1 · 3 a calls t3 · 4 u result t3 · 5 a calls t5 ·
    /// 6 u result t5 + text · 7 a text
    fn tool_conversation() -> Vec<Message> {
        vec![
            user(vec![text("task")]),
            assistant(vec![text("reading"), call("t1")]),
            user(vec![result("t1")]),
            assistant(vec![call("t3")]),
            user(vec![result("t3")]),
            assistant(vec![call("t5")]),
            user(vec![result("t5"), text("note from user")]),
            assistant(vec![text("done")]),
        ]
    }

    #[test]
    fn no_range_returns_a_valid_history_unchanged() {
        let msgs = tool_conversation();
        assert_eq!(apply_deleted_range(&msgs, None), msgs);
        assert_eq!(apply_deleted_range(&msgs, Some((2, 1))), msgs);
    }

    #[test]
    fn range_hides_messages_and_adds_the_notice() {
        let msgs = alternating(10);
        let out = apply_deleted_range(&msgs, Some((2, 5)));
        assert_eq!(out, shown(&msgs, &[0, 1, 6, 7, 8, 9]));
    }

    #[test]
    fn stored_history_is_untouched() {
        let msgs = tool_conversation();
        let before = msgs.clone();
        let out = apply_deleted_range(&msgs, Some((2, 5)));
        assert_eq!(msgs, before);
        assert_ne!(out, before);
    }

    #[test]
    fn kept_tool_use_whose_result_was_deleted_gets_result_missing() {
        // Hiding 2..=5 removes t1's result (message 2) and t5's call (message 5). Message 6
        // now follows message 1: its t5 result is an orphan and t1 needs a placeholder.
        let msgs = tool_conversation();
        let out = apply_deleted_range(&msgs, Some((2, 5)));
        assert_eq!(
            out,
            vec![
                user(vec![text("task"), notice()]),
                assistant(vec![text("reading"), call("t1")]),
                user(vec![missing("t1"), text("note from user")]),
                assistant(vec![text("done")]),
            ]
        );
    }

    #[test]
    fn orphan_results_are_dropped_and_an_emptied_message_between_assistants_gets_a_text() {
        let msgs = vec![
            user(vec![text("task")]),
            assistant(vec![text("hello")]),
            user(vec![text("go")]),
            assistant(vec![call("t3")]),
            user(vec![result("t3")]),
            assistant(vec![text("done")]),
        ];
        // Hiding 2..=3 removes t3's call; message 4 held only its result.
        let out = apply_deleted_range(&msgs, Some((2, 3)));
        assert_eq!(
            out,
            vec![
                user(vec![text("task"), notice()]),
                assistant(vec![text("hello")]),
                user(vec![text(REMOVED_TOOL_RESULTS)]),
                assistant(vec![text("done")]),
            ]
        );
    }

    #[test]
    fn emptied_user_message_next_to_a_user_message_is_dropped() {
        // After a user message: dropping keeps u, a alternation.
        let msgs = vec![
            user(vec![text("task")]),
            assistant(vec![text("hi")]),
            user(vec![text("first")]),
            user(vec![result("gone")]),
            assistant(vec![text("ok")]),
        ];
        assert_eq!(
            apply_deleted_range(&msgs, None),
            picked(&msgs, &[0, 1, 2, 4])
        );
        // Before a user message: dropping keeps a, u alternation.
        let msgs = vec![
            user(vec![text("task")]),
            assistant(vec![text("hi")]),
            user(vec![result("gone")]),
            user(vec![text("next")]),
            assistant(vec![text("ok")]),
        ];
        assert_eq!(
            apply_deleted_range(&msgs, None),
            picked(&msgs, &[0, 1, 3, 4])
        );
    }

    #[test]
    fn results_are_put_first_in_tool_call_order() {
        let msgs = vec![
            user(vec![text("task")]),
            assistant(vec![call("a"), text("between"), call("b"), call("c")]),
            user(vec![
                text("feedback"),
                result("c"),
                result("a"),
                result("b"),
            ]),
        ];
        let out = apply_deleted_range(&msgs, None);
        assert_eq!(
            out[2],
            user(vec![
                result("a"),
                result("b"),
                result("c"),
                text("feedback")
            ])
        );
        assert_eq!(out[..2], msgs[..2]);
    }

    #[test]
    fn missing_result_in_the_middle_is_filled_in_place() {
        let msgs = vec![
            user(vec![text("task")]),
            assistant(vec![call("a"), call("b"), call("c")]),
            user(vec![result("c"), result("a")]),
        ];
        let out = apply_deleted_range(&msgs, None);
        assert_eq!(out[2], user(vec![result("a"), missing("b"), result("c")]));
    }

    #[test]
    fn duplicate_results_keep_the_last_and_foreign_results_are_dropped() {
        let later = ContentBlock::ToolResult {
            tool_use_id: "a".into(),
            content: "second run".into(),
            is_error: false,
        };
        let msgs = vec![
            user(vec![text("task")]),
            assistant(vec![call("a")]),
            user(vec![result("a"), result("zzz"), later.clone()]),
        ];
        let out = apply_deleted_range(&msgs, None);
        assert_eq!(out[2], user(vec![later]));
    }

    #[test]
    fn trailing_tool_call_without_a_user_message_is_left_alone() {
        let msgs = vec![user(vec![text("task")]), assistant(vec![call("a")])];
        assert_eq!(apply_deleted_range(&msgs, None), msgs);
    }

    #[test]
    fn first_pair_is_always_kept_and_range_bounds_are_clamped() {
        let msgs = alternating(6);
        // A range starting below 2 still keeps messages 0 and 1.
        let out = apply_deleted_range(&msgs, Some((0, 3)));
        assert_eq!(out, shown(&msgs, &[0, 1, 4, 5]));
        // A range past the end hides everything after the first pair, without panicking.
        let out = apply_deleted_range(&msgs, Some((2, 100)));
        assert_eq!(out, shown(&msgs, &[0, 1]));
        // A range that starts past the end hides nothing and adds no notice.
        assert_eq!(apply_deleted_range(&msgs, Some((50, 60))), msgs);
    }

    #[test]
    fn range_starting_later_hides_only_its_own_span() {
        let msgs = alternating(8);
        let out = apply_deleted_range(&msgs, Some((4, 5)));
        assert_eq!(out, shown(&msgs, &[0, 1, 2, 3, 6, 7]));
    }

    #[test]
    fn tiny_histories() {
        assert_eq!(
            apply_deleted_range(&[], Some((2, 5))),
            Vec::<Message>::new()
        );
        let one = alternating(1);
        assert_eq!(apply_deleted_range(&one, Some((2, 5))), one);
        let two = alternating(2);
        assert_eq!(apply_deleted_range(&two, Some((2, 5))), two);
    }

    #[test]
    fn truncated_tool_history_is_valid_after_every_quarter_step() {
        use crate::context::{TruncationKeep, get_next_truncation_range};
        // 0 task, then pairs: assistant calls t{i}, user answers it.
        let mut msgs = vec![user(vec![text("task")])];
        for i in 1..40 {
            if i % 2 == 1 {
                msgs.push(assistant(vec![call(&format!("t{i}"))]));
            } else {
                msgs.push(user(vec![result(&format!("t{}", i - 1))]));
            }
        }
        let mut range = None;
        for _ in 0..6 {
            range = Some(get_next_truncation_range(
                &msgs,
                range,
                TruncationKeep::Quarter,
            ));
            let out = apply_deleted_range(&msgs, range);
            assert_valid(&out);
        }
    }

    /// Roles alternate, no message is empty, and every user message's tool results match the
    /// preceding assistant message's tool calls exactly, in order, at the front.
    fn assert_valid(out: &[Message]) {
        for (i, m) in out.iter().enumerate() {
            assert!(!m.content.is_empty(), "message {i} empty");
            let expected_role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            assert_eq!(m.role, expected_role, "message {i}");
            if m.role == Role::User {
                let calls = if i > 0 {
                    tool_use_ids(&out[i - 1])
                } else {
                    Vec::new()
                };
                let results: Vec<&str> = m
                    .content
                    .iter()
                    .take(calls.len())
                    .filter_map(|b| match b {
                        ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                        _ => None,
                    })
                    .collect();
                assert_eq!(results, calls, "message {i}");
                let extra = m.content[calls.len()..]
                    .iter()
                    .any(|b| matches!(b, ContentBlock::ToolResult { .. }));
                assert!(!extra, "message {i} has a stray result");
            }
        }
    }
}
