//! `switchyard serve` (SPEC R14.6, R14.9, R14.4): the gateway on a loopback address with the
//! configuration in effect (`--config`, `-c`) and the store every other command uses
//! (`--store`, `SWITCHYARD_STORE`, the file's `store`, else the data directory's SQLite file:
//! its limits state and request log), until Ctrl-C or SIGTERM drains it.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use switchyard_api::{CancellationToken, Mode};
use switchyard_gateway::{Gateway, ServerLimits, serve};

use crate::cli::{SelectionArgs, ServeArgs};
use crate::settings;

/// Where `switchyard serve` listens without `--listen` or `serve.listen`.
const DEFAULT_LISTEN: &str = "127.0.0.1:4141";

/// Serves until Ctrl-C or SIGTERM, then lets the streams in flight finish (up to the drain
/// deadline) and exits 0. Exit 2 for an address it will not listen on (not loopback: client
/// keys do not exist yet, so there is no way to keep others out, with or without
/// `--no-auth`), a configuration that cannot be read or a store that cannot be opened, 1 for
/// an address that cannot be bound.
pub async fn run(place: settings::StorePlace<'_>, args: &ServeArgs) -> ExitCode {
    let selection = SelectionArgs::default();
    let config = match settings::load(place.config, &selection, Some(Mode::Act)) {
        Ok((config, _, _)) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let listen = (args.listen.clone())
        .or_else(|| config.serve.listen.clone())
        .unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
    let addr = match loopback(&listen).await {
        Ok(addr) => addr,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("error: switchyard serve cannot listen on {addr}: {e}.");
            return ExitCode::from(1);
        }
    };
    let store = match open_store(place).await {
        Ok(store) => store,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let limits = ServerLimits::from_settings(&config.serve);
    let gateway = Arc::new(Gateway::with_store(config, store.1));
    let shutdown = CancellationToken::new();
    let on_signal = shutdown.clone();
    // SIGTERM is handled from before the address is announced: a supervisor that stops the
    // server as soon as it is up still gets a drain, not the default kill.
    let signals = Signals::new();
    if let Ok(bound) = listener.local_addr() {
        eprintln!("switchyard serve: listening on http://{bound}");
    }
    eprintln!(
        "switchyard serve: limits and requests in the store {}",
        store.0
    );
    tokio::spawn(async move {
        signals.next().await;
        eprintln!("switchyard serve: stopping; streams in flight may finish");
        on_signal.cancel();
    });
    serve(listener, gateway, limits, shutdown).await;
    ExitCode::SUCCESS
}

/// The store every command uses (SPEC R13.1), opened (created or migrated): where it is (no
/// password) and the store; else the one sentence why not.
async fn open_store(
    place: settings::StorePlace<'_>,
) -> Result<(String, Arc<dyn switchyard_core::store::TaskStore>), String> {
    let spec = settings::store_spec(place)?;
    let where_ = spec.describe();
    match settings::open_spec(&spec).await {
        Ok(store) => Ok((where_, store)),
        Err(e) => Err(format!(
            "switchyard serve cannot open the store {where_}: {e}"
        )),
    }
}

/// `listen` resolved, when every address it names is loopback; else the one sentence why not.
async fn loopback(listen: &str) -> Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> = match tokio::net::lookup_host(listen).await {
        Ok(addrs) => addrs.collect(),
        Err(e) => {
            return Err(format!(
                "`{listen}` is not an address to listen on ({e}): write HOST:PORT, e.g. {DEFAULT_LISTEN}."
            ));
        }
    };
    match addrs.first() {
        Some(addr) if addrs.iter().all(|a| a.ip().is_loopback()) => Ok(*addr),
        _ => Err(format!(
            "switchyard serve listens only on a loopback address until client keys exist (they come in a later release, with or without --no-auth), and `{listen}` is not one: use 127.0.0.1:PORT or [::1]:PORT."
        )),
    }
}

/// What stops the server: Ctrl-C (handled from the process's start, `signals::install`) or
/// SIGTERM (handled from [`Signals::new`]).
struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Self {
                term: signal(SignalKind::terminate()).ok(),
            }
        }
        #[cfg(not(unix))]
        Self {}
    }

    /// The next Ctrl-C or SIGTERM.
    async fn next(mut self) {
        #[cfg(unix)]
        if let Some(term) = self.term.as_mut() {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}
