//! `switchyard audit`: who changed which key or team, or signed in to the dashboard, and when.
//! Spec: R14.6a.

use std::process::ExitCode;

use switchyard_core::store::{parse_utc_date, utc_text};

use crate::commands::keys::fail;
use crate::settings;

/// The most entries printed; the oldest beyond it are left out, and stderr says so.
const AUDIT_MAX: u32 = 100_000;

/// Prints the audit log since `since`, oldest first, one line or JSON object an entry.
pub async fn run(place: settings::StorePlace<'_>, since: Option<&str>, json: bool) -> ExitCode {
    let since_ms = match since.map(|s| (s, parse_utc_date(s))) {
        None => i64::MIN,
        Some((_, Some(ms))) => ms,
        Some((s, None)) => {
            return fail(
                2,
                &format!("--since `{s}` is not a date: write YYYY-MM-DD (UTC)."),
            );
        }
    };
    let store = match settings::open_store(place).await {
        Ok(store) => store,
        Err(e) => return fail(2, &e),
    };
    let mut rows = match store.audit_log(since_ms, AUDIT_MAX).await {
        Ok(rows) => rows,
        Err(e) => return fail(2, &e.to_string()),
    };
    if rows.len() == AUDIT_MAX as usize {
        eprintln!("only the newest {AUDIT_MAX} entries are shown: give a later --since");
    }
    rows.reverse();
    if rows.is_empty() && !json {
        eprintln!("no audit entries in that time");
    }
    for e in &rows {
        if json {
            let mut v = serde_json::json!(e);
            v["time"] = serde_json::json!(utc_text(e.ts_ms));
            say!("{v}");
        } else {
            say!(
                "{}  {}  {}  {}  {}  {}",
                utc_text(e.ts_ms),
                e.actor,
                e.origin,
                e.action,
                e.target,
                e.detail
            );
        }
    }
    ExitCode::SUCCESS
}
