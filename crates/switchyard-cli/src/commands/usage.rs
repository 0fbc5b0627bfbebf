//! `switchyard usage`: the gateway's request log summed by key, team, user, model or UTC day.
//! Spec: R14.8.

use std::process::ExitCode;

use switchyard_core::store::{ClientKey, UsageBy, UsageRow, User, civil_from_days, parse_utc_date};

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
    let (rows, keys, users) = match summed(place, by, since_ms).await {
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
    let labels: Vec<String> = rows.iter().map(|r| label(by, r, &keys, &users)).collect();
    if json {
        for (r, label) in rows.iter().zip(&labels) {
            let mut row = serde_json::json!({
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
            if by == UsageBy::User {
                row["user"] = serde_json::json!(shown_user(r, &users));
            }
            say!("{row}");
        }
    } else if rows.is_empty() {
        eprintln!("no gateway requests in that time");
    } else {
        print_table(&rows, &labels);
    }
    ExitCode::SUCCESS
}

type Summed = (Vec<UsageRow>, Vec<ClientKey>, Vec<User>);

/// The groups and the keys and users for their labels; `None` when there is no store yet.
async fn summed(
    place: settings::StorePlace<'_>,
    by: UsageBy,
    since_ms: i64,
) -> Result<Option<Summed>, String> {
    let Some(store) = settings::open_existing_store(place).await? else {
        return Ok(None);
    };
    let users = async {
        match by {
            UsageBy::User => store.users().await,
            _ => Ok(Vec::new()),
        }
    };
    let all = tokio::try_join!(store.usage(by, since_ms), store.client_keys(), users);
    all.map(Some).map_err(|e| e.to_string())
}

/// The email of the user a row is grouped by, else their name; `None` for a user the store no
/// longer holds, who keeps only their id.
fn shown_user<'a>(r: &UsageRow, users: &'a [User]) -> Option<&'a str> {
    let id = r.group.as_deref()?;
    let u = users.iter().find(|u| u.id == id)?;
    u.email.as_deref().or(u.name.as_deref())
}

fn label(by: UsageBy, r: &UsageRow, keys: &[ClientKey], users: &[User]) -> String {
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
        // The id stays: emails may repeat across identity providers.
        (UsageBy::User, Some(id)) => match shown_user(r, users) {
            Some(shown) => format!("{id} {shown}"),
            None => id.to_owned(),
        },
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
