//! The connection slots: how many connections may be open and how many one client address may
//! hold. When either is full, the oldest connection not being served gives its slot to the new
//! one, so idle, silent or slow clients can never keep a client with a request out.
//! Spec: R14.10.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio_util::sync::CancellationToken;

use crate::idle::{State, Watch};

/// Every open connection, in the order they came.
pub(crate) struct Slots {
    inner: Mutex<Inner>,
    total: usize,
    per_address: usize,
}

#[derive(Default)]
struct Inner {
    next: u64,
    open: BTreeMap<u64, Open>,
    /// Each address's connections, oldest first.
    by_address: HashMap<IpAddr, VecDeque<u64>>,
}

struct Open {
    address: IpAddr,
    watch: Watch,
    evict: CancellationToken,
}

/// Why a new connection got no slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// Its address holds its most, each of them serving a request.
    Address,
    /// The gateway holds its most, each of them serving a request.
    Total,
}

/// One open connection's slot; dropping it frees the slot.
pub(crate) struct Slot {
    slots: Arc<Slots>,
    id: u64,
    /// Cancelled when the slot is given to a newer connection.
    pub(crate) evicted: CancellationToken,
}

impl Slots {
    pub(crate) fn new(total: usize, per_address: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            total: total.max(1),
            per_address: per_address.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot for a connection from `address` whose activity `watch` tells; when the address or
    /// the gateway is full, the oldest connection not being served there is closed for it.
    pub(crate) fn admit(self: &Arc<Self>, address: IpAddr, watch: &Watch) -> Result<Slot, Full> {
        let mut inner = self.lock();
        let held = inner.by_address.get(&address).map_or(0, VecDeque::len);
        if held >= self.per_address && !inner.evict_from(address) {
            return Err(Full::Address);
        }
        if inner.open.len() >= self.total && !inner.evict_any() {
            return Err(Full::Total);
        }
        inner.next += 1;
        let id = inner.next;
        let evict = CancellationToken::new();
        let open = Open {
            address,
            watch: watch.clone(),
            evict: evict.clone(),
        };
        inner.open.insert(id, open);
        inner.by_address.entry(address).or_default().push_back(id);
        Ok(Slot {
            slots: Arc::clone(self),
            id,
            evicted: evict,
        })
    }
}

impl Inner {
    /// Closes `address`'s oldest connection not being served; `false` when every one is.
    fn evict_from(&mut self, address: IpAddr) -> bool {
        let ids = self.by_address.get(&address).into_iter().flatten();
        let found = ids
            .copied()
            .find(|id| self.open.get(id).is_some_and(Open::unserved));
        found.is_some_and(|id| self.evict(id))
    }

    /// Closes the gateway's oldest connection not being served; `false` when every one is.
    fn evict_any(&mut self) -> bool {
        let found = (self.open.iter()).find_map(|(id, open)| open.unserved().then_some(*id));
        found.is_some_and(|id| self.evict(id))
    }

    fn evict(&mut self, id: u64) -> bool {
        match self.remove(id) {
            Some(open) => {
                open.evict.cancel();
                true
            }
            None => false,
        }
    }

    fn remove(&mut self, id: u64) -> Option<Open> {
        let open = self.open.remove(&id)?;
        if let Some(ids) = self.by_address.get_mut(&open.address) {
            ids.retain(|i| *i != id);
            if ids.is_empty() {
                self.by_address.remove(&open.address);
            }
        }
        Some(open)
    }
}

impl Open {
    fn unserved(&self) -> bool {
        self.watch.state() != State::Serving
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.lock().remove(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn a_full_address_gives_its_oldest_unserved_slot_to_the_newcomer() {
        let slots = Arc::new(Slots::new(100, 2));
        let (w1, w2, w3) = (Watch::new(), Watch::new(), Watch::new());
        let first = slots.admit(address(1), &w1).unwrap();
        let _busy = w2.busy();
        let second = slots.admit(address(1), &w2).unwrap();
        let third = slots.admit(address(1), &w3).unwrap();
        assert!(
            first.evicted.is_cancelled(),
            "the oldest idle one gave its slot"
        );
        assert!(
            !second.evicted.is_cancelled(),
            "one being served is never closed"
        );
        // Another address is not touched, and a full address whose every connection is
        // served refuses the next one.
        let _other = slots.admit(address(2), &Watch::new()).unwrap();
        let _busy3 = w3.busy();
        assert_eq!(
            slots.admit(address(1), &Watch::new()).err(),
            Some(Full::Address)
        );
        drop(third);
        assert!(slots.admit(address(1), &Watch::new()).is_ok());
    }

    #[test]
    fn a_full_gateway_closes_its_oldest_unserved_connection_whatever_its_address() {
        let slots = Arc::new(Slots::new(2, 10));
        let (w1, w2) = (Watch::new(), Watch::new());
        let _busy = w1.busy();
        let serving = slots.admit(address(1), &w1).unwrap();
        let idle = slots.admit(address(2), &w2).unwrap();
        let _new = slots.admit(address(3), &Watch::new()).unwrap();
        assert!(idle.evicted.is_cancelled());
        assert!(!serving.evicted.is_cancelled());
    }
}
