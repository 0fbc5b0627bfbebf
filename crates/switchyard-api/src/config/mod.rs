//! The configuration (SPEC R3.1, R3.6): `ApiConfiguration` and the plan/act modes, parsing only.
//!
//! The configuration is a TOML file (see the README's "Configuration") plus environment
//! variables for secrets. Keys are read once, when the configuration is loaded, into
//! [`ApiKey`] values whose `Debug` and `Display` never show them. Which provider a mode
//! names, and how its handler is built, is `providers`' business (`resolve_mode`,
//! `build_api_handler`).
//!
//! - [`configuration`]: the whole file and its parsing (R3.6);
//! - [`mode`]: the plan and act modes and what each chooses (R3.1); [`fallback`]: one entry of
//!   a mode's failover chain (R12.1);
//! - [`endpoint`]: `[providers.ID]` connection settings (R3.1, R6.4, R12.3, R12.4), with its
//!   [`proxy`];
//! - [`keys`]: API keys and the providers' settings with them (R3.6, R10.5);
//! - [`serve`]: `[serve]`, the gateway's routes and limits (R14.3);
//! - [`store`]: the task store's URL and the spend caps, for the task layer (R13.1, R12.2);
//! - [`error`]: [`ConfigError`], and the parse errors that never echo a secret (R3.6).

pub mod configuration;
pub mod endpoint;
pub mod error;
pub mod fallback;
pub mod keys;
pub mod mode;
pub mod proxy;
pub mod serve;
pub mod store;

pub use configuration::ApiConfiguration;
#[cfg(test)]
pub(crate) use configuration::test_env;
pub use endpoint::{DEFAULT_CONNECT_TIMEOUT, HttpSettings, ProviderEndpoint};
pub use error::ConfigError;
pub use fallback::FallbackSettings;
pub use keys::{ApiKey, ProviderSettings};
pub use mode::{Mode, ModeSettings, ReasoningEffort};
pub use proxy::{Proxy, ProxyUrl};
pub use serve::{
    DEFAULT_IDLE_TIMEOUT_SECONDS, DEFAULT_MAX_CONNECTIONS, DEFAULT_REQUEST_DEADLINE_SECONDS,
    DEFAULT_REQUEST_LOG_DAYS, RouteSettings, ServeSettings,
};
pub use store::{LimitsSettings, StoreUrl};
