//! `switchyard tasks`: the saved tasks, newest first, each with its cost against the spend cap.
//! Spec: R12.2.

use std::process::ExitCode;

use switchyard_api::LimitsSettings;
use switchyard_core::store::TaskRecord;

use crate::settings;
use crate::table::{column_width, utc_minute};

/// Prints one line or JSON object per task, the newest `limit`; 0 shows all.
pub async fn run(place: settings::StorePlace<'_>, json: bool, limit: Option<usize>) -> ExitCode {
    // A configuration that does not load only loses the cap column.
    let caps = crate::settings::load(place.config, &crate::cli::SelectionArgs::default(), None)
        .map(|(c, _, _)| c.limits)
        .unwrap_or_default();
    let mut tasks = match saved_tasks(place).await {
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
            say!("{}", task_json(t, &caps));
        }
        return ExitCode::SUCCESS;
    }
    if tasks.is_empty() {
        eprintln!("no saved tasks yet; `switchyard task \"PROMPT\"` starts one");
        return ExitCode::SUCCESS;
    }
    print_table(&tasks, &caps);
    if tasks.len() < total {
        eprintln!(
            "{} older tasks not shown; `switchyard tasks --limit 0` shows all",
            total - tasks.len()
        );
    }
    ExitCode::SUCCESS
}

pub const DEFAULT_LIMIT: usize = 20;

/// Every saved task; no file yet means no tasks yet, and none is created.
async fn saved_tasks(place: settings::StorePlace<'_>) -> Result<Vec<TaskRecord>, String> {
    match settings::open_existing_store(place).await? {
        Some(store) => store.list_tasks().await.map_err(|e| e.to_string()),
        None => Ok(Vec::new()),
    }
}

fn task_json(t: &TaskRecord, caps: &LimitsSettings) -> serde_json::Value {
    serde_json::json!({
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
        // Null when a request's cost is unknown.
        "cost_usd": t.usage.cost(),
        "unpriced_requests": t.usage.unpriced_requests,
        "max_cost_usd": caps.max_cost_usd,
    })
}

fn print_table(tasks: &[TaskRecord], caps: &LimitsSettings) {
    // The model column fits the longest model id; Bedrock's are long.
    let model_width = column_width(tasks.iter().map(|t| t.model.as_str()), "MODEL");
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
    for t in tasks {
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
            prompt_cell(&t.first_prompt)
        );
    }
}

/// The first prompt on one line, cut with "…" at 60 characters.
fn prompt_cell(first_prompt: &str) -> String {
    let prompt: String = first_prompt
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if prompt.chars().count() > 60 {
        format!("{}…", prompt.chars().take(59).collect::<String>())
    } else {
        prompt
    }
}
