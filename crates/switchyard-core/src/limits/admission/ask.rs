//! What a request asks of the allocator and what the allocator answers.

use super::slice::SliceKey;
use crate::limits::{LimitReason, RateLimits};
use crate::store::{BudgetWindow, ClientKey, HoldScope, LeaseScope, StoreError, Team};

/// One request to admit: its reservation against its key's, team's and the gateway's budgets,
/// one of its key's requests in flight and one slot of its key's per-minute limits.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionAsk {
    /// The client key as the gateway authenticated it; `None` without keys.
    pub key: Option<ClientKey>,
    /// The key's team, as stored.
    pub team: Option<Team>,
    /// The gateway-wide daily cap, `[limits] max_cost_usd_per_day`.
    pub gateway_per_day: Option<f64>,
    /// The reservation, USD.
    pub reserve_usd: f64,
    /// The estimated input tokens, counted against the key's tokens per minute.
    pub input_tokens: u64,
}

/// One slice a request takes from: what it is carved from and how much the request takes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Need {
    pub(crate) key: SliceKey,
    pub(crate) limit: f64,
    pub(crate) window: BudgetWindow,
    pub(crate) amount: f64,
}

impl AdmissionAsk {
    /// The slices this request takes from, key before team before gateway.
    pub(crate) fn needs(&self) -> Vec<Need> {
        let mut needs = Vec::new();
        let usd = self.reserve_usd.max(0.0);
        let mut push = |scope, id: &str, limit: f64, window, amount| {
            let key = SliceKey {
                scope,
                id: id.to_owned(),
            };
            needs.push(Need {
                key,
                limit,
                window,
                amount,
            });
        };
        // A request that reserves nothing, to a model priced at $0, takes from no budget.
        let priced = usd > 0.0;
        if let Some(k) = &self.key {
            if let Some(b) = k.budget.filter(|_| priced) {
                push(LeaseScope::Key, &k.id, b.usd, b.window, usd);
            }
            if let Some(max) = k.max_parallel {
                push(
                    LeaseScope::Parallel,
                    &k.id,
                    max as f64,
                    BudgetWindow::Total,
                    1.0,
                );
            }
        }
        if let Some(t) = &self.team
            && let Some(b) = t.budget.filter(|_| priced)
        {
            push(LeaseScope::Team, &t.name, b.usd, b.window, usd);
        }
        if let Some(cap) = self.gateway_per_day.filter(|_| priced) {
            push(LeaseScope::Gateway, "", cap, BudgetWindow::Day, usd);
        }
        needs
    }

    /// The key's rate key and per-minute limits, when it has any.
    pub(crate) fn rate(&self) -> Option<(String, RateLimits)> {
        let k = self.key.as_ref()?;
        if k.rpm.is_none() && k.tpm.is_none() {
            return None;
        }
        let limits = RateLimits {
            requests_per_minute: k.rpm,
            input_tokens_per_minute: k.tpm,
        };
        Some((format!("client:{}", k.id), limits))
    }
}

/// What one admitted request took from one slice.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Taken {
    pub(crate) key: SliceKey,
    pub(crate) bucket: i64,
    pub(crate) amount: f64,
}

/// A request admitted: its reservation is taken until [`super::Allocator::settle`] is called.
#[derive(Debug, PartialEq)]
#[must_use = "an admitted request's reservation stays taken until it is settled"]
pub struct Admitted {
    /// The reservation taken, USD.
    pub reserved_usd: f64,
    /// When it was admitted, Unix ms: its record's `started_ms` should be this.
    pub at_ms: i64,
    /// The key's id.
    pub key_id: Option<String>,
    /// The key's team.
    pub team: Option<String>,
    pub(crate) taken: Vec<Taken>,
    /// Whether its trace was queued, so its process renews traces until it settles.
    pub(crate) traced: bool,
}

/// Why a request was not admitted.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// A budget has `left` of `limit` for everyone, less than the reservation.
    Budget {
        /// The budget.
        scope: HoldScope,
        /// Its size, USD.
        limit: f64,
        /// What is left of it that this process can get now, USD.
        left: f64,
        /// When its window resets; `None` for ever.
        resets_ms: Option<i64>,
    },
    /// The key already has its most requests in flight.
    Parallel {
        /// Its `--max-parallel`.
        limit: u64,
    },
    /// The key's per-minute window, or what the provider said, has no room.
    Rate {
        /// The limit that is full.
        reason: LimitReason,
    },
    /// The key is revoked or expired.
    Revoked,
    /// The store could not be asked.
    Store {
        /// The store's error, without secrets.
        message: String,
    },
}

/// A refusal and when to ask again.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    /// Why.
    pub reason: Refusal,
    /// When it may fit, in ms from now; `None` when it never will.
    pub retry_after_ms: Option<i64>,
}

/// The answer to [`super::Allocator::admit`].
#[derive(Debug, PartialEq)]
pub enum Admission {
    /// Send it.
    Admitted(Admitted),
    /// Answer it with the refusal.
    Refused(Refused),
}

/// The hold scope a lease scope refuses as.
pub(crate) fn hold_scope(scope: LeaseScope) -> HoldScope {
    match scope {
        LeaseScope::Key => HoldScope::Key,
        LeaseScope::Team => HoldScope::Team,
        LeaseScope::Gateway => HoldScope::Gateway,
        LeaseScope::Parallel => HoldScope::Parallel,
    }
}

/// A refusal for a store that could not be asked.
pub(crate) fn store_refused(e: StoreError) -> Refused {
    Refused {
        reason: Refusal::Store {
            message: e.to_string(),
        },
        retry_after_ms: Some(1_000),
    }
}
