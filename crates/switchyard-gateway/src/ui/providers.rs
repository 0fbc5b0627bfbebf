//! The providers page's figures (SPEC R14.11, R14.4, R12): each `[serve.routes]` route's
//! failover entries with their cooldown (reason, since, reset time), their rate-limit window
//! now (requests and input tokens in the last 60 s of the configured per-minute limits) and
//! what the provider last said of its own limits, any other cooldown the store holds, and the
//! daily spend cap — the store's state as `switchyard limits` reads and matches it.

use serde_json::{Value, json};
use switchyard_api::{ApiConfiguration, ChainEntry};
use switchyard_core::limits::{Cooldown, RateState, utc_day_start_ms};
use switchyard_core::store::{StoreError, TaskStore};

/// Every route's entries and the store's limits state at `now`.
pub(crate) async fn list(
    store: &dyn TaskStore,
    config: &ApiConfiguration,
    now: i64,
) -> Result<Value, StoreError> {
    let day = utc_day_start_ms(now);
    let (cooldowns, rates, spent) = tokio::try_join!(
        store.cooldowns(now),
        store.rate_states(now),
        store.spend_between(day, day + 86_400_000)
    )?;
    let mut routes = Vec::new();
    let mut problems = Vec::new();
    let mut shown: Vec<&Cooldown> = Vec::new();
    for (route, chain) in crate::route::route_chains(config) {
        match chain {
            Ok(chain) => {
                let entries: Vec<Value> = (chain.iter().enumerate())
                    .map(|(i, e)| {
                        let cooldown = cooldown_of(&cooldowns, e);
                        shown.extend(cooldown);
                        entry_json(
                            i,
                            e,
                            cooldown,
                            rates.iter().find(|r| r.key == e.rate_key),
                            now,
                        )
                    })
                    .collect();
                routes.push(json!({"route": route, "entries": entries}));
            }
            Err(e) => problems.push(format!("route {route}: {e}")),
        }
    }
    let others: Vec<Value> = (cooldowns.iter())
        .filter(|c| !shown.contains(c))
        .map(|c| json!({"entry": c.entry.label(), "base_url": c.entry.base_url, "cooldown": cooldown_json(c, now)}))
        .collect();
    Ok(json!({
        "now_ms": now,
        "routes": routes,
        "other_cooldowns": others,
        "problems": problems,
        "spend": {
            "max_cost_usd_per_day": config.limits.max_cost_usd_per_day,
            "spent_today_usd": spent,
        },
    }))
}

/// The cooldown of entry `e`, matched as `switchyard limits` matches it (provider, model and
/// base URL).
fn cooldown_of<'c>(cooldowns: &'c [Cooldown], e: &ChainEntry) -> Option<&'c Cooldown> {
    cooldowns.iter().find(|c| {
        c.entry.provider == e.provider_id
            && c.entry.model == e.model_id
            && c.entry.base_url == e.base_url
    })
}

fn cooldown_json(c: &Cooldown, now: i64) -> Value {
    json!({
        "reason": c.reason,
        "since_ms": c.since_ms,
        "until_ms": c.until_ms,
        "seconds_left": ((c.until_ms - now).max(0) as f64 / 1000.0).ceil(),
    })
}

fn entry_json(
    i: usize,
    e: &ChainEntry,
    c: Option<&Cooldown>,
    r: Option<&RateState>,
    now: i64,
) -> Value {
    let learnt = r.and_then(|r| r.learnt);
    json!({
        "position": i,
        "entry": format!("{}:{}", e.provider_id, e.model_id),
        "base_url": e.base_url,
        "state": if c.is_some() { "cooling_down" } else { "ready" },
        "cooldown": c.map(|c| cooldown_json(c, now)),
        "requests_per_minute": e.requests_per_minute,
        "input_tokens_per_minute": e.input_tokens_per_minute,
        "requests_in_window": r.map_or(0, |r| r.requests_in_window),
        "input_tokens_in_window": r.map_or(0, |r| r.input_tokens_in_window),
        "learnt": learnt.map(|l| json!({
            "observed_ms": l.observed_ms,
            "requests_remaining": l.requests_remaining,
            "requests_reset_ms": l.requests_reset_ms,
            "tokens_remaining": l.tokens_remaining,
            "tokens_reset_ms": l.tokens_reset_ms,
        })),
    })
}
