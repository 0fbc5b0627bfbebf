//! A keyed request's admission: a slot in its key's per-minute window, then a hold on its
//! reservation against the key's, its owner's, its team's and the gateway's budgets, taken
//! before anything is sent, from this process's leased slices or in the store. The request's
//! record settles it.
//! Spec: R14.6, R14.7, R14.7a, R12.3.

use std::sync::Arc;
use std::time::Duration;

use switchyard_api::ChainEntry;
use switchyard_core::limits::admission::{AdmissionAsk, Refusal as Refused, Refused as Answer};
use switchyard_core::limits::{Clock, LimitsStore, RateLimits, SlotGrant, SlotRequest};
use switchyard_core::store::{
    Asked, HoldOutcome, HoldRequest, HoldScope, KeyStore, OpenRequest, StoreError,
};

use super::leased::{Hold, Leased};
use super::reservation::{affordable_output, reservation};
use crate::auth::{Client, utc_time};
use crate::ingress::GatewayRequest;
use crate::refusal::{Kind, Refusal};

/// How long a hold counts when its request's record never settles it because its process
/// died, unless the gateway says otherwise: longer than any answer should take.
pub const DEFAULT_HOLD_LEASE: Duration = Duration::from_secs(30 * 60);

/// The reservation in USD for a request to an entry whose prices are unknown, by default.
pub const DEFAULT_RESERVE_USD: f64 = 0.05;

/// An admitted request: its leased hold, and the output limit it was admitted with when what
/// was left could not pay the one it asked for.
pub(crate) struct Admit {
    pub(crate) hold: Option<Hold>,
    pub(crate) lowered: Option<u64>,
}

/// A request that did not fit: its refusal, and what was left of the budget that refused it.
struct Short {
    refusal: Refusal,
    left: Option<f64>,
}

/// The admission of keyed requests, shared by every request of one gateway.
#[derive(Clone)]
pub(crate) struct Admission {
    keys: Arc<dyn KeyStore>,
    windows: Arc<dyn LimitsStore>,
    clock: Clock,
    pub(crate) per_day: Option<f64>,
    hold_lease: Duration,
    pub(crate) reserve_usd: f64,
    /// The process's slices, when keyed requests are admitted from them.
    pub(crate) leased: Option<Arc<Leased>>,
}

impl Admission {
    pub(crate) fn new(
        keys: Arc<dyn KeyStore>,
        windows: Arc<dyn LimitsStore>,
        per_day: Option<f64>,
    ) -> Self {
        Self {
            keys,
            windows,
            clock: Clock::system(),
            per_day,
            hold_lease: DEFAULT_HOLD_LEASE,
            reserve_usd: DEFAULT_RESERVE_USD,
            leased: None,
        }
    }

    /// This admission taking keyed requests from `leased` slices, when given.
    pub(crate) fn leasing(mut self, leased: Option<Arc<Leased>>) -> Self {
        self.leased = leased;
        self
    }

    /// Counts a hold nothing settled for `lease`, and lets a slice last as long unrenewed.
    pub(crate) fn set_hold_lease(&mut self, lease: Duration) {
        self.hold_lease = lease;
        if let Some(leased) = &self.leased {
            self.leased = Some(Arc::new(leased.with_lease(lease)));
        }
    }

    /// Writes the settled records and gives back this process's slices.
    pub(crate) async fn shutdown(&self) {
        if let Some(leased) = &self.leased {
            leased.shutdown().await;
        }
    }

    /// Admits `request` of `client` to `chain`: its rate slot, then its hold. `route_reserve` is
    /// the route's reservation where an entry's prices are unknown. A request that does not fit
    /// is refused with when it fits again, never sent, unless what is left pays its input and
    /// a shorter answer: then it is admitted with that lower output limit.
    pub(crate) async fn admit(
        &self,
        client: &Client,
        (id, dialect, chain): (&str, &str, &[ChainEntry]),
        (request, input): (&GatewayRequest, u64),
        route_reserve: Option<f64>,
    ) -> Result<Admit, Refusal> {
        let unpriced = route_reserve.unwrap_or(self.reserve_usd);
        let asked = request.overrides.max_tokens;
        let amount = reservation(chain, input, asked, unpriced);
        if self.leased.is_none() {
            self.client_slot(client, input).await?;
        }
        let open = OpenRequest {
            id: id.to_owned(),
            holder: String::new(),
            started_ms: 0,
            route: request.model.clone(),
            dialect: dialect.to_owned(),
            stream: request.stream,
            key_id: client.key.id.clone(),
            team: None,
            reserved_usd: 0.0,
        };
        let short = match self.take(client, &open, amount, input).await {
            Ok(hold) => {
                return Ok(Admit {
                    hold,
                    lowered: None,
                });
            }
            Err(short) => short,
        };
        let fits = (short.left).and_then(|left| affordable_output(chain, input, asked, left));
        let Some(lowered) = fits else {
            return Err(short.refusal);
        };
        let amount = reservation(chain, input, Some(lowered), unpriced);
        match self.take(client, &open, amount, input).await {
            Ok(hold) => Ok(Admit {
                hold,
                lowered: Some(lowered),
            }),
            Err(_) => Err(short.refusal),
        }
    }

    /// Takes `amount` from the key's, its team's and the gateway's budgets, from this process's
    /// slices or as a hold in the store.
    async fn take(
        &self,
        client: &Client,
        open: &OpenRequest,
        amount: f64,
        input: u64,
    ) -> Result<Option<Hold>, Short> {
        let id = open.id.as_str();
        if let Some(leased) = &self.leased {
            let ask = AdmissionAsk {
                key: Some(client.key.clone()),
                team: client.team.clone(),
                user: client.user.clone(),
                gateway_per_day: self.per_day,
                reserve_usd: amount,
                input_tokens: input,
            };
            return match leased.admit(open.clone(), &ask).await {
                Ok(hold) => Ok(Some(hold)),
                Err(answer) => {
                    let left = match answer.reason {
                        Refused::Budget { left, .. } => Some(left),
                        _ => None,
                    };
                    let refusal = self.leased_refusal(client, answer, amount);
                    Err(Short { refusal, left })
                }
            };
        }
        let now = self.clock.now_ms();
        let lease = i64::try_from(self.hold_lease.as_millis()).unwrap_or(i64::MAX);
        let hold = HoldRequest {
            id: id.to_owned(),
            key: client.key.clone(),
            team: client.team.clone(),
            user: client.user.clone(),
            amount_usd: amount,
            gateway_per_day: self.per_day,
            now_ms: now,
            expires_ms: now.saturating_add(lease),
            asked: Asked {
                route: open.route.clone(),
                dialect: open.dialect.clone(),
                stream: open.stream,
            },
        };
        let outcome = (self.keys.hold(&hold).await).map_err(|e| Short {
            refusal: store_refused(e),
            left: None,
        })?;
        let HoldOutcome::Refused {
            scope,
            limit,
            left,
            resets_ms,
        } = outcome
        else {
            return Ok(None);
        };
        let refusal = budget_refusal(client, scope, (limit, left, amount), resets_ms, now);
        let left = (scope != HoldScope::Parallel).then_some(left);
        Err(Short { refusal, left })
    }

    /// The refusal a leased admission answered, in the words a store hold's would have.
    fn leased_refusal(&self, client: &Client, answer: Answer, amount: f64) -> Refusal {
        let now = self.clock.now_ms();
        let wait = answer
            .retry_after_ms
            .map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0)));
        let refusal = match answer.reason {
            Refused::Budget {
                scope,
                limit,
                left,
                resets_ms,
            } => budget_refusal(client, scope, (limit, left, amount), resets_ms, now),
            Refused::Parallel { limit } => {
                parallel_refusal(client, HoldScope::Parallel, limit as f64)
            }
            Refused::Rate { reason } => {
                rate_refusal(client, reason.as_str(), wait.unwrap_or_default())
            }
            Refused::Revoked => Refusal::new(
                401,
                Kind::Auth,
                format!(
                    "The client key {}… was revoked or has expired: ask for a new one.",
                    client.key.prefix
                ),
            ),
            Refused::Store { message } => Refusal::new(
                503,
                Kind::Server,
                format!("The gateway's store cannot admit the request now: {message}."),
            ),
        };
        match wait {
            Some(wait) => refusal.retry_after(wait),
            None => refusal,
        }
    }

    /// A slot in the key's own per-minute window, when it has limits.
    async fn client_slot(&self, client: &Client, input_tokens: u64) -> Result<(), Refusal> {
        let key = &client.key;
        if key.rpm.is_none() && key.tpm.is_none() {
            return Ok(());
        }
        let now = self.clock.now_ms();
        let slot = SlotRequest {
            key: format!("client:{}", key.id),
            now_ms: now,
            input_tokens,
            limits: RateLimits {
                requests_per_minute: key.rpm,
                input_tokens_per_minute: key.tpm,
            },
        };
        let grant = self.windows.acquire_rate_slot(&slot).await;
        match grant.map_err(store_refused)? {
            SlotGrant::Granted => Ok(()),
            SlotGrant::Wait { until_ms, reason } => {
                let wait = Duration::from_millis(u64::try_from(until_ms - now).unwrap_or(0));
                Err(rate_refusal(client, reason.as_str(), wait))
            }
        }
    }
}

/// A 429 for a key at its per-minute `limit`, whose window has room again in `wait`.
fn rate_refusal(client: &Client, limit: &str, wait: Duration) -> Refusal {
    let message = format!(
        "The client key {}… is at its limit ({limit}); its window has room again in {} s.",
        client.key.prefix,
        wait.as_secs_f64().ceil()
    );
    Refusal::new(429, Kind::RateLimited, message).retry_after(wait)
}

/// A 429 for a key with its most requests in flight.
fn parallel_refusal(client: &Client, _scope: HoldScope, limit: f64) -> Refusal {
    let message = format!(
        "The client key {}… already has {limit} requests in flight, its most: send this one when one of them ends.",
        client.key.prefix
    );
    Refusal::new(429, Kind::RateLimited, message).retry_after(Duration::from_secs(1))
}

/// A 402 naming the budget that has `left` of `limit`, less than the reservation `amount`.
fn budget_refusal(
    client: &Client,
    scope: HoldScope,
    (limit, left, amount): (f64, f64, f64),
    resets_ms: Option<i64>,
    now: i64,
) -> Refusal {
    if scope == HoldScope::Parallel {
        return parallel_refusal(client, scope, limit);
    }
    let whose = match scope {
        HoldScope::Key => format!("The client key {}…'s budget", client.key.prefix),
        HoldScope::User => {
            let user = client.user.as_ref();
            let name = user.and_then(|u| u.email.as_deref().or(u.name.as_deref()));
            let id = user.map_or("", |u| u.id.as_str());
            format!("The user {}'s budget", name.unwrap_or(id))
        }
        HoldScope::Team => format!(
            "The team {}'s budget",
            client.team.as_ref().map_or("", |t| t.name.as_str())
        ),
        _ => "The gateway's daily spend cap".to_owned(),
    };
    let resets = resets_ms.map_or_else(
        || "it does not reset".to_owned(),
        |ms| format!("it resets at {}", utc_time(ms)),
    );
    let (left, amount) = distinct_usd(left, amount);
    let message = format!(
        "{whose} of ${limit:.4} has ${left} left, less than this request's reservation of ${amount}; {resets}."
    );
    let refusal = Refusal::new(402, Kind::Budget, message);
    match resets_ms {
        Some(ms) => {
            refusal.retry_after(Duration::from_millis(u64::try_from(ms - now).unwrap_or(0)))
        }
        None => refusal,
    }
}

fn store_refused(e: StoreError) -> Refusal {
    let message = format!("The gateway's store cannot admit the request now: {e}.");
    Refusal::new(503, Kind::Server, message).retry_after(Duration::from_secs(1))
}

/// `left` and `amount` in USD with as many decimals as it takes to tell them apart, at least
/// four: "$0.0010 left, less than $0.0010" would hide the reason.
fn distinct_usd(left: f64, amount: f64) -> (String, String) {
    let mut digits = 4;
    loop {
        let pair = (format!("{left:.digits$}"), format!("{amount:.digits$}"));
        if pair.0 != pair.1 || digits >= 12 {
            return pair;
        }
        digits += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::distinct_usd;

    #[test]
    fn what_is_left_and_the_reservation_are_shown_with_the_digits_that_tell_them_apart() {
        // The dashboard read "has $0.0010 left, less than … $0.0010".
        let pair = distinct_usd(0.00096, 0.00104);
        assert_eq!(pair, ("0.00096".to_owned(), "0.00104".to_owned()));
        let pair = distinct_usd(0.5, 1.25);
        assert_eq!(pair, ("0.5000".to_owned(), "1.2500".to_owned()));
    }
}
