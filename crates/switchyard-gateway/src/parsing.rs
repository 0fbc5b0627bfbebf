//! The memory the requests being parsed at once may take together: a request reserves what its
//! parse can cost, counted from its shape, and one that does not fit waits briefly, then is a
//! 503 with `retry-after`.
//! Spec: R14.10.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::ingress::Shape;
use crate::refusal::{Kind, Refusal};

/// What one JSON value may cost parsed, at most: an object of one member, a node of the map
/// that holds it, its key and its slot in the array around it. A million messages, three
/// million values, took 2.2 GB before the caps.
const VALUE_BYTES: usize = 720;

/// How long a request waits for room before it is refused.
const WAIT: Duration = Duration::from_secs(2);

/// The budget is counted in KiB, so a semaphore's permits hold any size.
const UNIT: usize = 1024;

#[derive(Clone)]
pub(crate) struct ParseBudget {
    room: Arc<Semaphore>,
    units: usize,
}

/// Room reserved for one parse; dropping it gives the room back.
pub(crate) struct Reserved {
    _permit: OwnedSemaphorePermit,
}

impl ParseBudget {
    pub(crate) fn new(bytes: usize) -> Self {
        let units = (bytes / UNIT).clamp(1, Semaphore::MAX_PERMITS);
        Self {
            room: Arc::new(Semaphore::new(units)),
            units,
        }
    }

    /// What parsing a body of `len` bytes shaped as `shape` may cost: a copy of its text and
    /// a tree of its values.
    pub(crate) fn cost(len: usize, shape: &Shape) -> usize {
        len.saturating_add(shape.values.saturating_mul(VALUE_BYTES))
    }

    /// Reserves `bytes` for a parse, or the whole budget for a parse that costs more. Waits up
    /// to two seconds for room, then refuses.
    pub(crate) async fn reserve(&self, bytes: usize) -> Result<Reserved, Refusal> {
        let units = (bytes.div_ceil(UNIT)).clamp(1, self.units);
        let wanted = u32::try_from(units).unwrap_or(u32::MAX);
        let room = Arc::clone(&self.room).acquire_many_owned(wanted);
        match tokio::time::timeout(WAIT, room).await {
            Ok(Ok(permit)) => Ok(Reserved { _permit: permit }),
            _ => {
                let message = "This gateway is reading as many large requests as its memory for them allows (serve.parse_memory_mib): send this one again in a second.".to_owned();
                let refusal = Refusal::new(503, Kind::Server, message);
                Err(refusal.retry_after(Duration::from_secs(1)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_parse_that_does_not_fit_waits_then_is_a_503_with_retry_after() {
        let budget = ParseBudget::new(4 * 1024 * 1024);
        let first = budget.reserve(3 * 1024 * 1024).await.unwrap();
        let refused = budget.reserve(2 * 1024 * 1024).await.err().unwrap();
        assert_eq!(refused.kind(), "server");
        // Room given back is room again; a parse larger than the budget takes it all.
        drop(first);
        let all = budget.reserve(64 * 1024 * 1024).await.unwrap();
        assert!(budget.reserve(1).await.is_err());
        drop(all);
        assert!(budget.reserve(1).await.is_ok());
    }
}
