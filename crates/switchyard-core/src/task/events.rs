//! What happened in a task, in order: what a user interface renders and the CLI's `--json` lines.
//! Spec: R6.8, R6.9, R6.10, R9.1, R9.3, R9.5, R10.5, R12.1, R12.3.

use serde::Serialize;
use switchyard_api::ApiError;

use crate::store::TaskUsage;

/// Why a request ended early, the reference's `cancelReason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelReason {
    /// The stream failed after content had arrived.
    StreamingFailed,
    /// The user cancelled with Ctrl-C or the token.
    UserCancelled,
}

/// One thing that happened in a task, serialised as a JSON object with a `type` field.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TaskEvent {
    /// The task began.
    TaskStarted {
        /// The id to resume it with.
        task_id: String,
        /// `plan` or `act`.
        mode: String,
        /// The provider id, such as `anthropic`.
        provider: String,
        /// The model id as sent to the provider.
        model: String,
    },
    /// Assistant text, as it streamed.
    Text {
        /// The piece that arrived.
        text: String,
    },
    /// Reasoning text, as it streamed.
    Reasoning {
        /// The piece that arrived.
        text: String,
    },
    /// A tool call, once complete.
    ToolCall {
        /// The call's id as the model gave it.
        id: String,
        /// The function called.
        name: String,
        /// The JSON text of its arguments.
        arguments: String,
    },
    /// The result of a tool call, as it goes back to the model.
    ToolResult {
        /// The tool call's id.
        id: String,
        /// Its function name.
        name: String,
        /// The text the model is sent.
        content: String,
        /// The call failed or was denied.
        is_error: bool,
    },
    /// An MCP server the request goes out without, said once per server and reason.
    McpServerUnavailable {
        /// The server's name in the settings file.
        server: String,
        /// Why, in plain words.
        reason: String,
    },
    /// The tokens and cost of one request; cache fields are 0 when the provider reported none.
    Usage {
        /// Non-cached input tokens.
        input_tokens: u64,
        /// Output tokens.
        output_tokens: u64,
        /// Input tokens read from the prompt cache.
        cache_read_tokens: u64,
        /// Input tokens written to the prompt cache.
        cache_write_tokens: u64,
        /// The provider's cost, else one computed from prices; `None` when neither is known.
        cost_usd: Option<f64>,
        /// The provider reported no usage, so the counts are estimates at 4 bytes per token.
        estimated: bool,
    },
    /// A failure.
    Error {
        /// An `ErrorKind` name, or `config`, `store` or `tool_rounds_exceeded`.
        kind: String,
        /// One sentence saying what happened and what to do.
        message: String,
        /// The HTTP status, if any.
        status: Option<u16>,
    },
    /// A request of the task starts, the reference's `api_req_started` row.
    ApiReqStarted {
        /// Numbered from 1 across the task; a resumed task numbers on.
        request_index: u32,
    },
    /// A request ended early.
    ApiReqFinished {
        /// The request's index in `ApiReqStarted`.
        request_index: u32,
        /// `streaming_failed` or `user_cancelled`.
        cancel_reason: Option<CancelReason>,
        /// The error as JSON before content, its sentence after.
        streaming_failed_message: Option<String>,
    },
    /// A retry is scheduled, or with `failed` the automatic retries are used up.
    ErrorRetry {
        /// The retry, from 1.
        attempt: u32,
        /// Automatic retries allowed.
        max_attempts: u32,
        /// Seconds until the retry, 0 when `failed`.
        delay_seconds: f64,
        /// The error's sentence.
        error_message: String,
        /// Retries are used up.
        failed: bool,
    },
    /// The provider layer retries a rate-limited request before its stream started.
    RetryStatus {
        /// The attempt that failed, from 1.
        attempt: u32,
        /// Requests in all under the provider's retry policy.
        max_attempts: u32,
        /// Seconds until the next attempt.
        delay_seconds: f64,
        /// The start of the error's sentence, at most 200 characters.
        error_snippet: String,
    },
    /// The request step runs again after a retry.
    ApiReqRetried,
    /// A failover entry failed before any content and the request moves to the next one.
    Fallback {
        /// The entry that failed, `provider:model`.
        from: String,
        /// The entry the request goes to now, `provider:model`.
        to: String,
        /// The failure's kind, such as `rate_limited`.
        reason: String,
        /// The failure's sentence.
        message: String,
        /// When `from` may be tried again, RFC 3339 UTC.
        until: String,
    },
    /// A request waits for room in a rate-limit window instead of being sent into a 429.
    RateLimitWait {
        /// The provider id.
        provider: String,
        /// The model id.
        model: String,
        /// The limit that is full, such as `requests_per_minute`.
        limit: String,
        /// Seconds until the request is sent.
        delay_seconds: f64,
    },
    /// Automatic recovery ended: the user or `--on-failure` decides to retry or cancel.
    ApiReqFailed {
        /// The error's kind.
        kind: String,
        /// The error's sentence.
        message: String,
    },
    /// This run of the task ended.
    TaskFinished {
        /// `completed`, `failed` or `cancelled`.
        status: TaskStatus,
        /// Milliseconds to the first content chunk, if any arrived.
        first_token_ms: Option<u64>,
        /// Milliseconds the run took.
        duration_ms: u64,
    },
}

impl TaskEvent {
    /// Replaces every configured secret in the text fields by `[redacted]`, before storing.
    pub fn scrub_secrets(&mut self) {
        use switchyard_api::secrets::scrub_in_place as scrub;
        match self {
            Self::Text { text }
            | Self::Reasoning { text }
            | Self::ToolCall {
                arguments: text, ..
            }
            | Self::ToolResult { content: text, .. }
            | Self::McpServerUnavailable { reason: text, .. }
            | Self::Error { message: text, .. }
            | Self::ApiReqFailed { message: text, .. }
            | Self::ApiReqFinished {
                streaming_failed_message: Some(text),
                ..
            }
            | Self::ErrorRetry {
                error_message: text,
                ..
            }
            | Self::RetryStatus {
                error_snippet: text,
                ..
            }
            | Self::Fallback { message: text, .. } => {
                scrub(text);
            }
            Self::TaskStarted { .. }
            | Self::RateLimitWait { .. }
            | Self::Usage { .. }
            | Self::ApiReqStarted { .. }
            | Self::ApiReqFinished { .. }
            | Self::ApiReqRetried
            | Self::TaskFinished { .. } => {}
        }
    }

    /// The tokens and cost of a `usage` event as a task's totals count them.
    pub fn usage(&self) -> Option<TaskUsage> {
        match self {
            Self::Usage {
                input_tokens,
                output_tokens,
                cache_read_tokens,
                cache_write_tokens,
                cost_usd,
                ..
            } => Some(TaskUsage {
                tokens_in: *input_tokens,
                tokens_out: *output_tokens,
                cache_writes: *cache_write_tokens,
                cache_reads: *cache_read_tokens,
                cost_usd: cost_usd.unwrap_or(0.0),
                unpriced_requests: u64::from(cost_usd.is_none()),
            }),
            _ => None,
        }
    }
}

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Every turn was answered.
    Completed,
    /// A request failed and was not retried, or the task could not be saved.
    Failed,
    /// The user cancelled.
    Cancelled,
}

pub(super) fn error_event(error: &ApiError) -> TaskEvent {
    TaskEvent::Error {
        kind: error.kind.as_str().to_owned(),
        message: error.to_string(),
        status: error.status,
    }
}

pub(super) fn user_cancelled(request_index: u32) -> TaskEvent {
    TaskEvent::ApiReqFinished {
        request_index,
        cancel_reason: Some(CancelReason::UserCancelled),
        streaming_failed_message: None,
    }
}

pub(super) fn streaming_failed(request_index: u32, error: &ApiError) -> TaskEvent {
    TaskEvent::ApiReqFinished {
        request_index,
        cancel_reason: Some(CancelReason::StreamingFailed),
        streaming_failed_message: serde_json::to_string(error).ok(),
    }
}
