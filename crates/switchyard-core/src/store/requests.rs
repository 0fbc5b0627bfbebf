//! The gateway's request log (SPEC R14.4, R14.9, R12.2): one [`RequestRecord`] per request
//! `switchyard serve` relayed — who answered, the tokens, the cost, the first-token time, the
//! duration and how it ended — and [`RequestLog`], the trait every store backend implements
//! beside [`crate::store::TaskStore`] on the same storage. A request's cost also counts
//! toward the daily spend cap (`max_cost_usd_per_day`) of every task and gateway on the store.

use super::error::StoreFuture;

/// How a relayed request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestOutcome {
    /// The answer ended cleanly.
    Ok,
    /// It failed (before content, or with the answer cut): the failure's kind, as the `--json`
    /// names of `switchyard_api::ErrorKind` (`rate_limited`, `server`, `spend_cap`, …).
    Error(String),
    /// The client went away (or the gateway stopped) before the answer ended.
    Cancelled,
}

impl RequestOutcome {
    /// The stored `status` column: `ok`, `error` or `cancelled`.
    pub fn status(&self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error(_) => "error",
            Self::Cancelled => "cancelled",
        }
    }

    /// The error kind, for [`RequestOutcome::Error`].
    pub fn error_kind(&self) -> Option<&str> {
        match self {
            Self::Error(kind) => Some(kind),
            _ => None,
        }
    }

    /// The outcome from its stored `status` and `error_kind` (an unknown status reads as an
    /// error of that name).
    pub fn from_columns(status: &str, error_kind: Option<String>) -> Self {
        match status {
            "ok" => Self::Ok,
            "cancelled" => Self::Cancelled,
            "error" => Self::Error(error_kind.unwrap_or_default()),
            other => Self::Error(other.to_owned()),
        }
    }
}

/// One request the gateway relayed (tokens; USD; times in Unix milliseconds and durations in
/// milliseconds, as the gateway's clock read them).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRecord {
    /// The gateway's request id (its `x-request-id`); unique on a store.
    pub id: String,
    /// When the request arrived, Unix milliseconds.
    pub started_ms: i64,
    /// The model name the client sent (a route, `PROVIDER/MODEL`, or what a glob matched).
    pub route: String,
    /// The client's dialect: `chat_completions`, `responses` or `messages`.
    pub dialect: String,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// The provider that answered; `None` when none did.
    pub provider: Option<String>,
    /// The model that answered; `None` when none did.
    pub model: Option<String>,
    /// Non-cached input tokens (SPEC R1.3).
    pub input_tokens: u64,
    /// Output tokens (reasoning included).
    pub output_tokens: u64,
    /// Tokens read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
    /// The cost (SPEC R9.2); `None` when unknown (no usage, or a model without prices).
    pub cost_usd: Option<f64>,
    /// From arrival to the first content chunk, milliseconds; `None` when none came.
    pub first_token_ms: Option<i64>,
    /// From arrival to the end of the answer (or of the failure), milliseconds.
    pub duration_ms: i64,
    /// How it ended.
    pub outcome: RequestOutcome,
    /// The client key's id, when the gateway has keys (SPEC R14.6); its hold, under this
    /// record's id, is settled when the record is written (R14.7).
    pub key_id: Option<String>,
    /// The key's team, when it has one.
    pub team: Option<String>,
}

/// Where the gateway's request log is kept: implemented by every store backend on the same
/// storage as its tasks (a supertrait of [`crate::store::TaskStore`]).
pub trait RequestLog: Send + Sync {
    /// Records `record`, and, when its cost is known and not 0, that cost as spent at its end
    /// (`started_ms + duration_ms`) for [`crate::limits::LimitsStore::spend_between`] (the
    /// daily cap of SPEC R12.2), in one transaction. A record with a `key_id` also settles
    /// the budget hold of its id in that transaction (SPEC R14.7): the hold and the spend row
    /// take [`crate::store::settled_amount`]. An id already recorded:
    /// [`StoreError::Conflict`](super::StoreError::Conflict), and nothing is written.
    fn record_request<'a>(&'a self, record: &'a RequestRecord) -> StoreFuture<'a, ()>;

    /// Records every one of `records` as [`RequestLog::record_request`] would, in one
    /// transaction (multi-row inserts: SPEC R14.8's batches). All or nothing: an id already
    /// recorded, or twice in `records`, is
    /// [`StoreError::Conflict`](super::StoreError::Conflict) and nothing is written.
    fn record_requests<'a>(&'a self, records: &'a [RequestRecord]) -> StoreFuture<'a, ()>;

    /// Deletes at most `limit` records of requests that arrived before `before_ms` (Unix
    /// milliseconds; SPEC R14.8's retention), the oldest first, and says how many: a caller
    /// with more to delete calls again, so no one statement holds the store long. Their
    /// `spend` rows and budget holds stay: the daily cap and the budgets count those, never
    /// the log.
    fn prune_requests(&self, before_ms: i64, limit: u64) -> StoreFuture<'_, u64>;

    /// The newest `limit` requests (0: all), newest first (by arrival, then id).
    fn recent_requests(&self, limit: usize) -> StoreFuture<'_, Vec<RequestRecord>>;
}
