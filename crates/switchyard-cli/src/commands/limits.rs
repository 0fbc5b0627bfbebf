//! `switchyard limits`: each failover entry of both modes and each route, its cooldown and
//! rate-limit window, other stored cooldowns, and the spend caps, as the store holds them.
//! Spec: R12, R14.4.

use std::process::ExitCode;

use serde_json::json;
use switchyard_api::{ApiConfiguration, ChainEntry, Mode, build_failover_chain};
use switchyard_core::limits::{Clock, Cooldown, LimitsView, RateState};

use crate::cli::SelectionArgs;
use crate::settings;
use crate::table::{column_width, utc_second};

/// One row: an entry of a chain, or a stored cooldown of no such entry.
struct Row {
    /// `act`, `plan`, `serve` for a route's chain, or `store` for a cooldown of no chain.
    mode: &'static str,
    route: Option<String>,
    position: usize,
    label: String,
    base_url: String,
    cooldown: Option<Cooldown>,
    rate: Option<RateState>,
    requests_per_minute: Option<u64>,
    input_tokens_per_minute: Option<u64>,
}

/// Prints the limits; 2 when the configuration or the store cannot be read.
pub async fn run(place: settings::StorePlace<'_>, json: bool) -> ExitCode {
    let config = match settings::load(place.config, &SelectionArgs::default(), None) {
        Ok((config, _, _)) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let now = Clock::system().now_ms();
    let stored = match stored_state(place, now).await {
        Ok(stored) => stored,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let (rows, problems) = rows(&config, &stored);
    if json {
        print_json(&rows, &config, &stored);
    } else {
        print_text(&rows, &config, &stored);
    }
    for p in &problems {
        eprintln!("warning: {p}");
    }
    ExitCode::SUCCESS
}

/// Reads the store's limits; nothing is created for a SQLite database not made yet.
async fn stored_state(place: settings::StorePlace<'_>, now: i64) -> Result<LimitsView, String> {
    let Some(store) = settings::open_existing_store(place).await? else {
        return Ok(LimitsView::empty(now));
    };
    (LimitsView::read(&*store, now).await).map_err(|e| e.to_string())
}

/// One row per entry of each chain, one per stored cooldown of no entry, and the chains that
/// cannot be built; plan only when it differs from act.
fn rows(config: &ApiConfiguration, stored: &LimitsView) -> (Vec<Row>, Vec<String>) {
    let mut chains: Vec<(&'static str, Option<String>, Vec<ChainEntry>)> = Vec::new();
    let mut problems = Vec::new();
    for mode in [Mode::Act, Mode::Plan] {
        if mode == Mode::Plan && config.plan == config.act {
            continue;
        }
        match build_failover_chain(config, mode) {
            Ok(chain) => chains.push((mode.as_str(), None, chain)),
            Err(e) => problems.push(format!("{mode}: {e}", mode = mode.as_str())),
        }
    }
    for (route, chain) in switchyard_gateway::route_chains(config) {
        match chain {
            Ok(chain) => chains.push(("serve", Some(route), chain)),
            Err(e) => problems.push(format!("serve route {route}: {e}")),
        }
    }
    let mut rows = Vec::new();
    for (mode, route, chain) in &chains {
        rows.extend(stored.entries(chain).into_iter().map(|e| Row {
            mode,
            route: route.clone(),
            position: e.position,
            label: format!("{}:{}", e.entry.provider_id, e.entry.model_id),
            base_url: e.entry.base_url.clone(),
            cooldown: e.cooldown.cloned(),
            rate: e.rate.cloned(),
            requests_per_minute: e.entry.requests_per_minute,
            input_tokens_per_minute: e.entry.input_tokens_per_minute,
        }));
    }
    let every_entry = chains.iter().flat_map(|(_, _, chain)| chain.iter());
    for c in stored.unmatched(every_entry) {
        rows.push(Row {
            mode: "store",
            route: None,
            position: 0,
            label: c.entry.label(),
            base_url: c.entry.base_url.clone(),
            cooldown: Some(c.clone()),
            rate: None,
            requests_per_minute: None,
            input_tokens_per_minute: None,
        });
    }
    (rows, problems)
}

fn mode_cell(r: &Row) -> String {
    match &r.route {
        Some(route) => format!("{}:{route}", r.mode),
        None => r.mode.to_owned(),
    }
}

fn print_json(rows: &[Row], config: &ApiConfiguration, stored: &LimitsView) {
    for r in rows {
        let line = json!({
            "mode": r.mode,
            "route": r.route,
            "position": r.position,
            "entry": r.label,
            "base_url": r.base_url,
            "state": if r.cooldown.is_some() { "cooling_down" } else { "ready" },
            "until": r.cooldown.as_ref().map(|c| utc_second(c.until_ms)),
            "seconds_left": r.cooldown.as_ref().map(|c| stored.seconds_left(c)),
            "reason": r.cooldown.as_ref().map(|c| c.reason.clone()),
            "requests_per_minute": r.requests_per_minute,
            "input_tokens_per_minute": r.input_tokens_per_minute,
            "requests_in_window": r.rate.as_ref().map_or(0, |s| s.requests_in_window),
            "input_tokens_in_window": r.rate.as_ref().map_or(0, |s| s.input_tokens_in_window),
            "provider_requests_remaining": r.rate.as_ref().and_then(|s| s.learnt).and_then(|l| l.requests_remaining),
            "provider_tokens_remaining": r.rate.as_ref().and_then(|s| s.learnt).and_then(|l| l.tokens_remaining),
        });
        say!("{line}");
    }
    let spend = json!({
        "spend": {
            "max_cost_usd": config.limits.max_cost_usd,
            "max_cost_usd_per_day": config.limits.max_cost_usd_per_day,
            "spent_today_usd": stored.spent_today_usd,
        }
    });
    say!("{spend}");
}

fn print_text(rows: &[Row], config: &ApiConfiguration, stored: &LimitsView) {
    let spent_today = stored.spent_today_usd;
    let width = column_width(rows.iter().map(|r| r.label.as_str()), "ENTRY");
    let states: Vec<String> = rows
        .iter()
        .map(|r| match &r.cooldown {
            Some(c) => format!(
                "cooling down until {} (in {} s): {}",
                utc_second(c.until_ms),
                stored.seconds_left(c).ceil(),
                c.reason
            ),
            None => "ready".to_owned(),
        })
        .collect();
    let state_width = column_width(states.iter().map(String::as_str), "STATE");
    let modes: Vec<String> = rows.iter().map(mode_cell).collect();
    let mode_width = column_width(modes.iter().map(String::as_str), "MODE");
    say!(
        "{:<mode_width$} {:<width$}  {:<state_width$}  RATE (LAST 60 S)",
        "MODE",
        "ENTRY",
        "STATE"
    );
    for ((r, state), mode) in rows.iter().zip(&states).zip(&modes) {
        let used = r.rate.as_ref().map_or(0, |s| s.requests_in_window);
        let mut rate = match r.requests_per_minute {
            Some(rpm) => format!("{used} of {rpm} requests"),
            None if used == 1 => "1 request".to_owned(),
            None => format!("{used} requests"),
        };
        if let Some(tpm) = r.input_tokens_per_minute {
            let tokens = r.rate.as_ref().map_or(0, |s| s.input_tokens_in_window);
            rate.push_str(&format!(", {tokens} of {tpm} input tokens"));
        }
        if let Some(left) = r
            .rate
            .as_ref()
            .and_then(|s| s.learnt)
            .and_then(|l| l.requests_remaining)
        {
            rate.push_str(&format!(" (provider: {left} left)"));
        }
        let mode = if r.position == 0 { mode.as_str() } else { "" };
        say!(
            "{mode:<mode_width$} {:<width$}  {state:<state_width$}  {rate}",
            r.label
        );
    }
    let cap = |c: Option<f64>| c.map_or_else(|| "none".to_owned(), |c| format!("${c:.2}"));
    say!(
        "spend caps: per task {} · per day {} (spent today, UTC: ${spent_today:.4})",
        cap(config.limits.max_cost_usd),
        cap(config.limits.max_cost_usd_per_day)
    );
}
