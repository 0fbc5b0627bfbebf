//! `switchyard task PROMPT` and `switchyard resume TASK_ID [PROMPT]`: a persisted conversation
//! (a [`Task`](switchyard_core::Task) of switchyard-core, SPEC R9 and R10), streamed to the
//! terminal or as JSON lines. In a terminal (and without `--json`) the user is asked for a
//! follow-up after each answer until an empty line, Ctrl-D or Ctrl-C.
//!
//! These files hold only what is the command line's: the flags and the configuration files
//! become a task, its events go to the [`Renderer`](crate::render::Renderer), the follow-up and
//! Ctrl-C come from the terminal. session.rs runs the session; open.rs turns the flags and
//! files into a task, resumed.rs says what a resumed task keeps; converse.rs runs its turns;
//! refused.rs reports what stops it.

mod converse;
mod open;
mod refused;
mod resumed;
mod served_model;
mod session;

pub use open::Start;
pub use session::{run, session};
