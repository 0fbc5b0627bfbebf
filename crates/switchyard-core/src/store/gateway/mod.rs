//! The gateway's tables: keys, users, teams, holds, totals, leases, the request log and Responses.

pub(crate) mod audit;
pub(crate) mod budget;
pub(crate) mod claims;
pub(crate) mod edit_key;
pub(crate) mod holds;
pub(crate) mod key_store;
pub(crate) mod keys;
pub(crate) mod leases;
pub(crate) mod new_key;
pub(crate) mod open;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
pub(crate) mod requests;
pub(crate) mod responses;
pub(crate) mod rows;
pub(crate) mod sqlite;
pub(crate) mod totals;
pub(crate) mod usage;
pub(crate) mod users;
