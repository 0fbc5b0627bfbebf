//! The `api_req_failed` question: asked in a terminal, answered by `--on-failure` otherwise.
//! Spec: R6.9.

use std::io::{BufRead, IsTerminal, Write};

use switchyard_api::ApiError;
use switchyard_core::task::{BoxFuture, FailureDecider, FailureDecision};

/// How failures that automatic recovery could not fix are decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// Ask the user on the terminal.
    Ask,
    /// Cancel, so the task fails with a non-zero exit.
    Fail,
    /// Retry errors that waiting can fix; the others still fail.
    Retry,
}

impl OnFailure {
    /// `--on-failure` if given; else ask when stdin and stderr are terminals without `--json`.
    pub fn choose(flag: Option<&str>, json: bool) -> Self {
        match flag {
            Some("retry") => Self::Retry,
            Some(_) => Self::Fail,
            None if !json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal() => {
                Self::Ask
            }
            None => Self::Fail,
        }
    }
}

impl FailureDecider for OnFailure {
    fn api_req_failed<'a>(&'a self, error: &'a ApiError) -> BoxFuture<'a, FailureDecision> {
        Box::pin(async move {
            match self {
                Self::Fail => FailureDecision::Cancel,
                Self::Retry if !error.is_retryable() => FailureDecision::Cancel,
                Self::Retry => FailureDecision::Retry,
                // Nothing to ask when retrying cannot help; the error shown next names what to
                // change. A rate limit with a long reset is still asked about.
                Self::Ask if !worth_asking(error) => FailureDecision::Cancel,
                Self::Ask => tokio::task::spawn_blocking(ask)
                    .await
                    .unwrap_or(FailureDecision::Cancel),
            }
        })
    }
}

/// Whether retrying `error` can succeed at all, counting a far-off rate-limit reset as yes.
fn worth_asking(error: &ApiError) -> bool {
    use switchyard_api::ErrorKind;
    error.is_retryable() || (error.kind == ErrorKind::RateLimited && error.permanent)
}

/// Asks on stderr and reads one line: `r`, `retry` or an empty line retries.
fn ask() -> FailureDecision {
    // The stderr lock is released before waiting: a Ctrl-C meanwhile is reported on stderr.
    {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "The request failed. Retry? [R]etry / [c]ancel: ");
        let _ = err.flush();
    }
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
        return FailureDecision::Cancel;
    }
    match line.trim().to_ascii_lowercase().as_str() {
        "" | "r" | "retry" | "y" | "yes" => FailureDecision::Retry,
        _ => FailureDecision::Cancel,
    }
}
