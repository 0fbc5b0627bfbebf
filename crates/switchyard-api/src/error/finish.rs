//! Finish reasons that end a stream in a named error: a refusal, a filter, a malformed tool
//! call or a full context window is never an empty or a normal answer.
//! Spec: R7.5.

use super::{ApiError, ErrorKind};

/// What a finish reason means: the error kind and the sentence shown.
struct Named {
    /// The reasons, lower case.
    reasons: &'static [&'static str],
    kind: ErrorKind,
    /// What happened, then what to do; `{reason}` is replaced by the reason as sent.
    message: &'static str,
}

/// The reasons, after each provider's documented stop reasons: Anthropic, OpenAI Chat and
/// Responses, Gemini, Bedrock Converse, Z.ai, Mistral, and vLLM's `abort` before `[DONE]`.
const NAMED: &[Named] = &[
    Named {
        reasons: &["refusal"],
        kind: ErrorKind::ContentBlocked,
        message: "the model declined to answer (stop reason {reason}); rephrase the request",
    },
    Named {
        reasons: &["content_filter", "content_filtered", "guardrail_intervened"],
        kind: ErrorKind::ContentBlocked,
        message: "a content filter stopped the answer (finish reason {reason}); rephrase the request or remove the flagged content",
    },
    Named {
        reasons: &["sensitive"],
        kind: ErrorKind::ContentBlocked,
        message: "the provider's content review withheld the answer (finish reason {reason}); rephrase the request or remove the flagged content",
    },
    Named {
        reasons: &[
            "safety",
            "recitation",
            "blocklist",
            "prohibited_content",
            "spii",
            "image_safety",
            "image_prohibited_content",
            "image_recitation",
        ],
        kind: ErrorKind::ContentBlocked,
        message: "the answer was withheld (finish reason {reason}); rephrase the request or remove the flagged content",
    },
    Named {
        reasons: &[
            "malformed_function_call",
            "unexpected_tool_call",
            "too_many_tool_calls",
            "malformed_tool_use",
            "malformed_model_output",
        ],
        kind: ErrorKind::Server,
        message: "the model produced a malformed tool call or answer (finish reason {reason}); sending the request again usually works",
    },
    Named {
        reasons: &["abort"],
        kind: ErrorKind::Server,
        message: "the server aborted the generation before it finished (finish reason {reason}); sending the request again usually works",
    },
    Named {
        reasons: &["model_context_window_exceeded", "model_length"],
        kind: ErrorKind::ContextWindowExceeded,
        message: "the answer filled the model's context window (stop reason {reason})",
    },
];

/// The error a stream that ended with finish reason `reason` becomes; `None` for a normal end.
pub(crate) fn finish_reason_error(reason: &str) -> Option<ApiError> {
    let lower = reason.to_ascii_lowercase();
    let named = NAMED.iter().find(|n| n.reasons.contains(&lower.as_str()))?;
    Some(
        ApiError::new(named.kind, named.message.replace("{reason}", reason))
            .with_code(reason.to_owned()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_reasons_and_normal_ends() {
        for (reason, kind) in [
            ("refusal", ErrorKind::ContentBlocked),
            ("content_filter", ErrorKind::ContentBlocked),
            ("SAFETY", ErrorKind::ContentBlocked),
            ("RECITATION", ErrorKind::ContentBlocked),
            ("PROHIBITED_CONTENT", ErrorKind::ContentBlocked),
            ("guardrail_intervened", ErrorKind::ContentBlocked),
            ("sensitive", ErrorKind::ContentBlocked),
            ("abort", ErrorKind::Server),
            ("model_length", ErrorKind::ContextWindowExceeded),
            ("MALFORMED_FUNCTION_CALL", ErrorKind::Server),
            ("malformed_tool_use", ErrorKind::Server),
            (
                "model_context_window_exceeded",
                ErrorKind::ContextWindowExceeded,
            ),
        ] {
            let e = finish_reason_error(reason).unwrap();
            assert_eq!(e.kind, kind, "{reason}");
            assert_eq!(e.code.as_deref(), Some(reason));
            assert!(e.message.contains(reason), "{}", e.message);
        }
        for normal in [
            "stop",
            "STOP",
            "end_turn",
            "tool_use",
            "tool_calls",
            "length",
            "max_tokens",
            "MAX_TOKENS",
            "stop_sequence",
            "pause_turn",
            "",
        ] {
            assert!(finish_reason_error(normal).is_none(), "{normal}");
        }
    }
}
