//! MCP servers (SPEC R11, R6.1): the settings file, the hub that connects the servers through
//! rmcp (the official Rust SDK), and their tools.
//!
//! - [`McpSettings`] (in `settings.rs`) reads the common `mcpServers` file; Cline's
//!   `cline_mcp_settings.json` is read as is.
//! - [`McpServerHub`] (in `hub.rs`; one server's state in `server.rs`, connecting it in
//!   `connect.rs`, failures in plain words in `errors.rs`, call results in `output.rs`) starts
//!   every enabled server at once in the background:
//!   stdio child processes (each in its own process group, stopped with the hub) and streamable
//!   HTTP. The request step (`attempt_api_request`) waits for servers still connecting
//!   at most 10 s (R6.1) and then says which servers are missing and why. Its connected servers
//!   feed the system prompt and the tools array ([`McpServerHub::connected_servers`]), and
//!   [`McpServerHub::call_tool`] carries out the model's calls with the server's timeout.
//!
//! rmcp 3 has no client for the legacy HTTP+SSE transport: a server configured with
//! `"type": "sse"` is tried over streamable HTTP, and its error says so when that fails.

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
