//! `[providers.ID]`: one provider's connection settings, shared by both modes (SPEC R3.1) —
//! base URL, key variable, headers, cloud region and project, timeouts (R6.4, R12.4), rate
//! limits (R12.3), proxy and CA bundle — and the HTTP client settings they give.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::proxy::Proxy;
use crate::handler::Deadlines;

/// Per-provider connection settings shared by both modes (SPEC R3.1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderEndpoint {
    /// Base URL overriding the preset's, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: Option<String>,
    /// Name of the environment variable holding the key, overriding the preset's.
    pub api_key_env: Option<String>,
    /// Extra HTTP headers sent with every request (never keys: use `api_key_env`).
    pub headers: BTreeMap<String, String>,
    /// Bedrock and Vertex: the cloud region (`us-east-1`, `us-east5`, `global`, …). Bedrock
    /// falls back to `AWS_REGION`, `AWS_DEFAULT_REGION`, then the AWS profile's region;
    /// Vertex to `GOOGLE_CLOUD_LOCATION`, `CLOUD_ML_REGION`, then `global`.
    ///
    /// `qwen`, `zai`, `moonshot` and `minimax`: `international` (the default) or `china`, the
    /// endpoint (and for qwen and zai the model table) of mainland China; also spelled
    /// `api_line`, after the reference's `qwenApiLine` / `zaiApiLine` options.
    #[serde(alias = "api_line")]
    pub region: Option<String>,
    /// Bedrock: the AWS profile of `~/.aws/config` to use (else `AWS_PROFILE`, else `default`).
    pub profile: Option<String>,
    /// Vertex: the Google Cloud project id (else `GOOGLE_CLOUD_PROJECT`, `GCLOUD_PROJECT`,
    /// then the project of the credentials).
    pub project: Option<String>,
    /// A credentials file. Vertex: a service-account or authorized-user JSON file (else
    /// `GOOGLE_APPLICATION_CREDENTIALS`, then gcloud's application-default credentials, then
    /// the metadata server). `qwen-code`: the Qwen CLI's OAuth file (default
    /// `~/.qwen/oauth_creds.json`). `openai-codex`: the Codex CLI's sign-in (default
    /// `$CODEX_HOME/auth.json`, else `~/.codex/auth.json`). A leading `~/` is the home folder.
    pub credentials_file: Option<String>,
    /// Bedrock: send Anthropic models through the region group's cross-region inference
    /// profile (`us.`, `eu.`, `apac.`, `jp.`; SPEC R4.8). Default false, as in the reference.
    pub use_cross_region_inference: Option<bool>,
    /// Bedrock: with cross-region inference, use the `global.` profile for models that have
    /// one. Default false.
    pub use_global_inference: Option<bool>,
    /// Seconds to wait for a TCP (and TLS) connection; default 30, 0 for no limit.
    pub connect_timeout_seconds: Option<u64>,
    /// Seconds from sending a request to its first content (text, reasoning, a tool call),
    /// provider-level retry waits excluded (SPEC R6.4); default 120, 0 for no limit.
    pub first_content_timeout_seconds: Option<u64>,
    /// Seconds without a chunk once content flows before the stream is a timeout (SPEC R6.4);
    /// default 300, 0 for no limit.
    pub idle_timeout_seconds: Option<u64>,
    /// Requests per sliding 60 s window that every Switchyard process on the same task
    /// store may send to this provider with one key (SPEC R12.3); unset: no limit of ours.
    pub requests_per_minute: Option<u64>,
    /// Input tokens (estimated) per sliding 60 s window, shared the same way; unset: none.
    pub input_tokens_per_minute: Option<u64>,
    /// The proxy for this provider's requests: an `http://` or `https://` URL (credentials
    /// as `http://user:password@host:port` are never shown), or `"none"` to ignore the
    /// proxy environment variables. Default: `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY` and
    /// `NO_PROXY`, as curl reads them.
    pub proxy: Option<Proxy>,
    /// A PEM file of extra root certificates (a corporate TLS-inspecting proxy's CA), trusted
    /// besides the system's. A relative path is relative to the configuration file.
    pub ca_bundle: Option<PathBuf>,
    /// OpenRouter: let the model call several tools in one answer (`parallel_tool_calls`).
    /// Default true, as the reference's "enable parallel tool calling" setting.
    pub parallel_tool_calls: Option<bool>,
    /// OpenRouter: how OpenRouter orders the providers serving a model (`provider.sort`:
    /// `price`, `throughput` or `latency`). Default: OpenRouter's own balancing.
    pub provider_sorting: Option<String>,
    /// OAuth token endpoint: SAP AI Core's (else the service key's `url`), or an override of
    /// the Qwen or ChatGPT sign-in's (a proxy, a test server).
    pub token_url: Option<String>,
    /// SAP AI Core: the resource group (`AI-Resource-Group` header). Default `default`.
    pub resource_group: Option<String>,
    /// SAP AI Core: the deployment serving the model (else looked up among the running
    /// deployments by model name).
    pub deployment_id: Option<String>,
    /// Claude Code: the `claude` executable (a name on `PATH` or a path). Default `claude`.
    pub command: Option<String>,
    /// AIhubmix: the `APP-Code` header, when you have one. Not sent by default.
    pub app_code: Option<String>,
}

impl ProviderEndpoint {
    /// The HTTP client's settings these fields give.
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

    /// The deadlines these fields set (`None` where unset: the defaults apply).
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

/// Connect timeout when `connect_timeout_seconds` is not set: 30 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How a provider's HTTP client connects (`[providers.ID]`): handlers whose settings are equal
/// share one client and its connection pool.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HttpSettings {
    /// TCP (and TLS) connect timeout; `None` for none.
    pub connect_timeout: Option<Duration>,
    pub proxy: Proxy,
    /// Extra root certificates (PEM) trusted besides the system's.
    pub ca_bundle: Option<PathBuf>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        ProviderEndpoint::default().http_settings()
    }
}
