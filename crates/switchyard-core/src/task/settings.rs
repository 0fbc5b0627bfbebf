//! `AttemptSettings`: the deadlines and limits of the request step.
//! Spec: R4.0b, R5.2, R6.1, R6.4, R6.7.

use std::time::Duration;

use switchyard_api::{Deadlines, StreamBounds};

/// How long to wait for MCP servers still connecting before a request.
pub const MCP_WAIT: Duration = Duration::from_secs(10);
/// Automatic retries before the user is asked.
pub const MAX_AUTO_RETRIES: u32 = 3;
/// The longest server-requested wait honoured between automatic retries.
pub const DEFAULT_RETRY_AFTER_CAP: Duration = switchyard_api::retry::DEFAULT_RETRY_AFTER_CAP;

/// Deadlines and limits of the request step.
#[derive(Debug, Clone, Copy)]
pub struct AttemptSettings {
    /// Automatic retries before the user is asked; default 3.
    pub max_auto_retries: u32,
    /// First-content and idle deadlines; unset values take the provider's.
    pub deadlines: Deadlines,
    /// The longest server-requested wait honoured between retries; default 60 s.
    pub retry_after_cap: Duration,
    /// How long to wait for MCP servers still connecting; default 10 s.
    pub mcp_wait: Duration,
    /// Size bounds of each line, tool call and answer, from `[limits]`.
    pub bounds: StreamBounds,
}

impl Default for AttemptSettings {
    fn default() -> Self {
        Self {
            max_auto_retries: MAX_AUTO_RETRIES,
            deadlines: Deadlines::default(),
            retry_after_cap: DEFAULT_RETRY_AFTER_CAP,
            mcp_wait: MCP_WAIT,
            bounds: StreamBounds::default(),
        }
    }
}
