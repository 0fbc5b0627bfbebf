//! `switchyard requests`: the requests `switchyard serve` relayed, newest first.
//! Spec: R9.2, R14.4, R14.9.

use std::process::ExitCode;

use switchyard_core::store::{RequestOutcome, RequestRecord};

use crate::settings;
use crate::table::{column_width, utc_second};

/// How many requests `switchyard requests` shows as text without `--limit`.
pub const DEFAULT_LIMIT: usize = 20;

/// Prints one line or JSON object per request, the newest `limit`; 0 shows all.
pub async fn run(place: settings::StorePlace<'_>, json: bool, limit: Option<usize>) -> ExitCode {
    let limit = limit.or((!json).then_some(DEFAULT_LIMIT)).unwrap_or(0);
    let requests = match recorded(place, limit).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if json {
        for r in &requests {
            say!("{}", request_json(r));
        }
    } else if requests.is_empty() {
        eprintln!("no gateway requests recorded yet; `switchyard serve` records each one");
    } else {
        print_table(&requests);
    }
    ExitCode::SUCCESS
}

/// The newest `limit` requests; listing never creates a SQLite database.
async fn recorded(
    place: settings::StorePlace<'_>,
    limit: usize,
) -> Result<Vec<RequestRecord>, String> {
    match settings::open_existing_store(place).await? {
        Some(store) => store
            .recent_requests(limit)
            .await
            .map_err(|e| e.to_string()),
        None => Ok(Vec::new()),
    }
}

fn request_json(r: &RequestRecord) -> serde_json::Value {
    serde_json::json!({
        "request_id": r.id,
        "started_ms": r.started_ms,
        "route": r.route,
        "dialect": r.dialect,
        "stream": r.stream,
        "provider": r.provider,
        "model": r.model,
        "input_tokens": r.input_tokens,
        "output_tokens": r.output_tokens,
        "cache_read_tokens": r.cache_read_tokens,
        "cache_write_tokens": r.cache_write_tokens,
        // Null when no usage arrived or the model has no prices.
        "cost_usd": r.cost_usd,
        "first_token_ms": r.first_token_ms,
        "duration_ms": r.duration_ms,
        "status": r.outcome.status(),
        "error_kind": r.outcome.error_kind(),
        "key_id": r.key_id,
        "team": r.team,
    })
}

fn print_table(requests: &[RequestRecord]) {
    let answered: Vec<String> = requests
        .iter()
        .map(|r| match (&r.provider, &r.model) {
            (Some(p), Some(m)) => format!("{p}:{m}"),
            _ => "-".to_owned(),
        })
        .collect();
    let route_width = column_width(requests.iter().map(|r| r.route.as_str()), "ROUTE");
    let id_width = column_width(requests.iter().map(|r| r.id.as_str()), "ID");
    let model_width = column_width(answered.iter().map(String::as_str), "ANSWERED BY");
    say!(
        "{:<20} {:<id_width$} {:<route_width$} {:<model_width$} {:>15} {:>10} {:>8} {:>8}  STATUS",
        "TIME (UTC)",
        "ID",
        "ROUTE",
        "ANSWERED BY",
        "TOKENS IN/OUT",
        "COST",
        "FIRST",
        "TOTAL"
    );
    for (r, by) in requests.iter().zip(&answered) {
        let tokens = format!(
            "{}/{}",
            r.input_tokens + r.cache_read_tokens + r.cache_write_tokens,
            r.output_tokens
        );
        let cost = r
            .cost_usd
            .map_or_else(|| "unknown".to_owned(), |c| format!("${c:.4}"));
        let first = r.first_token_ms.map_or_else(|| "-".to_owned(), seconds);
        let status = match &r.outcome {
            RequestOutcome::Error(kind) => format!("error: {kind}"),
            RequestOutcome::Lost => "lost: its process stopped; charged its reservation".to_owned(),
            other => other.status().to_owned(),
        };
        say!(
            "{:<20} {:<id_width$} {:<route_width$} {by:<model_width$} {tokens:>15} {cost:>10} {first:>8} {:>8}  {status}",
            utc_second(r.started_ms),
            r.id,
            r.route,
            seconds(r.duration_ms)
        );
    }
}

fn seconds(ms: i64) -> String {
    format!("{:.3}s", ms as f64 / 1000.0)
}
