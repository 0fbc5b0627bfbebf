//! One module per subcommand.

pub mod audit;
pub mod completions;
pub mod config_check;
pub mod export;
pub mod import;
pub mod keys;
pub mod limits;
pub mod mcp;
pub mod models;
pub mod requests;
pub mod resume;
pub mod serve;
pub mod serve_reload;
pub mod store;
pub mod task;
pub mod tasks;
pub mod teams;
pub mod usage;
pub mod users;
