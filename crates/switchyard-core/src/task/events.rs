//! [`TaskEvent`]: what happened in a task, in order; what a user interface renders.

use serde::Serialize;

use super::turn::CancelReason;

/// One thing that happened in a task, in the order it happened.
///
/// Serialised as one JSON object with a `type` field (`task_started`, `text`, …); these are the
/// CLI's `--json` lines. Token counts are tokens, costs USD, durations milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TaskEvent {
    /// The task began: its id, mode, and the provider and model in effect.
    TaskStarted {
        task_id: String,
        mode: String,
        provider: String,
        model: String,
    },
    /// Assistant text, as it streamed.
    Text { text: String },
    /// Reasoning (thinking) text, as it streamed.
    Reasoning { text: String },
    /// A tool call, once complete (`arguments` is the JSON text the model produced).
    ToolCall {
        id: String,
        name: String,
        arguments: String,
    },
    /// The result of a tool call, as it goes back to the model (`id` is the tool call's id,
    /// `name` its function name; `is_error` when the call failed or was denied).
    ToolResult {
        id: String,
        name: String,
        content: String,
        is_error: bool,
    },
    /// An MCP server the request goes out without (SPEC R6.1, R11.2): still connecting after
    /// the wait, or failed, with the reason in plain words. Said once per server and reason.
    McpServerUnavailable { server: String, reason: String },
    /// The tokens and cost of one request, once it ended. Cache fields are 0 when the
    /// provider reported none; `estimated` is true when the provider reported no usage and
    /// the counts are estimates (4 bytes per token).
    Usage {
        input_tokens: u64,
        output_tokens: u64,
        cache_read_tokens: u64,
        cache_write_tokens: u64,
        cost_usd: f64,
        estimated: bool,
    },
    /// A failure: its kind (`rate_limited`, `auth`, … see `ErrorKind`), a one-line message,
    /// and the HTTP status when there was one.
    Error {
        kind: String,
        message: String,
        status: Option<u16>,
    },
    /// A request of the task starts (the reference's `api_req_started` row); numbered from 1
    /// across the task.
    ApiReqStarted { request_index: u32 },
    /// A request ended early: `cancel_reason` `streaming_failed` (with the error) or
    /// `user_cancelled` (SPEC R9.1, R9.3, R9.5).
    ApiReqFinished {
        request_index: u32,
        cancel_reason: Option<CancelReason>,
        streaming_failed_message: Option<String>,
    },
    /// An automatic retry is scheduled (`failed: false`, after `delay_seconds`), or automatic
    /// retries are used up (`failed: true`) (SPEC R6.8, R6.9).
    ErrorRetry {
        attempt: u32,
        max_attempts: u32,
        delay_seconds: f64,
        error_message: String,
        failed: bool,
    },
    /// The provider layer retries a rate-limited request before its stream started, after
    /// `delay_seconds` (SPEC R5.3, the `retry_status` of the request).
    RetryStatus {
        attempt: u32,
        max_attempts: u32,
        delay_seconds: f64,
        error_snippet: String,
    },
    /// The request step runs again after a retry (SPEC R6.10).
    ApiReqRetried,
    /// Automatic recovery ended: the user (or `--on-failure`) decides to retry or cancel
    /// (SPEC R6.9).
    ApiReqFailed { kind: String, message: String },
    /// The task ended: `completed`, `failed` or `cancelled`, with the time to the first
    /// content chunk (`null` when none arrived) and the whole duration.
    TaskFinished {
        status: TaskStatus,
        first_token_ms: Option<u64>,
        duration_ms: u64,
    },
}

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Completed,
    Failed,
    Cancelled,
}
