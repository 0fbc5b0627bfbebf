//! The answer: one request sent down its route's entries and relayed to the client, or
//! collected whole; an answer cut after content started is continued and spliced in.

mod answer;
mod attempt;
mod continuation;
mod cursor;
mod drive;
pub(crate) mod limits_cache;
mod observer;
#[allow(clippy::module_inception)]
mod relay;
mod search;
mod splice;
mod window;
mod writer;

pub(crate) use relay::Relay;
