//! What every request of one gateway shares, built once.
//! Spec: R14.4, R14.9, R14.10, R12.2, R13.2, R4.0b.

use std::sync::Arc;
use std::time::Duration;

use switchyard_api::config::{
    AdmissionMode, DEFAULT_BODY_TIMEOUT_SECONDS, DEFAULT_CHUNK_TIMEOUT_SECONDS,
    DEFAULT_PARSE_MEMORY_MIB, DEFAULT_REQUEST_DEADLINE_SECONDS,
};
use switchyard_api::{ApiConfiguration, StreamBounds};
use switchyard_core::limits::{Clock, SpendCaps};
use switchyard_core::store::{ResponseStore, TaskStore};

use crate::body::BodyLimits;
use crate::metrics::{LABEL_SETS_MAX, Metrics};
use crate::parsing::ParseBudget;
use crate::record::{Retention, Writes};
use crate::relay::limits_cache::LimitsCache;
use crate::request::{Admission, Leased};
use crate::telemetry::Telemetry;
use crate::ui::Live;

/// How long `/ready` waits for the store before saying it is not reachable.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a `/metrics` scrape waits for the store's cooldowns before leaving them out.
const SCRAPE_TIMEOUT: Duration = Duration::from_millis(500);

/// The process-wide state of one gateway.
#[derive(Clone)]
pub(crate) struct Shared {
    /// The limits' store: core's `RequestLimits` reads it as a whole `TaskStore`.
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) responses: Arc<dyn ResponseStore>,
    /// The daily spend cap. A gateway request belongs to no task, so it has no task cap.
    pub(crate) caps: SpendCaps,
    pub(crate) clock: Clock,
    /// The body cap, which also bounds a stored Responses conversation.
    pub(crate) body_limit: usize,
    /// How long a request's body may take to arrive.
    pub(crate) body_deadline: Duration,
    /// The memory the requests being parsed at once may take together.
    pub(crate) parsing: ParseBudget,
    /// How long a request may take to get content, over every entry and continuation.
    pub(crate) deadline: Duration,
    /// How long an answer may go without a chunk once its content started.
    pub(crate) chunk_gap: Duration,
    pub(crate) bounds: StreamBounds,
    pub(crate) metrics: Arc<Metrics>,
    /// The requests in flight and the last errors, for the dashboard.
    pub(crate) live: Arc<Live>,
    pub(crate) admission: Admission,
    pub(crate) writes: Writes,
    pub(crate) retention: Retention,
    pub(crate) telemetry: Arc<Telemetry>,
    /// The cooldowns and learnt limits every request's entry choice reads.
    pub(crate) limits_cache: Arc<LimitsCache>,
    /// How long after a user's last sign-in their keys still work; `None` without single
    /// sign-on.
    pub(crate) membership: Option<Duration>,
}

impl Shared {
    pub(crate) fn new(
        store: Arc<dyn TaskStore>,
        config: &ApiConfiguration,
        live: Arc<Live>,
        body_limit: usize,
    ) -> Self {
        let per_day = config.limits.max_cost_usd_per_day;
        let serve = &config.serve;
        let seconds = (serve.request_deadline).unwrap_or(DEFAULT_REQUEST_DEADLINE_SECONDS);
        let body_seconds = serve.body_timeout.unwrap_or(DEFAULT_BODY_TIMEOUT_SECONDS);
        let gap_seconds = serve.chunk_timeout.unwrap_or(DEFAULT_CHUNK_TIMEOUT_SECONDS);
        let parse_mib = serve.parse_memory_mib.unwrap_or(DEFAULT_PARSE_MEMORY_MIB);
        Self {
            // Each part takes the store in the role it needs.
            responses: store.clone(),
            admission: Admission::new(store.clone(), store.clone(), per_day)
                .leasing(leased(&store, serve.admission)),
            writes: Writes::new(store.clone()),
            retention: Retention::new(store.clone(), config),
            store,
            caps: SpendCaps {
                per_task: None,
                per_day,
            },
            clock: Clock::system(),
            body_limit,
            body_deadline: Duration::from_secs(body_seconds),
            parsing: ParseBudget::new(
                usize::try_from(parse_mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX),
            ),
            deadline: Duration::from_secs(seconds),
            chunk_gap: Duration::from_secs(gap_seconds),
            bounds: config.limits.stream_bounds(),
            metrics: Arc::new(Metrics::new(LABEL_SETS_MAX)),
            live,
            telemetry: Arc::new(Telemetry::off()),
            limits_cache: Arc::default(),
            membership: None,
        }
    }

    /// This state under `new`'s limits and `telemetry`; the store, metrics, live registry,
    /// admission and writes stay the ones every request shares.
    /// Spec: R14.3a.
    pub(crate) fn reloaded(
        &self,
        (running, new): (&ApiConfiguration, &ApiConfiguration),
        telemetry: Arc<Telemetry>,
    ) -> Self {
        let serve = &new.serve;
        let per_day = new.limits.max_cost_usd_per_day;
        let mut admission = self.admission.clone();
        admission.per_day = per_day;
        let seconds = |value: Option<u64>, default| Duration::from_secs(value.unwrap_or(default));
        let mib = serve.parse_memory_mib.unwrap_or(DEFAULT_PARSE_MEMORY_MIB);
        // A new budget only when its size changed: parses running keep what they reserved.
        let parsing = if running.serve.parse_memory_mib == serve.parse_memory_mib {
            self.parsing.clone()
        } else {
            ParseBudget::new(usize::try_from(mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX))
        };
        Self {
            caps: SpendCaps {
                per_task: None,
                per_day,
            },
            admission,
            body_deadline: seconds(serve.body_timeout, DEFAULT_BODY_TIMEOUT_SECONDS),
            deadline: seconds(serve.request_deadline, DEFAULT_REQUEST_DEADLINE_SECONDS),
            chunk_gap: seconds(serve.chunk_timeout, DEFAULT_CHUNK_TIMEOUT_SECONDS),
            bounds: new.limits.stream_bounds(),
            parsing,
            telemetry,
            ..self.clone()
        }
    }

    pub(crate) fn body_limits(&self) -> BodyLimits {
        BodyLimits {
            bytes: self.body_limit,
            deadline: self.body_deadline,
        }
    }

    /// How many entries the store has cooling down now, when it answers in time.
    pub(crate) async fn cooling(&self) -> Option<usize> {
        let cooldowns = self.store.cooldowns(self.clock.now_ms());
        match tokio::time::timeout(SCRAPE_TIMEOUT, cooldowns).await {
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

    /// Whether the store answers a read in time; else why not, without a password.
    pub(crate) async fn ready(&self) -> Result<(), String> {
        let cooldowns = self.store.cooldowns(self.clock.now_ms());
        match tokio::time::timeout(READY_TIMEOUT, cooldowns).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(format!("the store is not reachable: {e}")),
            Err(_) => Err(format!(
                "the store did not answer within {} s",
                READY_TIMEOUT.as_secs()
            )),
        }
    }
}

/// The process's slices when `mode` admits keyed requests from them.
fn leased(store: &Arc<dyn TaskStore>, mode: AdmissionMode) -> Option<Arc<Leased>> {
    let lease = crate::request::DEFAULT_SLICE_LEASE;
    (mode == AdmissionMode::Leased).then(|| Arc::new(Leased::new(Arc::clone(store), lease)))
}
