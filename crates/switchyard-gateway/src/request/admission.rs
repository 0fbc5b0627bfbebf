//! A keyed request's admission: a slot in its key's per-minute window, then a hold on its
//! reservation against the key's, its team's and the gateway's budgets, taken in the store
//! before anything is sent. The request's record settles the hold.
//! Spec: R14.6, R14.7, R12.3.

use std::sync::Arc;
use std::time::Duration;

use switchyard_api::ChainEntry;
use switchyard_core::limits::{Clock, LimitsStore, RateLimits, SlotGrant, SlotRequest};
use switchyard_core::store::{HoldOutcome, HoldRequest, HoldScope, KeyStore, StoreError};

use crate::auth::{Client, utc_time};
use crate::ingress::GatewayRequest;
use crate::refusal::{Kind, Refusal};

/// How long a hold counts when its request's record never settles it because its process
/// died, unless the gateway says otherwise: longer than any answer should take.
pub const DEFAULT_HOLD_LEASE: Duration = Duration::from_secs(30 * 60);

/// The reservation in USD for a request to an entry whose prices are unknown, by default.
pub const DEFAULT_RESERVE_USD: f64 = 0.05;

/// The admission of keyed requests, shared by every request of one gateway.
#[derive(Clone)]
pub(crate) struct Admission {
    keys: Arc<dyn KeyStore>,
    windows: Arc<dyn LimitsStore>,
    clock: Clock,
    pub(crate) per_day: Option<f64>,
    pub(crate) hold_lease: Duration,
    pub(crate) reserve_usd: f64,
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
        }
    }

    /// Admits `request` of `client` to `chain`: its rate slot, then its hold. `route_reserve` is
    /// the route's reservation where an entry's prices are unknown. A request that does not fit
    /// is refused with when it fits again, never sent.
    pub(crate) async fn admit(
        &self,
        client: &Client,
        (id, chain): (&str, &[ChainEntry]),
        (request, input): (&GatewayRequest, u64),
        route_reserve: Option<f64>,
    ) -> Result<(), Refusal> {
        self.client_slot(client, input).await?;
        let unpriced = route_reserve.unwrap_or(self.reserve_usd);
        let amount = reservation(chain, input, request.overrides.max_tokens, unpriced);
        let now = self.clock.now_ms();
        let lease = i64::try_from(self.hold_lease.as_millis()).unwrap_or(i64::MAX);
        let hold = HoldRequest {
            id: id.to_owned(),
            key: client.key.clone(),
            team: client.team.clone(),
            amount_usd: amount,
            gateway_per_day: self.per_day,
            now_ms: now,
            expires_ms: now.saturating_add(lease),
        };
        let outcome = self.keys.hold(&hold).await.map_err(store_refused)?;
        let HoldOutcome::Refused {
            scope,
            limit,
            left,
            resets_ms,
        } = outcome
        else {
            return Ok(());
        };
        let prefix = &client.key.prefix;
        if scope == HoldScope::Parallel {
            let message = format!(
                "The client key {prefix}… already has {limit} requests in flight, its most: send this one when one of them ends."
            );
            return Err(
                Refusal::new(429, Kind::RateLimited, message).retry_after(Duration::from_secs(1))
            );
        }
        let whose = match scope {
            HoldScope::Key => format!("The client key {prefix}…'s budget"),
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
        Err(match resets_ms {
            Some(ms) => {
                refusal.retry_after(Duration::from_millis(u64::try_from(ms - now).unwrap_or(0)))
            }
            None => refusal,
        })
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
                let message = format!(
                    "The client key {}… is at its limit ({}); its window has room again in {} s.",
                    key.prefix,
                    reason.as_str(),
                    wait.as_secs_f64().ceil()
                );
                Err(Refusal::new(429, Kind::RateLimited, message).retry_after(wait))
            }
        }
    }
}

/// The reservation in USD for `input_tokens` in and at most `max_output` out at the dearest
/// entry of `chain`, or `unpriced` for an entry whose prices are unknown.
fn reservation(
    chain: &[ChainEntry],
    input_tokens: u64,
    max_output: Option<u64>,
    unpriced: f64,
) -> f64 {
    let one = |entry: &ChainEntry| {
        let info = entry.handler.get_model().info;
        let output = match (max_output, info.max_tokens) {
            (Some(asked), most) if most > 0 => asked.min(most),
            (Some(asked), _) => asked,
            (None, most) => most,
        };
        match (info.input_price, info.output_price) {
            (Some(i), Some(o)) if output > 0 => {
                (input_tokens as f64 * i + output as f64 * o) / 1_000_000.0
            }
            _ => unpriced,
        }
    };
    chain.iter().map(one).fold(0.0, f64::max)
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
