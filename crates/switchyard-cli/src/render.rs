//! Rendering task events: streamed text on stdout, everything else on stderr; or, with
//! `--json`, one JSON object per line on stdout (README "JSON output").

use std::io::{IsTerminal, Write};

use switchyard_core::store::TaskUsage;
use switchyard_core::task::{CancelReason, TaskEvent, TaskStatus};

const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

/// Writes task events for a person (text mode) or a program (`--json`).
pub struct Renderer {
    json: bool,
    quiet: bool,
    /// Dim notes and reasoning: anstream's choice for stderr (a terminal, no `NO_COLOR`, not
    /// `TERM=dumb`; `CLICOLOR_FORCE` forces it).
    color: bool,
    /// Stderr is a terminal that can redraw a line (not `TERM=dumb`): live countdowns and the
    /// waiting spinner; elsewhere one plain line per retry and no spinner.
    live: bool,
    /// The "waiting for the model" spinner, from a request's start to its first content.
    waiting: Option<indicatif::ProgressBar>,
    text_open: bool,
    reasoning_open: bool,
    usage: UsageSum,
    /// The live "retrying in N s" line while a retry waits.
    countdown: Option<tokio::task::JoinHandle<()>>,
    /// The last error line printed, so the final error is not repeated.
    last_error: Option<String>,
    /// Whether the current request showed any text or reasoning.
    content_shown: bool,
    /// Notified once stdout's reader has gone (a failed write, or the pipe's reader closed).
    closed: std::sync::Arc<tokio::sync::Notify>,
    /// Stdout's reader has gone: nothing more is written anywhere (the user stopped reading).
    stdout_closed: bool,
    /// What a rejected key's error adds: the variable (or setting) that holds the key.
    auth_hint: Option<String>,
    /// Spend against the caps, for the last line.
    spend_note: Option<String>,
}

/// Every request's usage of the task, summed (tokens; USD); `estimated` when any request's
/// counts were.
#[derive(Debug, Default)]
struct UsageSum {
    total: Option<TaskUsage>,
    estimated: bool,
}

impl UsageSum {
    /// Adds a `usage` event.
    fn add(&mut self, event: &TaskEvent) {
        if let Some(usage) = event.usage() {
            *self.total.get_or_insert_with(TaskUsage::default) += usage;
            self.estimated |= matches!(
                event,
                TaskEvent::Usage {
                    estimated: true,
                    ..
                }
            );
        }
    }

    /// "N in · M out tokens · cache … · $C", or "no usage reported".
    fn line(&self) -> String {
        let Some(total) = &self.total else {
            return "no usage reported".to_owned();
        };
        let approx = if self.estimated { "~" } else { "" };
        let mut s = format!(
            "{approx}{} in · {approx}{} out tokens",
            total.tokens_in, total.tokens_out
        );
        if self.estimated {
            s.push_str(" (estimated: the provider reported no usage)");
        }
        if total.cache_reads > 0 || total.cache_writes > 0 {
            s.push_str(&format!(
                " · cache {} read / {} written",
                total.cache_reads, total.cache_writes
            ));
        }
        s.push_str(" · ");
        s.push_str(&cost_label(total, 6));
        s
    }
}

/// A task's (or request's) cost for people: `$0.001234`, or, when a request's cost is
/// unknown (a model without prices, SPEC R2.3), `cost unknown` (with the known part, if any).
pub fn cost_label(usage: &TaskUsage, decimals: usize) -> String {
    match usage.cost() {
        Some(c) => format!("${c:.decimals$}"),
        None if usage.cost_usd > 0.0 => {
            format!("cost unknown (at least ${:.decimals$})", usage.cost_usd)
        }
        None => "cost unknown".to_owned(),
    }
}

/// The part of an error sentence before its details: "anthropic is rate limiting requests
/// (HTTP 429)".
fn headline(message: &str) -> &str {
    message.split_once(": ").map_or(message, |(head, _)| head)
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
        }
    }

    /// Names where the key in effect comes from, for the error of a rejected key: e.g.
    /// "check OPENAI_API_KEY, the variable the key for openai is read from".
    pub fn set_auth_hint(&mut self, hint: String) {
        self.auth_hint = Some(hint);
    }

    /// `event` with the auth hint added to an `auth` error that does not name it yet.
    fn with_auth_hint<'a>(&self, event: &'a TaskEvent) -> std::borrow::Cow<'a, TaskEvent> {
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

    /// Notified when stdout's reader goes away (`switchyard task … | head -c 20`), so the
    /// request is cancelled at once and the user stops paying for tokens nobody reads.
    pub fn closed_signal(&self) -> std::sync::Arc<tokio::sync::Notify> {
        std::sync::Arc::clone(&self.closed)
    }

    /// Stdout's reader has gone (seen by the watcher): write nothing more.
    pub fn mark_stdout_closed(&mut self) {
        self.stdout_closed = true;
    }

    /// True once stdout's reader has gone.
    pub fn stdout_closed(&self) -> bool {
        self.stdout_closed
    }

    /// Writes `bytes` to stdout and flushes; a closed pipe marks the renderer closed and
    /// notifies [`Renderer::closed_signal`].
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

    /// Renders one event. Output errors (a closed pipe) are ignored: the task still ends cleanly.
    pub fn event(&mut self, event: &TaskEvent) {
        if self.stdout_closed {
            return;
        }
        let event = self.with_auth_hint(event);
        let event = event.as_ref();
        if self.json {
            if let Ok(mut line) = serde_json::to_string(event) {
                switchyard_api::secrets::scrub_in_place(&mut line);
                line.push('\n');
                self.write_stdout(line.as_bytes());
            }
            return;
        }
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
                self.close_blocks();
                eprintln!(
                    "warning: MCP server \"{server}\" is not available: {reason} (the request goes out without its tools; `switchyard mcp list` shows every server)"
                );
            }
            // The last line shows the whole task: every request's usage (tool rounds, retries)
            // summed.
            TaskEvent::Usage { .. } => self.usage.add(event),
            TaskEvent::Error { message, .. } => {
                self.close_blocks();
                if self.last_error.as_deref() != Some(message.as_str()) {
                    eprintln!("error: {}", switchyard_api::secrets::scrub(message));
                }
            }
            TaskEvent::ErrorRetry {
                attempt,
                max_attempts,
                delay_seconds,
                error_message,
                failed,
            } => {
                self.close_blocks();
                if !*failed {
                    let label = format!("attempt {attempt} of {max_attempts}");
                    self.start_countdown(
                        headline(error_message),
                        *delay_seconds,
                        "retrying in",
                        &label,
                    );
                }
            }
            TaskEvent::RetryStatus {
                attempt,
                max_attempts,
                delay_seconds,
                error_snippet,
            } => {
                self.close_blocks();
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
            TaskEvent::ApiReqRetried => self.stop_countdown(),
            TaskEvent::Fallback {
                from,
                to,
                message,
                until,
                ..
            } => {
                // One line, and the task goes on (SPEC R12.1).
                self.close_blocks();
                self.note(&format!(
                    "{}; switched to {to} ({from} rests until {until})",
                    headline(message)
                ));
            }
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
                // Only a request that showed something was interrupted; a failure before any
                // content is reported by the retry line alone.
                if *cancel_reason == Some(CancelReason::StreamingFailed) && self.content_shown {
                    // The partial answer stays; what follows is a new response.
                    self.close_blocks();
                    self.note("[Response interrupted by API Error]");
                }
            }
            TaskEvent::ApiReqFailed { message, .. } => {
                self.stop_countdown();
                self.close_blocks();
                eprintln!("error: {}", switchyard_api::secrets::scrub(message));
                self.last_error = Some(message.clone());
            }
            TaskEvent::TaskFinished {
                status,
                first_token_ms,
                duration_ms,
            } => self.finished(*status, *first_token_ms, *duration_ms),
        }
    }

    /// The last line: the task's usage, time to the first token, duration and how it ended.
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

    /// Assistant text on stdout, as it streams.
    fn text(&mut self, text: &str) {
        self.content_shown = true;
        self.close_reasoning();
        let shown = switchyard_api::secrets::scrub(text);
        self.write_stdout(shown.as_bytes());
        self.text_open = !text.ends_with('\n');
    }

    /// Reasoning dimmed on stderr (hidden with `--quiet`).
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

    /// "tool result: NAME: first line …" (at most 200 characters of it).
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

    /// Shows "⠋ waiting for the model · 3s" on a terminal until the request's first event.
    fn start_waiting(&mut self) {
        if !self.live || self.waiting.is_some() {
            return;
        }
        self.close_blocks();
        let bar =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        let template = if self.color {
            "{spinner} \x1b[2mwaiting for the model · {elapsed}\x1b[0m"
        } else {
            "{spinner} waiting for the model · {elapsed}"
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        self.waiting = Some(bar);
    }

    fn stop_waiting(&mut self) {
        if let Some(bar) = self.waiting.take() {
            bar.finish_and_clear();
        }
    }

    /// Spend against the caps, shown on the last line.
    pub fn spend_note(&mut self, note: String) {
        self.spend_note = Some(note);
    }

    /// Shows "… — VERB N s (LABEL)" (`retrying in`, `sending in`), counting down live on a
    /// terminal.
    fn start_countdown(&mut self, what: &str, delay_seconds: f64, verb: &str, label: &str) {
        self.stop_countdown();
        let what = what.to_owned();
        let label = label.to_owned();
        let verb = verb.to_owned();
        if !self.live {
            eprintln!("{what} — {verb} {} s ({label})", delay_seconds.ceil());
            return;
        }
        let color = self.color;
        let end = tokio::time::Instant::now() + std::time::Duration::from_secs_f64(delay_seconds);
        self.countdown = Some(tokio::spawn(async move {
            loop {
                let left = end.saturating_duration_since(tokio::time::Instant::now());
                let secs = left.as_secs_f64().ceil();
                let (dim, reset) = if color { (DIM, RESET) } else { ("", "") };
                eprint!("\r\x1b[2K{dim}{what} — {verb} {secs} s ({label}){reset}");
                if left.is_zero() {
                    return;
                }
                tokio::time::sleep(left.min(std::time::Duration::from_secs(1))).await;
            }
        }));
    }

    fn stop_countdown(&mut self) {
        if let Some(handle) = self.countdown.take() {
            handle.abort();
            eprintln!();
        }
    }

    /// A dimmed line on stderr in text mode; nothing with `--json`.
    pub fn info(&mut self, text: &str) {
        if !self.json {
            self.close_blocks();
            self.note(text);
        }
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

    /// Ends open reasoning and text lines before a line of its own.
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
