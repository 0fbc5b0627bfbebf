//! `switchyard keys`: the client keys a gateway on this store admits, each printed once while
//! the store keeps its hash.
//! Spec: R14.6, R14.7.

use std::process::ExitCode;
use std::sync::Arc;

use switchyard_core::store::{
    Actor, ClientKey, KeyEdit, NewKeyRequest, TaskStore, create_client_key_by, key_diff,
    revoke_client_key, rotate_client_key, update_client_key,
};

use crate::cli::{KeyUpdateArgs, KeysCommand, NewKeyArgs};
use crate::settings;
use crate::table::utc_second;

/// Runs one `keys` subcommand: 2 for a bad store or flag, 1 for a key that does not exist.
pub async fn run(place: settings::StorePlace<'_>, command: &KeysCommand) -> ExitCode {
    let store = match settings::open_store(place).await {
        Ok(store) => store,
        Err(e) => return fail(2, &e),
    };
    let result = match command {
        KeysCommand::Create(args) => create(&store, args).await,
        KeysCommand::List { json } => list(&store, *json).await,
        KeysCommand::Show { key, json } => show(&store, key, *json).await,
        KeysCommand::Revoke { key } => revoke(&store, key).await,
        KeysCommand::Rotate { key, json } => rotate(&store, key, *json).await,
        KeysCommand::Update(args) => update(&store, args).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, message)) => fail(code, &message),
    }
}

/// Prints `error: MESSAGE` and gives exit code `code`.
pub(crate) fn fail(code: u8, message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(code)
}

type Outcome = Result<(), (u8, String)>;

fn store_err(e: switchyard_core::store::StoreError) -> (u8, String) {
    (2, e.to_string())
}

/// The person at this terminal, as the audit log names them: the OS user, and `cli@HOST`.
/// The name of the user this process runs as, from `/etc/passwd`, for a shell that sets no
/// `USER`, such as a service or `sudo -i`.
fn uid_name() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid().to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        (fields.nth(1)? == uid).then(|| name.to_owned())
    })
}

pub(crate) fn cli_actor() -> Actor {
    let who = ["USER", "LOGNAME", "USERNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
        .or_else(uid_name)
        .unwrap_or_else(|| "unknown user".to_owned());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    Actor {
        who,
        origin: format!("cli@{host}"),
    }
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `keys create`: the library's one rule on the flags.
async fn create(store: &Arc<dyn TaskStore>, args: &NewKeyArgs) -> Outcome {
    let new = NewKeyRequest {
        name: args.name.clone(),
        team: args.team.clone(),
        models: args.models.clone(),
        budget: args.budget.clone(),
        rpm: args.rpm,
        tpm: args.tpm,
        max_parallel: args.max_parallel,
        expires: args.expires.clone(),
        admin: args.admin,
        owner: args.owner.clone(),
    };
    let made = (create_client_key_by(&**store, &new, &cli_actor(), now_ms()).await)
        .map_err(|e| (2, e.to_string()))?;
    let (secret, key) = (made.secret, made.key);
    if args.json {
        let shown = serde_json::json!({"key": secret.key, "id": key.id, "prefix": key.prefix});
        say!("{shown}");
    } else {
        say!("{}", secret.key);
        eprintln!(
            "key {} ({}) made; it is shown only now: keep it somewhere safe.",
            key.id, key.name
        );
    }
    Ok(())
}

/// How `wanted` is echoed in an error: a whole secret pasted by mistake is cut to its prefix.
fn shown(wanted: &str) -> String {
    match wanted.char_indices().nth(12) {
        Some((at, _)) if wanted.starts_with("sk-") => format!("{}…", &wanted[..at]),
        _ => wanted.to_owned(),
    }
}

/// The key `wanted` names by id or display prefix; a trailing `…` copied from a list is fine.
async fn find(store: &Arc<dyn TaskStore>, wanted: &str) -> Result<ClientKey, (u8, String)> {
    let keys = store.client_keys().await.map_err(store_err)?;
    let wanted = wanted.trim_end_matches('…');
    let mut found = keys
        .into_iter()
        .filter(|k| k.id == wanted || (wanted.len() >= 8 && k.prefix.starts_with(wanted)));
    match (found.next(), found.next()) {
        (Some(k), None) => Ok(k),
        (Some(_), Some(_)) => Err((
            2,
            format!(
                "`{}` names more than one key: give its id (`switchyard keys list`).",
                shown(wanted)
            ),
        )),
        (None, _) => Err((
            1,
            format!(
                "There is no key `{}`: give a key's id or display prefix (`switchyard keys list` shows them).",
                shown(wanted)
            ),
        )),
    }
}

/// What key `k` spent in its budget's current window; `None` without a budget.
async fn used(
    store: &Arc<dyn TaskStore>,
    k: &ClientKey,
    now: i64,
) -> Result<Option<f64>, (u8, String)> {
    let Some(b) = k.budget else {
        return Ok(None);
    };
    let spent = store
        .used_since(Some(&k.id), None, b.window_start_ms(now), now)
        .await;
    spent.map(Some).map_err(store_err)
}

/// `keys show`: every field of one key's record, one a line, or its JSON object.
async fn show(store: &Arc<dyn TaskStore>, wanted: &str, json: bool) -> Outcome {
    let k = find(store, wanted).await?;
    let now = now_ms();
    let used = used(store, &k, now).await?;
    if json {
        say!("{}", key_json(&k, used));
        return Ok(());
    }
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".to_owned());
    let models = if k.models.is_empty() {
        "* (every model)".to_owned()
    } else {
        k.models.join(", ")
    };
    let fields = [
        ("id", k.id.clone()),
        ("prefix", format!("{}…", k.prefix)),
        ("name", k.name.clone()),
        ("team", or_dash(k.team.clone())),
        ("owner", or_dash(k.owner.clone())),
        ("models", models),
        ("budget", or_dash(k.budget.map(|b| b.to_string()))),
        (
            "used",
            or_dash(used.map(|u| format!("${u:.4} this {}", window(&k)))),
        ),
        ("rpm", or_dash(k.rpm.map(|n| n.to_string()))),
        ("tpm", or_dash(k.tpm.map(|n| n.to_string()))),
        (
            "max parallel",
            or_dash(k.max_parallel.map(|n| n.to_string())),
        ),
        (
            "expires",
            k.expires_ms.map_or_else(|| "never".to_owned(), utc_second),
        ),
        ("admin", if k.admin { "yes" } else { "no" }.to_owned()),
        ("created", utc_second(k.created_ms)),
        ("revoked", or_dash(k.revoked_ms.map(utc_second))),
        ("state", state(&k, now)),
    ];
    for (label, value) in fields {
        say!("{:<13} {value}", format!("{label}:"));
    }
    Ok(())
}

/// The budget window's name as a sentence says it: "day", "month", or "total" as "lifetime".
fn window(k: &ClientKey) -> &'static str {
    match k.budget.map(|b| b.window_name()) {
        Some("total") | None => "lifetime",
        Some("day") => "day",
        Some(_) => "month",
    }
}

async fn list(store: &Arc<dyn TaskStore>, json: bool) -> Outcome {
    let keys = store.client_keys().await.map_err(store_err)?;
    let now = now_ms();
    let mut spent = Vec::new();
    for k in &keys {
        spent.push(used(store, k, now).await?);
    }
    if json {
        for (k, used) in keys.iter().zip(&spent) {
            say!("{}", key_json(k, *used));
        }
        return Ok(());
    }
    if keys.is_empty() {
        eprintln!("no client keys yet; `switchyard keys create --name NAME` makes one");
        return Ok(());
    }
    say!(
        "{:<20} {:<13} {:<16} {:<10} {:<22} {:<20}  STATE",
        "ID",
        "PREFIX",
        "NAME",
        "TEAM",
        "BUDGET (USED)",
        "MODELS"
    );
    for (k, used) in keys.iter().zip(&spent) {
        let budget = match (k.budget, used) {
            (Some(b), Some(u)) => format!("{b} (${u:.4})"),
            _ => "-".to_owned(),
        };
        let models = if k.models.is_empty() {
            "*".to_owned()
        } else {
            k.models.join(",")
        };
        say!(
            "{:<20} {:<13} {:<16} {:<10} {budget:<22} {models:<20}  {}",
            k.id,
            format!("{}…", k.prefix),
            k.name,
            k.team.as_deref().unwrap_or("-"),
            state(k, now)
        );
    }
    Ok(())
}

fn state(k: &ClientKey, now: i64) -> String {
    match (k.revoked_ms, k.expires_ms) {
        (Some(at), _) => format!("revoked {}", utc_second(at)),
        (None, Some(at)) if at <= now => format!("expired {}", utc_second(at)),
        _ if k.admin => "active (admin)".to_owned(),
        _ => "active".to_owned(),
    }
}

fn key_json(k: &ClientKey, used: Option<f64>) -> serde_json::Value {
    serde_json::json!({
        "id": k.id,
        "prefix": k.prefix,
        "name": k.name,
        "team": k.team,
        "owner": k.owner,
        "models": k.models,
        "budget_usd": k.budget.map(|b| b.usd),
        "budget_window": k.budget.map(|b| b.window_name()),
        "used_usd": used,
        "rpm": k.rpm,
        "tpm": k.tpm,
        "max_parallel": k.max_parallel,
        "expires_ms": k.expires_ms,
        "admin": k.admin,
        "created_ms": k.created_ms,
        "revoked_ms": k.revoked_ms,
    })
}

async fn revoke(store: &Arc<dyn TaskStore>, wanted: &str) -> Outcome {
    let key = find(store, wanted).await?;
    (revoke_client_key(&**store, &key.id, &cli_actor(), now_ms()).await)
        .map_err(|e| (2, e.to_string()))?;
    say!(
        "key {} ({}) revoked; gateways refuse it within a second",
        key.id,
        key.name
    );
    Ok(())
}

async fn rotate(store: &Arc<dyn TaskStore>, wanted: &str, json: bool) -> Outcome {
    let key = find(store, wanted).await?;
    let (secret, _) = (rotate_client_key(&**store, &key.id, &cli_actor(), now_ms()).await)
        .map_err(|e| (1, e.to_string()))?;
    if json {
        let shown = serde_json::json!({"key": secret.key, "id": key.id, "prefix": secret.prefix});
        say!("{shown}");
    } else {
        say!("{}", secret.key);
        eprintln!(
            "key {} ({}) rotated: the old key stops working within a second; the new one is shown only now.",
            key.id, key.name
        );
    }
    Ok(())
}

/// `keys update`: the library's one rule on the flags; prints what changed, old → new.
async fn update(store: &Arc<dyn TaskStore>, args: &KeyUpdateArgs) -> Outcome {
    let key = find(store, &args.key).await?;
    let edit = KeyEdit {
        name: args.name.clone(),
        team: args.team.clone(),
        models: args.models.clone(),
        budget: args.budget.clone(),
        rpm: args.rpm.clone(),
        tpm: args.tpm.clone(),
        max_parallel: args.max_parallel.clone(),
        expires: args.expires.clone(),
        owner: args.owner.clone(),
    };
    let (old, new) = (update_client_key(&**store, &key.id, &edit, &cli_actor(), now_ms()).await)
        .map_err(|e| (2, e.to_string()))?;
    say!(
        "key {} ({}) updated: {}; gateways apply it within a second",
        new.id,
        new.name,
        key_diff(&old, &new)
    );
    Ok(())
}
