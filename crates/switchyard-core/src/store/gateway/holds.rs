//! Budget holds: one request's reservation against its caps, settled by its record.
//! Spec: R14.7.

use super::budget::{Budget, BudgetWindow};
use super::keys::{ClientKey, Team};
use super::requests::{RequestOutcome, RequestRecord};
use super::users::User;

/// One request's reservation to take, in USD at Unix ms times.
#[derive(Debug, Clone, PartialEq)]
pub struct HoldRequest {
    /// The gateway's request id: the hold's id, settled by the request's record.
    pub id: String,
    /// The key.
    pub key: ClientKey,
    /// The key's team, as stored now.
    pub team: Option<Team>,
    /// The key's owner, as stored now: their budget counts every key they own.
    pub user: Option<User>,
    /// The reservation.
    pub amount_usd: f64,
    /// The gateway-wide daily cap, `[limits] max_cost_usd_per_day`.
    pub gateway_per_day: Option<f64>,
    /// Now.
    pub now_ms: i64,
    /// When the hold stops counting if it is never settled because its process died.
    pub expires_ms: i64,
    /// What the request asked for, which its record names if its process dies.
    pub asked: Asked,
}

/// What a request asked for, kept with its hold so that a request lost with its process is
/// recorded under its route.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Asked {
    /// The model name the client sent.
    pub route: String,
    /// The client's dialect, as its record names it.
    pub dialect: String,
    /// Whether the client asked for a stream.
    pub stream: bool,
}

/// Which cap refused a hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldScope {
    /// The key's budget.
    Key,
    /// The key's owner's budget.
    User,
    /// The team's budget.
    Team,
    /// The gateway-wide daily cap.
    Gateway,
    /// The key's parallel requests.
    Parallel,
}

/// What [`super::KeyStore::hold`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum HoldOutcome {
    /// The reservation was taken.
    Held,
    /// Nothing was written: `scope` has `left` of `limit`, USD or requests.
    Refused {
        /// The cap.
        scope: HoldScope,
        /// The cap's size.
        limit: f64,
        /// What is left of it now.
        left: f64,
        /// When its window resets; `None`: never, or when a request in flight ends.
        resets_ms: Option<i64>,
    },
}

/// The amounts a hold is decided on, read in one snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HoldUse {
    /// The key's settled spend, live holds and leases in its budget's window, USD.
    pub key_usd: f64,
    /// The key's live unsettled holds and parallel leases.
    pub key_in_flight: u64,
    /// The owner's, over every key they own, in their budget's window.
    pub user_usd: f64,
    /// The team's, in its budget's window.
    pub team_usd: f64,
    /// The gateway's spend today, every live hold and the gateway leases.
    pub gateway_usd: f64,
}

/// The one rule deciding a hold: parallel, key, user, team, then gateway cap.
pub fn decide_hold(req: &HoldRequest, used: &HoldUse) -> HoldOutcome {
    let now = req.now_ms;
    if let Some(max) = req.key.max_parallel
        && used.key_in_flight >= max
    {
        return HoldOutcome::Refused {
            scope: HoldScope::Parallel,
            limit: max as f64,
            left: 0.0,
            resets_ms: None,
        };
    }
    let gateway = (req.gateway_per_day).map(|usd| Budget {
        usd,
        window: BudgetWindow::Day,
    });
    let caps = [
        (HoldScope::Key, req.key.budget, used.key_usd),
        (
            HoldScope::User,
            req.user.as_ref().and_then(|u| u.budget),
            used.user_usd,
        ),
        (
            HoldScope::Team,
            req.team.as_ref().and_then(|t| t.budget),
            used.team_usd,
        ),
        (HoldScope::Gateway, gateway, used.gateway_usd),
    ];
    // A request that reserves nothing, to a model priced at $0, spends nothing: a budget
    // already spent does not refuse it.
    for (scope, budget, used) in caps.into_iter().filter(|_| req.amount_usd > 0.0) {
        if let Some(b) = budget
            && used + req.amount_usd > b.usd + 1e-12
        {
            return HoldOutcome::Refused {
                scope,
                limit: b.usd,
                left: (b.usd - used).max(0.0),
                resets_ms: b.resets_ms(now),
            };
        }
    }
    HoldOutcome::Held
}

/// What a held request counts: its cost, 0 if it failed unanswered, else its reservation.
pub fn settled_amount(record: &RequestRecord, reserved_usd: f64) -> f64 {
    settled_without_reservation(record).unwrap_or(reserved_usd)
}

/// [`settled_amount`] where the record alone decides it; `None` where the reservation stands.
pub fn settled_without_reservation(record: &RequestRecord) -> Option<f64> {
    match (record.cost_usd, &record.provider, &record.outcome) {
        (Some(cost), _, _) => Some(cost),
        (None, None, RequestOutcome::Error(_)) => Some(0.0),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::suite::keys::key;

    fn request(amount_usd: f64) -> HoldRequest {
        let key = key("key_a", "sk-sy-aaaaaa", None, Some("1/day"));
        HoldRequest {
            id: "req_a".to_owned(),
            key,
            team: None,
            user: None,
            amount_usd,
            gateway_per_day: Some(5.0),
            now_ms: 1_000,
            expires_ms: 2_000,
            asked: Asked::default(),
        }
    }

    /// BerriAI/litellm#10973: a budget that is spent blocked models that cost nothing.
    #[test]
    fn a_request_to_a_model_priced_at_zero_is_held_whatever_the_budgets_have_left() {
        let spent = HoldUse {
            key_usd: 1.2,
            key_in_flight: 0,
            user_usd: 0.0,
            team_usd: 0.0,
            gateway_usd: 5.5,
        };
        assert_eq!(decide_hold(&request(0.0), &spent), HoldOutcome::Held);
        assert!(matches!(
            decide_hold(&request(0.001), &spent),
            HoldOutcome::Refused {
                scope: HoldScope::Key,
                ..
            }
        ));
        // Its key's parallel limit still counts.
        let busy = HoldUse {
            key_in_flight: 3,
            ..spent
        };
        assert!(matches!(
            decide_hold(&request(0.0), &busy),
            HoldOutcome::Refused {
                scope: HoldScope::Parallel,
                ..
            }
        ));
    }
}
