//! Where the configuration, the task store and the MCP servers come from: the files, the
//! built-in local default and the command-line overrides (SPEC R3.6, R13.1, R11.1;
//! DESIGN.md "Configuration").
//!
//! One file per question: paths.rs (which directories and files), local.rs (the built-in
//! local default), load.rs (the configuration in effect), typed.rs (checking what was typed),
//! store.rs (where the task store is), mcp.rs (the MCP settings file and hub).

mod load;
mod local;
pub mod mcp;
mod paths;
mod store;
mod typed;

pub use load::{ConfigSource, apply_selection, load};
pub use local::{check_local_model_server, local_model_base_url};
pub use paths::{data_dir, user_catalogue};
pub use store::{
    StorePlace, StoreSpec, configured_store, open_existing_store, open_spec, open_store,
    store_spec, store_spec_with,
};
pub use typed::check_typed;
