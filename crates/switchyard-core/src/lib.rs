//! Switchyard's task layer: everything between the user and one `ApiHandler`
//! (DESIGN.md: the request loop, context management, persistence and MCP live here).

pub mod context;
pub mod cost;
pub mod mcp;
pub mod prompt;
pub mod store;
pub mod task;

pub use store::{SqliteStore, TaskStore};
pub use task::{Task, TaskBuilder, TaskError, TaskEvent, TaskStatus};
