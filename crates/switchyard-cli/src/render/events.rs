//! The words of each event's line: what the renderer shows for a tool result, a retry, a
//! fallback or the end of a task.
//! Spec: R5.3, R6.8, R9.3, R12.1, R12.3.

use std::borrow::Cow;

use switchyard_core::task::{TaskEvent, TaskStatus};

/// The part of an error sentence before its details, such as "anthropic is rate limiting".
fn headline(message: &str) -> &str {
    message.split_once(": ").map_or(message, |(head, _)| head)
}

/// At `-vv`, every event as its JSON line on stderr.
pub(super) fn log_event(event: &TaskEvent) {
    if tracing::enabled!(tracing::Level::DEBUG)
        && let Ok(line) = serde_json::to_string(event)
    {
        tracing::debug!("event: {line}");
    }
}

/// `event` with `hint` added to an `auth` error that does not name it yet.
pub(super) fn with_auth_hint<'a>(hint: Option<&str>, event: &'a TaskEvent) -> Cow<'a, TaskEvent> {
    let Some(hint) = hint else {
        return Cow::Borrowed(event);
    };
    match event {
        TaskEvent::Error { kind, message, .. } | TaskEvent::ApiReqFailed { kind, message }
            if kind == "auth" && !message.contains(hint) =>
        {
            let mut event = event.clone();
            if let TaskEvent::Error { message, .. } | TaskEvent::ApiReqFailed { message, .. } =
                &mut event
            {
                *message = format!("{}; {hint}", message.trim_end_matches('.'));
            }
            Cow::Owned(event)
        }
        _ => Cow::Borrowed(event),
    }
}

/// True unless the event is a countdown's own: a scheduled retry or a rate-limit wait.
pub(super) fn ends_countdown(event: &TaskEvent) -> bool {
    !matches!(
        event,
        TaskEvent::ErrorRetry { failed: false, .. }
            | TaskEvent::RetryStatus { .. }
            | TaskEvent::RateLimitWait { .. }
    )
}

/// A countdown line: what it waits for, for how long, and its label.
pub(super) struct Countdown {
    pub(super) what: String,
    pub(super) delay_seconds: f64,
    pub(super) verb: &'static str,
    pub(super) label: String,
}

/// The countdown of an automatic retry, the provider layer's quick retry or a rate-limit wait;
/// `None` for a retry that failed.
pub(super) fn countdown(event: &TaskEvent) -> Option<Countdown> {
    match event {
        TaskEvent::ErrorRetry {
            attempt,
            max_attempts,
            delay_seconds,
            error_message,
            failed: false,
        } => Some(Countdown {
            what: headline(error_message).to_owned(),
            delay_seconds: *delay_seconds,
            verb: "retrying in",
            label: format!("attempt {attempt} of {max_attempts}"),
        }),
        TaskEvent::RetryStatus {
            attempt,
            max_attempts,
            delay_seconds,
            error_snippet,
        } => {
            // `max_attempts` counts requests; the user sees retries.
            let retries = max_attempts.saturating_sub(1);
            Some(Countdown {
                what: headline(error_snippet).to_owned(),
                delay_seconds: *delay_seconds,
                verb: "retrying in",
                label: format!("quick retry {attempt} of {retries}"),
            })
        }
        TaskEvent::RateLimitWait {
            provider,
            model,
            limit,
            delay_seconds,
        } => Some(Countdown {
            what: format!("{provider}:{model} is at its {}", limit.replace('_', " ")),
            delay_seconds: *delay_seconds,
            verb: "sending in",
            label: "no 429 earned".to_owned(),
        }),
        _ => None,
    }
}

pub(super) fn mcp_server_unavailable(server: &str, reason: &str) -> String {
    format!(
        "warning: MCP server \"{server}\" is not available: {reason} (the request goes out without its tools; `switchyard mcp list` shows every server)"
    )
}

pub(super) fn fallback(from: &str, to: &str, message: &str, until: &str) -> String {
    format!(
        "{}; switched to {to} ({from} rests until {until})",
        headline(message)
    )
}

/// "tool result: NAME: first line …", at most 200 characters of it.
pub(super) fn tool_result(name: &str, content: &str, is_error: bool) -> String {
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
    format!("{what}: {name}: {first}{more}")
}

/// The last line: the task's usage, times, spend and how it ended.
pub(super) fn finished(
    usage: String,
    status: TaskStatus,
    first_token_ms: Option<u64>,
    duration_ms: u64,
    spend_note: Option<&str>,
) -> String {
    let mut line = usage;
    if let Some(ms) = first_token_ms {
        line.push_str(&format!(" · first token {ms} ms"));
    }
    line.push_str(&format!(" · {:.1} s", duration_ms as f64 / 1000.0));
    if let Some(note) = spend_note {
        line.push_str(" · ");
        line.push_str(note);
    }
    match status {
        TaskStatus::Completed => {}
        TaskStatus::Failed => line.push_str(" · failed"),
        TaskStatus::Cancelled => line.push_str(" · cancelled"),
    }
    line
}
