//! How both backends turn task and limits rows into records and back.
//! Spec: R10.1, R12, R13.1.

use serde::de::DeserializeOwned;
use switchyard_api::Message;

use super::error::StoreError;
use super::records::{ContextEdit, StoredEvent, TaskRecord, TaskUsage};
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

/// [`LearntLimits`] from the [`LEARNT_COLUMNS`] at column `at`; `None` when nothing was learnt.
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

/// The learnt limits as the columns after `observed_ms`.
pub(super) fn learnt_columns(l: &LearntLimits) -> [Option<i64>; 4] {
    [
        l.requests_remaining.map(to_i64),
        l.requests_reset_ms,
        l.tokens_remaining.map(to_i64),
        l.tokens_reset_ms,
    ]
}

/// How many requests a `rate_slots` row counts, at least one while it holds tokens.
// Rows written now keep a request while they hold tokens; an older row may not, and still counts.
pub(super) const SLOT_REQUESTS: &str =
    "CASE WHEN requests > 0 THEN requests WHEN input_tokens > 0 THEN 1 ELSE 0 END";

/// A `rate_slots` row as `(ts_ms, input_tokens, requests)` of `ts_ms, input_tokens, requests`.
pub(super) fn slot_from_row<R: Columns>(r: &R) -> Result<(i64, u64, u64), R::Error> {
    Ok((r.int(0)?, to_u64(r.int(1)?), to_u64(r.int(2)?)))
}

/// The slots of `rows` one per request as [`SLOT_REQUESTS`] counts them, tokens on the first.
pub(super) fn expand_slots(rows: &[(i64, u64, u64)]) -> Vec<(i64, u64)> {
    let mut slots = Vec::new();
    for &(ts, tokens, requests) in rows {
        let n = if requests > 0 {
            requests
        } else {
            u64::from(tokens > 0)
        };
        slots.extend((0..n).map(|i| (ts, if i == 0 { tokens } else { 0 })));
    }
    slots
}

/// The last instant outside the rate-limit window ending at `now_ms`.
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
