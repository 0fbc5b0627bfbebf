//! [`Allocator`]: one per gateway process, admitting keyed requests against leased slices.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::admit::admit;
use super::ask::{Admission, AdmissionAsk, Admitted};
use super::batcher::{self, Item};
use super::config::AllocatorConfig;
use super::rate::give_back;
use super::renewer;
use super::shared::{Settled, Shared, State};
use crate::limits::Cooldown;
use crate::store::{
    LeaseScope, LeasedRecord, OpenRequest, RequestRecord, StoreError, TaskStore, settled_amount,
};

/// Admits requests in memory against slices of budgets and per-minute allowances leased
/// from the store, writes their records in batches, and returns everything at shutdown.
pub struct Allocator {
    shared: Arc<Shared>,
    records: mpsc::Sender<Item>,
    renewer: Mutex<Option<JoinHandle<()>>>,
    batcher: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Allocator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Allocator")
            .field("holder", &self.shared.holder)
            .finish_non_exhaustive()
    }
}

impl Allocator {
    /// An allocator with a new random holder id, its renewer and batcher running on the
    /// current tokio runtime.
    pub fn start(store: Arc<dyn TaskStore>, config: AllocatorConfig) -> Result<Self, String> {
        let mut bytes = [0u8; 8];
        getrandom::getrandom(&mut bytes)
            .map_err(|e| format!("the OS random source failed: {e}"))?;
        let holder: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let (tx, rx) = mpsc::channel(config.queue.max(1));
        let shared = Arc::new(Shared {
            store,
            holder: format!("gw_{holder}"),
            config,
            state: Mutex::new(State::default()),
            leasing: Arc::new(tokio::sync::Mutex::new(())),
            traced: Default::default(),
        });
        Ok(Self {
            renewer: Mutex::new(Some(tokio::spawn(renewer::run(Arc::clone(&shared))))),
            batcher: Mutex::new(Some(tokio::spawn(batcher::run(Arc::clone(&shared), rx)))),
            records: tx,
            shared,
        })
    }

    /// The holder id its leases and slots are stored under.
    pub fn holder(&self) -> &str {
        &self.shared.holder
    }

    /// Admits `ask` from memory when its slices and allowance have room, else after a store
    /// call for what is short.
    pub async fn admit(&self, ask: &AdmissionAsk) -> Admission {
        admit(&self.shared, ask).await
    }

    /// Queues a trace of `admitted` for the next batch, so that if this process dies before
    /// its record is written the request is charged at its reservation. `open` names the
    /// request; its holder, key, team, start and reservation are taken from `admitted`.
    pub fn trace(&self, admitted: &mut Admitted, mut open: OpenRequest) {
        let Some(key) = admitted.key_id.clone() else {
            return;
        };
        open.holder.clone_from(&self.shared.holder);
        open.key_id = key;
        open.team.clone_from(&admitted.team);
        open.started_ms = admitted.at_ms;
        open.reserved_usd = admitted.reserved_usd;
        admitted.traced = true;
        self.shared.traced.fetch_add(1, Ordering::AcqRel);
        self.queue(Item::Open(Box::new(open)));
    }

    /// Gives back `admitted`'s reservation, keeps its cost counted and queues its record,
    /// waiting only when the queue is full.
    pub async fn settle(&self, admitted: Admitted, record: RequestRecord) {
        let item = self.settled(admitted, record);
        let _ = self.records.send(item).await;
    }

    /// [`Allocator::settle`] without waiting: when the queue is full a task of its own waits
    /// for room, so a caller that cannot wait, such as a drop, still settles.
    pub fn settle_now(&self, admitted: Admitted, record: RequestRecord) {
        let item = self.settled(admitted, record);
        self.queue(item);
    }

    /// Queues `item` without waiting: when the queue is full a task of its own waits.
    fn queue(&self, item: Item) {
        let Err(mpsc::error::TrySendError::Full(item)) = self.records.try_send(item) else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("a request's trace or record was not queued: no runtime");
            return;
        };
        let records = self.records.clone();
        runtime.spawn(async move {
            let _ = records.send(item).await;
        });
    }

    /// Gives `admitted`'s reservation back to its slices and keeps its cost in them.
    fn settled(&self, admitted: Admitted, mut record: RequestRecord) -> Item {
        if record.key_id.is_none() {
            record.key_id = admitted.key_id.clone();
            record.team = record.team.or_else(|| admitted.team.clone());
        }
        if admitted.traced {
            self.shared.traced.fetch_sub(1, Ordering::AcqRel);
        }
        let cost = settled_amount(&record, admitted.reserved_usd);
        let mut costs = Vec::new();
        {
            let mut state = self.shared.state();
            for t in &admitted.taken {
                let Some(slice) = state.slices.get_mut(&t.key) else {
                    continue;
                };
                let counts = t.key.scope != LeaseScope::Parallel;
                slice.settle(t.bucket, t.amount, if counts { cost } else { 0.0 });
                if counts && cost > 0.0 {
                    costs.push((t.key.clone(), t.bucket, cost));
                }
            }
        }
        let record = LeasedRecord {
            record,
            reserved_usd: admitted.reserved_usd,
        };
        Item::Record(Box::new(Settled { record, costs }))
    }

    /// Waits until every record settled before the call is written, or failed for good.
    pub async fn flush(&self) {
        let (done, written) = oneshot::channel();
        if self.records.send(Item::Flush(done)).await.is_ok() {
            let _ = written.await;
        }
    }

    /// Runs one renewer tick now, as the background task does every `tick_ms`.
    pub async fn renew_now(&self) {
        renewer::tick(&self.shared).await;
    }

    /// The running cooldowns as last read, at most one tick old.
    pub fn cooldowns(&self) -> Vec<Cooldown> {
        self.shared.state().cooldowns.clone()
    }

    /// Records `cooldown` in the store and in memory at once.
    pub async fn set_cooldown(&self, cooldown: &Cooldown) -> Result<(), StoreError> {
        self.shared.store.set_cooldown(cooldown).await?;
        let mut state = self.shared.state();
        state.cooldowns.retain(|c| c.entry != cooldown.entry);
        state.cooldowns.push(cooldown.clone());
        Ok(())
    }

    /// Stops the renewer, writes every queued record, returns unused slots and releases every
    /// lease; requests still in flight should be settled first. Records settled later are
    /// still written, against the totals alone.
    pub async fn shutdown(&self) -> Result<(), StoreError> {
        let renewer = self
            .renewer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(renewer) = renewer {
            renewer.abort();
            let _ = renewer.await;
        }
        self.flush().await;
        let _one = Arc::clone(&self.shared.leasing).lock_owned().await;
        let allowances: Vec<_> = self.shared.state().allowances.drain().collect();
        for (key, allowance) in allowances {
            give_back(&self.shared, &key, allowance.unused()).await?;
        }
        self.shared.store.release(&self.shared.holder).await?;
        self.shared.state().slices.clear();
        Ok(())
    }
}

impl Drop for Allocator {
    /// Stops the background tasks and returns nothing, as a killed process: leases expire.
    fn drop(&mut self) {
        for task in [&self.renewer, &self.batcher] {
            if let Some(task) = task.lock().unwrap_or_else(|e| e.into_inner()).take() {
                task.abort();
            }
        }
    }
}
