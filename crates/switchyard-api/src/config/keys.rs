//! API keys, which never show themselves, and the provider settings with the keys read.
//! Spec: R3.6, R10.5.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::endpoint::ProviderEndpoint;

/// An API key. `Debug` and `Display` print `[redacted]`; only the HTTP layer reads it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(Arc<str>);

impl ApiKey {
    /// Wraps a secret and registers it for scrubbing.
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

/// Connection settings and the keys found in the environment; `Debug` shows no secret.
#[derive(Clone, Default, PartialEq)]
pub struct ProviderSettings {
    pub endpoints: BTreeMap<String, ProviderEndpoint>,
    pub api_keys: BTreeMap<String, ApiKey>,
    /// Non-secret cloud settings from the environment, by name.
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
