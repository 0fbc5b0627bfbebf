//! What each `TaskEvent` shows: a JSON line with `--json`, else its text line, note or
//! countdown.
//! Spec: R5.3, R6.8, R9.3, R12.1, R12.3.

use switchyard_core::task::{CancelReason, TaskEvent, TaskStatus};

use super::renderer::Renderer;

/// The part of an error sentence before its details, such as "anthropic is rate limiting".
fn headline(message: &str) -> &str {
    message.split_once(": ").map_or(message, |(head, _)| head)
}

/// At `-vv`, every event as its JSON line on stderr.
fn log_event(event: &TaskEvent) {
    if tracing::enabled!(tracing::Level::DEBUG)
        && let Ok(line) = serde_json::to_string(event)
    {
        tracing::debug!("event: {line}");
    }
}

impl Renderer {
    /// Renders one event; a closed pipe is ignored so the task still ends cleanly.
    pub fn event(&mut self, event: &TaskEvent) {
        log_event(event);
        if let Some(spans) = self.spans.as_mut() {
            spans.event(event);
        }
        if self.stdout_closed {
            return;
        }
        let event = self.with_auth_hint(event);
        let event = event.as_ref();
        if self.json {
            self.json_line(event);
            return;
        }
        self.end_live_lines(event);
        match event {
            TaskEvent::TaskStarted {
                provider,
                model,
                mode,
                ..
            } => {
                self.note(&format!("{provider} · {model} · {mode} mode"));
            }
            TaskEvent::Text { text } => self.text(text),
            TaskEvent::Reasoning { text } => self.reasoning(text),
            TaskEvent::ToolCall {
                name, arguments, ..
            } => {
                self.close_blocks();
                self.note(&format!("tool call: {name} {arguments}"));
            }
            TaskEvent::ToolResult {
                name,
                content,
                is_error,
                ..
            } => self.tool_result(name, content, *is_error),
            TaskEvent::McpServerUnavailable { server, reason } => {
                self.mcp_server_unavailable(server, reason);
            }
            // The last line sums every request's usage, tool rounds and retries included.
            TaskEvent::Usage { .. } => self.usage.add(event),
            TaskEvent::Error { message, .. } => self.error(message),
            TaskEvent::ErrorRetry { .. } | TaskEvent::RetryStatus { .. } => self.retry(event),
            TaskEvent::ApiReqRetried => self.stop_countdown(),
            TaskEvent::Fallback {
                from,
                to,
                message,
                until,
                ..
            } => self.fallback(from, to, message, until),
            TaskEvent::RateLimitWait {
                provider,
                model,
                limit,
                delay_seconds,
            } => {
                self.close_blocks();
                let what = format!("{provider}:{model} is at its {}", limit.replace('_', " "));
                self.start_countdown(&what, *delay_seconds, "sending in", "no 429 earned");
            }
            TaskEvent::ApiReqStarted { .. } => {
                self.content_shown = false;
                self.start_waiting();
            }
            TaskEvent::ApiReqFinished { cancel_reason, .. } => {
                self.request_finished(*cancel_reason);
            }
            TaskEvent::ApiReqFailed { message, .. } => self.request_failed(message),
            TaskEvent::TaskFinished {
                status,
                first_token_ms,
                duration_ms,
            } => self.finished(*status, *first_token_ms, *duration_ms),
        }
    }

    /// With `--json`, the event as one scrubbed line on stdout.
    fn json_line(&mut self, event: &TaskEvent) {
        if let Ok(mut line) = serde_json::to_string(event) {
            switchyard_api::secrets::scrub_in_place(&mut line);
            line.push('\n');
            self.write_stdout(line.as_bytes());
        }
    }

    /// Ends the countdown and the spinner before the event's line, unless the event is theirs.
    fn end_live_lines(&mut self, event: &TaskEvent) {
        if !matches!(
            event,
            TaskEvent::ErrorRetry { failed: false, .. }
                | TaskEvent::RetryStatus { .. }
                | TaskEvent::RateLimitWait { .. }
        ) {
            self.stop_countdown();
        }
        if !matches!(event, TaskEvent::ApiReqStarted { .. }) {
            self.stop_waiting();
        }
    }

    fn mcp_server_unavailable(&mut self, server: &str, reason: &str) {
        self.close_blocks();
        eprintln!(
            "warning: MCP server \"{server}\" is not available: {reason} (the request goes out without its tools; `switchyard mcp list` shows every server)"
        );
    }

    /// "error: …", unless the last request's failure already said it.
    fn error(&mut self, message: &str) {
        self.close_blocks();
        if self.last_error.as_deref() != Some(message) {
            eprintln!("error: {}", switchyard_api::secrets::scrub(message));
        }
    }

    /// The countdown of an automatic retry or of the provider layer's quick retry.
    fn retry(&mut self, event: &TaskEvent) {
        self.close_blocks();
        match event {
            TaskEvent::ErrorRetry {
                attempt,
                max_attempts,
                delay_seconds,
                error_message,
                failed: false,
            } => {
                let label = format!("attempt {attempt} of {max_attempts}");
                self.start_countdown(
                    headline(error_message),
                    *delay_seconds,
                    "retrying in",
                    &label,
                );
            }
            TaskEvent::RetryStatus {
                attempt,
                max_attempts,
                delay_seconds,
                error_snippet,
            } => {
                // `max_attempts` counts requests; the user sees retries.
                let retries = max_attempts.saturating_sub(1);
                let label = format!("quick retry {attempt} of {retries}");
                self.start_countdown(
                    headline(error_snippet),
                    *delay_seconds,
                    "retrying in",
                    &label,
                );
            }
            _ => {}
        }
    }

    fn fallback(&mut self, from: &str, to: &str, message: &str, until: &str) {
        self.close_blocks();
        self.note(&format!(
            "{}; switched to {to} ({from} rests until {until})",
            headline(message)
        ));
    }

    /// A failure before any content is reported by the retry line alone.
    fn request_finished(&mut self, cancel_reason: Option<CancelReason>) {
        if cancel_reason == Some(CancelReason::StreamingFailed) && self.content_shown {
            // The partial answer stays; what follows is a new response.
            self.close_blocks();
            self.note("[Response interrupted by API Error]");
        }
    }

    fn request_failed(&mut self, message: &str) {
        self.stop_countdown();
        self.close_blocks();
        eprintln!("error: {}", switchyard_api::secrets::scrub(message));
        self.last_error = Some(message.to_owned());
    }

    /// The last line: the task's usage, times and how it ended.
    fn finished(&mut self, status: TaskStatus, first_token_ms: Option<u64>, duration_ms: u64) {
        self.close_blocks();
        let mut line = self.usage.line();
        if let Some(ms) = first_token_ms {
            line.push_str(&format!(" · first token {ms} ms"));
        }
        line.push_str(&format!(" · {:.1} s", duration_ms as f64 / 1000.0));
        if let Some(note) = &self.spend_note {
            line.push_str(" · ");
            line.push_str(note);
        }
        match status {
            TaskStatus::Completed => {}
            TaskStatus::Failed => line.push_str(" · failed"),
            TaskStatus::Cancelled => line.push_str(" · cancelled"),
        }
        self.note(&line);
    }

    /// "tool result: NAME: first line …", at most 200 characters of it.
    fn tool_result(&mut self, name: &str, content: &str, is_error: bool) {
        self.close_blocks();
        let first_line = content.lines().next().unwrap_or("");
        let first: String = first_line.chars().take(200).collect();
        let more = if content.lines().nth(1).is_some() || first.len() < first_line.len() {
            " …"
        } else {
            ""
        };
        let what = if is_error {
            "tool error"
        } else {
            "tool result"
        };
        self.note(&format!("{what}: {name}: {first}{more}"));
    }
}
