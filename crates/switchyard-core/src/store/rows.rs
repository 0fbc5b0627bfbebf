//! How both task store backends turn rows into records and back (SPEC R10.1, R12, R13.1): the
//! column lists they select, [`Columns`] (a row of either client read by position), one mapping
//! per record and the rate-limit window's start, so SQLite and PostgreSQL each keep only their
//! own SQL.

use serde::de::DeserializeOwned;
use switchyard_api::Message;

use super::error::StoreError;
use super::records::{ContextEdit, StoredEvent, TaskRecord, TaskUsage};
use super::requests::{RequestOutcome, RequestRecord};
use super::responses::StoredResponse;
use crate::context::DeletedRange;
use crate::limits::state::{Cooldown, EntryKey, LearntLimits, RATE_WINDOW_MS, RateState};

/// The columns [`task_from_row`] reads, in its order (the message count is a subquery).
pub(super) const TASK_COLUMNS: &str =
    "id, created_ms, updated_ms, cwd, mode, provider, model, first_prompt,
    tokens_in, tokens_out, cache_writes, cache_reads, cost_usd, last_request_tokens,
    deleted_range_start, deleted_range_end,
    (SELECT count(*) FROM messages m WHERE m.task_id = tasks.id), unpriced_requests";

/// The columns of `rate_learnt` that [`learnt_from_row`] reads, in its order.
pub(super) const LEARNT_COLUMNS: &str =
    "observed_ms, requests_remaining, requests_reset_ms, tokens_remaining, tokens_reset_ms";

/// The columns of `cooldowns` that [`cooldown_from_row`] reads, in its order.
pub(super) const COOLDOWN_COLUMNS: &str = "provider, model, base_url, since_ms, until_ms, reason";

/// The columns of `gateway_requests` that [`request_from_row`] reads (and the backends write),
/// in its order.
pub(super) const REQUEST_COLUMNS: &str = "id, started_ms, route, dialect, stream, provider, model,
    input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd,
    first_token_ms, duration_ms, status, error_kind, key_id, team";

/// [`crate::store::RequestLog::prune_requests`] on either database (`?1` before, `?2` the
/// most rows), the oldest first by the arrival index.
pub(super) const PRUNE_REQUESTS: &str = "DELETE FROM gateway_requests WHERE id IN (
    SELECT id FROM gateway_requests WHERE started_ms < ?1 ORDER BY started_ms LIMIT ?2)";

/// One row of either database client, its columns read by position.
pub(super) trait Columns {
    /// The client's error (a column of another type).
    type Error;
    /// An integer column.
    fn int(&self, i: usize) -> Result<i64, Self::Error>;
    /// An integer column that may be NULL.
    fn opt_int(&self, i: usize) -> Result<Option<i64>, Self::Error>;
    /// A text column.
    fn text(&self, i: usize) -> Result<String, Self::Error>;
    /// A floating-point column.
    fn real(&self, i: usize) -> Result<f64, Self::Error>;
    /// A text column that may be NULL.
    fn opt_text(&self, i: usize) -> Result<Option<String>, Self::Error>;
    /// A floating-point column that may be NULL.
    fn opt_real(&self, i: usize) -> Result<Option<f64>, Self::Error>;
}

impl Columns for rusqlite::Row<'_> {
    type Error = rusqlite::Error;
    fn int(&self, i: usize) -> rusqlite::Result<i64> {
        self.get(i)
    }
    fn opt_int(&self, i: usize) -> rusqlite::Result<Option<i64>> {
        self.get(i)
    }
    fn text(&self, i: usize) -> rusqlite::Result<String> {
        self.get(i)
    }
    fn real(&self, i: usize) -> rusqlite::Result<f64> {
        self.get(i)
    }
    fn opt_text(&self, i: usize) -> rusqlite::Result<Option<String>> {
        self.get(i)
    }
    fn opt_real(&self, i: usize) -> rusqlite::Result<Option<f64>> {
        self.get(i)
    }
}

#[cfg(feature = "postgres")]
impl Columns for tokio_postgres::Row {
    type Error = tokio_postgres::Error;
    fn int(&self, i: usize) -> Result<i64, Self::Error> {
        self.try_get(i)
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>, Self::Error> {
        self.try_get(i)
    }
    fn text(&self, i: usize) -> Result<String, Self::Error> {
        self.try_get(i)
    }
    fn real(&self, i: usize) -> Result<f64, Self::Error> {
        self.try_get(i)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, Self::Error> {
        self.try_get(i)
    }
    fn opt_real(&self, i: usize) -> Result<Option<f64>, Self::Error> {
        self.try_get(i)
    }
}

/// A count or total for a database integer column (saturating at `i64::MAX`).
pub(super) fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A stored integer as a count (a negative one is 0).
pub(super) fn to_u64(v: i64) -> u64 {
    v.max(0) as u64
}

/// The deleted range as its two nullable columns (`deleted_range_start`, `deleted_range_end`).
pub(super) fn range_columns(range: Option<DeletedRange>) -> (Option<i64>, Option<i64>) {
    (range.map(|r| r.0 as i64), range.map(|r| r.1 as i64))
}

/// A [`TaskRecord`] from the [`TASK_COLUMNS`].
pub(super) fn task_from_row<R: Columns>(r: &R) -> Result<TaskRecord, R::Error> {
    let count = |i: usize| r.int(i).map(to_u64);
    let range = match (r.opt_int(14)?, r.opt_int(15)?) {
        (Some(s), Some(e)) => Some((to_u64(s) as usize, to_u64(e) as usize)),
        _ => None,
    };
    let usage = TaskUsage {
        tokens_in: count(8)?,
        tokens_out: count(9)?,
        cache_writes: count(10)?,
        cache_reads: count(11)?,
        cost_usd: r.real(12)?,
        unpriced_requests: count(17)?,
    };
    Ok(TaskRecord {
        id: r.text(0)?,
        created_ms: r.int(1)?,
        updated_ms: r.int(2)?,
        cwd: r.text(3)?,
        mode: r.text(4)?,
        provider: r.text(5)?,
        model: r.text(6)?,
        first_prompt: r.text(7)?,
        usage,
        last_request_tokens: count(13)?,
        conversation_history_deleted_range: range,
        message_count: count(16)? as usize,
    })
}

/// A [`Cooldown`] from the [`COOLDOWN_COLUMNS`].
pub(super) fn cooldown_from_row<R: Columns>(r: &R) -> Result<Cooldown, R::Error> {
    let (provider, model, base_url) = (r.text(0)?, r.text(1)?, r.text(2)?);
    Ok(Cooldown {
        entry: EntryKey {
            provider,
            model,
            base_url,
        },
        since_ms: r.int(3)?,
        until_ms: r.int(4)?,
        reason: r.text(5)?,
    })
}

/// [`LearntLimits`] from the [`LEARNT_COLUMNS`] starting at column `at`; `None` when
/// `observed_ms` is NULL (a key with slots but nothing learnt).
pub(super) fn learnt_from_row<R: Columns>(
    r: &R,
    at: usize,
) -> Result<Option<LearntLimits>, R::Error> {
    let Some(observed_ms) = r.opt_int(at)? else {
        return Ok(None);
    };
    Ok(Some(LearntLimits {
        observed_ms,
        requests_remaining: r.opt_int(at + 1)?.map(to_u64),
        requests_reset_ms: r.opt_int(at + 2)?,
        tokens_remaining: r.opt_int(at + 3)?.map(to_u64),
        tokens_reset_ms: r.opt_int(at + 4)?,
    }))
}

/// The learnt limits as the four nullable columns after `observed_ms`, in
/// [`LEARNT_COLUMNS`] order.
pub(super) fn learnt_columns(l: &LearntLimits) -> [Option<i64>; 4] {
    [
        l.requests_remaining.map(to_i64),
        l.requests_reset_ms,
        l.tokens_remaining.map(to_i64),
        l.tokens_reset_ms,
    ]
}

/// One rate-limit slot, `(ts_ms, input_tokens)`.
pub(super) fn slot_from_row<R: Columns>(r: &R) -> Result<(i64, u64), R::Error> {
    Ok((r.int(0)?, to_u64(r.int(1)?)))
}

/// The first column of the rate-limit window ending at `now_ms`: slots at or before it have
/// left the window (SPEC R12.3).
pub(super) fn window_start(now_ms: i64) -> i64 {
    now_ms - RATE_WINDOW_MS
}

/// A [`RateState`] from `key, count, tokens, oldest` and then the [`LEARNT_COLUMNS`].
pub(super) fn rate_state_from_row<R: Columns>(r: &R) -> Result<RateState, R::Error> {
    Ok(RateState {
        key: r.text(0)?,
        requests_in_window: to_u64(r.int(1)?),
        input_tokens_in_window: to_u64(r.int(2)?),
        oldest_ms: r.opt_int(3)?,
        learnt: learnt_from_row(r, 4)?,
    })
}

/// A [`RequestRecord`] from the [`REQUEST_COLUMNS`].
pub(super) fn request_from_row<R: Columns>(r: &R) -> Result<RequestRecord, R::Error> {
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

/// The integer columns of `record` in [`REQUEST_COLUMNS`] order: stream (0/1), the four token
/// counts.
pub(super) fn request_counts(record: &RequestRecord) -> [i64; 5] {
    [
        i64::from(record.stream),
        to_i64(record.input_tokens),
        to_i64(record.output_tokens),
        to_i64(record.cache_read_tokens),
        to_i64(record.cache_write_tokens),
    ]
}

/// When `record`'s cost was spent, for the spend row: its end, Unix milliseconds.
pub(super) fn request_spent_ms(record: &RequestRecord) -> i64 {
    record.started_ms.saturating_add(record.duration_ms.max(0))
}

/// `message` as the JSON text a store keeps; failing is [`StoreError::Json`] of task `id`.
pub(super) fn to_json(id: &str, message: &Message) -> Result<String, StoreError> {
    serde_json::to_string(message).map_err(|source| StoreError::Json {
        id: id.to_owned(),
        source,
    })
}

/// A stored JSON text of task `id` read back; not JSON of that shape is [`StoreError::Json`].
pub(super) fn from_json<T: DeserializeOwned>(id: &str, text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|source| StoreError::Json {
        id: id.to_owned(),
        source,
    })
}

/// A row of `seq, ts_ms, kind, JSON text`: the shape UI events and context edits share.
pub(super) struct JsonRow {
    seq: i64,
    ts_ms: i64,
    kind: String,
    text: String,
}

impl JsonRow {
    /// The row's four columns.
    pub(super) fn read<R: Columns>(r: &R) -> Result<Self, R::Error> {
        Ok(Self {
            seq: r.int(0)?,
            ts_ms: r.int(1)?,
            kind: r.text(2)?,
            text: r.text(3)?,
        })
    }

    /// The row as a UI event of task `id`.
    pub(super) fn event(self, id: &str) -> Result<StoredEvent, StoreError> {
        Ok(StoredEvent {
            event: from_json(id, &self.text)?,
            seq: self.seq,
            ts_ms: self.ts_ms,
            kind: self.kind,
        })
    }

    /// The row as a context edit of task `id`.
    pub(super) fn edit(self, id: &str) -> Result<ContextEdit, StoreError> {
        Ok(ContextEdit {
            detail: from_json(id, &self.text)?,
            seq: self.seq,
            ts_ms: self.ts_ms,
            kind: self.kind,
        })
    }
}

/// The columns of `gateway_responses` that [`ResponseRow`] reads (and the backends write), in
/// its order.
pub(super) const RESPONSE_COLUMNS: &str =
    "id, created_ms, expires_ms, route, system_prompt, messages, answer";

/// One `gateway_responses` row as both backends read it, its messages still JSON text.
pub(super) struct ResponseRow {
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
    pub(super) fn read<R: Columns>(r: &R) -> Result<Self, R::Error> {
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

    /// The stored response; messages that are not JSON of that shape: [`StoreError::Json`].
    pub(super) fn response(self) -> Result<StoredResponse, StoreError> {
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
pub(super) fn response_json(response: &StoredResponse) -> Result<(String, String), StoreError> {
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
