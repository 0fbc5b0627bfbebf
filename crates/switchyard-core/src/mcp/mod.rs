//! MCP servers: the settings file, the hub that connects them through rmcp, and their tools.
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
