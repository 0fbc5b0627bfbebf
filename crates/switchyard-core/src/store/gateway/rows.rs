//! How both backends map the gateway's rows to records and back.
//! Spec: R14.4, R14.6, R14.8.

use super::audit::AuditEntry;
use super::budget::Budget;
use super::keys::{ClientKey, Team};
use super::requests::{RequestOutcome, RequestRecord};
use super::responses::StoredResponse;
use super::usage::{UsageBucket, UsageBy, UsageRow, UsageSlice};
use super::users::{Role, User};
use crate::store::StoreError;
use crate::store::rows::{Columns, from_json, to_i64, to_u64};

/// The columns of `client_keys` that [`key_from_row`] reads, never `hash`.
pub(crate) const KEY_COLUMNS: &str = "id, prefix, name, team, models, budget_usd,
    budget_window, rpm, tpm, max_parallel, expires_ms, admin, created_ms, revoked_ms, owner";

/// The columns of `audit_log` that [`audit_from_row`] reads and the backends write.
pub(crate) const AUDIT_COLUMNS: &str = "ts_ms, actor, origin, action, target, detail";

/// The columns of `users` that [`user_from_row`] reads and the backends write.
pub(crate) const USER_COLUMNS: &str = "id, issuer, subject, email, name, role, team, models,
    budget_usd, budget_window, created_ms, signed_in_ms, disabled_ms";

/// The columns of `teams` that [`team_from_row`] reads.
pub(crate) const TEAM_COLUMNS: &str = "name, budget_usd, budget_window, created_ms";

/// The columns of `gateway_requests` that [`request_from_row`] reads and the backends write.
pub(crate) const REQUEST_COLUMNS: &str = "id, started_ms, route, dialect, stream,
    provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
    cost_usd, first_token_ms, duration_ms, status, error_kind, key_id, team";

/// [`crate::store::RequestLog::prune_requests`] with `?1` before and `?2` the most rows.
pub(crate) const PRUNE_REQUESTS: &str = "DELETE FROM gateway_requests WHERE id IN (
    SELECT id FROM gateway_requests WHERE started_ms < ?1 ORDER BY started_ms LIMIT ?2)";

/// [`crate::store::AuditStore::prune_audit`] with `?1` before and `?2` the most rows.
pub(crate) const PRUNE_AUDIT: &str = "DELETE FROM audit_log WHERE seq IN (
    SELECT seq FROM audit_log WHERE ts_ms < ?1 ORDER BY ts_ms LIMIT ?2)";

/// The columns of `gateway_responses` that [`ResponseRow`] reads and the backends write.
pub(crate) const RESPONSE_COLUMNS: &str =
    "id, created_ms, expires_ms, route, system_prompt, messages, answer";

/// The request log grouped `by` since the placeholder `since`.
pub(crate) fn usage_sql(by: UsageBy, since: &str) -> String {
    usage_range_sql(by, None, since, None)
}

/// The request log from `from` to `to` grouped `by`, per `bucket` when given.
pub(crate) fn usage_range_sql(
    by: UsageBy,
    bucket: Option<UsageBucket>,
    from: &str,
    to: Option<&str>,
) -> String {
    let group = match by {
        UsageBy::Key => "key_id",
        UsageBy::Team => "gateway_requests.team",
        UsageBy::User => "CASE WHEN uh.id IS NULL THEN k.owner ELSE uh.user_id END",
        UsageBy::Model => "provider || ':' || model",
        UsageBy::Day => "CAST(started_ms / 86400000 AS TEXT)",
    };
    let (bucket, order) = match bucket {
        Some(b) => {
            let ms = b.millis();
            (format!("(started_ms / {ms}) * {ms}"), "b, g NULLS LAST")
        }
        None => ("CAST(NULL AS BIGINT)".to_owned(), "g NULLS LAST"),
    };
    let end = to.map_or(String::new(), |to| format!(" AND started_ms < {to}"));
    // A request counts for the owner its hold names, as the user's budget counts it, so a
    // key's spend before an owner change stays with the owner it had; one without a hold
    // counts for the key's owner now.
    let from_rows = match by {
        UsageBy::User => {
            "gateway_requests LEFT JOIN client_keys k ON k.id = gateway_requests.key_id
             LEFT JOIN budget_holds uh ON uh.id = gateway_requests.id"
        }
        _ => "gateway_requests",
    };
    let sum = |c: &str| format!("CAST(coalesce(sum({c}), 0) AS BIGINT)");
    // What a keyed request was charged is its settled hold, its reservation where its cost
    // is unknown: the same amount its key's budget counts.
    let charged = "coalesce((SELECT h.settled_usd FROM budget_holds h
        WHERE h.id = gateway_requests.id), cost_usd)";
    format!(
        "SELECT {group} AS g, count(*), {}, {}, {}, {}, coalesce(sum({charged}), 0.0),
           {}, {bucket} AS b, max(started_ms) FROM {from_rows} WHERE started_ms >= {from}{end}
         GROUP BY g, b ORDER BY {order}",
        sum("input_tokens"),
        sum("output_tokens"),
        sum("cache_read_tokens"),
        sum("cache_write_tokens"),
        sum("CASE WHEN cost_usd IS NULL THEN 1 ELSE 0 END"),
    )
}

/// A [`UsageSlice`] from [`usage_range_sql`]'s columns.
pub(crate) fn usage_slice_from_row<R: Columns>(r: &R) -> Result<UsageSlice, R::Error> {
    Ok(UsageSlice {
        bucket_ms: r.opt_int(8)?,
        last_ms: r.int(9)?,
        row: usage_from_row(r)?,
    })
}

/// A [`UsageRow`] from [`usage_sql`]'s columns.
pub(crate) fn usage_from_row<R: Columns>(r: &R) -> Result<UsageRow, R::Error> {
    let count = |i: usize| r.int(i).map(to_u64);
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
pub(crate) fn models_json(models: &[String]) -> String {
    serde_json::Value::from(models.to_vec()).to_string()
}

/// `v` for an integer column.
pub(crate) fn opt_i64(v: Option<u64>) -> Option<i64> {
    v.map(to_i64)
}

fn opt_u64<R: Columns>(r: &R, i: usize) -> Result<Option<u64>, R::Error> {
    Ok(r.opt_int(i)?.map(to_u64))
}

/// A [`ClientKey`] from the [`KEY_COLUMNS`].
pub(crate) fn key_from_row<R: Columns>(r: &R) -> Result<ClientKey, R::Error> {
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
        owner: r.opt_text(14)?,
    })
}

/// An [`AuditEntry`] from the [`AUDIT_COLUMNS`].
pub(crate) fn audit_from_row<R: Columns>(r: &R) -> Result<AuditEntry, R::Error> {
    Ok(AuditEntry {
        ts_ms: r.int(0)?,
        actor: r.text(1)?,
        origin: r.text(2)?,
        action: r.text(3)?,
        target: r.text(4)?,
        detail: r.text(5)?,
    })
}

/// A [`User`] from the [`USER_COLUMNS`]; a role this build does not know reads as viewer.
pub(crate) fn user_from_row<R: Columns>(r: &R) -> Result<User, R::Error> {
    let models: Vec<String> = serde_json::from_str(&r.text(7)?).unwrap_or_default();
    Ok(User {
        id: r.text(0)?,
        issuer: r.text(1)?,
        subject: r.text(2)?,
        email: r.opt_text(3)?,
        name: r.opt_text(4)?,
        role: Role::parse(&r.text(5)?).unwrap_or(Role::Viewer),
        team: r.opt_text(6)?,
        models,
        budget: Budget::from_columns(r.opt_real(8)?, r.opt_text(9)?.as_deref()),
        created_ms: r.int(10)?,
        signed_in_ms: r.int(11)?,
        disabled_ms: r.opt_int(12)?,
    })
}

/// A [`Team`] from the [`TEAM_COLUMNS`].
pub(crate) fn team_from_row<R: Columns>(r: &R) -> Result<Team, R::Error> {
    Ok(Team {
        name: r.text(0)?,
        budget: Budget::from_columns(r.opt_real(1)?, r.opt_text(2)?.as_deref()),
        created_ms: r.int(3)?,
    })
}

/// A [`RequestRecord`] from the [`REQUEST_COLUMNS`].
pub(crate) fn request_from_row<R: Columns>(r: &R) -> Result<RequestRecord, R::Error> {
    let count = |i: usize| r.int(i).map(to_u64);
    let status = r.text(14)?;
    Ok(RequestRecord {
        id: r.text(0)?,
        started_ms: r.int(1)?,
        route: r.text(2)?,
        dialect: r.text(3)?,
        stream: r.int(4)? != 0,
        provider: r.opt_text(5)?,
        model: r.opt_text(6)?,
        input_tokens: count(7)?,
        output_tokens: count(8)?,
        cache_read_tokens: count(9)?,
        cache_write_tokens: count(10)?,
        cost_usd: r.opt_real(11)?,
        first_token_ms: r.opt_int(12)?,
        duration_ms: r.int(13)?,
        outcome: RequestOutcome::from_columns(&status, r.opt_text(15)?),
        key_id: r.opt_text(16)?,
        team: r.opt_text(17)?,
    })
}

/// The stream flag and token counts of `record` in [`REQUEST_COLUMNS`] order.
pub(crate) fn request_counts(record: &RequestRecord) -> [i64; 5] {
    [
        i64::from(record.stream),
        to_i64(record.input_tokens),
        to_i64(record.output_tokens),
        to_i64(record.cache_read_tokens),
        to_i64(record.cache_write_tokens),
    ]
}

/// When `record`'s cost was spent: its end, Unix ms.
pub(crate) fn request_spent_ms(record: &RequestRecord) -> i64 {
    record.started_ms.saturating_add(record.duration_ms.max(0))
}

/// One `gateway_responses` row, its messages still JSON text.
pub(crate) struct ResponseRow {
    id: String,
    created_ms: i64,
    expires_ms: i64,
    route: String,
    system_prompt: String,
    messages: String,
    answer: String,
}

impl ResponseRow {
    /// The row in [`RESPONSE_COLUMNS`] order.
    pub(crate) fn read<R: Columns>(r: &R) -> Result<Self, R::Error> {
        Ok(Self {
            id: r.text(0)?,
            created_ms: r.int(1)?,
            expires_ms: r.int(2)?,
            route: r.text(3)?,
            system_prompt: r.text(4)?,
            messages: r.text(5)?,
            answer: r.text(6)?,
        })
    }

    /// The stored response.
    pub(crate) fn response(self) -> Result<StoredResponse, StoreError> {
        Ok(StoredResponse {
            messages: from_json(&self.id, &self.messages)?,
            answer: from_json(&self.id, &self.answer)?,
            id: self.id,
            created_ms: self.created_ms,
            expires_ms: self.expires_ms,
            route: self.route,
            system_prompt: self.system_prompt,
        })
    }
}

/// The messages and the answer of `response` as the JSON text stored.
pub(crate) fn response_json(response: &StoredResponse) -> Result<(String, String), StoreError> {
    let json = |v: serde_json::Result<String>| {
        v.map_err(|source| StoreError::Json {
            id: response.id.clone(),
            source,
        })
    };
    Ok((
        json(serde_json::to_string(&response.messages))?,
        json(serde_json::to_string(&response.answer))?,
    ))
}
