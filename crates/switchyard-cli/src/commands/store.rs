//! `switchyard store migrate`, `copy` and `check`: bring a store's schema up to date, move
//! history from one store to another, and check the budgets' running totals against the ledger.
//! Spec: R13.1, R14.14.

use std::process::ExitCode;

use switchyard_core::store::{
    ImportedEdit, ImportedEvent, PgStore, SCHEMA_VERSION, StoreError, TaskStore, TotalsCheck,
};

use crate::settings::{self, StorePlace, StoreSpec};

/// Migrates the store in effect and says from which version.
pub async fn migrate(place: StorePlace<'_>) -> ExitCode {
    let spec = match settings::store_spec(place) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let done = match &spec {
        StoreSpec::Postgres(url) => PgStore::connect_and_migrate(url)
            .await
            .map(|(_, found)| (found, switchyard_core::store::PG_SCHEMA_VERSION)),
        StoreSpec::Sqlite(_) => match settings::open_store(place).await {
            // SQLite migrates as it opens, so the file does not say what it was before.
            Ok(_) => Ok((SCHEMA_VERSION, SCHEMA_VERSION)),
            Err(e) => return fail(&e),
        },
    };
    match done {
        Ok((found, now)) if found == now => {
            say!("{}: schema version {now}, up to date", spec.describe());
            ExitCode::SUCCESS
        }
        Ok((found, now)) => {
            say!(
                "{}: schema migrated from version {found} to {now}",
                spec.describe()
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e.to_string()),
    }
}

/// Copies every task of `from` into `to`, one transaction per task, and sums it up.
pub async fn copy(place: StorePlace<'_>, from: &str, to: Option<&str>) -> ExitCode {
    let from = match StoreSpec::parse(from) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let to = match to.map_or_else(|| settings::store_spec(place), StoreSpec::parse) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    if from == to {
        return fail(&format!(
            "--from and --to are the same store ({}); name another one",
            to.describe()
        ));
    }
    if let StoreSpec::Sqlite(path) = &from
        && !path.exists()
    {
        return fail(&format!(
            "there is no task database at {}; give the switchyard.db file or its data directory",
            path.display()
        ));
    }
    let source = match from.open().await {
        Ok(s) => s,
        Err(e) => return fail(&e.to_string()),
    };
    let target = match settings::open_spec(&to).await {
        Ok(t) => t,
        Err(e) => return fail(&e),
    };
    match copy_tasks(&*source, &*target).await {
        Ok((copied, messages, skipped)) => {
            say!(
                "copied {copied} task(s) ({messages} messages) from {} to {}; {skipped} already there left as they were",
                from.describe(),
                to.describe()
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e.to_string()),
    }
}

/// Copies each task missing from `target`: `(tasks, messages, tasks already there)`.
async fn copy_tasks(
    source: &dyn TaskStore,
    target: &dyn TaskStore,
) -> Result<(usize, usize, usize), StoreError> {
    let (mut copied, mut messages_copied, mut skipped) = (0, 0, 0);
    for task in source.list_tasks().await? {
        let messages = source.messages(&task.id).await?;
        let events: Vec<ImportedEvent> = source
            .events(&task.id)
            .await?
            .into_iter()
            .map(|e| (e.ts_ms, e.kind, e.event))
            .collect();
        let edits: Vec<ImportedEdit> = source
            .context_edits(&task.id)
            .await?
            .into_iter()
            .map(|e| (e.kind, e.detail))
            .collect();
        match target.import_task(&task, &messages, &events, &edits).await {
            Ok(_) => {
                copied += 1;
                messages_copied += messages.len();
                say!("{}", task.id);
            }
            Err(StoreError::Conflict { .. }) => skipped += 1,
            Err(e) => return Err(e),
        }
    }
    Ok((copied, messages_copied, skipped))
}

/// Recomputes every running total from the ledger and prints each difference; with `repair`,
/// rewrites them in one transaction. 1 when a difference is left unrepaired, 2 when the store
/// cannot be used.
pub async fn check(place: StorePlace<'_>, repair: bool, json: bool) -> ExitCode {
    let store = match settings::open_store(place).await {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let check = match store.check_totals(repair).await {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    if json {
        say!("{}", check_json(&check));
    } else {
        for d in &check.differences {
            let k = &d.key;
            say!(
                "{} {:?} {} from {}: stored ${:.6}, the ledger sums to ${:.6}",
                k.scope.name(),
                k.id,
                k.window.name(),
                k.bucket_ms,
                d.stored_usd,
                d.recomputed_usd
            );
        }
        let n = check.differences.len();
        let done = match (n, check.repaired) {
            (0, _) => "all equal the ledger".to_owned(),
            (n, true) => format!("{n} differed and were repaired"),
            (n, false) => format!("{n} differ; run `switchyard store check --repair` to fix them"),
        };
        say!("{} running totals checked: {done}", check.checked);
    }
    if check.differences.is_empty() || check.repaired {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `check` as one JSON object.
fn check_json(check: &TotalsCheck) -> serde_json::Value {
    let differences: Vec<_> = (check.differences.iter())
        .map(|d| {
            serde_json::json!({
                "scope": d.key.scope.name(),
                "id": d.key.id,
                "window": d.key.window.name(),
                "bucket_ms": d.key.bucket_ms,
                "stored_usd": d.stored_usd,
                "recomputed_usd": d.recomputed_usd,
            })
        })
        .collect();
    serde_json::json!({
        "checked": check.checked,
        "differences": differences,
        "repaired": check.repaired,
    })
}

fn fail(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}
