//! [`AttemptSettings`]: the deadlines and limits of the request step, with their defaults
//! (SPEC R5.2, R6.1, R6.4, R6.7, R4.0b).

use std::time::Duration;

use switchyard_api::{Deadlines, StreamBounds};

/// How long to wait for MCP servers still connecting before a request (SPEC R6.1), in seconds.
pub const MCP_WAIT: Duration = Duration::from_secs(10);
/// Automatic retries before the user is asked (SPEC R6.7).
pub const MAX_AUTO_RETRIES: u32 = 3;
/// The longest server-requested wait honoured between automatic retries (SPEC R5.2).
pub const DEFAULT_RETRY_AFTER_CAP: Duration = switchyard_api::retry::DEFAULT_RETRY_AFTER_CAP;

/// Deadlines and limits of the step.
#[derive(Debug, Clone, Copy)]
pub struct AttemptSettings {
    /// Automatic retries before the user is asked (default 3, SPEC R6.7).
    pub max_auto_retries: u32,
    /// First-content and idle deadlines of each request (SPEC R6.4), enforced by the provider
    /// layer; unset values take the provider's configured ones (120 s and 300 s by default).
    pub deadlines: Deadlines,
    /// The longest server-requested wait honoured between automatic retries (default 60 s,
    /// SPEC R5.2).
    pub retry_after_cap: Duration,
    /// How long to wait for MCP servers still connecting (default [`MCP_WAIT`], 10 s, SPEC R6.1).
    pub mcp_wait: Duration,
    /// Size bounds of each answer (SPEC R4.0b): one line, one tool call's arguments, the
    /// answer; from `[limits]`, enforced by the provider layer.
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
