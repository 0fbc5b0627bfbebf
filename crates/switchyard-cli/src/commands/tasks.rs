//! `switchyard tasks`: the saved tasks, newest first (`--limit N`).

use std::process::ExitCode;

use crate::settings;

/// Prints one line per task (or one JSON object with `--json`); 2 when the database cannot be
/// opened.
/// Text shows the newest [`DEFAULT_LIMIT`] unless `limit` says otherwise; `--json` shows all
/// unless limited. A limit of 0 shows all.
pub async fn run(place: settings::StorePlace<'_>, json: bool, limit: Option<usize>) -> ExitCode {
    // The spend cap of `[limits]`, shown against each task's cost (SPEC R12.2). A
    // configuration that does not load only loses that column's cap.
    let caps = crate::settings::load(place.config, &crate::cli::SelectionArgs::default(), None)
        .map(|(c, _, _)| c.limits)
        .unwrap_or_default();
    // Listing never creates a SQLite database: no file yet means no tasks yet.
    let exists = match settings::store_spec(place) {
        Ok(settings::StoreSpec::Sqlite(path)) => path.exists(),
        _ => true,
    };
    let listed = if exists {
        match settings::open_store(place).await {
            Ok(store) => store.list_tasks().await.map_err(|e| e.to_string()),
            Err(e) => Err(e),
        }
    } else {
        Ok(Vec::new())
    };
    let mut tasks = match listed {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    tasks.sort_by(|a, b| (b.created_ms, b.id.as_str()).cmp(&(a.created_ms, a.id.as_str())));
    let total = tasks.len();
    let limit = limit.or((!json).then_some(DEFAULT_LIMIT)).unwrap_or(0);
    if limit > 0 {
        tasks.truncate(limit);
    }
    if json {
        for t in &tasks {
            let line = serde_json::json!({
                "task_id": t.id,
                "created_ms": t.created_ms,
                "mode": t.mode,
                "provider": t.provider,
                "model": t.model,
                "first_prompt": t.first_prompt,
                "messages": t.message_count,
                "tokens_in": t.usage.tokens_in,
                "tokens_out": t.usage.tokens_out,
                "cache_writes": t.usage.cache_writes,
                "cache_reads": t.usage.cache_reads,
                // null when a request's cost is unknown (a model without prices).
                "cost_usd": t.usage.cost(),
                "unpriced_requests": t.usage.unpriced_requests,
                "max_cost_usd": caps.max_cost_usd,
            });
            say!("{line}");
        }
        return ExitCode::SUCCESS;
    }
    if tasks.is_empty() {
        eprintln!("no saved tasks yet; `switchyard task \"PROMPT\"` starts one");
        return ExitCode::SUCCESS;
    }
    // The model column fits the longest model id (Bedrock's are long).
    let model_width = tasks
        .iter()
        .map(|t| t.model.chars().count())
        .max()
        .unwrap_or(0)
        .max("MODEL".len());
    let cost_width = if caps.max_cost_usd.is_some() { 18 } else { 10 };
    say!(
        "{:<15} {:<16} {:<model_width$} {:>15} {:>cost_width$}  FIRST PROMPT",
        "ID",
        "DATE (UTC)",
        "MODEL",
        "TOKENS IN/OUT",
        if caps.max_cost_usd.is_some() {
            "COST / CAP"
        } else {
            "COST"
        }
    );
    for t in &tasks {
        let prompt: String = t
            .first_prompt
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let prompt = if prompt.chars().count() > 60 {
            format!("{}…", prompt.chars().take(59).collect::<String>())
        } else {
            prompt
        };
        let mut cost = t
            .usage
            .cost()
            .map_or_else(|| "unknown".to_owned(), |c| format!("${c:.4}"));
        if let Some(cap) = caps.max_cost_usd {
            cost.push_str(&format!(" / ${cap:.2}"));
        }
        say!(
            "{:<15} {:<16} {:<model_width$} {:>15} {:>cost_width$}  {}",
            t.id,
            utc_minute(t.created_ms),
            t.model,
            format!(
                "{}/{}",
                t.usage.tokens_in + t.usage.cache_reads + t.usage.cache_writes,
                t.usage.tokens_out
            ),
            cost,
            prompt
        );
    }
    if tasks.len() < total {
        eprintln!(
            "{} older tasks not shown; `switchyard tasks --limit 0` shows all",
            total - tasks.len()
        );
    }
    ExitCode::SUCCESS
}

/// How many tasks `switchyard tasks` shows as text without `--limit`.
pub const DEFAULT_LIMIT: usize = 20;

/// `YYYY-MM-DD HH:MM` (UTC) of a Unix time in milliseconds.
pub fn utc_minute(ms: i64) -> String {
    let t = switchyard_api::time::utc(ms.div_euclid(1000));
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        t.year, t.month, t.day, t.hour, t.minute
    )
}

/// `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC) of a Unix time in milliseconds.
pub fn utc_second(ms: i64) -> String {
    let t = switchyard_api::time::utc(ms.div_euclid(1000));
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

#[cfg(test)]
mod tests {
    use super::{utc_minute, utc_second};

    #[test]
    fn dates() {
        assert_eq!(utc_minute(0), "1970-01-01 00:00");
        assert_eq!(utc_minute(951_782_400_000), "2000-02-29 00:00");
        assert_eq!(utc_minute(1_764_471_234_567), "2025-11-30 02:53");
        assert_eq!(utc_second(1_764_471_234_567), "2025-11-30T02:53:54Z");
    }
}
