//! `ApiConfiguration` and plan/act modes: parsing the configuration only (SPEC R3.1, R3.6).
//!
//! The configuration is a TOML file (see the README's "Configuration") plus environment
//! variables for secrets. Keys are read once, when the configuration is loaded, into
//! [`ApiKey`] values whose `Debug` and `Display` never show them. Which provider a mode
//! names, and how its handler is built, is `providers`' business (`resolve_mode`,
//! `build_api_handler`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::handler::Deadlines;
use crate::model::{Catalogue, ModelTable};

/// The task's mode (SPEC R3.1). Each mode has its own provider and model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Plan,
    #[default]
    Act,
}

impl Mode {
    /// `plan` or `act`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            Self::Act => "act",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "plan" => Ok(Self::Plan),
            "act" => Ok(Self::Act),
            other => Err(format!("unknown mode `{other}`: use `plan` or `act`")),
        }
    }
}

/// How hard a reasoning model thinks (SPEC R3.1); unknown values read as `medium`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    None,
    Low,
    #[default]
    Medium,
    High,
    Xhigh,
}

impl ReasoningEffort {
    /// Parses an effort; anything unknown is `Medium`, as in the reference.
    pub fn parse_lenient(s: &str) -> Self {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" => Self::None,
            "low" => Self::Low,
            "high" => Self::High,
            "xhigh" => Self::Xhigh,
            _ => Self::Medium,
        }
    }

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
        }
    }
}

impl<'de> Deserialize<'de> for ReasoningEffort {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(Self::parse_lenient(&s))
    }
}

/// One mode's choices (SPEC R3.1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModeSettings {
    /// Provider id (`anthropic`, `openrouter`, …). Missing or unknown → Anthropic (R3.4).
    pub provider: Option<String>,
    /// Model id; missing → the provider's default model.
    #[serde(rename = "model")]
    pub model_id: Option<String>,
    /// Overrides of the model's info (context window, max tokens, prices, …), field by field.
    pub model_info: Option<toml::Table>,
    /// `none|low|medium|high|xhigh`; anything else reads as `medium`, with a warning.
    pub reasoning_effort: Option<String>,
    /// Thinking budget in tokens; 0 disables extended thinking.
    pub thinking_budget_tokens: u64,
    /// The failover chain (SPEC R12.1): entries tried in order when this mode's provider
    /// fails before any content with a rate limit, overload, quota, server, timeout or
    /// network error (or auth, spend-limit, entitlement).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<FallbackSettings>,
}

/// One entry of a mode's `fallbacks` (SPEC R12.1): any mode setting, plus the endpoint and
/// key variable when they differ from `[providers.ID]`'s.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FallbackSettings {
    /// Provider id (`openrouter`, `openai`, …); required.
    pub provider: Option<String>,
    /// Model id; missing → the provider's default model.
    #[serde(rename = "model")]
    pub model_id: Option<String>,
    /// Overrides of the model's info, as a mode's.
    pub model_info: Option<toml::Table>,
    /// As a mode's `reasoning_effort`.
    pub reasoning_effort: Option<String>,
    /// As a mode's `thinking_budget_tokens`.
    pub thinking_budget_tokens: u64,
    /// Base URL for this entry only (else `[providers.ID] base_url`, else the preset's).
    pub base_url: Option<String>,
    /// The environment variable holding this entry's key (else the provider's).
    pub api_key_env: Option<String>,
}

impl FallbackSettings {
    /// The entry as mode settings (without fallbacks of its own).
    pub fn mode_settings(&self) -> ModeSettings {
        ModeSettings {
            provider: self.provider.clone(),
            model_id: self.model_id.clone(),
            model_info: self.model_info.clone(),
            reasoning_effort: self.reasoning_effort.clone(),
            thinking_budget_tokens: self.thinking_budget_tokens,
            fallbacks: Vec::new(),
        }
    }

    /// `provider:model` as the entry was written (`(default model)` when it names none), as
    /// `--fallback` takes it and messages show it.
    pub fn label(&self) -> String {
        format!(
            "{}:{}",
            self.provider.as_deref().unwrap_or("").trim(),
            self.model_id.as_deref().unwrap_or("(default model)")
        )
    }

    /// Parses `PROVIDER:MODEL` (the `--fallback` flag). The model may itself hold colons
    /// (`ollama:qwen3:8b`); `None` when either part is empty.
    pub fn parse_flag(text: &str) -> Option<Self> {
        let (provider, model) = text.split_once(':')?;
        let (provider, model) = (provider.trim(), model.trim());
        (!provider.is_empty() && !model.is_empty()).then(|| Self {
            provider: Some(provider.to_owned()),
            model_id: Some(model.to_owned()),
            ..Self::default()
        })
    }
}

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

/// Where a provider's requests go through.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub enum Proxy {
    /// The proxy environment variables (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`).
    #[default]
    Environment,
    /// No proxy, whatever the environment says (`proxy = "none"`).
    Off,
    /// This proxy (`NO_PROXY` still exempts hosts).
    Url(ProxyUrl),
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Environment => f.write_str("Environment"),
            Self::Off => f.write_str("Off"),
            Self::Url(url) => write!(f, "Url({url})"),
        }
    }
}

impl fmt::Display for Proxy {
    /// `environment`, `none`, or the URL with any password hidden.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Environment => f.write_str("environment"),
            Self::Off => f.write_str("none"),
            Self::Url(url) => url.fmt(f),
        }
    }
}

impl<'de> Deserialize<'de> for Proxy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        let raw = raw.trim();
        if raw.eq_ignore_ascii_case("none") {
            return Ok(Self::Off);
        }
        ProxyUrl::new(raw).map(Self::Url).ok_or_else(|| {
            serde::de::Error::custom(
                "`proxy` must be an http:// or https:// URL (http://host:port), or \"none\"",
            )
        })
    }
}

impl Serialize for Proxy {
    /// As [`Display`](fmt::Display) writes it: a password is never serialized.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A proxy URL. `Debug` and `Display` replace a password (`http://user:…@host:3128`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ProxyUrl(Arc<str>);

impl ProxyUrl {
    /// An `http://` or `https://` URL with a host, or `None`.
    pub fn new(url: &str) -> Option<Self> {
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))?;
        let authority = rest.split('/').next().unwrap_or("");
        let host = authority.rsplit('@').next().unwrap_or("");
        (!host.is_empty() && !url.contains(char::is_whitespace)).then(|| Self(Arc::from(url)))
    }

    /// The URL itself, credentials included, for the HTTP client only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ProxyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (scheme, rest) = self.0.split_once("://").unwrap_or(("", &self.0));
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        match authority.rsplit_once('@') {
            Some((user, host)) => {
                let user = user.split(':').next().unwrap_or("");
                write!(f, "{scheme}://{user}:…@{host}{path}")
            }
            None => f.write_str(&self.0),
        }
    }
}

impl fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProxyUrl({self})")
    }
}

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

/// Everything `build_api_handler` needs (DESIGN.md "Key types").
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApiConfiguration {
    /// The mode used when none is asked for.
    pub default_mode: Mode,
    pub plan: ModeSettings,
    pub act: ModeSettings,
    pub providers: ProviderSettings,
    /// The model catalogue models are looked up in; `None`: the built-in one. Set it to
    /// [`Catalogue::with_user_file`] to apply a user's `models.toml` (SPEC R2.5).
    pub catalogue: Option<Arc<Catalogue>>,
    /// The file's `store`: where tasks are kept (SPEC R13.1), `postgres://…` for a shared
    /// PostgreSQL store or `sqlite:PATH`; `None`: the SQLite file in the data directory. Read
    /// by the task layer (switchyard-core), not by providers.
    pub store: Option<StoreUrl>,
    /// The `[limits]` section: spend caps (SPEC R12.2).
    pub limits: LimitsSettings,
}

/// The `store` setting. It may hold a database password: `Debug` and `Display` replace it
/// (`postgres://user:…@host/db`), as [`ProxyUrl`]'s do.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct StoreUrl(Arc<str>);

impl StoreUrl {
    /// Wraps the setting as written.
    pub fn new(url: impl Into<String>) -> Self {
        Self(Arc::from(url.into()))
    }

    /// The setting itself, credentials included, for the database client only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some((scheme, rest)) = self.0.split_once("://") else {
            return f.write_str(&self.0);
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        // A query string can hold `password=…` too: left out.
        let path = path.split('?').next().unwrap_or("");
        match authority.rsplit_once('@') {
            Some((user, host)) => {
                let user = user.split(':').next().unwrap_or("");
                write!(f, "{scheme}://{user}:…@{host}{path}")
            }
            None => write!(f, "{scheme}://{authority}{path}"),
        }
    }
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreUrl({self})")
    }
}

impl<'de> Deserialize<'de> for StoreUrl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        if raw.trim().is_empty() {
            return Err(serde::de::Error::custom(
                "`store` is empty: write \"postgres://user@host:5432/db\" or \"sqlite:/path/to/switchyard.db\", or leave it out for the data directory's SQLite file",
            ));
        }
        Ok(Self::new(raw))
    }
}

/// The `[limits]` section (SPEC R12.2), USD.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsSettings {
    /// What one task may spend (the `--max-cost` flag overrides it).
    pub max_cost_usd: Option<f64>,
    /// What all tasks on the task store together may spend in one UTC day.
    pub max_cost_usd_per_day: Option<f64>,
}

/// The file's shape.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ConfigFile {
    mode: Option<Mode>,
    act: Option<ModeSettings>,
    plan: Option<ModeSettings>,
    providers: BTreeMap<String, ProviderEndpoint>,
    store: Option<StoreUrl>,
    limits: LimitsSettings,
}

/// A configuration problem a user can fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be parsed; names the file, line, column and field.
    #[error("{file}:{line}:{column}: {message}")]
    Parse {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// The file could not be read.
    #[error(
        "cannot read the configuration file {file}: {message}; check the path (or leave out --config to use the default file, or none)"
    )]
    Read { file: String, message: String },
    /// The provider needs a key and none of its variables is set.
    #[error(
        "no API key for provider `{provider}`: set the environment variable {var} (or name another variable with `api_key_env` under [providers.{provider}])"
    )]
    MissingApiKey { provider: String, var: String },
    /// The provider id is known but its wire family is not built yet.
    #[error(
        "provider `{provider}` speaks {family}, which this build of Switchyard does not support yet; choose another provider"
    )]
    UnsupportedProvider { provider: String, family: String },
    /// The provider needs something a terminal program cannot have (the reference's account
    /// service, its editor host); `reason` is the whole sentence, naming the provider.
    #[error("{reason}")]
    ProviderUnavailable { provider: String, reason: String },
    /// The provider's support was left out of this build (a Cargo feature of switchyard-api).
    #[error(
        "provider `{provider}` is not compiled into this build: enable the `{feature}` feature of switchyard-api (the switchyard command has it)"
    )]
    FeatureDisabled {
        provider: String,
        feature: &'static str,
    },
    /// The provider's HTTP client settings cannot be used (an unreadable CA bundle).
    #[error("[providers.{provider}]: {message}")]
    Http { provider: String, message: String },
    /// A `model_info` override does not fit `ModelInfo`.
    #[error("[{mode}.model_info] is invalid: {message}")]
    ModelInfo { mode: String, message: String },
    /// A provider id typed on the command line that Switchyard does not know (a configuration
    /// file keeps the fallback of SPEC R3.4 instead).
    #[error(
        "unknown provider id `{provider}`{}; `switchyard models` lists every id",
        did_you_mean(suggestion)
    )]
    UnknownProvider {
        provider: String,
        suggestion: Option<String>,
    },
    /// A model id typed on the command line that is not in the catalogue and is one edit away
    /// from one that is: most likely a typo (SPEC R2.3).
    #[error(
        "model `{model}` is not in Switchyard's catalogue for `{provider}`: did you mean `{suggestion}`? (To send `{model}` as typed, add it to models.toml in the configuration directory, or name it in the configuration file.)"
    )]
    UnknownModel {
        provider: String,
        model: String,
        suggestion: String,
    },
    /// A `region` that the provider does not have.
    #[error("[providers.{provider}] region `{region}` is not one of this provider's: use {known}")]
    Region {
        provider: String,
        region: String,
        known: String,
    },
    /// A limit of SPEC R12 that cannot work: a spend cap that is not a positive amount, a rate
    /// limit of 0.
    #[error("{file}: {setting} = {value} cannot be used: {what}")]
    Limit {
        file: String,
        setting: String,
        value: String,
        what: String,
    },
    /// A base URL is not an http(s) URL.
    #[error("base URL `{url}` for provider `{provider}` is not an http:// or https:// URL")]
    BaseUrl { provider: String, url: String },
}

/// ` (did you mean `X`?)` for an error message, or nothing.
fn did_you_mean(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default()
}

/// A TOML line as it may be shown in an error: when its key names something secret (a key,
/// token, secret, password, authorization or header value) the value is replaced by `…`, and
/// the value is returned so the error message can drop it too.
fn redact_secret_value(line: &str) -> (String, Option<&str>) {
    const SECRET_WORDS: [&str; 8] = [
        "key",
        "token",
        "secret",
        "password",
        "auth",
        "header",
        "credential",
        "proxy",
    ];
    let Some((name, value)) = line.split_once('=') else {
        return (line.to_owned(), None);
    };
    let lower = name.to_ascii_lowercase();
    let value = value.trim().trim_matches(['"', '\'']);
    let value_looks_secret =
        value.starts_with("sk-") || (value.len() >= 32 && !value.contains(['/', '.', ' ']));
    if SECRET_WORDS.iter().any(|w| lower.contains(w)) || value_looks_secret {
        (
            format!("{} = …", name.trim()),
            Some(value).filter(|v| !v.is_empty()),
        )
    } else {
        (line.to_owned(), None)
    }
}

/// A [`ConfigError::Parse`] for a TOML file that did not parse: the file, line, column and
/// toml's message, with the offending line quoted — except a value that may be a secret (a
/// key written into the file by mistake), which is never echoed.
pub(crate) fn toml_parse_error(text: &str, file: &str, e: &toml::de::Error) -> ConfigError {
    let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
    let raw_line = text.lines().nth(line - 1).unwrap_or("").trim();
    let mut message = e.message().trim().to_owned();
    let (source_line, secret) = redact_secret_value(raw_line);
    if let Some(secret) = secret {
        message = message.replace(secret, "…");
    }
    if !source_line.is_empty() && !message.contains(&source_line) {
        message = format!("{message} (in `{source_line}`)");
    }
    if message.contains("unknown field `api_key`") || message.contains("unknown field `key`") {
        message.push_str(
            "; keys are read from environment variables only: set the provider's variable (e.g. OPENAI_API_KEY) or name one with api_key_env",
        );
    }
    ConfigError::Parse {
        file: file.to_owned(),
        line,
        column,
        message,
    }
}

impl ApiConfiguration {
    /// Parses a configuration file's text. `file` names it in errors; `env` looks up
    /// environment variables (pass `|k| std::env::var(k).ok()`), read here for every key
    /// variable a provider may use.
    pub fn from_toml(
        text: &str,
        file: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let parsed: ConfigFile =
            toml::from_str(text).map_err(|e| toml_parse_error(text, file, &e))?;
        check_limits(&parsed, file)?;
        let act = parsed.act.unwrap_or_default();
        // Without a [plan] section both modes use the same settings, as the reference does
        // when "use different models for plan and act" is off.
        let plan = parsed.plan.unwrap_or_else(|| act.clone());
        let mut config = Self {
            default_mode: parsed.mode.unwrap_or_default(),
            plan,
            act,
            providers: ProviderSettings {
                endpoints: parsed.providers,
                api_keys: BTreeMap::new(),
                env: BTreeMap::new(),
            },
            catalogue: None,
            store: parsed.store,
            limits: parsed.limits,
        };
        config.read_keys(env);
        Ok(config)
    }

    /// Reads the configuration file at `path`.
    ///
    /// A relative `ca_bundle` path is taken relative to the file's folder.
    pub fn load(path: &Path, env: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            file: file.clone(),
            message: e.to_string(),
        })?;
        let mut config = Self::from_toml(&text, &file, env)?;
        let folder = path.parent().unwrap_or(Path::new(""));
        for endpoint in config.providers.endpoints.values_mut() {
            if let Some(bundle) = endpoint.ca_bundle.as_mut().filter(|b| b.is_relative()) {
                *bundle = folder.join(&*bundle);
            }
        }
        Ok(config)
    }

    /// (Re)reads every key variable that any preset or `api_key_env` names, and the cloud
    /// settings of the environment.
    pub fn read_keys(&mut self, env: impl Fn(&str) -> Option<String>) {
        use crate::providers::presets::{CLOUD_SETTING_VARS, secret_variables};
        let mut vars: Vec<String> = secret_variables().map(str::to_owned).collect();
        vars.extend(
            self.providers
                .endpoints
                .values()
                .filter_map(|e| e.api_key_env.clone()),
        );
        vars.extend(
            self.act
                .fallbacks
                .iter()
                .chain(&self.plan.fallbacks)
                .filter_map(|f| f.api_key_env.clone()),
        );
        for var in CLOUD_SETTING_VARS {
            if let Some(value) = env(var).filter(|v| !v.trim().is_empty()) {
                self.providers
                    .env
                    .insert((*var).to_owned(), value.trim().to_owned());
            }
        }
        for var in vars {
            if let Some(value) = env(&var).filter(|v| !v.trim().is_empty()) {
                self.providers
                    .api_keys
                    .insert(var, ApiKey::new(value.trim()));
            }
        }
    }

    /// The model catalogue in effect: [`ApiConfiguration::catalogue`], else the built-in one.
    pub fn catalogue(&self) -> &Catalogue {
        self.catalogue
            .as_deref()
            .unwrap_or_else(|| Catalogue::builtin())
    }

    /// The model table of `provider` in `region` (else its table without a region) in the
    /// catalogue in effect: [`ApiConfiguration::catalogue`]'s, else the built-in one, of which
    /// only that provider's data files are parsed ([`Catalogue::builtin_table`]).
    pub fn model_table(&self, provider: &str, region: Option<&str>) -> Option<&ModelTable> {
        match &self.catalogue {
            Some(catalogue) => catalogue.table(provider, region),
            None => Catalogue::builtin_table(provider, region),
        }
    }

    /// The settings of `mode`.
    pub fn mode_settings(&self, mode: Mode) -> &ModeSettings {
        match mode {
            Mode::Plan => &self.plan,
            Mode::Act => &self.act,
        }
    }

    /// The settings of `mode`, mutable (for command-line overrides).
    pub fn mode_settings_mut(&mut self, mode: Mode) -> &mut ModeSettings {
        match mode {
            Mode::Plan => &mut self.plan,
            Mode::Act => &mut self.act,
        }
    }
}

/// [`ConfigError::Limit`] for a spend cap that is not a positive amount of dollars or a rate
/// limit of 0 (SPEC R12.2, R12.3): either would stop every request.
fn check_limits(parsed: &ConfigFile, file: &str) -> Result<(), ConfigError> {
    let error = |setting: String, value: String, what: &str| ConfigError::Limit {
        file: file.to_owned(),
        setting,
        value,
        what: what.to_owned(),
    };
    for (name, cap) in [
        ("max_cost_usd", parsed.limits.max_cost_usd),
        ("max_cost_usd_per_day", parsed.limits.max_cost_usd_per_day),
    ] {
        if let Some(usd) = cap.filter(|c| !(c.is_finite() && *c > 0.0)) {
            return Err(error(
                format!("[limits] {name}"),
                usd.to_string(),
                "write a positive amount of US dollars (e.g. 2.50), or leave it out for no cap",
            ));
        }
    }
    for (provider, endpoint) in &parsed.providers {
        for (name, limit) in [
            ("requests_per_minute", endpoint.requests_per_minute),
            ("input_tokens_per_minute", endpoint.input_tokens_per_minute),
        ] {
            if limit == Some(0) {
                return Err(error(
                    format!("[providers.{provider}] {name}"),
                    "0".to_owned(),
                    "write at least 1, or leave it out for no limit",
                ));
            }
        }
    }
    Ok(())
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// An environment of `pairs`, for tests of configurations.
#[cfg(test)]
pub(crate) fn test_env(
    pairs: &'static [(&'static str, &'static str)],
) -> impl Fn(&str) -> Option<String> {
    move |k| {
        pairs
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| (*v).to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_env as env;

    #[test]
    fn a_key_written_into_the_file_is_never_echoed_in_the_error() {
        let text = "[act]\nprovider = \"openai\"\napi_key = \"sk-inline-SECRET123\"\n";
        let e = ApiConfiguration::from_toml(text, "c.toml", |_| None)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("SECRET123"), "{e}");
        assert!(
            e.contains("api_key = …") && e.contains("environment variables only"),
            "{e}"
        );
        // A type error on a secret-looking value drops it from toml's own message too.
        let text = "[act]\nmax_tokens = \"sk-ant-SECRET456\"\n";
        let e = ApiConfiguration::from_toml(text, "c.toml", |_| None)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("SECRET456"), "{e}");
        // Ordinary lines are still quoted.
        let text = "[act]\nprovider = 7\n";
        let e = ApiConfiguration::from_toml(text, "c.toml", |_| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("provider = 7"), "{e}");
    }

    #[test]
    fn limits_that_would_stop_every_request_are_refused() {
        for (text, named) in [
            (
                "[limits]\nmax_cost_usd = -1.0\n",
                "[limits] max_cost_usd = -1",
            ),
            (
                "[limits]\nmax_cost_usd_per_day = 0.0\n",
                "max_cost_usd_per_day = 0",
            ),
            (
                "[providers.openai]\nrequests_per_minute = 0\n",
                "[providers.openai] requests_per_minute = 0",
            ),
        ] {
            let e = ApiConfiguration::from_toml(text, "c.toml", env(&[]))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("c.toml: ") && e.contains(named), "{e}");
        }
        let ok = "[limits]\nmax_cost_usd = 2.5\n[providers.openai]\nrequests_per_minute = 1\n";
        let config = ApiConfiguration::from_toml(ok, "c.toml", env(&[])).unwrap();
        assert_eq!(config.limits.max_cost_usd, Some(2.5));
    }

    #[test]
    fn parse_errors_name_file_line_and_field() {
        let text = "[act]\nprovider = \"anthropic\"\nmodle = \"x\"\n";
        let e = ApiConfiguration::from_toml(text, "/tmp/c.toml", env(&[])).unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("/tmp/c.toml:3:"), "{s}");
        assert!(s.contains("modle"), "{s}");
    }
}
