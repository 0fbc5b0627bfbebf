//! `Renderer`: where each task event goes, text on stdout and the rest on stderr, or JSON lines.

use std::io::Write;

use switchyard_core::task::{CancelReason, TaskEvent};

use super::events::{self, log_event, with_auth_hint};
use super::live::LiveLines;
use super::style::{DIM, RESET};
use super::usage::UsageSum;

/// Writes task events for a person, or as JSON lines for a program with `--json`.
pub struct Renderer {
    json: bool,
    quiet: bool,
    /// Dim notes and reasoning, as anstream decides for stderr.
    color: bool,
    live: LiveLines,
    text_open: bool,
    reasoning_open: bool,
    usage: UsageSum,
    /// The last error line printed, so the final error is not repeated.
    last_error: Option<String>,
    content_shown: bool,
    /// Notified once stdout's reader has gone.
    closed: std::sync::Arc<tokio::sync::Notify>,
    /// Stdout's reader has gone, so nothing more is written anywhere.
    stdout_closed: bool,
    /// The variable or setting that holds the key, for a rejected key's error.
    auth_hint: Option<String>,
    spend_note: Option<String>,
    /// The task's spans, fed from its events when telemetry is on.
    spans: Option<switchyard_gateway::telemetry::TaskSpans>,
}

impl Renderer {
    /// A renderer; `quiet` hides reasoning in text mode.
    pub fn new(json: bool, quiet: bool) -> Self {
        let color = !matches!(
            anstream::AutoStream::choice(&std::io::stderr()),
            anstream::ColorChoice::Never
        );
        Self {
            json,
            quiet,
            color,
            live: LiveLines::new(color),
            text_open: false,
            reasoning_open: false,
            usage: UsageSum::default(),
            last_error: None,
            content_shown: false,
            closed: crate::stdout_watch::watch(),
            stdout_closed: false,
            auth_hint: None,
            spend_note: None,
            spans: None,
        }
    }

    /// Feeds every event from now on to `spans` too.
    pub fn trace(&mut self, spans: switchyard_gateway::telemetry::TaskSpans) {
        self.spans = Some(spans);
    }

    /// Names where the key in effect comes from, for the error of a rejected key.
    pub fn set_auth_hint(&mut self, hint: String) {
        self.auth_hint = Some(hint);
    }

    /// Notified when stdout's reader goes away, so the request is cancelled at once and nobody
    /// pays for tokens nobody reads.
    pub fn closed_signal(&self) -> std::sync::Arc<tokio::sync::Notify> {
        std::sync::Arc::clone(&self.closed)
    }

    pub fn mark_stdout_closed(&mut self) {
        self.stdout_closed = true;
    }

    pub fn stdout_closed(&self) -> bool {
        self.stdout_closed
    }

    pub fn spend_note(&mut self, note: String) {
        self.spend_note = Some(note);
    }

    pub fn info(&mut self, text: &str) {
        if !self.json {
            self.close_blocks();
            self.note(text);
        }
    }

    /// Renders one event; a closed pipe is ignored so the task still ends cleanly.
    pub fn event(&mut self, event: &TaskEvent) {
        log_event(event);
        if let Some(spans) = self.spans.as_mut() {
            spans.event(event);
        }
        if self.stdout_closed {
            return;
        }
        let event = with_auth_hint(self.auth_hint.as_deref(), event);
        let event = event.as_ref();
        if self.json {
            self.json_line(event);
            return;
        }
        if events::ends_countdown(event) {
            self.live.stop_countdown();
        }
        if !matches!(event, TaskEvent::ApiReqStarted { .. }) {
            self.live.stop_waiting();
        }
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
            } => self.line(&format!("tool call: {name} {arguments}")),
            TaskEvent::ToolResult {
                name,
                content,
                is_error,
                ..
            } => self.line(&events::tool_result(name, content, *is_error)),
            TaskEvent::McpServerUnavailable { server, reason } => {
                self.close_blocks();
                eprintln!("{}", events::mcp_server_unavailable(server, reason));
            }
            // The last line sums every request's usage, tool rounds and retries included.
            TaskEvent::Usage { .. } => self.usage.add(event),
            TaskEvent::Error { message, .. } => self.error(message),
            TaskEvent::ErrorRetry { .. }
            | TaskEvent::RetryStatus { .. }
            | TaskEvent::RateLimitWait { .. } => self.countdown(event),
            TaskEvent::ApiReqRetried => self.live.stop_countdown(),
            TaskEvent::Fallback {
                from,
                to,
                message,
                until,
                ..
            } => self.line(&events::fallback(from, to, message, until)),
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
            } => {
                let usage = self.usage.line();
                let spend = self.spend_note.as_deref();
                let line = events::finished(usage, *status, *first_token_ms, *duration_ms, spend);
                self.line(&line);
            }
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

    /// A dimmed line of its own on stderr.
    fn line(&mut self, text: &str) {
        self.close_blocks();
        self.note(text);
    }

    fn start_waiting(&mut self) {
        if self.live.would_wait() {
            self.close_blocks();
        }
        self.live.start_waiting();
    }

    fn countdown(&mut self, event: &TaskEvent) {
        self.close_blocks();
        if let Some(c) = events::countdown(event) {
            self.live
                .start_countdown(&c.what, c.delay_seconds, c.verb, &c.label);
        }
    }

    /// "error: …", unless the last request's failure already said it.
    fn error(&mut self, message: &str) {
        self.close_blocks();
        if self.last_error.as_deref() != Some(message) {
            eprintln!("error: {}", switchyard_api::secrets::scrub(message));
        }
    }

    /// A failure before any content is reported by the retry line alone.
    fn request_finished(&mut self, cancel_reason: Option<CancelReason>) {
        if cancel_reason == Some(CancelReason::StreamingFailed) && self.content_shown {
            // The partial answer stays; what follows is a new response.
            self.line("[Response interrupted by API Error]");
        }
    }

    fn request_failed(&mut self, message: &str) {
        self.live.stop_countdown();
        self.close_blocks();
        eprintln!("error: {}", switchyard_api::secrets::scrub(message));
        self.last_error = Some(message.to_owned());
    }

    /// Writes `bytes` to stdout and flushes; a closed pipe marks the renderer closed.
    fn write_stdout(&mut self, bytes: &[u8]) {
        if self.stdout_closed {
            return;
        }
        let mut out = std::io::stdout().lock();
        let written = out.write_all(bytes).and_then(|()| out.flush());
        if let Err(e) = written {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                self.stdout_closed = true;
                self.closed.notify_one();
            }
        }
    }

    fn text(&mut self, text: &str) {
        self.content_shown = true;
        self.close_reasoning();
        let shown = switchyard_api::secrets::scrub(text);
        self.write_stdout(shown.as_bytes());
        self.text_open = !text.ends_with('\n');
    }

    /// Reasoning dimmed on stderr, hidden with `--quiet`.
    fn reasoning(&mut self, text: &str) {
        self.content_shown = true;
        if self.quiet {
            return;
        }
        let mut err = std::io::stderr().lock();
        if !self.reasoning_open && self.color {
            let _ = err.write_all(DIM.as_bytes());
        }
        self.reasoning_open = true;
        let _ = err.write_all(switchyard_api::secrets::scrub(text).as_bytes());
        let _ = err.flush();
    }

    fn note(&self, text: &str) {
        let text = switchyard_api::secrets::scrub(text);
        if self.color {
            eprintln!("{DIM}{text}{RESET}");
        } else {
            eprintln!("{text}");
        }
    }

    fn close_reasoning(&mut self) {
        if self.reasoning_open {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(if self.color { b"\x1b[0m\n" } else { b"\n" });
            self.reasoning_open = false;
        }
    }

    fn close_blocks(&mut self) {
        self.close_reasoning();
        self.close_text();
    }

    fn close_text(&mut self) {
        if self.text_open {
            self.write_stdout(b"\n");
            self.text_open = false;
        }
    }
}
