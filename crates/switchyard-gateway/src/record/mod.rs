//! After the answer: the request's record, the request log's writer and retention, and the
//! Responses answers kept for a later request.

mod keeper;
#[allow(clippy::module_inception)]
mod record;
mod retention;
mod writes;

pub(crate) use keeper::{Keeper, settle};
pub(crate) use record::Record;
pub(crate) use retention::Retention;
pub(crate) use writes::Writes;
