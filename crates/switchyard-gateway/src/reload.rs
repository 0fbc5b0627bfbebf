//! The configuration in effect, swapped whole by a reload: each request reads it once at its
//! start and keeps that snapshot to its end.
//! Spec: R14.3a.

use std::sync::{Arc, Mutex, PoisonError, RwLock};

use switchyard_api::config::ServeSettings;
use switchyard_api::{ApiConfiguration, ConfigError, Mode};
use switchyard_core::limits::Clock;

use crate::request::Router;
use crate::shared::Shared;
use crate::telemetry::Telemetry;
use crate::ui::Reloads;

/// What one request reads of the configuration: its routes and providers, and the limits and
/// telemetry every request shares.
#[derive(Clone)]
pub(crate) struct Snapshot {
    pub(crate) router: Arc<Router>,
    pub(crate) shared: Arc<Shared>,
}

/// The snapshot in effect and what the reloads so far said.
pub(crate) struct Current {
    // A lock held only to clone an Arc: a request never waits on a reload's work.
    now: RwLock<Arc<Snapshot>>,
    /// Held by a reload from its read of the snapshot to its swap, so none is lost.
    reloading: Mutex<()>,
    pub(crate) reloads: Arc<Reloads>,
}

impl Current {
    pub(crate) fn new(router: Router, shared: Shared) -> Self {
        let snapshot = Snapshot {
            router: Arc::new(router),
            shared: Arc::new(shared),
        };
        Self {
            now: RwLock::new(Arc::new(snapshot)),
            reloading: Mutex::new(()),
            reloads: Arc::new(Reloads::default()),
        }
    }

    pub(crate) fn load(&self) -> Arc<Snapshot> {
        Arc::clone(&self.now.read().unwrap_or_else(PoisonError::into_inner))
    }

    fn store(&self, snapshot: Snapshot) {
        *self.now.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(snapshot);
    }

    /// The shared state to change while the gateway is being built.
    pub(crate) fn shared_mut(&mut self) -> &mut Shared {
        let now = self.now.get_mut().unwrap_or_else(PoisonError::into_inner);
        Arc::make_mut(&mut Arc::make_mut(now).shared)
    }
}

/// The settings a running gateway cannot change, by the name a log line gives them.
const RESTART_ONLY: [&str; 10] = [
    "[serve] listen",
    "[serve] idle_timeout",
    "[serve] header_timeout",
    "[serve] max_connections",
    "[serve] max_connections_per_address",
    "[serve] request_log_days",
    "[serve] audit_log_days",
    "store",
    "[serve] admission",
    "[serve.oidc]",
];

/// The settings of [`RESTART_ONLY`] that differ between `running` and `new`, put back in
/// `new` to what is running, so that the snapshot says what is in effect.
fn keep_restart_only(running: &ApiConfiguration, new: &mut ApiConfiguration) -> Vec<&'static str> {
    let (was, now) = (&running.serve, &mut new.serve);
    let changed = [
        was.listen != now.listen,
        was.idle_timeout != now.idle_timeout,
        was.header_timeout != now.header_timeout,
        was.max_connections != now.max_connections,
        was.max_connections_per_address != now.max_connections_per_address,
        was.request_log_days != now.request_log_days,
        was.audit_log_days != now.audit_log_days,
        running.store != new.store,
        was.admission != now.admission,
        was.oidc != now.oidc,
    ];
    let routes = std::mem::take(&mut new.serve.routes);
    // A setting not named here keeps its running value: a new one is restart-only until listed.
    let live = ServeSettings {
        routes,
        request_deadline: new.serve.request_deadline,
        body_timeout: new.serve.body_timeout,
        chunk_timeout: new.serve.chunk_timeout,
        parse_memory_mib: new.serve.parse_memory_mib,
        list_catalogue: new.serve.list_catalogue,
        trust_forwarded_headers: new.serve.trust_forwarded_headers,
        secure_cookie: new.serve.secure_cookie,
        ..running.serve.clone()
    };
    new.serve = live;
    new.store.clone_from(&running.store);
    (RESTART_ONLY.iter().zip(changed))
        .filter_map(|(name, changed)| changed.then_some(*name))
        .collect()
}

/// What keeps `config` from serving: each route whose first entry cannot be built, as a
/// request to it would find; and, as warnings, a route whose provider has no key in the
/// environment and what leaves a fallback out of its route's chain.
/// Spec: R14.3a.
pub fn check_routes(config: &ApiConfiguration) -> (Vec<String>, Vec<String>) {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    if let Err(e) = crate::oidc::Oidc::check(config) {
        errors.push(e);
    }
    for (name, route) in &config.serve.routes {
        let routed = crate::request::route_config(config, route);
        match switchyard_api::build_failover_chain(&routed, Mode::Act) {
            Ok(_) => {}
            // The rest of the file serves; this route's requests fail until the key is set,
            // as they would on any gateway whose operator has not given it one yet.
            Err(e @ ConfigError::MissingApiKey { .. }) => {
                warnings.push(format!("[serve.routes.\"{name}\"]: {e}"));
                continue;
            }
            Err(e) => {
                errors.push(format!("[serve.routes.\"{name}\"]: {e}"));
                continue;
            }
        }
        for problem in switchyard_api::failover_problems(&routed, Mode::Act) {
            warnings.push(format!("[serve.routes.\"{name}\"]: {problem}"));
        }
    }
    (errors, warnings)
}

impl Current {
    /// Puts `config` in effect with `telemetry` for every request that starts from now on;
    /// requests in flight finish on the snapshot they started with. Returns the changed
    /// settings only a restart applies, which keep their running values, and the
    /// configuration now in effect.
    pub(crate) fn reload(
        &self,
        mut config: ApiConfiguration,
        telemetry: Arc<Telemetry>,
    ) -> (Vec<&'static str>, ApiConfiguration) {
        let _one = self
            .reloading
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let old = self.load();
        let running = old.router.config();
        let unapplied = keep_restart_only(running, &mut config);
        if !Arc::ptr_eq(&telemetry, &old.shared.telemetry) {
            old.shared.metrics.unwatch();
            telemetry.watch(&old.shared.metrics);
        }
        let shared = old.shared.reloaded((running, &config), telemetry);
        shared.metrics.reload(true);
        self.store(Snapshot {
            router: Arc::new(Router::new(config.clone())),
            shared: Arc::new(shared),
        });
        self.reloads.loaded(Clock::system().now_ms());
        (unapplied, config)
    }

    /// Counts a configuration refused, `reason` being why: the one in effect stays.
    pub(crate) fn refuse(&self, reason: &str) {
        self.load().shared.metrics.reload(false);
        self.reloads.refused(Clock::system().now_ms(), reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> ApiConfiguration {
        ApiConfiguration::from_toml(text, "t.toml", |_| Some("k".into())).unwrap()
    }

    #[test]
    fn a_restart_only_setting_keeps_its_running_value_and_is_named() {
        let running = config("[serve]\nlisten = \"127.0.0.1:1\"\nrequest_deadline = 5\n");
        let mut new = config(
            "[serve]\nlisten = \"127.0.0.1:2\"\nrequest_deadline = 9\nmax_connections = 3\n\
             [serve.routes.a]\nprovider = \"openai\"\n",
        );
        let named = keep_restart_only(&running, &mut new);
        assert_eq!(named, ["[serve] listen", "[serve] max_connections"]);
        assert_eq!(new.serve.listen.as_deref(), Some("127.0.0.1:1"));
        assert_eq!(new.serve.max_connections, None);
        assert_eq!(new.serve.request_deadline, Some(9));
        assert!(new.serve.routes.contains_key("a"));
        assert!(keep_restart_only(&running, &mut running.clone()).is_empty());
    }

    #[test]
    fn a_route_that_cannot_be_built_is_an_error_naming_it_and_one_without_a_key_a_warning() {
        let text = "[serve.routes.fast]\nprovider = \"openai\"\nmodel = \"gpt-4o\"\n";
        assert_eq!(check_routes(&config(text)), (vec![], vec![]));
        let keyless = ApiConfiguration::from_toml(text, "t.toml", |_| None).unwrap();
        let (errors, warnings) = check_routes(&keyless);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("no API key"), "{warnings:?}");
        let broken = format!("{text}base_url = \"not a url\"\n");
        let (errors, _) = check_routes(&config(&broken));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("[serve.routes.\"fast\"]"), "{errors:?}");
    }
}
