//! `switchyard task` and `switchyard resume`: a persisted conversation streamed to the terminal
//! or as JSON lines, with a follow-up asked after each answer in a terminal.
//!
//! Only the command line's part is here: `session` runs the session, `open` makes the task,
//! `resumed` says what a resumed task keeps, `converse` runs its turns, `refused` reports what
//! stops it.
//! Spec: R9, R10.

mod converse;
mod open;
mod refused;
mod resumed;
mod served_model;
mod session;

pub use open::Start;
pub use session::{run, session};
