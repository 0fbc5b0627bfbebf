//! `serve`'s reloads: on SIGHUP, and when its configuration file changes, the file is loaded
//! and checked as `switchyard config check` checks it, then put in effect whole, or refused
//! with the configuration in effect kept.
//! Spec: R14.3a.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use switchyard_api::CancellationToken;
use switchyard_gateway::{Gateway, Telemetry};

use crate::settings;

/// How often the file is read for a change. A poll rather than inotify: it sees an editor's
/// rename over the file, a Kubernetes ConfigMap's swapped symlink and a network file system
/// alike, and reading a few kilobytes five times a second costs nothing.
const POLL: Duration = Duration::from_millis(200);

/// How long a replaced telemetry waits for the requests still exporting through it.
const RETIRE_WAIT: Duration = Duration::from_secs(600);

/// What reloads the configuration: SIGHUP, handled from its creation, and the file's changes.
pub struct Reloader {
    file: Option<PathBuf>,
    watched: Option<PathBuf>,
    #[cfg(unix)]
    hangup: Option<tokio::signal::unix::Signal>,
}

impl Reloader {
    /// Handles SIGHUP from now on, which would otherwise end the process. `file` is the file
    /// the configuration in effect came from: a reload reads it again, never the built-in
    /// default in its place, and watches it when `watch`.
    pub fn new(file: Option<PathBuf>, watch: bool) -> Self {
        Self {
            watched: file.clone().filter(|_| watch),
            file,
            #[cfg(unix)]
            hangup: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok(),
        }
    }

    /// Reloads on each SIGHUP and each settled change of the file until `stop`.
    pub async fn run(mut self, gateway: Arc<Gateway>, stop: CancellationToken) {
        let mut seen = self.read().await;
        let mut changing = None;
        let mut tick = tokio::time::interval(POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = self.hangup() => {
                    seen = self.read().await;
                    changing = None;
                    reload(&gateway, self.file.as_deref(), "SIGHUP");
                }
                _ = tick.tick(), if self.watched.is_some() => {
                    let now = self.read().await;
                    if now == seen {
                        changing = None;
                    } else if changing.as_ref() == Some(&now) {
                        // Unchanged over a whole poll: an editor's burst of writes is over.
                        seen = now;
                        changing = None;
                        reload(&gateway, self.file.as_deref(), "the file changed");
                    } else {
                        changing = Some(now);
                    }
                }
            }
        }
    }

    /// The watched file's bytes; `None` while it cannot be read, as mid-way through a save.
    async fn read(&self) -> Option<Vec<u8>> {
        tokio::fs::read(self.watched.as_ref()?).await.ok()
    }

    async fn hangup(&mut self) {
        #[cfg(unix)]
        if let Some(signal) = self.hangup.as_mut() {
            if signal.recv().await.is_some() {
                return;
            }
            self.hangup = None;
        }
        std::future::pending::<()>().await;
    }
}

/// Loads and checks the configuration, then puts it in effect or says why not.
fn reload(gateway: &Gateway, file: Option<&Path>, why: &str) {
    let loaded = match settings::load_serve(file) {
        Ok(loaded) => loaded,
        Err(problems) => return refuse(gateway, why, &problems.join("; ")),
    };
    for warning in &loaded.warnings {
        eprintln!("switchyard serve: warning: {warning}");
    }
    let old = gateway.telemetry();
    let telemetry = if gateway.configuration().telemetry == loaded.config.telemetry {
        Arc::clone(&old)
    } else {
        match crate::telemetry::start(&loaded.config) {
            Ok(telemetry) => telemetry,
            Err(reason) => return refuse(gateway, why, &reason),
        }
    };
    let unapplied = gateway.reload(loaded.config, Arc::clone(&telemetry));
    eprintln!(
        "switchyard serve: configuration reloaded ({why}) from the {}",
        loaded.source.describe()
    );
    if !unapplied.is_empty() {
        eprintln!(
            "switchyard serve: changed but not applied until a restart: {}",
            unapplied.join(", ")
        );
    }
    if !Arc::ptr_eq(&old, &telemetry) {
        retire(old);
    }
}

fn refuse(gateway: &Gateway, why: &str, reason: &str) {
    gateway.reload_refused(reason);
    eprintln!(
        "switchyard serve: configuration not reloaded ({why}); the one in effect stays: {reason}"
    );
}

/// Flushes and stops `old` once the requests that started under it have ended.
fn retire(old: Arc<Telemetry>) {
    tokio::spawn(async move {
        let until = tokio::time::Instant::now() + RETIRE_WAIT;
        // Each request in flight holds the snapshot that holds it.
        while Arc::strong_count(&old) > 1 && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        old.shutdown(crate::telemetry::FLUSH_WAIT).await;
    });
}
