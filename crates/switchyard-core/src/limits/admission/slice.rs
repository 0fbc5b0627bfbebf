//! One budget slice a process holds: its lease in the store and what requests took from it.

use crate::store::{BudgetWindow, LeaseGrant, LeaseScope, LeaseWant};

/// What a slice is carved from: a scope and its id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SliceKey {
    /// The budget's scope.
    pub scope: LeaseScope,
    /// The key id, the team name, or `""` for the gateway.
    pub id: String,
}

/// A slice: `granted` is the lease the store holds for this process in the window `bucket`.
#[derive(Debug, Clone)]
pub(crate) struct Slice {
    pub(crate) limit: f64,
    pub(crate) window: BudgetWindow,
    pub(crate) bucket: i64,
    pub(crate) granted: f64,
    pub(crate) expires_ms: i64,
    /// Reservations of requests in flight.
    pub(crate) reserved: f64,
    /// Settled costs whose records are not written yet.
    pub(crate) pending: f64,
    /// Written costs: in the store's totals, and in the lease until the next grant lowers it.
    pub(crate) committed: f64,
    /// While a lease call is out, the most `usage` may reach, so any answer still covers it.
    pub(crate) cap: f64,
    /// What requests took since the last tick, and in the tick before it.
    pub(crate) demand: f64,
    pub(crate) last_demand: f64,
    pub(crate) last_take: f64,
    /// Whether the store could not give the last want: the slice then holds no headroom.
    pub(crate) tight: bool,
    /// What the last grant left free for everyone else.
    pub(crate) free_after: f64,
    /// Whether the limit was lowered since the last grant the store surely decided under it.
    pub(crate) lowered: bool,
}

/// One slice's part of a lease call, kept to apply the answer.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) key: SliceKey,
    pub(crate) want: LeaseWant,
    pub(crate) bucket: i64,
    committed: f64,
    extra: f64,
}

impl Slice {
    pub(crate) fn new(limit: f64, window: BudgetWindow, now_ms: i64) -> Self {
        Self {
            limit,
            window,
            bucket: window.bucket_ms(now_ms),
            granted: 0.0,
            expires_ms: 0,
            reserved: 0.0,
            pending: 0.0,
            committed: 0.0,
            cap: f64::INFINITY,
            demand: 0.0,
            last_demand: 0.0,
            last_take: 0.0,
            tight: false,
            free_after: f64::INFINITY,
            lowered: false,
        }
    }

    /// Takes the limit and window of the key as stored now. A lowered limit leaves no room
    /// until the store grants a lease under it; another window starts the slice over.
    pub(crate) fn relimit(&mut self, limit: f64, window: BudgetWindow, now_ms: i64) {
        if window != self.window {
            *self = Self::new(limit, window, now_ms);
        } else if limit + 1e-12 < self.limit {
            self.granted = self.granted.min(self.usage());
            self.lowered = true;
        }
        self.limit = limit;
    }

    /// Starts over when `now_ms` is in a new window: what was taken counts in the old one.
    pub(crate) fn roll(&mut self, now_ms: i64) {
        if self.window.bucket_ms(now_ms) != self.bucket {
            *self = Self::new(self.limit, self.window, now_ms);
        }
    }

    /// What must stay covered by the lease.
    pub(crate) fn usage(&self) -> f64 {
        self.reserved + self.pending + self.committed
    }

    /// What may be taken now; nothing once less than `margin_ms` of the lease is left.
    pub(crate) fn room(&self, now_ms: i64, margin_ms: i64) -> f64 {
        if self.expires_ms - now_ms <= margin_ms {
            return 0.0;
        }
        self.granted.min(self.cap) - self.usage()
    }

    pub(crate) fn take(&mut self, amount: f64) {
        self.reserved += amount;
        self.demand += amount;
        self.last_take = amount;
    }

    /// Gives back a reservation, keeping its `cost` until its record is written.
    pub(crate) fn settle(&mut self, bucket: i64, reserved: f64, cost: f64) {
        if bucket == self.bucket {
            self.reserved = (self.reserved - reserved).max(0.0);
            self.pending += cost;
        }
    }

    pub(crate) fn written(&mut self, bucket: i64, cost: f64) {
        if bucket == self.bucket {
            self.pending = (self.pending - cost).max(0.0);
            self.committed += cost;
        }
    }

    pub(crate) fn held(&self) -> bool {
        self.granted > 0.0 || self.usage() > 0.0
    }

    pub(crate) fn next_tick(&mut self) {
        self.last_demand = self.demand;
        self.demand = 0.0;
    }

    /// Whether a tick should renew it: half its lease gone, less room left than it gave out
    /// since its last call, or more held than owed while idle or tight.
    pub(crate) fn due(&self, now_ms: i64, lease_ms: i64, idle: bool) -> bool {
        let owed = self.reserved + self.pending;
        self.expires_ms - now_ms <= lease_ms / 2
            || self.granted - self.usage() < self.demand
            || ((idle || self.tight) && self.granted > owed + 1e-12)
    }

    /// The want of a lease call taking `extra` more, `idle` holding no headroom.
    pub(crate) fn plan(
        &mut self,
        key: &SliceKey,
        (extra, idle): (f64, bool),
        (now_ms, max_share): (i64, f64),
    ) -> Plan {
        let owed = self.reserved + self.pending;
        let granted_live = if self.expires_ms > now_ms {
            self.granted
        } else {
            0.0
        };
        let mut headroom = (4.0 * self.demand.max(self.last_demand))
            .max(4.0 * self.last_take.max(extra))
            .min(self.limit * max_share)
            // Half of what was left free, so holders share the end of a budget.
            .min(self.free_after / 2.0);
        if key.scope == LeaseScope::Parallel {
            headroom = if self.demand > 0.0 || extra > 0.0 {
                1.0
            } else {
                0.0
            };
        }
        let held = if self.tight || idle { 0.0 } else { headroom };
        let want = owed + extra + held;
        // The answer is at least `need`, or the previous lease when refused: either covers
        // what is taken up to the cap meanwhile.
        let need = (owed + extra).max(want.min(granted_live - self.committed));
        self.cap = need - extra + self.committed;
        let want = LeaseWant {
            scope: key.scope,
            id: key.id.clone(),
            limit: self.limit,
            window: self.window,
            want,
            need,
        };
        Plan {
            key: key.clone(),
            want,
            bucket: self.bucket,
            committed: self.committed,
            extra,
        }
    }

    /// Takes the store's answer to `plan`, the lease now lasting until `expires_ms`.
    pub(crate) fn apply(&mut self, plan: &Plan, grant: &LeaseGrant, expires_ms: i64) {
        if plan.bucket != self.bucket {
            return;
        }
        // Only a grant that left something free was surely decided on the totals holding
        // what was written: a refused call keeps the previous lease, which may equal the want.
        if grant.full && grant.free > 0.0 {
            self.committed = (self.committed - plan.committed).max(0.0);
        }
        self.granted = grant.amount;
        // A refused call keeps a lease granted under the old limit: it gives no room.
        if self.lowered && grant.full && grant.free > 0.0 && plan.want.limit <= self.limit {
            self.lowered = false;
        } else if self.lowered {
            self.granted = self.granted.min(self.usage());
        }
        self.expires_ms = if grant.amount > 0.0 { expires_ms } else { 0 };
        self.cap = f64::INFINITY;
        // The request that asked is about to take it: a tick meanwhile must not find it idle.
        self.demand = self.demand.max(plan.extra);
        self.tight = !grant.full;
        self.free_after = grant.free;
    }

    /// After a failed call, whose answer may or may not be in the store: what both cover.
    pub(crate) fn failed(&mut self, plan: &Plan) {
        if plan.bucket == self.bucket {
            self.granted = self.granted.min(plan.want.need + plan.committed);
            self.cap = f64::INFINITY;
        }
    }
}
