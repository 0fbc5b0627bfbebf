//! `switchyard users`: the people who signed in through the identity provider, each with a role
//! and a budget over every key they own; `update` lasts until their next sign-in.
//! Spec: R14.6b, R14.7a.

use std::process::ExitCode;
use std::sync::Arc;

use switchyard_core::store::{TaskStore, User, UserEdit, update_user, user_diff};

use crate::cli::{UserUpdateArgs, UsersCommand};
use crate::commands::keys::{cli_actor, fail, now_ms};
use crate::settings;
use crate::table::utc_second;

type Outcome = Result<(), (u8, String)>;

/// Runs one `users` subcommand: 2 for a bad store or flag, 1 for a user that does not exist.
pub async fn run(place: settings::StorePlace<'_>, command: &UsersCommand) -> ExitCode {
    let store = match settings::open_store(place).await {
        Ok(store) => store,
        Err(e) => return fail(2, &e),
    };
    let result = match command {
        UsersCommand::List { json } => list(&store, *json).await,
        UsersCommand::Show { id, json } => show(&store, id, *json).await,
        UsersCommand::Update(args) => update(&store, args).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, message)) => fail(code, &message),
    }
}

fn store_err(e: switchyard_core::store::StoreError) -> (u8, String) {
    (2, e.to_string())
}

/// What `u`'s keys used in the window of their budget, when they have one.
async fn used(store: &Arc<dyn TaskStore>, u: &User, now: i64) -> Result<Option<f64>, (u8, String)> {
    let Some(b) = u.budget else { return Ok(None) };
    let from = b.window_start_ms(now);
    let used = store.user_used_since(&u.id, from, now).await;
    used.map(Some).map_err(store_err)
}

/// The user's keys that are not revoked.
async fn keys_of(store: &Arc<dyn TaskStore>, u: &User) -> Result<usize, (u8, String)> {
    let keys = store.client_keys().await.map_err(store_err)?;
    let owned = keys
        .iter()
        .filter(|k| k.owner.as_deref() == Some(u.id.as_str()));
    Ok(owned.filter(|k| k.revoked_ms.is_none()).count())
}

fn state(u: &User) -> String {
    u.disabled_ms.map_or_else(
        || "active".to_owned(),
        |at| format!("disabled {}", utc_second(at)),
    )
}

fn user_json(u: &User, used: Option<f64>, keys: usize) -> serde_json::Value {
    serde_json::json!({
        "id": u.id,
        "issuer": u.issuer,
        "subject": u.subject,
        "email": u.email,
        "name": u.name,
        "role": u.role.as_str(),
        "team": u.team,
        "models": u.models,
        "budget_usd": u.budget.map(|b| b.usd),
        "budget_window": u.budget.map(|b| b.window_name()),
        "used_usd": used,
        "keys": keys,
        "created_ms": u.created_ms,
        "signed_in_ms": u.signed_in_ms,
        "disabled_ms": u.disabled_ms,
    })
}

async fn list(store: &Arc<dyn TaskStore>, json: bool) -> Outcome {
    let users = store.users().await.map_err(store_err)?;
    let now = now_ms();
    if !json && users.is_empty() {
        eprintln!("no users yet: a person becomes one at their first sign-in to the dashboard");
        return Ok(());
    }
    if !json {
        say!(
            "{:<20} {:<28} {:<7} {:<10} {:<22} {:>4}  STATE",
            "ID",
            "EMAIL",
            "ROLE",
            "TEAM",
            "BUDGET (USED)",
            "KEYS"
        );
    }
    for u in &users {
        let (used, keys) = (used(store, u, now).await?, keys_of(store, u).await?);
        if json {
            say!("{}", user_json(u, used, keys));
            continue;
        }
        let budget = match (u.budget, used) {
            (Some(b), Some(x)) => format!("{b} (${x:.4})"),
            _ => "-".to_owned(),
        };
        say!(
            "{:<20} {:<28} {:<7} {:<10} {budget:<22} {keys:>4}  {}",
            u.id,
            u.email.as_deref().unwrap_or(&u.subject),
            u.role.as_str(),
            u.team.as_deref().unwrap_or("-"),
            state(u)
        );
    }
    Ok(())
}

async fn find(store: &Arc<dyn TaskStore>, id: &str) -> Result<User, (u8, String)> {
    match store.user(id.trim()).await.map_err(store_err)? {
        Some(u) => Ok(u),
        None => Err((
            1,
            format!("There is no user `{id}`: `switchyard users list` shows the users."),
        )),
    }
}

/// `users show`: every field of one user, one a line, or its JSON object.
async fn show(store: &Arc<dyn TaskStore>, id: &str, json: bool) -> Outcome {
    let u = find(store, id).await?;
    let (used, keys) = (used(store, &u, now_ms()).await?, keys_of(store, &u).await?);
    if json {
        say!("{}", user_json(&u, used, keys));
        return Ok(());
    }
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".to_owned());
    let models = if u.models.is_empty() {
        "* (every model)".to_owned()
    } else {
        u.models.join(", ")
    };
    let fields = [
        ("id", u.id.clone()),
        ("email", or_dash(u.email.clone())),
        ("name", or_dash(u.name.clone())),
        ("issuer", u.issuer.clone()),
        ("subject", u.subject.clone()),
        ("role", u.role.as_str().to_owned()),
        ("team", or_dash(u.team.clone())),
        ("models", models),
        ("budget", or_dash(u.budget.map(|b| b.to_string()))),
        (
            "used",
            or_dash(used.map(|x| format!("${x:.4} in the budget's window"))),
        ),
        ("keys", keys.to_string()),
        ("created", utc_second(u.created_ms)),
        ("signed in", utc_second(u.signed_in_ms)),
        ("state", state(&u)),
    ];
    for (label, value) in fields {
        say!("{:<10} {value}", format!("{label}:"));
    }
    Ok(())
}

/// `users update`: the change, printed old → new, until the user's next sign-in.
async fn update(store: &Arc<dyn TaskStore>, args: &UserUpdateArgs) -> Outcome {
    let edit = UserEdit {
        budget: args.budget.clone(),
        role: args.role.clone(),
        disabled: match (args.disable, args.enable) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
    };
    let (old, new) = (update_user(&**store, &args.id, &edit, &cli_actor(), now_ms()).await)
        .map_err(|e| (2, e.to_string()))?;
    let diff = user_diff(&old, &new);
    let diff = if diff.is_empty() {
        "no change".to_owned()
    } else {
        diff
    };
    say!(
        "user {} updated: {diff}; gateways apply it within a second, until the user's next sign-in",
        new.id
    );
    Ok(())
}
