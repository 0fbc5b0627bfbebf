//! One request run through Switchyard's layer and relayed (SPEC R14.4, R14.2, R14.10): the
//! route's chain tried in order until one entry yields content within the request deadline,
//! then the answer relayed chunk by chunk in the client's dialect (or collected whole), an
//! answer cut after content started continued from its partial text on the same entry or the
//! next and spliced in, with no repeated text.
//!
//! - `mod.rs`: [`Relay::run`].
//! - `entry.rs`: [`Relay`], the one place an entry is chosen (`Relay::choose`).
//! - `drive.rs`: one answer over its attempts: the one place it ends ([`drive::Step`]).
//! - `answer.rs`: what the answer has been so far, its stop reason and usage (estimated where
//!   the upstream reported none).
//! - `resume.rs`: whether and how a cut answer is continued, and the splice.
//! - `writer.rs`: the client's stream as it is written: encoded chunks, forwarded events,
//!   and the encoder's mirror of those (SPEC R14.2).
//!
//! The limits and the record are the layer's (`layer/`): `Relay::choose` walks the chain
//! under them (cooldowns, the daily cap, rate limits in the store: R12.1–R12.3), and the
//! request's `Trip` hears each attempt and the answer's end.

mod answer;
mod drive;
mod entry;
mod resume;
mod writer;

use hyper::Response;
use tokio::time::Instant;

use entry::Prompt;
pub(crate) use entry::Relay;

use crate::reply::{Body, dialect_error, set_header};

impl Relay {
    /// Runs the request and gives the response: streamed or whole, or the error of the last
    /// entry tried in the client's dialect and status (SPEC R14.5).
    pub(crate) async fn run(self) -> Response<Body> {
        let until = Instant::now() + self.deadline;
        // The request's record, written when its answer ends (SPEC R14.4).
        let label = (self.label.clone(), self.received);
        let trip = self
            .layer
            .trip(&self.id, self.dialect, &self.request, label);
        let started = match self.choose(0, &Prompt::Client, until).await {
            Ok(started) => started,
            Err(error) => {
                self.live.failed(&error);
                trip.failed(&error);
                let mut response = dialect_error(self.dialect, &error, None);
                self.dropped_header(&mut response, None);
                return response;
            }
        };
        let dropped = if started.forwarded {
            Vec::new()
        } else {
            self.dropped(Some(&self.chain[started.at]))
        };
        let mut response = drive::Drive::new(self, started, until, trip)
            .respond()
            .await;
        if !dropped.is_empty() {
            set_header(&mut response, "x-switchyard-dropped", &dropped.join(","));
        }
        response
    }
}
