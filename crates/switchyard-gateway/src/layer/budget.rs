//! A keyed request's admission (SPEC R14.6, R14.7): the key's requests and input tokens per
//! minute (a slot in the store's shared window of R12.3, under `client:KEY_ID`), then its
//! reservation — the input estimate at the input price plus the most output at the output
//! price, the dearest of the route's entries (or the route's `reserve_usd`, else the
//! gateway's, where an entry's prices are unknown) — held against the key's, its team's and the gateway's caps in one
//! atomic step in the store ([`switchyard_core::store::KeyStore::hold`]), which also counts
//! the key's requests in flight. The hold is settled by the request's record (`ledger.rs`).
//! A request that does not fit is answered at once (402 or 429, with when it fits again),
//! never sent.

use std::time::Duration;

use switchyard_api::ChainEntry;
use switchyard_core::limits::{RateLimits, SlotGrant, SlotRequest};
use switchyard_core::store::{HoldOutcome, HoldRequest, HoldScope};

use super::state::Layer;
use crate::auth::{Client, utc_time};
use crate::ingress::GatewayRequest;

/// Why a keyed request is not sent: its status (402 budget, 429 rate or parallel, 503 store),
/// its one sentence, and when to ask again.
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) status: u16,
    pub(crate) message: String,
    pub(crate) retry_after: Option<Duration>,
}

impl Layer {
    /// Admits `request` (gateway request `id`, `input` tokens estimated) of `client` to
    /// `chain`: its rate slot, then
    /// its hold (reserving `route_reserve` USD, the route's `reserve_usd`, else the gateway's,
    /// where an entry's prices are unknown); else why not.
    pub(crate) async fn admit_client(
        &self,
        client: &Client,
        (id, chain): (&str, &[ChainEntry]),
        (request, input): (&GatewayRequest, u64),
        route_reserve: Option<f64>,
    ) -> Result<(), Refused> {
        self.client_slot(client, input).await?;
        let unpriced = route_reserve.unwrap_or(self.reserve_usd);
        let amount = reservation(chain, input, request.overrides.max_tokens, unpriced);
        let now = self.clock.now_ms();
        let hold = HoldRequest {
            id: id.to_owned(),
            key: client.key.clone(),
            team: client.team.clone(),
            amount_usd: amount,
            gateway_per_day: self.caps.per_day,
            now_ms: now,
            expires_ms: now
                .saturating_add(i64::try_from(self.hold_lease.as_millis()).unwrap_or(i64::MAX)),
        };
        let outcome = self.store.hold(&hold).await.map_err(store_refused)?;
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
            return Err(Refused {
                status: 429,
                message: format!(
                    "The client key {prefix}… already has {limit} requests in flight, its most: send this one when one of them ends."
                ),
                retry_after: Some(Duration::from_secs(1)),
            });
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
        Err(Refused {
            status: 402,
            message: format!(
                "{whose} of ${limit:.4} has ${left:.4} left, less than this request's reservation of ${amount:.4}; {resets}."
            ),
            retry_after: resets_ms
                .map(|ms| Duration::from_millis(u64::try_from(ms - now).unwrap_or(0))),
        })
    }

    /// A slot in the key's own per-minute window, when it has limits.
    async fn client_slot(&self, client: &Client, input_tokens: u64) -> Result<(), Refused> {
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
        match self
            .store
            .acquire_rate_slot(&slot)
            .await
            .map_err(store_refused)?
        {
            SlotGrant::Granted => Ok(()),
            SlotGrant::Wait { until_ms, reason } => {
                let wait = Duration::from_millis(u64::try_from(until_ms - now).unwrap_or(0));
                Err(Refused {
                    status: 429,
                    message: format!(
                        "The client key {}… is at its limit ({}); its window has room again in {} s.",
                        key.prefix,
                        reason.as_str(),
                        wait.as_secs_f64().ceil()
                    ),
                    retry_after: Some(wait),
                })
            }
        }
    }
}

/// The reservation for `input_tokens` in and at most `max_output` out (the client's, else
/// the model's most) at the dearest entry of `chain` (USD; prices per million tokens), or
/// `unpriced` for an entry whose prices are unknown.
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

fn store_refused(e: switchyard_core::store::StoreError) -> Refused {
    Refused {
        status: 503,
        message: format!("The gateway's store cannot admit the request now: {e}."),
        retry_after: Some(Duration::from_secs(1)),
    }
}
