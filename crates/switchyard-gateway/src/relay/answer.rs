//! What one answer has been so far, over every upstream attempt that made it (SPEC R14.4,
//! R9.2): the text the client got (a continuation carries it), whether a tool call or the
//! output limit ended it, and its usage — what each attempt's provider reported, or an
//! estimate where one reported none.

use switchyard_api::{ApiStreamChunk, FinishReason, Message, ToolSpec, Usage};
use switchyard_core::context::estimate_message_tokens;

use crate::ingress::StopReason;

pub(super) use switchyard_core::context::estimate_tokens;

/// The estimated input of one upstream request, in tokens: the task layer's estimate of the
/// system prompt and messages (SPEC R8.2, [`estimate_message_tokens`]: 4 bytes per token,
/// each image 1,000), and every tool's name, description and schema at 4 bytes per token. An
/// estimate, never a bill.
pub(super) fn estimate_input(system: &str, messages: &[Message], tools: &[ToolSpec]) -> u64 {
    let tools: usize = (tools.iter())
        .map(|t| t.name.len() + t.description.len() + t.input_schema.to_string().len())
        .sum();
    estimate_message_tokens(system, messages) + estimate_tokens(tools)
}

/// One answer as the client has received it, over its attempts.
#[derive(Debug, Default)]
pub(super) struct Answer {
    /// The text sent to the client, in order (what a continuation continues).
    pub(super) text: String,
    /// Whether any tool-call fragment was sent (the answer ends `tool_use`; a cut in it cannot
    /// be continued).
    pub(super) tool_call: bool,
    /// Whether the output limit ended the last attempt ([`FinishReason::MaxTokens`]).
    cut_by_limit: bool,
    /// The usage of the attempts that ended, summed.
    usage: Usage,
    /// Whether any part of `usage` is an estimate.
    pub(super) estimated: bool,
    /// The current attempt: its estimated input, the bytes it streamed, what it reported.
    attempt_input: u64,
    attempt_output_bytes: usize,
    attempt_usage: Option<Usage>,
}

impl Answer {
    /// Starts counting an attempt whose request is estimated at `input_tokens`.
    pub(super) fn begin_attempt(&mut self, input_tokens: u64) {
        self.attempt_input = input_tokens;
        self.attempt_output_bytes = 0;
        self.attempt_usage = None;
        self.cut_by_limit = false;
    }

    /// Notes one chunk the current attempt yielded (forwarded or not: the model wrote it, the
    /// provider bills it). Usage and finish chunks are kept here, never forwarded.
    pub(super) fn generated(&mut self, chunk: &ApiStreamChunk) {
        self.attempt_output_bytes += match chunk {
            ApiStreamChunk::Text { text, .. } => text.len(),
            ApiStreamChunk::Reasoning { reasoning, .. } => reasoning.len(),
            ApiStreamChunk::ToolCalls {
                name,
                arguments_delta,
                ..
            } => name.len() + arguments_delta.len(),
            ApiStreamChunk::Usage(u) => {
                self.attempt_usage.get_or_insert_with(Usage::default).add(u);
                0
            }
            ApiStreamChunk::Finish { reason } => {
                self.cut_by_limit |= *reason == FinishReason::MaxTokens;
                0
            }
            ApiStreamChunk::Wire(_) => 0,
        };
    }

    /// Notes one chunk sent to the client.
    pub(super) fn sent(&mut self, chunk: &ApiStreamChunk) {
        match chunk {
            ApiStreamChunk::Text { text, .. } => self.text.push_str(text),
            ApiStreamChunk::ToolCalls { .. } => self.tool_call = true,
            _ => {}
        }
    }

    /// Ends the current attempt: its reported usage, or where it reported none an estimate
    /// (its request's input, what it streamed as output) flagged as such.
    pub(super) fn end_attempt(&mut self) {
        let usage = match self.attempt_usage.take() {
            Some(usage) => usage,
            None => {
                self.estimated = true;
                Usage {
                    input_tokens: self.attempt_input,
                    output_tokens: estimate_tokens(self.attempt_output_bytes),
                    ..Usage::default()
                }
            }
        };
        self.usage.add(&usage);
        self.attempt_input = 0;
        self.attempt_output_bytes = 0;
    }

    /// The end of a complete answer (after [`Answer::end_attempt`]): its stop reason (a tool
    /// call, the output limit, else the model's own end) and its usage.
    pub(super) fn end(&self) -> (StopReason, Usage) {
        let stop = if self.tool_call {
            StopReason::ToolUse
        } else if self.cut_by_limit {
            StopReason::MaxTokens
        } else {
            StopReason::EndTurn
        };
        (stop, self.usage.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attempt_that_reported_no_usage_is_estimated_from_its_request_and_its_output() {
        let mut answer = Answer::default();
        answer.begin_attempt(estimate_input(
            "sys!",
            &[Message::user_text("hi there")],
            &[],
        ));
        answer.generated(&ApiStreamChunk::text("twelve bytes"));
        answer.end_attempt();
        let (stop, usage) = answer.end();
        assert_eq!(stop, StopReason::EndTurn);
        assert_eq!((usage.input_tokens, usage.output_tokens), (3, 3));
        assert!(answer.estimated);
    }

    #[test]
    fn reported_usage_of_each_attempt_is_summed_and_the_limit_is_the_stop_reason() {
        let mut answer = Answer::default();
        let reported = |input, output| {
            ApiStreamChunk::Usage(Usage {
                input_tokens: input,
                output_tokens: output,
                cache_read_tokens: Some(1),
                ..Usage::default()
            })
        };
        answer.begin_attempt(100);
        answer.generated(&reported(10, 2));
        answer.end_attempt();
        answer.begin_attempt(100);
        answer.generated(&reported(12, 5));
        answer.generated(&ApiStreamChunk::max_tokens());
        answer.end_attempt();
        let (stop, usage) = answer.end();
        assert_eq!(stop, StopReason::MaxTokens);
        assert_eq!((usage.input_tokens, usage.output_tokens), (22, 7));
        assert_eq!(usage.cache_read_tokens, Some(2));
        assert!(!answer.estimated);
    }
}
