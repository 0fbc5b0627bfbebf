//! One module per subcommand.

pub mod config_check;
pub mod mcp;
pub mod models;
pub mod task;
