//! `switchyard teams`: the teams client keys belong to, each with a budget its keys share.
//! Spec: R14.6, R14.7.

use std::process::ExitCode;
use std::sync::Arc;

use switchyard_core::store::{StoreError, TaskStore, create_team_by, update_team};

use crate::cli::TeamsCommand;
use crate::commands::keys::{cli_actor, fail, now_ms};
use crate::settings;

/// Runs one `teams` subcommand: 2 for a bad store, budget or taken name, 1 for an unknown team.
pub async fn run(place: settings::StorePlace<'_>, command: &TeamsCommand) -> ExitCode {
    let store = match settings::open_store(place).await {
        Ok(store) => store,
        Err(e) => return fail(2, &e),
    };
    let result = match command {
        TeamsCommand::Create { name, budget } => create(&store, name, budget.as_deref()).await,
        TeamsCommand::List { json } => list(&store, None, *json).await,
        TeamsCommand::Show { name, json } => list(&store, Some(name), *json).await,
        TeamsCommand::Update { name, budget } => update(&store, name, budget).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, message)) => fail(code, &message),
    }
}

async fn create(
    store: &Arc<dyn TaskStore>,
    name: &str,
    budget: Option<&str>,
) -> Result<(), (u8, String)> {
    let by = cli_actor();
    let team = (create_team_by(&**store, name, budget, (&by, now_ms())).await)
        .map_err(|e| (2, e.to_string()))?;
    say!("team {} made", team.name);
    Ok(())
}

/// `teams update`: a new budget, printed old → new.
async fn update(store: &Arc<dyn TaskStore>, name: &str, budget: &str) -> Result<(), (u8, String)> {
    let (old, new) = (update_team(&**store, name, budget, &cli_actor(), now_ms()).await)
        .map_err(|e| (2, e.to_string()))?;
    let show = |t: &switchyard_core::store::Team| {
        t.budget
            .map_or_else(|| "none".to_owned(), |b| b.to_string())
    };
    say!(
        "team {} updated: budget {} → {}; gateways apply it within a second",
        new.name,
        show(&old),
        show(&new)
    );
    Ok(())
}

async fn list(
    store: &Arc<dyn TaskStore>,
    wanted: Option<&str>,
    json: bool,
) -> Result<(), (u8, String)> {
    let err = |e: StoreError| (2, e.to_string());
    let teams = match wanted {
        Some(name) => match store.team(name).await.map_err(err)? {
            Some(t) => vec![t],
            None => {
                return Err((
                    1,
                    format!("There is no team `{name}`: `switchyard teams list` shows the teams."),
                ));
            }
        },
        None => store.teams().await.map_err(err)?,
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let keys = store.client_keys().await.map_err(err)?;
    if !json && teams.is_empty() {
        eprintln!("no teams yet; `switchyard teams create NAME --budget 100/month` makes one");
        return Ok(());
    }
    if !json {
        say!(
            "{:<16} {:<16} {:>12} {:>5}",
            "TEAM",
            "BUDGET",
            "USED",
            "KEYS"
        );
    }
    for t in &teams {
        let from = t.budget.map_or(i64::MIN, |b| b.window_start_ms(now));
        let used = (store.used_since(None, Some(&t.name), from, now))
            .await
            .map_err(err)?;
        let members = keys
            .iter()
            .filter(|k| k.team.as_deref() == Some(&t.name) && k.revoked_ms.is_none())
            .count();
        if json {
            let row = serde_json::json!({
                "name": t.name,
                "budget_usd": t.budget.map(|b| b.usd),
                "budget_window": t.budget.map(|b| b.window_name()),
                "used_usd": used,
                "keys": members,
                "created_ms": t.created_ms,
            });
            say!("{row}");
        } else {
            let budget = t.budget.map_or_else(|| "-".to_owned(), |b| b.to_string());
            say!(
                "{:<16} {budget:<16} {:>12} {members:>5}",
                t.name,
                format!("${used:.4}")
            );
        }
    }
    Ok(())
}
