//! The providers page's figures: each route's failover entries with their cooldown, their
//! rate window now and what the provider last said of its limits, read and matched by the
//! library's one rule, `LimitsView`, which `switchyard limits` runs too.
//! Spec: R14.11, R14.4, R12.

use serde_json::{Value, json};
use switchyard_api::ApiConfiguration;
use switchyard_core::limits::{Cooldown, EntryLimits, LimitsView};
use switchyard_core::store::{StoreError, TaskStore};

/// Every route's entries and the store's limits state at `now`.
pub(crate) async fn list(
    store: &dyn TaskStore,
    config: &ApiConfiguration,
    now: i64,
) -> Result<Value, StoreError> {
    let view = LimitsView::read(store, now).await?;
    let mut chains = Vec::new();
    let mut problems = Vec::new();
    for (route, chain) in crate::request::route_chains(config) {
        match chain {
            Ok(chain) => chains.push((route, chain)),
            Err(e) => problems.push(format!("route {route}: {e}")),
        }
    }
    let routes: Vec<Value> = (chains.iter())
        .map(|(route, chain)| {
            let entries: Vec<Value> = (view.entries(chain).iter())
                .map(|e| entry_json(e, &view))
                .collect();
            json!({"route": route, "entries": entries})
        })
        .collect();
    let every_entry = chains.iter().flat_map(|(_, chain)| chain.iter());
    let others: Vec<Value> = (view.unmatched(every_entry).into_iter())
        .map(|c| json!({"entry": c.entry.label(), "base_url": c.entry.base_url, "cooldown": cooldown_json(c, &view)}))
        .collect();
    Ok(json!({
        "now_ms": now,
        "routes": routes,
        "other_cooldowns": others,
        "problems": problems,
        "spend": {
            "max_cost_usd_per_day": config.limits.max_cost_usd_per_day,
            "spent_today_usd": view.spent_today_usd,
        },
    }))
}

fn cooldown_json(c: &Cooldown, view: &LimitsView) -> Value {
    json!({
        "reason": c.reason,
        "since_ms": c.since_ms,
        "until_ms": c.until_ms,
        "seconds_left": view.seconds_left(c).ceil(),
    })
}

fn entry_json(limits: &EntryLimits<'_>, view: &LimitsView) -> Value {
    let (e, c, r) = (limits.entry, limits.cooldown, limits.rate);
    let learnt = r.and_then(|r| r.learnt);
    json!({
        "position": limits.position,
        "entry": format!("{}:{}", e.provider_id, e.model_id),
        "base_url": e.base_url,
        "state": if c.is_some() { "cooling_down" } else { "ready" },
        "cooldown": c.map(|c| cooldown_json(c, view)),
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
