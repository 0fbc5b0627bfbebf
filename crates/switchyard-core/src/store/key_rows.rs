//! How both store backends map client keys and teams to rows and back (SPEC R14.6), and the
//! one query a hold is decided on (R14.7), so SQLite and PostgreSQL differ only in their
//! placeholders and locking.

use super::keys::{Budget, ClientKey, Team, UsageBucket, UsageBy, UsageRow, UsageSlice};
use super::rows::Columns;

/// The columns of `client_keys` that [`key_from_row`] reads, in its order (never `hash`).
pub(super) const KEY_COLUMNS: &str = "id, prefix, name, team, models, budget_usd, budget_window,
    rpm, tpm, max_parallel, expires_ms, admin, created_ms, revoked_ms";

/// The columns of `teams` that [`team_from_row`] reads, in its order.
pub(super) const TEAM_COLUMNS: &str = "name, budget_usd, budget_window, created_ms";

/// What a hold counts (USD): a settled hold its settled amount, a live one its reservation,
/// an expired unsettled one (its process died) nothing. `$NOW` is replaced by the backend's
/// placeholder for now.
pub(super) const HOLD_AMOUNT: &str = "CASE WHEN settled_usd IS NOT NULL THEN settled_usd
    WHEN expires_ms > $NOW THEN reserved_usd ELSE 0.0 END";

/// The one snapshot a hold is decided on (`decide_hold`'s `HoldUse`), with the backend's
/// placeholders: 1 key id, 2 the key's window start, 3 now, 4 team, 5 the team's window
/// start, 6 the UTC day's start.
pub(super) fn hold_use_sql(p: fn(usize) -> String) -> String {
    let amount = HOLD_AMOUNT.replace("$NOW", &p(3));
    format!(
        "SELECT
           (SELECT coalesce(sum({amount}), 0.0) FROM budget_holds
              WHERE key_id = {k} AND ts_ms >= {kf}),
           (SELECT count(*) FROM budget_holds
              WHERE key_id = {k} AND settled_usd IS NULL AND expires_ms > {now}),
           (SELECT coalesce(sum({amount}), 0.0) FROM budget_holds
              WHERE team = {t} AND ts_ms >= {tf}),
           (SELECT coalesce(sum(cost_usd), 0.0) FROM spend WHERE ts_ms >= {day})
             + (SELECT coalesce(sum(reserved_usd), 0.0) FROM budget_holds
                  WHERE settled_usd IS NULL AND expires_ms > {now})",
        k = p(1),
        kf = p(2),
        now = p(3),
        t = p(4),
        tf = p(5),
        day = p(6),
    )
}

/// The request log grouped `by` since the placeholder `since` (both backends' SQL):
/// [`usage_range_sql`] with no end and no buckets.
pub(super) fn usage_sql(by: UsageBy, since: &str) -> String {
    usage_range_sql(by, None, since, None)
}

/// The request log grouped `by` (and per `bucket` when given) with `started_ms` from the
/// placeholder `from` to the placeholder `to` (exclusive; `None`: no end), in bucket then
/// group order (requests without a group last). Columns: [`usage_from_row`]'s, then the
/// bucket's start in Unix ms (NULL without buckets), then the group's last arrival.
pub(super) fn usage_range_sql(
    by: UsageBy,
    bucket: Option<UsageBucket>,
    from: &str,
    to: Option<&str>,
) -> String {
    let group = match by {
        UsageBy::Key => "key_id",
        UsageBy::Team => "team",
        UsageBy::Model => "provider || ':' || model",
        UsageBy::Day => "CAST(started_ms / 86400000 AS TEXT)",
    };
    // The bucket length is one of two constants, never the caller's text.
    let (bucket, order) = match bucket {
        Some(b) => {
            let ms = b.millis();
            (format!("(started_ms / {ms}) * {ms}"), "b, g NULLS LAST")
        }
        None => ("CAST(NULL AS BIGINT)".to_owned(), "g NULLS LAST"),
    };
    let end = to.map_or(String::new(), |to| format!(" AND started_ms < {to}"));
    let sum = |c: &str| format!("CAST(coalesce(sum({c}), 0) AS BIGINT)");
    format!(
        "SELECT {group} AS g, count(*), {}, {}, {}, {}, coalesce(sum(cost_usd), 0.0),
           {}, {bucket} AS b, max(started_ms) FROM gateway_requests WHERE started_ms >= {from}{end}
         GROUP BY g, b ORDER BY {order}",
        sum("input_tokens"),
        sum("output_tokens"),
        sum("cache_read_tokens"),
        sum("cache_write_tokens"),
        sum("CASE WHEN cost_usd IS NULL THEN 1 ELSE 0 END"),
    )
}

/// A [`UsageSlice`] from [`usage_range_sql`]'s columns.
pub(super) fn usage_slice_from_row<R: Columns>(r: &R) -> Result<UsageSlice, R::Error> {
    Ok(UsageSlice {
        bucket_ms: r.opt_int(8)?,
        last_ms: r.int(9)?,
        row: usage_from_row(r)?,
    })
}

/// A [`UsageRow`] from [`usage_sql`]'s columns.
pub(super) fn usage_from_row<R: Columns>(r: &R) -> Result<UsageRow, R::Error> {
    let count = |i: usize| r.int(i).map(|v| u64::try_from(v).unwrap_or(0));
    Ok(UsageRow {
        group: r.opt_text(0)?,
        requests: count(1)?,
        input_tokens: count(2)?,
        output_tokens: count(3)?,
        cache_read_tokens: count(4)?,
        cache_write_tokens: count(5)?,
        cost_usd: r.real(6)?,
        unpriced: count(7)?,
    })
}

/// The model globs as stored: a JSON array of strings.
pub(super) fn models_json(models: &[String]) -> String {
    serde_json::Value::from(models.to_vec()).to_string()
}

fn opt_u64<R: Columns>(r: &R, i: usize) -> Result<Option<u64>, R::Error> {
    Ok(r.opt_int(i)?.map(|v| u64::try_from(v).unwrap_or(0)))
}

/// A [`ClientKey`] from the [`KEY_COLUMNS`].
pub(super) fn key_from_row<R: Columns>(r: &R) -> Result<ClientKey, R::Error> {
    let models: Vec<String> = serde_json::from_str(&r.text(4)?).unwrap_or_default();
    Ok(ClientKey {
        id: r.text(0)?,
        prefix: r.text(1)?,
        name: r.text(2)?,
        team: r.opt_text(3)?,
        models,
        budget: Budget::from_columns(r.opt_real(5)?, r.opt_text(6)?.as_deref()),
        rpm: opt_u64(r, 7)?,
        tpm: opt_u64(r, 8)?,
        max_parallel: opt_u64(r, 9)?,
        expires_ms: r.opt_int(10)?,
        admin: r.int(11)? != 0,
        created_ms: r.int(12)?,
        revoked_ms: r.opt_int(13)?,
    })
}

/// A [`Team`] from the [`TEAM_COLUMNS`].
pub(super) fn team_from_row<R: Columns>(r: &R) -> Result<Team, R::Error> {
    Ok(Team {
        name: r.text(0)?,
        budget: Budget::from_columns(r.opt_real(1)?, r.opt_text(2)?.as_deref()),
        created_ms: r.int(3)?,
    })
}

/// `v` for an integer column.
pub(super) fn opt_i64(v: Option<u64>) -> Option<i64> {
    v.map(|v| i64::try_from(v).unwrap_or(i64::MAX))
}
