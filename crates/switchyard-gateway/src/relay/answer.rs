//! What one answer has been so far over every attempt that made it: the text the client got,
//! how it ended and its usage, reported or estimated.
//! Spec: R14.4, R9.2.

use switchyard_api::{ApiStreamChunk, FinishReason, Usage};

use crate::ingress::StopReason;

pub(super) use switchyard_api::estimate::{estimate_input, estimate_tokens};

#[derive(Debug, Default)]
pub(super) struct Answer {
    /// The text sent to the client, in order: what a continuation continues.
    pub(super) text: String,
    /// Whether any tool-call fragment was sent: a cut inside a call cannot be continued.
    pub(super) tool_call: bool,
    cut_by_limit: bool,
    /// The usage of the attempts that ended, summed.
    usage: Usage,
    pub(super) estimated: bool,
    /// The current attempt: its estimated input, the bytes it streamed, what it reported.
    attempt_input: u64,
    attempt_output_bytes: usize,
    attempt_usage: Option<Usage>,
}

impl Answer {
    pub(super) fn begin_attempt(&mut self, input_tokens: u64) {
        self.attempt_input = input_tokens;
        self.attempt_output_bytes = 0;
        self.attempt_usage = None;
        self.cut_by_limit = false;
    }

    /// Notes one chunk the current attempt yielded, forwarded or not: the provider bills it.
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

    pub(super) fn sent(&mut self, chunk: &ApiStreamChunk) {
        match chunk {
            ApiStreamChunk::Text { text, .. } => self.text.push_str(text),
            ApiStreamChunk::ToolCalls { .. } => self.tool_call = true,
            _ => {}
        }
    }

    /// Ends the current attempt: its reported usage, or an estimate flagged as such.
    pub(super) fn end_attempt(&mut self) -> Usage {
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
        usage
    }

    /// The end of a complete answer: its stop reason and usage.
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
    use switchyard_api::Message;

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
