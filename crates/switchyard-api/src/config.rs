//! `ApiConfiguration`, plan/act modes and `build_api_handler` (SPEC R3).
//!
//! The configuration is a TOML file (see the README's "Configuration") plus environment
//! variables for secrets. Keys are read once, when the configuration is loaded, into
//! [`ApiKey`] values whose `Debug` and `Display` never show them.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::handler::ApiHandler;
use crate::model::{ModelInfo, model_table};
use crate::providers::anthropic::AnthropicHandler;
use crate::providers::bedrock::BedrockHandler;
use crate::providers::gemini::GeminiHandler;
use crate::providers::ollama::OllamaHandler;
use crate::providers::openai_chat::OpenAiChatHandler;
use crate::providers::openai_responses::OpenAiResponsesHandler;
use crate::providers::presets::{ProviderPreset, WireFamily, preset};
use crate::providers::vertex::VertexHandler;

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
    pub region: Option<String>,
    /// Bedrock: the AWS profile of `~/.aws/config` to use (else `AWS_PROFILE`, else `default`).
    pub profile: Option<String>,
    /// Vertex: the Google Cloud project id (else `GOOGLE_CLOUD_PROJECT`, `GCLOUD_PROJECT`,
    /// then the project of the credentials).
    pub project: Option<String>,
    /// Vertex: a service-account or authorized-user JSON file (else
    /// `GOOGLE_APPLICATION_CREDENTIALS`, then gcloud's application-default credentials, then
    /// the metadata server).
    pub credentials_file: Option<String>,
    /// Bedrock: send Anthropic models through the region group's cross-region inference
    /// profile (`us.`, `eu.`, `apac.`, `jp.`; SPEC R4.8). Default false, as in the reference.
    pub use_cross_region_inference: Option<bool>,
    /// Bedrock: with cross-region inference, use the `global.` profile for models that have
    /// one. Default false.
    pub use_global_inference: Option<bool>,
}

/// An API key. `Debug` and `Display` print `[redacted]`; only the HTTP layer reads it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(Arc<str>);

impl ApiKey {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(Arc::from(secret.into()))
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
    /// Non-secret cloud settings from the environment ([`CLOUD_SETTING_VARS`]), by name.
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

/// Secret environment variables read for Bedrock besides the presets' key variables: the
/// static credentials of the AWS chain's first link (AWS "Environment variables" docs).
pub const AWS_SECRET_VARS: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
];

/// Non-secret environment variables read for Bedrock and Vertex: regions, profile, project
/// and the Google credentials file path.
pub const CLOUD_SETTING_VARS: &[&str] = &[
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
    "GCLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "CLOUD_ML_REGION",
];

/// Everything `build_api_handler` needs (DESIGN.md "Key types").
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApiConfiguration {
    /// The mode used when none is asked for.
    pub default_mode: Mode,
    pub plan: ModeSettings,
    pub act: ModeSettings,
    pub providers: ProviderSettings,
}

/// The file's shape.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ConfigFile {
    mode: Option<Mode>,
    act: Option<ModeSettings>,
    plan: Option<ModeSettings>,
    providers: BTreeMap<String, ProviderEndpoint>,
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
    /// A `model_info` override does not fit `ModelInfo`.
    #[error("[{mode}.model_info] is invalid: {message}")]
    ModelInfo { mode: String, message: String },
    /// A base URL is not an http(s) URL.
    #[error("base URL `{url}` for provider `{provider}` is not an http:// or https:// URL")]
    BaseUrl { provider: String, url: String },
}

/// A TOML line as it may be shown in an error: when its key names something secret (a key,
/// token, secret, password, authorization or header value) the value is replaced by `…`, and
/// the value is returned so the error message can drop it too.
fn redact_secret_value(line: &str) -> (String, Option<&str>) {
    const SECRET_WORDS: [&str; 7] = [
        "key",
        "token",
        "secret",
        "password",
        "auth",
        "header",
        "credential",
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

impl ApiConfiguration {
    /// Parses a configuration file's text. `file` names it in errors; `env` looks up
    /// environment variables (pass `|k| std::env::var(k).ok()`), read here for every key
    /// variable a provider may use.
    pub fn from_toml(
        text: &str,
        file: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let parsed: ConfigFile = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
            let raw_line = text.lines().nth(line - 1).unwrap_or("").trim();
            let mut message = e.message().trim().to_owned();
            // The offending line is quoted to help, but a value that may be a secret (a key
            // written into the file by mistake) is never echoed.
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
        })?;
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
        };
        config.read_keys(env);
        Ok(config)
    }

    /// Reads the configuration file at `path`.
    pub fn load(path: &Path, env: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            file: file.clone(),
            message: e.to_string(),
        })?;
        Self::from_toml(&text, &file, env)
    }

    /// (Re)reads every key variable that any preset or `api_key_env` names.
    pub fn read_keys(&mut self, env: impl Fn(&str) -> Option<String>) {
        let mut vars: Vec<String> = crate::providers::presets::PRESETS
            .iter()
            .flat_map(|p| p.api_key_env.iter().map(|v| (*v).to_owned()))
            .collect();
        vars.extend(
            self.providers
                .endpoints
                .values()
                .filter_map(|e| e.api_key_env.clone()),
        );
        vars.extend(AWS_SECRET_VARS.iter().map(|v| (*v).to_owned()));
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

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// A mode's choices resolved against the presets and model tables: what a handler is built
/// from, and what `switchyard config check` prints.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedMode {
    pub mode: Mode,
    /// The provider id in effect (after the Anthropic fallback).
    pub provider_id: String,
    pub preset: &'static ProviderPreset,
    pub model_id: String,
    pub model_info: ModelInfo,
    /// Base URL without a trailing slash.
    pub base_url: String,
    /// The variable the key is read from, and the key when set.
    pub api_key_env: String,
    pub api_key: Option<ApiKey>,
    pub headers: BTreeMap<String, String>,
    /// Region, project, profile and credentials for Bedrock and Vertex (empty for others).
    pub cloud: CloudSettings,
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Thinking budget in tokens after the clip of SPEC R3.3.
    pub thinking_budget_tokens: u64,
    /// Warnings and notes for the user (unknown provider, unknown model, clipped budget).
    pub notices: Vec<String>,
}

/// Bedrock and Vertex settings resolved from `[providers.ID]` and the environment. Every
/// secret is an [`ApiKey`], so `Debug` never shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CloudSettings {
    /// The region when known before any request (Bedrock may still find one in the AWS
    /// profile at request time).
    pub region: Option<String>,
    /// Where the region came from (`[providers.bedrock] region`, `$AWS_REGION`, `default`).
    pub region_source: Option<String>,
    /// The AWS profile named in the settings or `AWS_PROFILE`.
    pub profile: Option<String>,
    /// `AWS_CONFIG_FILE` and `AWS_SHARED_CREDENTIALS_FILE` when set (else `~/.aws/config` and
    /// `~/.aws/credentials`).
    pub aws_config_file: Option<String>,
    pub aws_shared_credentials_file: Option<String>,
    /// The Google Cloud project when known before any request (else the credentials').
    pub project: Option<String>,
    /// Where the project came from.
    pub project_source: Option<String>,
    /// The Google credentials file named in the settings or `GOOGLE_APPLICATION_CREDENTIALS`.
    pub credentials_file: Option<String>,
    /// Bedrock cross-region inference (SPEC R4.8).
    pub use_cross_region_inference: bool,
    /// Bedrock `global.` inference profiles, with cross-region inference on.
    pub use_global_inference: bool,
    /// Static AWS credentials from the environment, when both parts are set.
    pub aws_access_key_id: Option<ApiKey>,
    pub aws_secret_access_key: Option<ApiKey>,
    pub aws_session_token: Option<ApiKey>,
    /// True when `base_url` was configured (tests, VPC endpoints, proxies): requests go there
    /// instead of the region's host.
    pub base_url_overridden: bool,
}

fn resolve_cloud(
    preset: &ProviderPreset,
    endpoint: &ProviderEndpoint,
    providers: &ProviderSettings,
) -> CloudSettings {
    let env = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| providers.env.get(*n).map(|v| (v.clone(), format!("${n}"))))
    };
    let configured = |v: &Option<String>, field: &str| {
        v.as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| (v.to_owned(), format!("[providers.{}] {field}", preset.id)))
    };
    let mut cloud = CloudSettings {
        base_url_overridden: endpoint.base_url.is_some(),
        use_cross_region_inference: endpoint.use_cross_region_inference.unwrap_or(false),
        use_global_inference: endpoint.use_global_inference.unwrap_or(false),
        ..CloudSettings::default()
    };
    let region = match preset.family {
        WireFamily::Bedrock => configured(&endpoint.region, "region")
            .or_else(|| env(&["AWS_REGION", "AWS_DEFAULT_REGION"])),
        WireFamily::Vertex => configured(&endpoint.region, "region")
            .or_else(|| env(&["GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"]))
            .or_else(|| Some(("global".to_owned(), "default".to_owned()))),
        _ => None,
    };
    if let Some((r, src)) = region {
        cloud.region = Some(r);
        cloud.region_source = Some(src);
    }
    match preset.family {
        WireFamily::Bedrock => {
            cloud.profile = configured(&endpoint.profile, "profile")
                .or_else(|| env(&["AWS_PROFILE"]))
                .map(|(p, _)| p);
            cloud.aws_config_file = env(&["AWS_CONFIG_FILE"]).map(|(p, _)| p);
            cloud.aws_shared_credentials_file =
                env(&["AWS_SHARED_CREDENTIALS_FILE"]).map(|(p, _)| p);
            let key = |n: &str| providers.api_keys.get(n).cloned();
            if let (Some(id), Some(secret)) =
                (key("AWS_ACCESS_KEY_ID"), key("AWS_SECRET_ACCESS_KEY"))
            {
                cloud.aws_access_key_id = Some(id);
                cloud.aws_secret_access_key = Some(secret);
                cloud.aws_session_token = key("AWS_SESSION_TOKEN");
            }
        }
        WireFamily::Vertex => {
            if let Some((p, src)) = configured(&endpoint.project, "project")
                .or_else(|| env(&["GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"]))
            {
                cloud.project = Some(p);
                cloud.project_source = Some(src);
            }
            cloud.credentials_file = configured(&endpoint.credentials_file, "credentials_file")
                .or_else(|| env(&["GOOGLE_APPLICATION_CREDENTIALS"]))
                .map(|(p, _)| p);
        }
        _ => {}
    }
    cloud
}

/// Resolves `mode`'s provider, model, endpoint and key (SPEC R3.2–R3.4, R2.3).
///
/// A missing key is not an error here (so `config check` can show everything else); see
/// [`ResolvedMode::check_key`]. Errors: [`ConfigError::UnsupportedProvider`],
/// [`ConfigError::ModelInfo`], [`ConfigError::BaseUrl`].
pub fn resolve_mode(config: &ApiConfiguration, mode: Mode) -> Result<ResolvedMode, ConfigError> {
    let settings = config.mode_settings(mode);
    let mut notices = Vec::new();
    let requested = settings
        .provider
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let preset = match requested.and_then(preset) {
        Some(p) => p,
        None => {
            match requested {
                Some(id) => notices.push(format!(
                    "unknown provider id `{id}` for {} mode; falling back to `anthropic` (known ids: see `switchyard models`)",
                    mode.as_str()
                )),
                None => notices.push(format!(
                    "no provider set for {} mode; using `anthropic`",
                    mode.as_str()
                )),
            }
            preset("anthropic").ok_or_else(|| ConfigError::UnsupportedProvider {
                provider: "anthropic".into(),
                family: "Anthropic Messages".into(),
            })?
        }
    };
    if let WireFamily::NotYetSupported(family) = preset.family {
        return Err(ConfigError::UnsupportedProvider {
            provider: preset.id.to_owned(),
            family: family.to_owned(),
        });
    }
    let endpoint = config
        .providers
        .endpoints
        .get(preset.id)
        .cloned()
        .unwrap_or_default();

    // Model id and info (SPEC R2.3).
    let requested_model = settings
        .model_id
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let table = model_table(preset.id);
    let (model_id, mut model_info) = match (requested_model, table) {
        (Some(id), Some(t)) => match t.models.get(id).or_else(|| {
            // A Bedrock inference-profile id (`us.anthropic.…`) has its base model's info.
            (preset.family == WireFamily::Bedrock)
                .then(|| crate::providers::bedrock::strip_cross_region_prefix(id))
                .flatten()
                .and_then(|base| t.models.get(base))
        }) {
            Some(info) => (id.to_owned(), info.clone()),
            None if preset.any_model_id => (id.to_owned(), ModelInfo::default()),
            None => {
                let (def, info) = t.default_model();
                notices.push(format!(
                    "unknown model id `{id}` for provider `{}`; using its default model `{def}`",
                    preset.id
                ));
                (def, info)
            }
        },
        (Some(id), None) => (id.to_owned(), ModelInfo::default()),
        (None, Some(t)) => t.default_model(),
        (None, None) => (preset.default_model.to_owned(), ModelInfo::default()),
    };
    if let Some(overrides) = &settings.model_info {
        model_info = apply_model_info_overrides(&model_info, overrides).map_err(|message| {
            ConfigError::ModelInfo {
                mode: mode.as_str().to_owned(),
                message,
            }
        })?;
    }

    let reasoning_effort = settings.reasoning_effort.as_deref().map(|raw| {
        let effort = ReasoningEffort::parse_lenient(raw);
        if effort.as_str() != raw.trim().to_ascii_lowercase() {
            notices.push(format!(
                "unknown reasoning effort `{raw}` for {} mode; using `medium` (known: none, low, medium, high, xhigh)",
                mode.as_str()
            ));
        }
        effort
    });

    // Thinking-budget clip (SPEC R3.3).
    let mut budget = settings.thinking_budget_tokens;
    if budget > 0 && model_info.max_tokens > 0 && budget > model_info.max_tokens {
        let clipped = model_info.max_tokens - 1;
        notices.push(format!(
            "thinking budget {budget} exceeds the model's max output of {} tokens; using {clipped}",
            model_info.max_tokens
        ));
        budget = clipped;
    }

    let cloud = resolve_cloud(preset, &endpoint, &config.providers);
    let default_base_url = match preset.family {
        WireFamily::Bedrock => crate::providers::bedrock::default_base_url(cloud.region.as_deref()),
        WireFamily::Vertex => crate::providers::vertex::default_base_url(cloud.region.as_deref()),
        _ => preset.base_url.to_owned(),
    };
    let base_url = endpoint
        .base_url
        .clone()
        .unwrap_or(default_base_url)
        .trim()
        .trim_end_matches('/')
        .to_owned();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(ConfigError::BaseUrl {
            provider: preset.id.to_owned(),
            url: base_url,
        });
    }

    // Key lookup: the configured variable, else the preset's variables in order.
    let candidates: Vec<String> = match &endpoint.api_key_env {
        Some(v) => vec![v.clone()],
        None => preset.api_key_env.iter().map(|v| (*v).to_owned()).collect(),
    };
    let found = candidates.iter().find_map(|v| {
        config
            .providers
            .api_keys
            .get(v)
            .map(|k| (v.clone(), k.clone()))
    });
    let (api_key_env, api_key) = match found {
        Some((var, key)) => (var, Some(key)),
        None => (candidates.first().cloned().unwrap_or_default(), None),
    };

    Ok(ResolvedMode {
        mode,
        provider_id: preset.id.to_owned(),
        preset,
        model_id,
        model_info,
        base_url,
        api_key_env,
        api_key,
        headers: endpoint.headers,
        cloud,
        reasoning_effort,
        thinking_budget_tokens: budget,
        notices,
    })
}

impl ResolvedMode {
    /// The model id and info a handler built from this reports.
    pub fn handler_model(&self) -> crate::handler::ApiHandlerModel {
        crate::handler::ApiHandlerModel {
            id: self.model_id.clone(),
            info: self.model_info.clone(),
        }
    }

    /// True when the provider needs a key here: it requires one and the base URL is not on
    /// this machine (local servers need none).
    pub fn needs_key(&self) -> bool {
        self.preset.key_required && !is_loopback(&self.base_url)
    }

    /// `Err(MissingApiKey)` naming the variable when a needed key is not set.
    pub fn check_key(&self) -> Result<(), ConfigError> {
        if self.api_key.is_none() && self.needs_key() {
            return Err(ConfigError::MissingApiKey {
                provider: self.provider_id.clone(),
                var: self.api_key_env.clone(),
            });
        }
        Ok(())
    }
}

/// True for URLs on this machine (`localhost`, `127.0.0.0/8`, `[::1]`): local servers need no key.
pub fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = if let Some(h) = host.strip_prefix('[') {
        h.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    host == "localhost" || host == "::1" || host.starts_with("127.")
}

fn apply_model_info_overrides(
    base: &ModelInfo,
    overrides: &toml::Table,
) -> Result<ModelInfo, String> {
    let mut table = toml::Table::try_from(base).map_err(|e| e.to_string())?;
    for (k, v) in overrides {
        table.insert(k.clone(), v.clone());
    }
    toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| e.message().to_owned())
}

/// Builds the handler for `mode` (SPEC R3.2): resolves the mode, applies the thinking-budget
/// clip, checks the key ([`ConfigError::MissingApiKey`] names the variable), and constructs the provider's handler without any network request (R3.5).
/// Notices (unknown provider → Anthropic, unknown model → default, clipped budget) are logged
/// as warnings (R3.4).
pub fn build_api_handler(
    config: &ApiConfiguration,
    mode: Mode,
) -> Result<Box<dyn ApiHandler>, ConfigError> {
    let resolved = resolve_mode(config, mode)?;
    for notice in &resolved.notices {
        tracing::warn!("{notice}");
    }
    resolved.check_key()?;
    Ok(handler_for(resolved))
}

/// Builds the handler for an already resolved mode: the preset's wire family, and for the
/// OpenAI family the Responses API when the model's `api_format` is `responses`.
pub fn handler_for(resolved: ResolvedMode) -> Box<dyn ApiHandler> {
    match resolved.preset.family {
        WireFamily::Anthropic => Box::new(AnthropicHandler::new(resolved)),
        WireFamily::Ollama => Box::new(OllamaHandler::new(resolved)),
        WireFamily::Gemini => Box::new(GeminiHandler::new(resolved)),
        WireFamily::Bedrock => Box::new(BedrockHandler::new(resolved)),
        WireFamily::Vertex => Box::new(VertexHandler::new(resolved)),
        WireFamily::OpenAiChat
            if resolved.model_info.api_format.as_deref() == Some("responses") =>
        {
            Box::new(OpenAiResponsesHandler::new(resolved))
        }
        WireFamily::OpenAiChat | WireFamily::NotYetSupported(_) => {
            Box::new(OpenAiChatHandler::new(resolved))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn thinking_budget_is_clipped_to_max_tokens_minus_one() {
        let text = r#"
[act]
provider = "anthropic"
model = "claude-3-7-sonnet-20250219"
thinking_budget_tokens = 20000
"#;
        let c = ApiConfiguration::from_toml(text, "c.toml", env(&[("ANTHROPIC_API_KEY", "sk-x")]))
            .unwrap();
        let r = resolve_mode(&c, Mode::Act).unwrap();
        assert_eq!(r.model_info.max_tokens, 8192);
        assert_eq!(r.thinking_budget_tokens, 8191);
        // Within the limit: unchanged.
        let text = text.replace("20000", "8192");
        let c = ApiConfiguration::from_toml(&text, "c.toml", env(&[("ANTHROPIC_API_KEY", "k")]))
            .unwrap();
        assert_eq!(
            resolve_mode(&c, Mode::Act).unwrap().thinking_budget_tokens,
            8192
        );
    }

    #[test]
    fn unknown_provider_falls_back_to_anthropic_with_a_warning() {
        let text = "[act]\nprovider = \"antropic\"\n";
        let c = ApiConfiguration::from_toml(text, "c.toml", env(&[("ANTHROPIC_API_KEY", "k")]))
            .unwrap();
        let r = resolve_mode(&c, Mode::Act).unwrap();
        assert_eq!(r.provider_id, "anthropic");
        assert!(r.notices[0].contains("`antropic`"), "{:?}", r.notices);
    }

    #[test]
    fn plan_and_act_are_separate_and_plan_defaults_to_act() {
        let text =
            "[act]\nprovider = \"deepseek\"\n[plan]\nprovider = \"openrouter\"\nmodel = \"x/y\"\n";
        let keys = env(&[("DEEPSEEK_API_KEY", "d"), ("OPENROUTER_API_KEY", "o")]);
        let c = ApiConfiguration::from_toml(text, "c.toml", keys).unwrap();
        assert_eq!(
            resolve_mode(&c, Mode::Plan).unwrap().provider_id,
            "openrouter"
        );
        assert_eq!(resolve_mode(&c, Mode::Plan).unwrap().model_id, "x/y");
        assert_eq!(
            resolve_mode(&c, Mode::Act).unwrap().model_id,
            "deepseek-chat"
        );
        let c = ApiConfiguration::from_toml(
            "[act]\nprovider = \"deepseek\"\n",
            "c",
            env(&[("DEEPSEEK_API_KEY", "d")]),
        )
        .unwrap();
        assert_eq!(
            resolve_mode(&c, Mode::Plan).unwrap().provider_id,
            "deepseek"
        );
    }

    #[test]
    fn unknown_model_of_fixed_table_uses_default_with_note() {
        let c = ApiConfiguration::from_toml(
            "[act]\nprovider = \"deepseek\"\nmodel = \"deepseek-nope\"\n",
            "c",
            env(&[("DEEPSEEK_API_KEY", "d")]),
        )
        .unwrap();
        let r = resolve_mode(&c, Mode::Act).unwrap();
        assert_eq!(r.model_id, "deepseek-chat");
        assert!(r.notices[0].contains("deepseek-nope"));
    }

    #[test]
    fn missing_key_names_the_variable_and_loopback_needs_none() {
        let c = ApiConfiguration::from_toml("[act]\nprovider = \"groq\"\n", "c", env(&[])).unwrap();
        let e = build_api_handler(&c, Mode::Act).err().unwrap();
        assert!(e.to_string().contains("GROQ_API_KEY"), "{e}");
        let text = "[act]\nprovider = \"openai\"\nmodel = \"m\"\n[providers.openai]\nbase_url = \"http://127.0.0.1:8089/v1/\"\n";
        let c = ApiConfiguration::from_toml(text, "c", env(&[])).unwrap();
        let r = resolve_mode(&c, Mode::Act).unwrap();
        assert_eq!(r.base_url, "http://127.0.0.1:8089/v1");
        assert!(r.api_key.is_none());
    }

    #[test]
    fn parse_errors_name_file_line_and_field() {
        let text = "[act]\nprovider = \"anthropic\"\nmodle = \"x\"\n";
        let e = ApiConfiguration::from_toml(text, "/tmp/c.toml", env(&[])).unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("/tmp/c.toml:3:"), "{s}");
        assert!(s.contains("modle"), "{s}");
    }

    #[test]
    fn keys_never_show_in_debug() {
        let c =
            ApiConfiguration::from_toml("", "c", env(&[("ANTHROPIC_API_KEY", "sk-secret-123")]))
                .unwrap();
        let r = resolve_mode(&c, Mode::Act).unwrap();
        assert!(!format!("{c:?}{r:?}").contains("sk-secret-123"));
    }

    #[test]
    fn model_info_overrides_apply_field_by_field() {
        let text = "[act]\nprovider = \"openai\"\nmodel = \"local\"\n[act.model_info]\ncontext_window = 2048\nmax_tokens = 256\n[providers.openai]\nbase_url = \"http://localhost:1/v1\"\n";
        let c = ApiConfiguration::from_toml(text, "c", env(&[])).unwrap();
        let r = resolve_mode(&c, Mode::Act).unwrap();
        assert_eq!(
            (r.model_info.context_window, r.model_info.max_tokens),
            (2048, 256)
        );
        let bad = text.replace("2048", "\"big\"");
        let c = ApiConfiguration::from_toml(&bad, "c", env(&[])).unwrap();
        assert!(matches!(
            resolve_mode(&c, Mode::Act),
            Err(ConfigError::ModelInfo { .. })
        ));
    }

    #[test]
    fn unknown_reasoning_effort_reads_as_medium_with_a_warning() {
        let text =
            "[act]\nprovider = \"openai-native\"\nmodel = \"o3\"\nreasoning_effort = \"extreme\"\n";
        let c = ApiConfiguration::from_toml(text, "c", env(&[("OPENAI_API_KEY", "k")])).unwrap();
        let r = resolve_mode(&c, Mode::Act).unwrap();
        assert_eq!(r.reasoning_effort, Some(ReasoningEffort::Medium));
        assert!(
            r.notices.iter().any(|n| n.contains("`extreme`")),
            "{:?}",
            r.notices
        );
        let c = ApiConfiguration::from_toml(
            &text.replace("extreme", "High"),
            "c",
            env(&[("OPENAI_API_KEY", "k")]),
        )
        .unwrap();
        let r = resolve_mode(&c, Mode::Act).unwrap();
        assert_eq!(r.reasoning_effort, Some(ReasoningEffort::High));
        assert!(r.notices.is_empty(), "{:?}", r.notices);
    }

    #[test]
    fn loopback_detection() {
        assert!(is_loopback("http://127.0.0.1:8089/v1"));
        assert!(is_loopback("http://localhost/v1"));
        assert!(is_loopback("http://[::1]:80/v1"));
        assert!(!is_loopback("https://api.openai.com/v1"));
        assert!(!is_loopback("https://localhost.evil.com/v1"));
    }
}
