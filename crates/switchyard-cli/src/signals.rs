//! What ends a turn besides its own end: Ctrl-C, SIGTERM, SIGHUP and stdout's reader going.
//! Spec: R9.5.

/// What cancelled a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Ctrl-C: exit 130.
    Interrupt,
    /// SIGTERM: exit 143.
    Terminate,
    /// SIGHUP, the terminal closed: exit 129.
    Hangup,
    /// Stdout's reader went away: exit 141, like a process SIGPIPE ended.
    StdoutClosed,
}

impl Signal {
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Interrupt => 130,
            Self::Terminate => 143,
            Self::Hangup => 129,
            Self::StdoutClosed => 141,
        }
    }
}

/// The next Ctrl-C, SIGTERM, SIGHUP, or stdout's reader going away.
pub async fn next_signal(stdout_closed: &tokio::sync::Notify) -> Signal {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let term = signal(SignalKind::terminate());
        let hup = signal(SignalKind::hangup());
        if let (Ok(mut term), Ok(mut hup)) = (term, hup) {
            return tokio::select! {
                _ = tokio::signal::ctrl_c() => Signal::Interrupt,
                _ = term.recv() => Signal::Terminate,
                _ = hup.recv() => Signal::Hangup,
                _ = stdout_closed.notified() => Signal::StdoutClosed,
            };
        }
    }
    tokio::select! {
        _ = tokio::signal::ctrl_c() => Signal::Interrupt,
        _ = stdout_closed.notified() => Signal::StdoutClosed,
    }
}

/// Installs the handlers before any output, so an early SIGINT never kills the process
/// mid-write. With `records`, SIGTERM and SIGHUP end the task like Ctrl-C; other commands hold
/// nothing to record and keep their default.
pub fn install(runtime: &tokio::runtime::Runtime, records: bool) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Err(e) = runtime.block_on(async { signal(SignalKind::interrupt()).map(drop) }) {
            tracing::warn!("Ctrl-C cannot be handled: {e}");
        }
        if records {
            for kind in [SignalKind::terminate(), SignalKind::hangup()] {
                if let Err(e) = runtime.block_on(async { signal(kind).map(drop) }) {
                    tracing::warn!("signal {kind:?} cannot be handled: {e}");
                }
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (runtime, records);
}
