//! API keys (SPEC R3.6, R10.5): [`ApiKey`], whose `Debug` and `Display` never show it and which
//! is registered for scrubbing, and [`ProviderSettings`], the `[providers.ID]` sections with the
//! keys read from the environment.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::endpoint::ProviderEndpoint;

/// An API key. `Debug` and `Display` print `[redacted]`; only the HTTP layer reads it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(Arc<str>);

impl ApiKey {
    /// Wraps a secret and registers it with [`crate::secrets`], so it is scrubbed from
    /// everything Switchyard shows, logs or stores (SPEC R10.5).
    pub fn new(secret: impl Into<String>) -> Self {
        let secret = secret.into();
        crate::secrets::register(&secret);
        Self(Arc::from(secret))
    }
    /// The secret itself, for the request header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Connection settings and the keys found in the environment. `Debug` shows keys as
/// `[redacted]` and names the cloud settings read from the environment without their values.
#[derive(Clone, Default, PartialEq)]
pub struct ProviderSettings {
    /// `[providers.ID]` sections of the file, by provider id.
    pub endpoints: BTreeMap<String, ProviderEndpoint>,
    /// Keys by environment variable name, read when the configuration was loaded.
    pub api_keys: BTreeMap<String, ApiKey>,
    /// Non-secret cloud settings from the environment
    /// ([`CLOUD_SETTING_VARS`](crate::providers::presets::CLOUD_SETTING_VARS)), by name.
    pub env: BTreeMap<String, String>,
}

impl fmt::Debug for ProviderSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderSettings")
            .field("endpoints", &self.endpoints)
            .field("api_keys", &self.api_keys)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .finish()
    }
}
