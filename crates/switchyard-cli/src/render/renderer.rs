//! The `Renderer`'s state and its output primitives.

use std::io::{IsTerminal, Write};

use switchyard_core::task::TaskEvent;

use super::usage::UsageSum;

pub(super) const DIM: &str = "\x1b[2m";
pub(super) const RESET: &str = "\x1b[0m";

/// Writes task events for a person (text mode) or a program (`--json`).
pub struct Renderer {
    pub(super) json: bool,
    pub(super) quiet: bool,
    /// Dim notes and reasoning, as anstream decides for stderr.
    pub(super) color: bool,
    /// Stderr can redraw a line: live countdowns and the spinner, else one plain line per retry.
    pub(super) live: bool,
    pub(super) waiting: Option<indicatif::ProgressBar>,
    pub(super) text_open: bool,
    pub(super) reasoning_open: bool,
    pub(super) usage: UsageSum,
    pub(super) countdown: Option<tokio::task::JoinHandle<()>>,
    /// The last error line printed, so the final error is not repeated.
    pub(super) last_error: Option<String>,
    pub(super) content_shown: bool,
    /// Notified once stdout's reader has gone.
    pub(super) closed: std::sync::Arc<tokio::sync::Notify>,
    /// Stdout's reader has gone, so nothing more is written anywhere.
    pub(super) stdout_closed: bool,
    /// The variable or setting that holds the key, for a rejected key's error.
    pub(super) auth_hint: Option<String>,
    pub(super) spend_note: Option<String>,
    /// The task's spans, fed from its events when telemetry is on.
    pub(super) spans: Option<switchyard_gateway::telemetry::TaskSpans>,
}

impl Renderer {
    /// A renderer; `quiet` hides reasoning in text mode.
    pub fn new(json: bool, quiet: bool) -> Self {
        Self {
            json,
            quiet,
            color: !matches!(
                anstream::AutoStream::choice(&std::io::stderr()),
                anstream::ColorChoice::Never
            ),
            live: std::io::stderr().is_terminal()
                && std::env::var_os("TERM").is_none_or(|t| t != "dumb"),
            waiting: None,
            text_open: false,
            reasoning_open: false,
            usage: UsageSum::default(),
            countdown: None,
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

    pub(super) fn with_auth_hint<'a>(
        &self,
        event: &'a TaskEvent,
    ) -> std::borrow::Cow<'a, TaskEvent> {
        use std::borrow::Cow;
        let Some(hint) = &self.auth_hint else {
            return Cow::Borrowed(event);
        };
        match event {
            TaskEvent::Error { kind, message, .. } | TaskEvent::ApiReqFailed { kind, message }
                if kind == "auth" && !message.contains(hint.as_str()) =>
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

    /// Writes `bytes` to stdout and flushes; a closed pipe marks the renderer closed.
    pub(super) fn write_stdout(&mut self, bytes: &[u8]) {
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

    pub(super) fn text(&mut self, text: &str) {
        self.content_shown = true;
        self.close_reasoning();
        let shown = switchyard_api::secrets::scrub(text);
        self.write_stdout(shown.as_bytes());
        self.text_open = !text.ends_with('\n');
    }

    /// Reasoning dimmed on stderr, hidden with `--quiet`.
    pub(super) fn reasoning(&mut self, text: &str) {
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

    pub fn spend_note(&mut self, note: String) {
        self.spend_note = Some(note);
    }

    pub fn info(&mut self, text: &str) {
        if !self.json {
            self.close_blocks();
            self.note(text);
        }
    }

    pub(super) fn note(&self, text: &str) {
        let text = switchyard_api::secrets::scrub(text);
        if self.color {
            eprintln!("{DIM}{text}{RESET}");
        } else {
            eprintln!("{text}");
        }
    }

    pub(super) fn close_reasoning(&mut self) {
        if self.reasoning_open {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(if self.color { b"\x1b[0m\n" } else { b"\n" });
            self.reasoning_open = false;
        }
    }

    pub(super) fn close_blocks(&mut self) {
        self.close_reasoning();
        self.close_text();
    }

    pub(super) fn close_text(&mut self) {
        if self.text_open {
            self.write_stdout(b"\n");
            self.text_open = false;
        }
    }
}
