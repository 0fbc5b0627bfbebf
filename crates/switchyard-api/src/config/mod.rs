//! The configuration: a TOML file plus environment variables for secrets, parsed only. Keys
//! are read once, into [`ApiKey`] values that never show them; which handler a mode gets is
//! `providers`' business.
//! Spec: R3.1, R3.6.

pub mod configuration;
pub mod endpoint;
pub mod error;
pub mod keys;
pub mod mode;
pub mod oidc;
pub mod proxy;
pub mod serve;
pub mod store;
pub mod telemetry;

pub use configuration::ApiConfiguration;
#[cfg(test)]
pub(crate) use configuration::test_env;
pub use endpoint::{DEFAULT_CONNECT_TIMEOUT, HttpSettings, ProviderEndpoint};
pub use error::ConfigError;
pub use keys::{ApiKey, ProviderSettings};
pub use mode::{FallbackSettings, Mode, ModeSettings, ReasoningEffort};
pub use oidc::{DEFAULT_MEMBERSHIP_HOURS, GroupGrant, OidcSettings};
pub use proxy::{Proxy, ProxyUrl};
pub use serve::{
    AdmissionMode, DEFAULT_AUDIT_LOG_DAYS, DEFAULT_BODY_TIMEOUT_SECONDS,
    DEFAULT_CHUNK_TIMEOUT_SECONDS, DEFAULT_IDLE_TIMEOUT_SECONDS, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, DEFAULT_PARSE_MEMORY_MIB,
    DEFAULT_REQUEST_DEADLINE_SECONDS, DEFAULT_REQUEST_LOG_DAYS, RouteSettings, ServeSettings,
};
pub use store::{LimitsSettings, StoreUrl};
pub use telemetry::{OtlpProtocol, TelemetryExport, TelemetrySettings};
