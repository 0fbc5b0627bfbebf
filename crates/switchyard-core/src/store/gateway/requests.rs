//! The gateway's request log: one [`RequestRecord`] per request `switchyard serve` relayed.
//! Spec: R14.4, R14.9, R12.2.

use crate::store::StoreFuture;

/// How a relayed request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestOutcome {
    /// The answer ended cleanly.
    Ok,
    /// It failed: the failure's kind, as the `--json` names of `switchyard_api::ErrorKind`.
    Error(String),
    /// The client went away, or the gateway stopped, before the answer ended.
    Cancelled,
    /// Its process stopped before its record was written: charged at its reservation.
    Lost,
}

impl RequestOutcome {
    /// The stored `status` column: `ok`, `error`, `cancelled` or `lost`.
    pub fn status(&self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error(_) => "error",
            Self::Cancelled => "cancelled",
            Self::Lost => "lost",
        }
    }

    /// The error kind of [`RequestOutcome::Error`].
    pub fn error_kind(&self) -> Option<&str> {
        match self {
            Self::Error(kind) => Some(kind),
            _ => None,
        }
    }

    /// The outcome from its stored columns; an unknown status is an error of that name.
    pub fn from_columns(status: &str, error_kind: Option<String>) -> Self {
        match status {
            "ok" => Self::Ok,
            "cancelled" => Self::Cancelled,
            "lost" => Self::Lost,
            "error" => Self::Error(error_kind.unwrap_or_default()),
            other => Self::Error(other.to_owned()),
        }
    }
}

/// One request the gateway relayed, in tokens, USD and milliseconds of the gateway's clock.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRecord {
    /// The gateway's request id, its `x-request-id`; unique on a store.
    pub id: String,
    /// When the request arrived, Unix ms.
    pub started_ms: i64,
    /// The model name the client sent: a route, `PROVIDER/MODEL`, or what a glob matched.
    pub route: String,
    /// The client's dialect: `chat_completions`, `responses` or `messages`.
    pub dialect: String,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// The provider that answered; `None` when none did.
    pub provider: Option<String>,
    /// The model that answered; `None` when none did.
    pub model: Option<String>,
    /// Non-cached input tokens.
    pub input_tokens: u64,
    /// Output tokens, reasoning included.
    pub output_tokens: u64,
    /// Tokens read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
    /// The cost; `None` when unknown.
    pub cost_usd: Option<f64>,
    /// From arrival to the first content chunk; `None` when none came.
    pub first_token_ms: Option<i64>,
    /// From arrival to the end of the answer or of the failure.
    pub duration_ms: i64,
    /// How it ended.
    pub outcome: RequestOutcome,
    /// The client key's id; its hold under this record's id is settled with the record.
    pub key_id: Option<String>,
    /// The key's team, when it has one.
    pub team: Option<String>,
}

/// Where the gateway's request log is kept, on the same storage as the tasks.
pub trait RequestLog: Send + Sync {
    /// Records `record` with its spend, its hold settled and their totals, in one transaction.
    fn record_request<'a>(&'a self, record: &'a RequestRecord) -> StoreFuture<'a, ()>;

    /// [`RequestLog::record_request`] for all of `records` in one transaction, all or nothing.
    fn record_requests<'a>(&'a self, records: &'a [RequestRecord]) -> StoreFuture<'a, ()>;

    /// Deletes at most `limit` records older than `before_ms`; spend rows and holds stay.
    fn prune_requests(&self, before_ms: i64, limit: u64) -> StoreFuture<'_, u64>;

    /// The newest `limit` requests, or all for 0, newest first by arrival then id.
    fn recent_requests(&self, limit: usize) -> StoreFuture<'_, Vec<RequestRecord>>;
}
