//! What the dashboard's pages and endpoints read.
//! Spec: R14.11.

use std::sync::{Arc, PoisonError, RwLock};

use switchyard_api::ApiConfiguration;
use switchyard_core::store::TaskStore;
use tokio_util::sync::CancellationToken;

use super::live::Live;
use super::reloads::Reloads;
use super::session::Sessions;
use crate::oidc::Oidc;

/// The dashboard's sessions, the store and configuration it reads, and the live registry.
pub(crate) struct Board {
    pub(super) sessions: Sessions,
    pub(super) store: Arc<dyn TaskStore>,
    config: RwLock<Arc<ApiConfiguration>>,
    /// When that configuration was loaded, and the file a reload refused since.
    pub(super) reloads: Arc<Reloads>,
    pub(super) live: Arc<Live>,
    /// Cancelled when `serve` starts shutting down: the live page's streams end.
    pub(super) stopping: CancellationToken,
    /// Single sign-on, when `[serve.oidc]` configures it; it changes only with a restart.
    pub(super) oidc: Option<Arc<Oidc>>,
}

impl Board {
    /// The board over `store` and `config`, listing what `live` registers.
    pub(super) fn new(
        store: Arc<dyn TaskStore>,
        (config, reloads): (ApiConfiguration, Arc<Reloads>),
        live: Arc<Live>,
    ) -> Self {
        // `serve` refuses to start on a `[serve.oidc]` that cannot work (`check_routes`).
        let oidc = match Oidc::new(&config) {
            Ok(oidc) => oidc.map(Arc::new),
            Err(problem) => {
                tracing::warn!(%problem, "single sign-on is off");
                None
            }
        };
        Self {
            oidc,
            sessions: Sessions::new(Arc::clone(&store)),
            store,
            config: RwLock::new(Arc::new(config)),
            reloads,
            live,
            stopping: CancellationToken::new(),
        }
    }

    /// The configuration in effect.
    pub(super) fn config(&self) -> Arc<ApiConfiguration> {
        Arc::clone(&self.config.read().unwrap_or_else(PoisonError::into_inner))
    }

    pub(super) fn reload(&self, config: ApiConfiguration) {
        *self.config.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(config);
    }

    /// Whether the session in `headers` is still live: the live page's stream ends with it.
    pub(super) fn still(&self, headers: &hyper::HeaderMap) -> bool {
        self.sessions.current(headers).is_some()
    }
}
