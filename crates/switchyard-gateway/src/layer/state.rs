//! [`Layer`]: what every request of one gateway shares of Switchyard's layer (SPEC R14.4,
//! R14.9): the store its limits state, request log and stored Responses live in (the one a task uses, R13.2),
//! the daily spend cap (R12.2), and whether the store is reachable (`/ready`).

use std::sync::Arc;
use std::time::Duration;

use switchyard_api::ApiConfiguration;
use switchyard_core::limits::{Clock, SpendCaps};
use switchyard_core::store::{StoreError, TaskStore};

use crate::auth::Client;
use crate::metrics::{LABEL_SETS_MAX, Metrics};

/// How long `/ready` waits for the store before saying it is not reachable.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a `/metrics` scrape waits for the store's cooldowns before leaving them out.
const SCRAPE_TIMEOUT: Duration = Duration::from_millis(500);

/// How long a hold counts when its request's record never settles it (the process died),
/// unless the gateway says otherwise: longer than any answer should take.
pub const DEFAULT_HOLD_LEASE: Duration = Duration::from_secs(30 * 60);

/// The reservation for a request to an entry whose prices are unknown, unless the gateway
/// says otherwise (USD).
pub const DEFAULT_RESERVE_USD: f64 = 0.05;

/// The store and caps every request of one gateway goes through.
#[derive(Clone)]
pub(crate) struct Layer {
    pub(super) store: Arc<dyn TaskStore>,
    pub(super) caps: SpendCaps,
    pub(super) clock: Clock,
    /// The largest conversation, as stored JSON, a Responses answer is stored with: the
    /// gateway's body cap (SPEC R14.10).
    pub(super) response_cap: usize,
    /// The gateway's metrics (SPEC R14.9), fed by each request's record.
    pub(crate) metrics: Arc<Metrics>,
    /// The client of the request this copy of the layer serves, when keys are on (SPEC
    /// R14.6): its record names the key and team and settles its hold (R14.7).
    pub(crate) client: Option<Arc<Client>>,
    /// The input estimate of the request this copy serves (tokens; SPEC R8.2's estimate of
    /// its system prompt and messages), computed once at its admission: its token windows
    /// and spend checks use it.
    pub(crate) input_tokens: u64,
    /// How long a hold counts when nothing settles it (its process died).
    pub(crate) hold_lease: Duration,
    /// The reservation where an entry's prices are unknown (USD).
    pub(crate) reserve_usd: f64,
    /// The request log's writes in flight, which a stopping gateway waits for.
    pub(crate) writes: super::writes::Writes,
    /// The size bounds of each upstream answer (`[limits]`, SPEC R4.0b).
    pub(crate) bounds: switchyard_api::StreamBounds,
    /// How many days of the request log a serving gateway keeps (`[serve]
    /// request_log_days`, SPEC R14.8).
    pub(crate) request_log_days: u64,
}

impl std::fmt::Debug for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Layer").field("caps", &self.caps).finish()
    }
}

impl Layer {
    /// The layer over `store` with `config`'s daily spend cap (`[limits]
    /// max_cost_usd_per_day`; a gateway request belongs to no task, so `max_cost_usd` does not
    /// apply), storing Responses conversations of at most `response_cap` bytes (the body cap).
    pub(crate) fn new(
        store: Arc<dyn TaskStore>,
        config: &ApiConfiguration,
        response_cap: usize,
    ) -> Self {
        Self {
            writes: super::writes::Writes::new(Arc::clone(&store)),
            store,
            caps: SpendCaps {
                per_task: None,
                per_day: config.limits.max_cost_usd_per_day,
            },
            clock: Clock::system(),
            response_cap,
            metrics: Arc::new(Metrics::new(LABEL_SETS_MAX)),
            client: None,
            input_tokens: 0,
            hold_lease: DEFAULT_HOLD_LEASE,
            reserve_usd: DEFAULT_RESERVE_USD,
            bounds: config.limits.stream_bounds(),
            request_log_days: (config.serve.request_log_days)
                .unwrap_or(switchyard_api::config::DEFAULT_REQUEST_LOG_DAYS),
        }
    }

    /// The store.
    pub(crate) fn store(&self) -> Arc<dyn TaskStore> {
        Arc::clone(&self.store)
    }

    /// This layer serving one request of `client` whose input estimate is `input_tokens`.
    pub(crate) fn for_request(&self, client: Option<Client>, input_tokens: u64) -> Self {
        let mut layer = self.clone();
        layer.client = client.map(Arc::new);
        layer.input_tokens = input_tokens;
        layer
    }

    /// How many entries the store has cooling down now, when it answers within
    /// [`SCRAPE_TIMEOUT`] (`/metrics`, SPEC R14.9); `None` otherwise (logged).
    pub(crate) async fn cooling(&self) -> Option<usize> {
        match tokio::time::timeout(SCRAPE_TIMEOUT, self.store.cooldowns(self.clock.now_ms())).await
        {
            Ok(Ok(cooldowns)) => Some(cooldowns.len()),
            Ok(Err(e)) => {
                tracing::warn!("the cooldowns could not be read for /metrics: {e}");
                None
            }
            Err(_) => {
                tracing::warn!("the store did not give the cooldowns for /metrics in time");
                None
            }
        }
    }

    /// The layer storing Responses conversations of at most `bytes` (the body cap).
    pub(crate) fn with_response_cap(mut self, bytes: usize) -> Self {
        self.response_cap = bytes;
        self
    }

    /// Whether the store answers a read within [`READY_TIMEOUT`] (SPEC R14.9 `/ready`); the
    /// error says why not.
    pub(crate) async fn ready(&self) -> Result<(), String> {
        match tokio::time::timeout(READY_TIMEOUT, self.store.cooldowns(self.clock.now_ms())).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(unreachable(&e)),
            Err(_) => Err(format!(
                "the store did not answer within {} s",
                READY_TIMEOUT.as_secs()
            )),
        }
    }
}

/// The store's failure as `/ready` says it (the store's message names the location without a
/// password).
fn unreachable(e: &StoreError) -> String {
    format!("the store is not reachable: {e}")
}
