//! The live lines on a terminal's stderr: the waiting spinner and the retry countdown, one plain
//! line each elsewhere.
//! Spec: R5.3, R6.8, R12.3.

use std::io::IsTerminal;

use super::style::{DIM, RESET};

/// The spinner and the countdown, drawn live when stderr can redraw a line.
pub(super) struct LiveLines {
    /// Stderr can redraw a line: live countdowns and the spinner, else one plain line per retry.
    live: bool,
    color: bool,
    waiting: Option<indicatif::ProgressBar>,
    countdown: Option<tokio::task::JoinHandle<()>>,
}

impl LiveLines {
    pub(super) fn new(color: bool) -> Self {
        Self {
            live: std::io::stderr().is_terminal()
                && std::env::var_os("TERM").is_none_or(|t| t != "dumb"),
            color,
            waiting: None,
            countdown: None,
        }
    }

    /// True when `start_waiting` would draw the spinner.
    pub(super) fn would_wait(&self) -> bool {
        self.live && self.waiting.is_none()
    }

    /// Shows "⠋ waiting for the model · 3s" on a terminal until the request's first event.
    pub(super) fn start_waiting(&mut self) {
        if !self.would_wait() {
            return;
        }
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

    pub(super) fn stop_waiting(&mut self) {
        if let Some(bar) = self.waiting.take() {
            bar.finish_and_clear();
        }
    }

    /// Shows "… — VERB N s", such as `retrying in`, counting down live on a terminal.
    pub(super) fn start_countdown(
        &mut self,
        what: &str,
        delay_seconds: f64,
        verb: &str,
        label: &str,
    ) {
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

    pub(super) fn stop_countdown(&mut self) {
        if let Some(handle) = self.countdown.take() {
            handle.abort();
            eprintln!();
        }
    }
}
