//! Switchyard's task layer: everything between the user and one `ApiHandler`
//! (DESIGN.md: the request loop, context management, persistence and MCP live here).
//!
//! Today it holds cost accounting ([`cost`]) and the consumption of one streamed request
//! into task events ([`task`]); retries and recovery (SPEC R6) build on [`task::run_request`].

pub mod context;
pub mod cost;
pub mod mcp;
pub mod prompt;
pub mod store;
pub mod task;
