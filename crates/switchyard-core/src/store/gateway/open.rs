//! Traces of admitted requests whose records are not written yet, so a process killed
//! mid-request leaves them charged at their reservations instead of nowhere.
//! Spec: R14.18.

use super::requests::{RequestOutcome, RequestRecord};
use crate::store::StoreFuture;

/// One admitted keyed request, as its trace in `gateway_open` keeps it until its record.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenRequest {
    /// The gateway's request id, which its record will have.
    pub id: String,
    /// The process that admitted it, which renews its expiry while it lives.
    pub holder: String,
    /// When it was admitted, Unix ms.
    pub started_ms: i64,
    /// The model name the client sent.
    pub route: String,
    /// The client's dialect, as its record names it.
    pub dialect: String,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// The client key's id.
    pub key_id: String,
    /// The key's team.
    pub team: Option<String>,
    /// What its admission reserved, USD: what it is charged if it is lost.
    pub reserved_usd: f64,
}

impl OpenRequest {
    /// The record of this request once its process is found gone: no answer known, so no
    /// cost, and charged at its reservation.
    pub fn lost(&self) -> RequestRecord {
        RequestRecord {
            id: self.id.clone(),
            started_ms: self.started_ms,
            route: self.route.clone(),
            dialect: self.dialect.clone(),
            stream: self.stream,
            provider: None,
            model: None,
            input_tokens: 0,
            output_tokens: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cost_usd: None,
            first_token_ms: None,
            duration_ms: 0,
            outcome: RequestOutcome::Lost,
            key_id: Some(self.key_id.clone()),
            team: self.team.clone(),
        }
    }
}

/// Where traces are kept, beside the request log that ends them.
pub trait OpenStore: Send + Sync {
    /// Writes `open` as traces lasting until `expires_ms`, skipping those already recorded.
    fn open_requests<'a>(&'a self, open: &'a [OpenRequest], expires_ms: i64)
    -> StoreFuture<'a, ()>;

    /// Moves the expiry of every trace of `holder` to `expires_ms`; says how many.
    fn renew_open<'a>(&'a self, holder: &'a str, expires_ms: i64) -> StoreFuture<'a, u64>;

    /// Records at most `limit` requests whose trace expired by `now_ms`, or whose store
    /// hold did, as `lost` and charged at their reservations; says how many. A request
    /// already recorded only loses its trace.
    fn charge_lost(&self, now_ms: i64, limit: u64) -> StoreFuture<'_, u64>;
}
