//! Leases: slices of budgets and per-minute allowances a process admits against in memory.
//! Spec: R14.16, R12.3.

use super::budget::BudgetWindow;
use super::requests::RequestRecord;
use crate::limits::state::{LearntLimits, RateLimits};
use crate::store::StoreFuture;

/// What a lease is carved from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LeaseScope {
    /// A key's budget, by key id.
    Key,
    /// A user's budget over every key they own, by user id.
    User,
    /// A team's budget, by team name.
    Team,
    /// The gateway-wide daily cap, id `""`.
    Gateway,
    /// A key's requests in flight, its `--max-parallel`, by key id.
    Parallel,
}

impl LeaseScope {
    /// The stored name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Key => "key",
            Self::User => "user",
            Self::Team => "team",
            Self::Gateway => "gateway",
            Self::Parallel => "parallel",
        }
    }
}

/// One slice a holder asks for, in USD or, for [`LeaseScope::Parallel`], in requests.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseWant {
    /// What it is carved from.
    pub scope: LeaseScope,
    /// The key id, the user id, the team name, or `""` for the gateway.
    pub id: String,
    /// The budget's size.
    pub limit: f64,
    /// The budget's window; the gateway's is the day, a parallel limit's `Total`.
    pub window: BudgetWindow,
    /// What to hold from now on: admitted requests not yet recorded, and headroom; 0 ends it.
    pub want: f64,
    /// The least that is worth growing the lease for.
    pub need: f64,
}

/// What [`LeaseStore::lease`] set one lease to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LeaseGrant {
    /// The lease's amount now.
    pub amount: f64,
    /// Whether it is the amount wanted.
    pub full: bool,
    /// What is left for everyone else after this lease.
    pub free: f64,
    /// When the window resets; `None` for ever or for a parallel limit.
    pub resets_ms: Option<i64>,
}

/// A lease's amount: `want`, else what is free (never less than `previous`, up to `want`) if
/// at least `need`, else `previous` unchanged.
pub fn decide_lease(want: &LeaseWant, others: f64, previous: f64, now_ms: i64) -> LeaseGrant {
    let wanted = want.want.max(0.0);
    let free = (want.limit - others).max(0.0);
    let amount = if free + 1e-12 >= wanted {
        wanted
    } else if free + 1e-12 >= want.need.min(wanted) {
        // Never below what the holder already held, up to what it wants: free can be short of
        // that for the reason below.
        free.max(previous.min(wanted))
    } else {
        // Free may be short only because other holders' recorded costs still sit in their
        // leases too: cutting this one below what its holder has admitted would let a later
        // lease hand the difference out again.
        previous
    };
    LeaseGrant {
        amount,
        full: (amount - wanted).abs() <= 1e-12,
        free: (free - amount).max(0.0),
        resets_ms: match want.scope {
            LeaseScope::Parallel => None,
            _ => want.window.end_ms(now_ms),
        },
    }
}

/// Per-minute slots a holder asks for, usable until `valid_until_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotLeaseRequest {
    /// The rate key, as [`crate::limits::SlotRequest::key`].
    pub key: String,
    /// The holder, one per gateway process.
    pub holder: String,
    /// The configured per-minute limits.
    pub limits: RateLimits,
    /// Now, Unix ms.
    pub now_ms: i64,
    /// Requests wanted.
    pub requests: u64,
    /// Input tokens wanted.
    pub tokens: u64,
    /// The last instant a slot may be used, at least `now_ms`.
    pub valid_until_ms: i64,
}

/// Requests and input tokens leased or returned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SlotLease {
    /// Requests.
    pub requests: u64,
    /// Input tokens.
    pub tokens: u64,
}

/// What fits the window, given the slots counted now and those since the learnt limits.
pub fn decide_slot_lease(
    req: &SlotLeaseRequest,
    window: SlotLease,
    since_learnt: SlotLease,
    learnt: Option<&LearntLimits>,
) -> SlotLease {
    let left = |limit: Option<u64>, used: u64| limit.map_or(u64::MAX, |l| l.saturating_sub(used));
    let live = |reset: Option<i64>| reset.is_some_and(|r| r > req.now_ms);
    let (mut requests, mut tokens) = (
        left(req.limits.requests_per_minute, window.requests),
        left(req.limits.input_tokens_per_minute, window.tokens),
    );
    if let Some(l) = learnt {
        if live(l.requests_reset_ms) {
            requests = requests.min(left(l.requests_remaining, since_learnt.requests));
        }
        if live(l.tokens_reset_ms) {
            tokens = tokens.min(left(l.tokens_remaining, since_learnt.tokens));
        }
    }
    let requests = req.requests.min(requests);
    SlotLease {
        requests,
        tokens: if requests == 0 {
            0
        } else {
            req.tokens.min(tokens)
        },
    }
}

/// The requests a slot row of `requests` gives back of `asked`: it keeps one while `tokens`
/// stay in it, so a row counts a request for as long as it counts tokens.
pub fn kept_one(requests: u64, asked: u64, tokens: u64) -> u64 {
    let most = if tokens > 0 {
        requests.saturating_sub(1)
    } else {
        requests
    };
    most.min(asked)
}

/// A request admitted against a lease, recorded with the reservation it was admitted at.
#[derive(Debug, Clone, PartialEq)]
pub struct LeasedRecord {
    /// The record.
    pub record: RequestRecord,
    /// What was reserved for it in the holder's slices, USD.
    pub reserved_usd: f64,
}

/// Where leases are kept, beside the budgets they are carved from; one transaction a call.
pub trait LeaseStore: Send + Sync {
    /// Sets `holder`'s leases to [`decide_lease`]'s amounts until `expires_ms`, under the
    /// locks a hold takes, so leases and holds never pass a limit.
    fn lease<'a>(
        &'a self,
        holder: &'a str,
        now_ms: i64,
        expires_ms: i64,
        wants: &'a [LeaseWant],
    ) -> StoreFuture<'a, Vec<LeaseGrant>>;

    /// Deletes every budget lease of `holder` and says how many, at a process's shutdown.
    fn release<'a>(&'a self, holder: &'a str) -> StoreFuture<'a, u64>;

    /// Takes what fits of the asked slots as one row stamped `valid_until_ms`.
    fn lease_slots<'a>(&'a self, request: &'a SlotLeaseRequest) -> StoreFuture<'a, SlotLease>;

    /// Gives back what it can of `unused` slots of `holder`'s for `key`, earliest stamped first,
    /// and says how much. A row keeps one request while it keeps tokens.
    fn return_slots<'a>(
        &'a self,
        key: &'a str,
        holder: &'a str,
        unused: SlotLease,
    ) -> StoreFuture<'a, SlotLease>;

    /// Records requests admitted against leases, each with a settled ledger row and totals.
    fn record_leased<'a>(&'a self, records: &'a [LeasedRecord]) -> StoreFuture<'a, ()>;
}
