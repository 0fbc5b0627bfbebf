//! One completion request's context, carried from its admission to its answer's end.

use tokio::time::Instant;

use super::leased::Hold;
use crate::auth::Client;
use crate::ingress::Dialect;
use crate::metrics::InFlight;
use crate::telemetry::RequestTrace;
use crate::ui::Flight;

/// What one request carries through the relay; process-wide state is in `Shared`.
pub(crate) struct RequestContext {
    /// The gateway's request id, also the dialect's response id.
    pub(crate) id: String,
    pub(crate) dialect: Dialect,
    /// When its headers were read: the gateway's overhead and its durations start there.
    pub(crate) received: Instant,
    pub(crate) client: Option<Client>,
    /// The estimate of its system prompt and messages in tokens, for its limits.
    pub(crate) input_tokens: u64,
    pub(crate) label: String,
    /// Counts it in flight until the answer ends.
    pub(crate) _in_flight: InFlight,
    /// Lists it on the live page until the answer ends.
    pub(crate) live: Flight,
    pub(crate) trace: RequestTrace,
    /// A leased admission's reservation, which the request's record settles.
    pub(crate) hold: Option<Hold>,
}
