//! Keyed admission from budget slices this process leases: the process's one allocator,
//! started by the first keyed request, and each admitted request's hold on it until its
//! record settles it.
//! Spec: R14.17.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use switchyard_core::limits::admission::{
    Admission as Answer, AdmissionAsk, Admitted, Allocator, AllocatorConfig, Refused,
};
use switchyard_core::store::{OpenRequest, RequestOutcome, RequestRecord, TaskStore};

/// How long a slice lasts unrenewed by default: a killed process's slices come back after it.
pub const DEFAULT_SLICE_LEASE: Duration = Duration::from_secs(15);

/// The allocator of one gateway process, shared by its requests.
pub(crate) struct Leased {
    store: Arc<dyn TaskStore>,
    config: AllocatorConfig,
    /// Started on the first keyed request, on its runtime.
    allocator: OnceLock<Result<Arc<Allocator>, String>>,
}

impl Leased {
    /// Slices that last `lease` unrenewed: a killed process's slices come back after it.
    pub(crate) fn new(store: Arc<dyn TaskStore>, lease: Duration) -> Self {
        let lease_ms = i64::try_from(lease.as_millis())
            .unwrap_or(i64::MAX)
            .max(200);
        // A slice is renewed at half its lease, so the renewer runs at least four times a lease.
        let tick_ms = u64::try_from(lease_ms / 4).unwrap_or(1_000).min(1_000);
        let config = AllocatorConfig {
            lease_ms,
            tick_ms,
            ..AllocatorConfig::default()
        };
        Self {
            store,
            config,
            allocator: OnceLock::new(),
        }
    }

    /// The same store with slices lasting `lease`, before any was leased.
    pub(crate) fn with_lease(&self, lease: Duration) -> Self {
        Self::new(Arc::clone(&self.store), lease)
    }

    /// Admits `ask` from this process's slices, leasing what is short, and traces it as
    /// `open` names it, so it is charged at its reservation if this process dies before its
    /// record is written.
    pub(crate) async fn admit(
        &self,
        open: OpenRequest,
        ask: &AdmissionAsk,
    ) -> Result<Hold, Refused> {
        let start = || Allocator::start(Arc::clone(&self.store), self.config.clone());
        let allocator = self.allocator.get_or_init(|| start().map(Arc::new));
        let allocator = match allocator {
            Ok(a) => Arc::clone(a),
            Err(message) => {
                return Err(Refused {
                    reason: switchyard_core::limits::admission::Refusal::Store {
                        message: message.clone(),
                    },
                    retry_after_ms: Some(1_000),
                });
            }
        };
        match allocator.admit(ask).await {
            Answer::Admitted(mut admitted) => {
                let id = open.id.clone();
                allocator.trace(&mut admitted, open);
                Ok(Hold {
                    allocator,
                    id,
                    admitted: Some(admitted),
                })
            }
            Answer::Refused(refused) => Err(refused),
        }
    }

    /// Writes the settled records and gives every slice and unused slot back, when started.
    pub(crate) async fn shutdown(&self) {
        let Some(Ok(allocator)) = self.allocator.get() else {
            return;
        };
        if let Err(e) = allocator.shutdown().await {
            tracing::warn!("the gateway's budget slices were not given back: {e}; they lapse");
        }
    }
}

/// One admitted request's reservation, taken from its slices until its record settles it.
pub(crate) struct Hold {
    allocator: Arc<Allocator>,
    /// The request's id, which its record keeps.
    id: String,
    admitted: Option<Admitted>,
}

impl Hold {
    /// Settles the reservation with the request's `record`, which the allocator writes.
    pub(crate) fn settle(mut self, record: RequestRecord) {
        if let Some(admitted) = self.admitted.take() {
            self.allocator.settle_now(admitted, record);
        }
    }
}

impl Drop for Hold {
    // The request ended before it had a record, its client gone: nothing was sent, so it
    // cost nothing.
    fn drop(&mut self) {
        let Some(admitted) = self.admitted.take() else {
            return;
        };
        let record = RequestRecord {
            id: std::mem::take(&mut self.id),
            started_ms: admitted.at_ms,
            route: String::new(),
            dialect: String::new(),
            stream: false,
            provider: None,
            model: None,
            input_tokens: 0,
            output_tokens: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cost_usd: Some(0.0),
            first_token_ms: None,
            duration_ms: 0,
            outcome: RequestOutcome::Cancelled,
            key_id: None,
            team: None,
        };
        self.allocator.settle_now(admitted, record);
    }
}
