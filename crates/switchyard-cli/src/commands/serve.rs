//! `switchyard serve`: the gateway over the configuration and store every command uses, until
//! Ctrl-C or SIGTERM drains it.
//!
//! A store holding client keys makes every request present one, and then any address may be
//! listened on; otherwise, or with `--no-auth`, loopback only.
//! Spec: R14.4, R14.6, R14.8, R14.9, R14.3a.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use switchyard_api::CancellationToken;
use switchyard_gateway::{Gateway, KeysRequired, ServerLimits, serve};

use super::serve_reload::Reloader;
use crate::cli::ServeArgs;
use crate::settings;

const DEFAULT_LISTEN: &str = "127.0.0.1:4141";

/// Serves until a signal, lets the streams in flight finish, and exits 0; 2 for an address it
/// will not listen on or an unreadable configuration or store, 1 for one it cannot bind.
pub async fn run(place: settings::StorePlace<'_>, args: &ServeArgs) -> ExitCode {
    purge_in_the_background();
    let Some((config, source, warnings)) = load_config(place.config) else {
        return ExitCode::from(2);
    };
    let listen = (args.listen.clone())
        .or_else(|| config.serve.listen.clone())
        .unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
    let store = match open_store(place).await {
        Ok(store) => store,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let keys = match store.1.has_client_keys().await {
        Ok(has) => has && !args.no_auth,
        Err(e) => {
            eprintln!(
                "error: switchyard serve cannot read the client keys of the store {}: {e}",
                store.0
            );
            return ExitCode::from(2);
        }
    };
    let addr = match resolve(&listen, keys).await {
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
    let limits = ServerLimits::from_settings(&config.serve);
    let telemetry = match crate::telemetry::start(&config) {
        Ok(telemetry) => telemetry,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let gateway = build_gateway(config, store.1, keys, args).with_telemetry(Arc::clone(&telemetry));
    let gateway = Arc::new(gateway);
    let shutdown = CancellationToken::new();
    // SIGTERM and SIGHUP are handled before the address is announced, so a supervisor that
    // stops or reloads the server at once still gets a drain or a reload.
    let signals = Signals::new();
    let reloader = Reloader::new(file_of(source), !args.no_watch);
    if let Ok(bound) = listener.local_addr() {
        eprintln!("switchyard serve: listening on http://{bound}");
    }
    // After the address, which supervisors and scripts read as the first line.
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
    eprintln!(
        "switchyard serve: limits and requests in the store {}",
        store.0
    );
    if keys {
        eprintln!("switchyard serve: every request needs a client key of that store");
    }
    tokio::spawn(signals.stop(shutdown.clone()));
    tokio::spawn(reloader.run(Arc::clone(&gateway), shutdown.child_token()));
    serve(listener, Arc::clone(&gateway), limits, shutdown).await;
    gateway
        .telemetry()
        .shutdown(crate::telemetry::FLUSH_WAIT)
        .await;
    ExitCode::SUCCESS
}

/// The configuration to serve and its warnings; `None` when it must not start, each reason
/// said. It is the loader a reload and `config check` use, so a route a reload would refuse
/// stops the start instead of answering 500.
fn load_config(
    explicit: Option<&std::path::Path>,
) -> Option<(
    switchyard_api::ApiConfiguration,
    settings::ConfigSource,
    Vec<String>,
)> {
    // Building each route to check it logs what building it logs, such as a model missing
    // from the catalogue; at the start that would come before the address line, which
    // supervisors and scripts read first, so it is said when a request first builds the route.
    let quiet = tracing::subscriber::NoSubscriber::default();
    match tracing::subscriber::with_default(quiet, || settings::load_serve(explicit)) {
        Ok(loaded) => Some((loaded.config, loaded.source, loaded.warnings)),
        Err(errors) => {
            for e in errors {
                eprintln!("error: {e}");
            }
            None
        }
    }
}

fn file_of(source: settings::ConfigSource) -> Option<std::path::PathBuf> {
    match source {
        settings::ConfigSource::File(path) => Some(path),
        _ => None,
    }
}

/// Starts jemalloc's purging thread, which gives a burst's freed pages back while the gateway
/// idles.
fn purge_in_the_background() {
    if let Err(e) = tikv_jemalloc_ctl::background_thread::write(true) {
        tracing::debug!("jemalloc's background thread did not start: {e}");
    }
}

/// The gateway over `config` and `store`, keys required when the store held one or from the
/// first one made on.
fn build_gateway(
    config: switchyard_api::ApiConfiguration,
    store: Arc<dyn switchyard_core::store::TaskStore>,
    keys: bool,
    args: &ServeArgs,
) -> Gateway {
    let when = match (keys, args.no_auth) {
        (true, _) => KeysRequired::Always,
        (false, true) => KeysRequired::Never,
        (false, false) => KeysRequired::OnceKeysExist,
    };
    // A signed-in user's keys work while their last sign-in is this recent (SPEC R14.6b).
    let membership = (config.serve.oidc.as_ref())
        .map(|o| std::time::Duration::from_secs(o.membership_hours.saturating_mul(3600)));
    let mut gateway = Gateway::with_store(config, store)
        .with_keys_required(when)
        .with_membership(membership);
    if let Some(usd) = args.reserve_usd.filter(|u| u.is_finite() && *u >= 0.0) {
        gateway = gateway.with_reserve_usd(usd);
    }
    if let Some(seconds) = args.hold_lease.filter(|s| *s > 0) {
        gateway = gateway.with_hold_lease(std::time::Duration::from_secs(seconds));
    }
    gateway
}

/// The store every command uses, opened, and where it is without a password.
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

/// `listen` resolved when every address is loopback or keys keep others out.
async fn resolve(listen: &str, keys: bool) -> Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> = match tokio::net::lookup_host(listen).await {
        Ok(addrs) => addrs.collect(),
        Err(e) => {
            return Err(format!(
                "`{listen}` is not an address to listen on ({e}): write HOST:PORT, e.g. {DEFAULT_LISTEN}."
            ));
        }
    };
    match addrs.first() {
        Some(addr) if keys || addrs.iter().all(|a| a.ip().is_loopback()) => Ok(*addr),
        _ => Err(format!(
            "switchyard serve listens beyond this machine only when its store holds client keys and --no-auth is not given, and `{listen}` is not a loopback address: make a key with `switchyard keys create --name NAME`, or use 127.0.0.1:PORT or [::1]:PORT."
        )),
    }
}

/// What stops the server: Ctrl-C, handled from the process's start, or SIGTERM.
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

    /// Cancels `shutdown` at the first signal.
    async fn stop(self, shutdown: CancellationToken) {
        self.next().await;
        eprintln!("switchyard serve: stopping; streams in flight may finish");
        shutdown.cancel();
    }

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
