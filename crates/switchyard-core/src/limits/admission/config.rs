//! How long leases and allowances last and how the background tasks pace themselves.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// The allocator's clock: the system's, or one a test moves by hand.
#[derive(Debug, Clone, Default)]
pub struct AdmissionClock {
    manual: Option<Arc<AtomicI64>>,
}

impl AdmissionClock {
    /// The system clock, through tokio's.
    pub fn system() -> Self {
        Self::default()
    }

    /// A clock standing at `start_ms` until [`AdmissionClock::set`] moves it; clones share it.
    pub fn manual(start_ms: i64) -> Self {
        Self {
            manual: Some(Arc::new(AtomicI64::new(start_ms))),
        }
    }

    /// Moves a manual clock to `ms`; the system clock ignores it.
    pub fn set(&self, ms: i64) {
        if let Some(m) = &self.manual {
            m.store(ms, Ordering::SeqCst);
        }
    }

    /// Now, Unix ms.
    pub fn now_ms(&self) -> i64 {
        match &self.manual {
            Some(m) => m.load(Ordering::SeqCst),
            None => crate::limits::Clock::system().now_ms(),
        }
    }
}

/// The allocator's timings and sizes.
#[derive(Debug, Clone)]
pub struct AllocatorConfig {
    /// How long a budget slice lasts unrenewed: a killed process's slices return after it.
    pub lease_ms: i64,
    /// How often the renewer runs: slices renewed or shrunk, keys and cooldowns read again.
    pub tick_ms: u64,
    /// How long a leased per-minute slot may be used.
    pub allowance_ms: i64,
    /// The largest share of a budget one slice holds beyond what its requests took.
    pub max_share: f64,
    /// The most records one store write carries.
    pub batch_max: usize,
    /// How long the batcher waits for more records before a write, ms.
    pub batch_wait_ms: u64,
    /// Records waiting to be written before `settle` waits for room.
    pub queue: usize,
    /// The clock.
    pub clock: AdmissionClock,
}

impl Default for AllocatorConfig {
    fn default() -> Self {
        Self {
            lease_ms: 15_000,
            tick_ms: 1_000,
            allowance_ms: 1_000,
            max_share: 0.1,
            batch_max: 512,
            batch_wait_ms: 20,
            queue: 8_192,
            clock: AdmissionClock::system(),
        }
    }
}
