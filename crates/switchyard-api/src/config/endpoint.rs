//! `[providers.ID]`: one provider's connection settings and the HTTP client settings they give.
//! Spec: R3.1, R12.3, R12.4.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::proxy::Proxy;
use crate::handler::Deadlines;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderEndpoint {
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    /// Extra HTTP headers sent with every request; keys belong in `api_key_env`.
    pub headers: BTreeMap<String, String>,
    /// Bedrock and Vertex: the cloud region, else the SDK's environment variables. `qwen`, `zai`,
    /// `moonshot` and `minimax`: `international` or `china`, also spelled `api_line`.
    #[serde(alias = "api_line")]
    pub region: Option<String>,
    pub profile: Option<String>,
    pub project: Option<String>,
    /// A credentials file for Vertex, `qwen-code` or `openai-codex`; `~/` is the home folder.
    pub credentials_file: Option<String>,
    /// Bedrock: send Anthropic models through the region group's cross-region inference profile.
    pub use_cross_region_inference: Option<bool>,
    pub use_global_inference: Option<bool>,
    /// Seconds to wait for a TCP and TLS connection; default 30, 0 for no limit.
    pub connect_timeout_seconds: Option<u64>,
    /// Seconds from sending a request to its first content; default 120, 0 for no limit.
    pub first_content_timeout_seconds: Option<u64>,
    /// Seconds without a chunk once content flows; default 300, 0 for no limit.
    pub idle_timeout_seconds: Option<u64>,
    /// Requests per sliding minute with one key, shared by every process on the task store.
    pub requests_per_minute: Option<u64>,
    pub input_tokens_per_minute: Option<u64>,
    /// The proxy for this provider's requests, or `"none"` to ignore the proxy variables.
    pub proxy: Option<Proxy>,
    /// A PEM file of extra root certificates, relative to the configuration file.
    pub ca_bundle: Option<PathBuf>,
    pub parallel_tool_calls: Option<bool>,
    /// OpenRouter: how it orders the providers serving a model: `price`, `throughput` or `latency`.
    pub provider_sorting: Option<String>,
    /// An OAuth token endpoint: SAP AI Core's, or an override of the Qwen or ChatGPT sign-in's.
    pub token_url: Option<String>,
    pub resource_group: Option<String>,
    pub deployment_id: Option<String>,
    /// Claude Code: the `claude` executable, a name on `PATH` or a path.
    pub command: Option<String>,
    pub app_code: Option<String>,
}

impl ProviderEndpoint {
    pub fn http_settings(&self) -> HttpSettings {
        HttpSettings {
            connect_timeout: match self.connect_timeout_seconds {
                Some(0) => None,
                Some(s) => Some(Duration::from_secs(s)),
                None => Some(DEFAULT_CONNECT_TIMEOUT),
            },
            proxy: self.proxy.clone().unwrap_or(Proxy::Environment),
            ca_bundle: self.ca_bundle.clone(),
        }
    }

    pub fn deadlines(&self) -> Deadlines {
        let limit = |s: Option<u64>| {
            s.map(|s| match s {
                0 => Duration::MAX,
                s => Duration::from_secs(s),
            })
        };
        Deadlines {
            first_content: limit(self.first_content_timeout_seconds),
            idle: limit(self.idle_timeout_seconds),
        }
    }
}

pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How a provider's HTTP client connects; handlers with equal settings share one client.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HttpSettings {
    pub connect_timeout: Option<Duration>,
    pub proxy: Proxy,
    pub ca_bundle: Option<PathBuf>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        ProviderEndpoint::default().http_settings()
    }
}
