//! One module per subcommand.

pub mod config_check;
pub mod models;
pub mod task;
