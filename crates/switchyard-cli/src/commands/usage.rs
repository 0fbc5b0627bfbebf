//! `switchyard usage`: the gateway's request log summed by key, team, model or UTC day.
//! Spec: R14.8.

use std::process::ExitCode;

use switchyard_core::store::{ClientKey, UsageBy, UsageRow, civil_from_days, parse_utc_date};

use crate::settings;

/// Prints one line or JSON object per group; 2 for a bad store or date.
pub async fn run(
    place: settings::StorePlace<'_>,
    by: UsageBy,
    since: Option<&str>,
    json: bool,
) -> ExitCode {
    let since_ms = match since.map(|s| (s, parse_utc_date(s))) {
        None => i64::MIN,
        Some((_, Some(ms))) => ms,
        Some((s, None)) => {
            eprintln!("error: --since `{s}` is not a date: write YYYY-MM-DD (UTC).");
            return ExitCode::from(2);
        }
    };
    let (rows, keys) = match summed(place, by, since_ms).await {
        Ok(Some(both)) => both,
        Ok(None) => {
            eprintln!("no gateway requests recorded yet; `switchyard serve` records each one");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let labels: Vec<String> = rows.iter().map(|r| label(by, r, &keys)).collect();
    if json {
        for (r, label) in rows.iter().zip(&labels) {
            let row = serde_json::json!({
                "group": r.group,
                "label": label,
                "requests": r.requests,
                "input_tokens": r.input_tokens,
                "output_tokens": r.output_tokens,
                "cache_read_tokens": r.cache_read_tokens,
                "cache_write_tokens": r.cache_write_tokens,
                "cost_usd": r.cost_usd,
                "unpriced_requests": r.unpriced,
            });
            say!("{row}");
        }
    } else if rows.is_empty() {
        eprintln!("no gateway requests in that time");
    } else {
        print_table(&rows, &labels);
    }
    ExitCode::SUCCESS
}

/// The groups and the keys for their labels; `None` when there is no store yet.
async fn summed(
    place: settings::StorePlace<'_>,
    by: UsageBy,
    since_ms: i64,
) -> Result<Option<(Vec<UsageRow>, Vec<ClientKey>)>, String> {
    let Some(store) = settings::open_existing_store(place).await? else {
        return Ok(None);
    };
    let both = tokio::try_join!(store.usage(by, since_ms), store.client_keys());
    both.map(Some).map_err(|e| e.to_string())
}

fn label(by: UsageBy, r: &UsageRow, keys: &[ClientKey]) -> String {
    match (by, r.group.as_deref()) {
        (_, None) => "-".to_owned(),
        (UsageBy::Day, Some(day)) => {
            let (y, m, d) = civil_from_days(day.parse().unwrap_or(0));
            format!("{y:04}-{m:02}-{d:02}")
        }
        (UsageBy::Key, Some(id)) => keys.iter().find(|k| k.id == id).map_or_else(
            || id.to_owned(),
            |k| format!("{} {}… ({})", k.id, k.prefix, k.name),
        ),
        (_, Some(g)) => g.to_owned(),
    }
}

fn print_table(rows: &[UsageRow], labels: &[String]) {
    let width = labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(5)
        .max(5);
    say!(
        "{:<width$} {:>9} {:>12} {:>12} {:>12}  UNPRICED",
        "GROUP",
        "REQUESTS",
        "TOKENS IN",
        "TOKENS OUT",
        "COST"
    );
    for (r, l) in rows.iter().zip(labels) {
        let input = r.input_tokens + r.cache_read_tokens + r.cache_write_tokens;
        say!(
            "{l:<width$} {:>9} {input:>12} {:>12} {:>12}  {}",
            r.requests,
            r.output_tokens,
            format!("${:.4}", r.cost_usd),
            r.unpriced
        );
    }
}
