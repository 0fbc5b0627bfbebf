//! MCP servers: the settings file, the hub that connects them through rmcp, and their tools.
//!
//! `hub.rs` starts every enabled server in the background; `server.rs` holds one server's
//! state, `connect.rs` connects it, `errors.rs` words its failures, `output.rs` its results.
//! Spec: R6.1, R11.

mod connect;
mod errors;
mod hub;
mod output;
mod server;
mod settings;

pub use hub::{McpServerHub, McpServerState};
pub use output::McpToolOutput;
pub use server::McpServerStatus;
pub use settings::{
    DEFAULT_MCP_TIMEOUT_SECONDS, McpServerConfig, McpSettings, McpSettingsError, McpTransport,
};
