//! Where the configuration, the task store and the MCP servers come from.
//! Spec: R3.6, R11.1, R13.1.

mod load;
mod local;
pub mod mcp;
mod paths;
mod serve;
mod store;
mod typed;

pub use load::{ConfigSource, apply_selection, load};
pub use local::{check_local_model_server, local_model_base_url};
pub use paths::{data_dir, user_catalogue};
pub use serve::load_serve;
pub use store::{
    StorePlace, StoreSpec, configured_store, open_existing_store, open_spec, open_store,
    store_spec, store_spec_with,
};
pub use typed::check_typed;
