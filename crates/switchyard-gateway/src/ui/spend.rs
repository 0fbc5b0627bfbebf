//! The spend page's figures: the request log's cost per hour or day by key, team or model,
//! as JSON and CSV. Each figure is a row of the store's own SQL, the query `switchyard usage`
//! runs: nothing is summed here or in the browser.
//! Spec: R14.11, R14.8.

use std::fmt::Write as _;

use serde_json::{Value, json};
use switchyard_core::store::{
    ClientKey, TaskStore, UsageBucket, UsageBy, UsageQuery, UsageRow, UsageSlice, civil_from_days,
    parse_utc_date,
};

use super::form::field;

/// The most buckets one chart holds: 31 days of hours.
const BUCKETS_MAX: i64 = 31 * 24 + 1;

/// What the page asked for: the query and the range as written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SpendAsk {
    pub(crate) query: UsageQuery,
    pub(crate) bucket: UsageBucket,
}

/// The spend query in the URL's `query`, by default the last 7 days by key per day, or the
/// sentence why not. `from` and `to` are UTC dates, `to` inclusive.
pub(crate) fn ask(query: &str, now_ms: i64) -> Result<SpendAsk, String> {
    let by = match field(query, "by").as_deref().unwrap_or("key") {
        "key" => UsageBy::Key,
        "team" => UsageBy::Team,
        "model" => UsageBy::Model,
        other => {
            return Err(format!(
                "`by={other}` is not a grouping: use key, team or model."
            ));
        }
    };
    let bucket = match field(query, "bucket").as_deref().unwrap_or("day") {
        "day" => UsageBucket::Day,
        "hour" => UsageBucket::Hour,
        other => {
            return Err(format!(
                "`bucket={other}` is not a bucket: use hour or day."
            ));
        }
    };
    let today = now_ms.div_euclid(86_400_000) * 86_400_000;
    let date = |name: &str, default: i64| match field(query, name).filter(|d| !d.is_empty()) {
        None => Ok(default),
        Some(d) => parse_utc_date(&d)
            .ok_or_else(|| format!("`{name}={d}` is not a date: write YYYY-MM-DD (UTC).")),
    };
    let from_ms = date("from", today - 6 * 86_400_000)?;
    let to_ms = date("to", today)? + 86_400_000;
    if to_ms <= from_ms {
        return Err(
            "The range ends before it starts: pick a `to` date on or after `from`.".to_owned(),
        );
    }
    if (to_ms - from_ms) / bucket.millis() > BUCKETS_MAX {
        return Err(
            "That range has too many hours to chart: pick 31 days or fewer, or per day.".to_owned(),
        );
    }
    let query = UsageQuery {
        by,
        bucket: Some(bucket),
        from_ms,
        to_ms,
    };
    Ok(SpendAsk { query, bucket })
}

/// The chart's series and the totals table as JSON. A bucket where a group had no request is
/// `null` in its series.
pub(crate) async fn figures(store: &dyn TaskStore, ask: &SpendAsk) -> Result<Value, String> {
    let (slices, totals, keys) = read(store, ask).await?;
    let step = ask.bucket.millis();
    let buckets: Vec<i64> = (0..)
        .map(|i| ask.query.from_ms + i * step)
        .take_while(|b| *b < ask.query.to_ms)
        .collect();
    let mut series: Vec<(Option<String>, Vec<Value>)> = Vec::new();
    for s in &slices {
        let at = s.bucket_ms.map(|b| (b - ask.query.from_ms) / step);
        let Some(at) = at
            .and_then(|a| usize::try_from(a).ok())
            .filter(|a| *a < buckets.len())
        else {
            continue;
        };
        let i = match series.iter().position(|(g, _)| *g == s.row.group) {
            Some(i) => i,
            None => {
                series.push((s.row.group.clone(), vec![Value::Null; buckets.len()]));
                series.len() - 1
            }
        };
        series[i].1[at] = json!(s.row.cost_usd);
    }
    let by = ask.query.by;
    let series: Vec<Value> = series
        .iter()
        .map(|(g, costs)| json!({"group": g, "label": label(by, g.as_deref(), &keys), "costs": costs}))
        .collect();
    let totals: Vec<Value> = totals.iter().map(|s| total_json(by, s, &keys)).collect();
    Ok(json!({
        "from_ms": ask.query.from_ms,
        "to_ms": ask.query.to_ms,
        "bucket": if ask.bucket == UsageBucket::Hour { "hour" } else { "day" },
        "buckets": buckets,
        "series": series,
        "totals": totals,
    }))
}

/// The series' rows as CSV: one line per bucket and group.
pub(crate) async fn csv(store: &dyn TaskStore, ask: &SpendAsk) -> Result<String, String> {
    let (slices, _, keys) = read(store, ask).await?;
    let mut out = String::from(
        "bucket_start_utc,group,label,requests,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cost_usd,unpriced_requests\n",
    );
    for s in &slices {
        let r = &s.row;
        let when = s.bucket_ms.map(utc).unwrap_or_default();
        let group = r.group.as_deref().unwrap_or("");
        let label = label(ask.query.by, r.group.as_deref(), &keys);
        let _ = writeln!(
            out,
            "{when},{},{},{},{},{},{},{},{},{}",
            csv_cell(group),
            csv_cell(&label),
            r.requests,
            r.input_tokens,
            r.output_tokens,
            r.cache_read_tokens,
            r.cache_write_tokens,
            r.cost_usd,
            r.unpriced
        );
    }
    Ok(out)
}

type Read = (Vec<UsageSlice>, Vec<UsageSlice>, Vec<ClientKey>);

/// The bucketed rows, the totals over the range, and the keys for labels.
async fn read(store: &dyn TaskStore, ask: &SpendAsk) -> Result<Read, String> {
    let totals = UsageQuery {
        bucket: None,
        ..ask.query
    };
    let both = tokio::try_join!(
        store.usage_between(&ask.query),
        store.usage_between(&totals),
        store.client_keys()
    );
    both.map_err(|e| format!("The spend log cannot be read now: {e}."))
}

fn total_json(by: UsageBy, s: &UsageSlice, keys: &[ClientKey]) -> Value {
    let r: &UsageRow = &s.row;
    json!({
        "group": r.group,
        "label": label(by, r.group.as_deref(), keys),
        "requests": r.requests,
        "input_tokens": r.input_tokens,
        "output_tokens": r.output_tokens,
        "cache_read_tokens": r.cache_read_tokens,
        "cache_write_tokens": r.cache_write_tokens,
        "cost_usd": r.cost_usd,
        "unpriced_requests": r.unpriced,
        "cache_read_share": cache_read_share(r),
        "last_ms": s.last_ms,
    })
}

/// The share of a group's input tokens read from a provider's prompt cache, 0 to 1, or `None`
/// when it sent none. A session whose cache holds through the gateway reads most of its input.
fn cache_read_share(r: &UsageRow) -> Option<f64> {
    let input = r.input_tokens + r.cache_read_tokens + r.cache_write_tokens;
    (input > 0).then(|| r.cache_read_tokens as f64 / input as f64)
}

/// How a group is named on the page: a key by its prefix and name, as `switchyard usage`
/// shows it, others as stored, and no group as `-`.
pub(crate) fn label(by: UsageBy, group: Option<&str>, keys: &[ClientKey]) -> String {
    match (by, group) {
        (_, None) => "-".to_owned(),
        (UsageBy::Key, Some(id)) => keys
            .iter()
            .find(|k| k.id == id)
            .map_or_else(|| id.to_owned(), |k| format!("{}… ({})", k.prefix, k.name)),
        (_, Some(g)) => g.to_owned(),
    }
}

/// Unix ms as `YYYY-MM-DDTHH:MM:SSZ`.
pub(crate) fn utc(ms: i64) -> String {
    let (y, m, d) = civil_from_days(ms.div_euclid(86_400_000));
    let s = ms.rem_euclid(86_400_000) / 1000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// A CSV cell, quoted when it holds a comma, quote or line break. A leading `=`, `+`, `-` or
/// `@` gets a `'` before it, or a spreadsheet would run it as a formula.
fn csv_cell(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@']) {
        format!("'{text}")
    } else {
        text.to_owned()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_defaults_to_the_last_seven_days_and_is_bounded() {
        let now = parse_utc_date("2026-12-02T10:00:00Z").unwrap();
        let a = ask("", now).unwrap();
        assert_eq!(a.query.from_ms, parse_utc_date("2026-11-26").unwrap());
        assert_eq!(a.query.to_ms, parse_utc_date("2026-12-03").unwrap());
        assert!(ask("bucket=hour&from=2026-01-01&to=2026-12-01", now).is_err());
        assert!(ask("by=nobody", now).is_err());
        assert_eq!(csv_cell("=1+1"), "'=1+1");
        let mut row = UsageRow {
            group: None,
            requests: 1,
            input_tokens: 0,
            output_tokens: 5,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cost_usd: 0.0,
            unpriced: 0,
        };
        assert_eq!(cache_read_share(&row), None);
        (
            row.input_tokens,
            row.cache_read_tokens,
            row.cache_write_tokens,
        ) = (100, 800, 100);
        assert_eq!(cache_read_share(&row), Some(0.8));
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(
            utc(parse_utc_date("2026-12-02T10:05:07Z").unwrap()),
            "2026-12-02T10:05:07Z"
        );
    }
}
