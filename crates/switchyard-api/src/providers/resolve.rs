//! From configuration to what a handler is built from: a mode's provider, model, endpoint,
//! key and connection settings, resolved against the presets and model tables
//! (SPEC R2.3, R3.1–R3.4, R4.8).

use std::collections::BTreeMap;

use crate::config::{
    ApiConfiguration, ApiKey, ConfigError, HttpSettings, Mode, ProviderEndpoint, ProviderSettings,
    ReasoningEffort,
};
use crate::handler::Deadlines;
use crate::model::catalogue::merge_fields;
use crate::model::lookup;
#[cfg(feature = "bedrock")]
use crate::model::lookup::CROSS_REGION_PREFIXES;
use crate::model::{EntrySource, ModelInfo};
use crate::providers::chat_body::is_reasoning_family;
use crate::providers::presets::{ProviderPreset, WireFamily, preset};

/// Providers with an endpoint per region, `(provider, region, base URL)`; a provider's first
/// row is its default, and qwen and zai also have a model table per region. From the
/// reference's handlers (v4.0.10 `qwen.ts`, `zai.ts`, `moonshot.ts`, `minimax.ts`: the
/// `qwenApiLine` / `zaiApiLine` / `moonshotApiLine` / `minimaxApiLine` options). The reference
/// defaults qwen to `china`; Switchyard defaults every provider to `international`, so that
/// one setting means the same for all four (and qwen's preset always was international).
pub const REGIONAL_ENDPOINTS: &[(&str, &str, &str)] = &[
    (
        "qwen",
        "international",
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
    ),
    (
        "qwen",
        "china",
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
    ),
    ("zai", "international", "https://api.z.ai/api/paas/v4"),
    ("zai", "china", "https://open.bigmodel.cn/api/paas/v4"),
    ("moonshot", "international", "https://api.moonshot.ai/v1"),
    ("moonshot", "china", "https://api.moonshot.cn/v1"),
    (
        "minimax",
        "international",
        "https://api.minimax.io/anthropic",
    ),
    ("minimax", "china", "https://api.minimaxi.com/anthropic"),
];

/// The region and its base URL for a provider of [`REGIONAL_ENDPOINTS`]: `configured`, else
/// the provider's first row. `Ok(None)` for other providers.
fn regional_endpoint(
    provider: &str,
    configured: Option<&str>,
) -> Result<Option<(&'static str, &'static str)>, ConfigError> {
    let rows: Vec<_> = REGIONAL_ENDPOINTS
        .iter()
        .filter(|(p, _, _)| *p == provider)
        .collect();
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let Some(wanted) = configured.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(Some((first.1, first.2)));
    };
    rows.iter()
        .find(|(_, r, _)| r.eq_ignore_ascii_case(wanted))
        .map(|(_, r, url)| Some((*r, *url)))
        .ok_or_else(|| ConfigError::Region {
            provider: provider.to_owned(),
            region: wanted.to_owned(),
            known: rows
                .iter()
                .map(|(_, r, _)| *r)
                .collect::<Vec<_>>()
                .join(" or "),
        })
}

/// Where a resolved model's info came from (SPEC R2.3).
#[derive(Debug, Clone, PartialEq)]
pub enum ModelInfoOrigin {
    /// The catalogue's entry for the model id.
    Catalogue { source: EntrySource },
    /// The entry of `base`, of which the model id is a dated or suffixed variant.
    Variant { base: String, source: EntrySource },
    /// No entry: the defaults of SPEC R2.3 (128k context, prices unknown).
    Defaults,
}

impl std::fmt::Display for ModelInfoOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Catalogue { source } => write!(f, "{source}"),
            Self::Variant { base, source } => write!(f, "`{base}` of {source}"),
            Self::Defaults => f.write_str("defaults (not in the catalogue)"),
        }
    }
}

/// True for the presets of model servers that run on the user's machine (Ollama, LM Studio:
/// the presets with the local-server retry policy, SPEC R5.1): what they serve costs nothing
/// and their model list is the user's own. A gateway on this machine (LiteLLM's proxy) or an
/// `openai` base URL on loopback may well forward to a paid provider: not these.
fn is_local_model_server(preset: &ProviderPreset) -> bool {
    preset.retry == crate::retry::RetryPolicy::LOCAL_SERVER
}

/// The info assumed for a model id the catalogue does not have (SPEC R2.3): 128k context,
/// no max output (the family's default is sent where one is required), prices unknown — $0 on
/// a local model server — and, for `openai-native`, the Responses API for OpenAI's reasoning
/// families (o1/o3/o4/gpt-5), which the reference sends there.
fn assumed_info(preset: &ProviderPreset, model_id: &str) -> ModelInfo {
    let mut info = ModelInfo::default();
    if preset.id == "openai-native" && is_reasoning_family(model_id) {
        info.api_format = Some("responses".to_owned());
        info.supports_reasoning = true;
        info.supports_reasoning_effort = true;
    }
    if is_local_model_server(preset) {
        info.input_price = Some(0.0);
        info.output_price = Some(0.0);
    }
    info
}

/// The one warning for a model id the catalogue does not have (SPEC R2.3).
fn unknown_model_notice(
    preset: &ProviderPreset,
    model_id: &str,
    info: &ModelInfo,
    suggestion: Option<&str>,
) -> String {
    let cw = crate::model::DEFAULT_CONTEXT_WINDOW;
    let mut assumed = vec![format!(
        "a {},{:03}-token context window",
        cw / 1000,
        cw % 1000
    )];
    if info.uses_responses_api() {
        assumed.push("the Responses API".to_owned());
    }
    let cost = if preset.dialect == crate::providers::ChatDialect::OpenRouter {
        "its cost as the provider reports it"
    } else {
        "its cost unknown"
    };
    let mut notice = format!(
        "model `{model_id}` is not in Switchyard's catalogue for `{}`: it is sent as typed, with {} assumed and {cost} (add it to models.toml in the configuration directory, or set [MODE.model_info], to describe it)",
        preset.id,
        assumed.join(" and "),
    );
    if let Some(s) = suggestion {
        notice.push_str(&format!("; did you mean `{s}`?"));
    }
    notice
}

/// The base model id of a Bedrock inference-profile id (`us.anthropic.x` → `anthropic.x`), or
/// `None` when `id` has no cross-region prefix.
#[cfg(feature = "bedrock")]
pub(crate) fn strip_cross_region_prefix(id: &str) -> Option<&str> {
    CROSS_REGION_PREFIXES
        .iter()
        .find_map(|p| id.strip_prefix(p))
        .filter(|rest| rest.contains('.'))
}

/// Bedrock's regional endpoint, `https://bedrock-runtime.{region}.amazonaws.com`; with no
/// region known yet, the same with a literal `{region}` that the handler fills in at request
/// time (AWS API reference, "Amazon Bedrock endpoints").
pub(crate) fn bedrock_base_url(region: Option<&str>) -> String {
    format!(
        "https://bedrock-runtime.{}.amazonaws.com",
        region.unwrap_or("{region}")
    )
}

/// The Vertex AI host for `region`: `https://aiplatform.googleapis.com` for `global` (and when
/// unknown), else `https://{region}-aiplatform.googleapis.com`
/// (cloud.google.com/vertex-ai/docs/reference/rest).
pub(crate) fn vertex_base_url(region: Option<&str>) -> String {
    match region {
        None | Some("global") => "https://aiplatform.googleapis.com".to_owned(),
        Some(r) => format!("https://{r}-aiplatform.googleapis.com"),
    }
}

/// A mode's choices resolved against the presets and model tables: what a handler is built
/// from, and what `switchyard config check` prints.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedMode {
    pub mode: Mode,
    /// The provider id in effect (after the Anthropic fallback).
    pub provider_id: String,
    pub preset: &'static ProviderPreset,
    /// The model id sent: the one configured, exactly as typed (SPEC R2.3), else the
    /// catalogue's default for the provider.
    pub model_id: String,
    /// What is known of the model (after `[MODE.model_info]` overrides).
    pub model_info: ModelInfo,
    /// Where `model_info` came from before any overrides.
    pub model_origin: ModelInfoOrigin,
    /// `international` or `china` for the providers of [`REGIONAL_ENDPOINTS`].
    pub region: Option<String>,
    /// Base URL without a trailing slash.
    pub base_url: String,
    /// The variable the key is read from, and the key when set.
    pub api_key_env: String,
    pub api_key: Option<ApiKey>,
    pub headers: BTreeMap<String, String>,
    /// Region, project, profile and credentials for Bedrock and Vertex (empty for others).
    pub cloud: CloudSettings,
    /// The HTTP client's settings: connect timeout, proxy, CA bundle (`[providers.ID]`).
    pub http: HttpSettings,
    /// The provider's first-content and idle deadlines (`[providers.ID]`); unset values are
    /// the defaults, 120 s and 300 s. A request's `RequestOptions::deadlines` overrides them.
    pub deadlines: Deadlines,
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Thinking budget in tokens after the clip of SPEC R3.3.
    pub thinking_budget_tokens: u64,
    /// The provider's own settings of `[providers.ID]` (OpenRouter routing, OAuth and SAP AI
    /// Core endpoints, the `claude` executable, …).
    pub options: ProviderOptions,
    /// Warnings and notes for the user (unknown provider, unknown model, clipped budget).
    pub notices: Vec<String>,
}

/// Settings of `[providers.ID]` that only some providers read (see [`ProviderEndpoint`]'s
/// fields of the same names). None is secret.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderOptions {
    /// OpenRouter's `parallel_tool_calls`; `None` is the reference's default, true.
    pub parallel_tool_calls: Option<bool>,
    /// OpenRouter's `provider.sort`.
    pub provider_sorting: Option<String>,
    /// An OAuth token endpoint (SAP AI Core; an override for `qwen-code`, `openai-codex`).
    pub token_url: Option<String>,
    /// SAP AI Core's resource group.
    pub resource_group: Option<String>,
    /// SAP AI Core's deployment id.
    pub deployment_id: Option<String>,
    /// The `claude` executable.
    pub command: Option<String>,
    /// AIhubmix's `APP-Code`.
    pub app_code: Option<String>,
    /// The credentials file of `qwen-code` and `openai-codex`.
    pub credentials_file: Option<String>,
}

impl ProviderOptions {
    fn from_endpoint(endpoint: &ProviderEndpoint) -> Self {
        let text = |v: &Option<String>| {
            v.as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        Self {
            parallel_tool_calls: endpoint.parallel_tool_calls,
            provider_sorting: text(&endpoint.provider_sorting),
            token_url: text(&endpoint.token_url).map(|u| u.trim_end_matches('/').to_owned()),
            resource_group: text(&endpoint.resource_group),
            deployment_id: text(&endpoint.deployment_id),
            command: text(&endpoint.command),
            app_code: text(&endpoint.app_code),
            credentials_file: text(&endpoint.credentials_file),
        }
    }
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
    match preset.family {
        WireFamily::NotYetSupported(family) => {
            return Err(ConfigError::UnsupportedProvider {
                provider: preset.id.to_owned(),
                family: family.to_owned(),
            });
        }
        WireFamily::Unavailable(reason) => {
            return Err(ConfigError::ProviderUnavailable {
                provider: preset.id.to_owned(),
                reason: reason.to_owned(),
            });
        }
        _ => {}
    }
    let endpoint = config
        .providers
        .endpoints
        .get(preset.id)
        .cloned()
        .unwrap_or_default();

    let cloud = resolve_cloud(preset, &endpoint, &config.providers);
    let regional = regional_endpoint(preset.id, endpoint.region.as_deref())?;
    let default_base_url = match (preset.family, regional) {
        (WireFamily::Bedrock, _) => bedrock_base_url(cloud.region.as_deref()),
        (WireFamily::Vertex, _) => vertex_base_url(cloud.region.as_deref()),
        (_, Some((_, url))) => url.to_owned(),
        _ => preset.base_url.to_owned(),
    };
    let base_url = endpoint
        .base_url
        .clone()
        .unwrap_or(default_base_url)
        .trim()
        .trim_end_matches('/')
        .to_owned();
    // A child process has no URL; SAP AI Core's comes from its service key when the handler
    // is built (`providers/sapaicore.rs`).
    let url_later = match preset.family {
        WireFamily::ClaudeCode => true,
        WireFamily::SapAiCore => endpoint.base_url.is_none(),
        _ => false,
    };
    if !(url_later || base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(ConfigError::BaseUrl {
            provider: preset.id.to_owned(),
            url: base_url,
        });
    }
    let region = regional.map(|(r, _)| r.to_owned());

    // Model id and info (SPEC R2.3): the typed id is the id sent.
    let requested_model = settings
        .model_id
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let table = config.model_table(preset.id, region.as_deref());
    let model_id = requested_model
        .map(str::to_owned)
        .or_else(|| table.and_then(|t| t.default.clone()))
        .unwrap_or_else(|| preset.default_model.to_owned());
    let (mut model_info, model_origin) = match table.and_then(|t| lookup::find(t, &model_id)) {
        Some(found) if found.exact => (
            found.info(),
            ModelInfoOrigin::Catalogue {
                source: found.entry.source.clone(),
            },
        ),
        Some(found) => (
            found.info(),
            ModelInfoOrigin::Variant {
                base: found.key.to_owned(),
                source: found.entry.source.clone(),
            },
        ),
        None => {
            let info = assumed_info(preset, &model_id);
            if settings.model_info.is_none() && !is_local_model_server(preset) {
                let suggestion = table.and_then(|t| lookup::suggest(t, &model_id));
                notices.push(unknown_model_notice(preset, &model_id, &info, suggestion));
            }
            (info, ModelInfoOrigin::Defaults)
        }
    };
    if let Some(overrides) = &settings.model_info {
        model_info = merge_fields(&model_info, overrides)
            .and_then(|info| {
                info.validate()
                    .map(|()| info)
                    .map_err(|(field, message)| format!("{field}: {message}"))
            })
            .map_err(|message| ConfigError::ModelInfo {
                mode: mode.as_str().to_owned(),
                message,
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
        model_origin,
        region,
        base_url,
        api_key_env,
        api_key,
        http: endpoint.http_settings(),
        deadlines: endpoint.deadlines(),
        options: ProviderOptions::from_endpoint(&endpoint),
        headers: endpoint.headers,
        cloud,
        reasoning_effort,
        thinking_budget_tokens: budget,
        notices,
    })
}

impl ResolvedMode {
    /// The model id, info and thinking budget a handler built from this reports.
    pub fn handler_model(&self) -> crate::handler::ApiHandlerModel {
        crate::handler::ApiHandlerModel {
            id: self.model_id.clone(),
            info: self.model_info.clone(),
            thinking_budget_tokens: self.thinking_budget_tokens,
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

/// The host and port of `url`, parsed and lower-case (`api.openai.com:443`,
/// `127.0.0.1:8089`, `[::1]:80`); `None` when it does not parse or names no host.
pub fn url_host(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed.host_str()?.to_ascii_lowercase();
    Some(match parsed.port_or_known_default() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    })
}

/// True for URLs on this machine (`localhost`, `127.0.0.0/8`, `[::1]`): local servers need no
/// key. The URL is parsed (WHATWG rules, the `url` crate through reqwest), so only its host
/// counts: `https://127.0.0.1.attacker.example` and `http://localhost@evil.example` are not
/// local. A URL that does not parse is not local.
pub fn is_loopback(url: &str) -> bool {
    use reqwest::Url;
    use std::net::IpAddr;
    let Ok(parsed) = Url::parse(url) else {
        return false;
    };
    let Some(host) = parsed.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => bare.trim_end_matches('.').eq_ignore_ascii_case("localhost"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_env as env;
    use crate::providers::build_api_handler;

    #[test]
    fn thinking_budget_is_clipped_to_max_tokens_minus_one() {
        let text = r#"
[act]
provider = "anthropic"
model = "claude-3-5-haiku-20241022"
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

    fn resolve(text: &str) -> ResolvedMode {
        let keys = env(&[
            ("DEEPSEEK_API_KEY", "d"),
            ("OPENAI_API_KEY", "o"),
            ("ANTHROPIC_API_KEY", "a"),
            ("DASHSCOPE_API_KEY", "q"),
            ("ZAI_API_KEY", "z"),
        ]);
        let c = ApiConfiguration::from_toml(text, "c.toml", keys).unwrap();
        resolve_mode(&c, Mode::Act).unwrap()
    }

    #[test]
    fn an_unknown_model_is_sent_as_typed_with_defaults_and_one_warning() {
        // SPEC R2.3: never the provider's default in its place (the reference's behaviour).
        let r = resolve("[act]\nprovider = \"deepseek\"\nmodel = \"deepseek-nope\"\n");
        assert_eq!(r.model_id, "deepseek-nope");
        assert_eq!(r.model_origin, ModelInfoOrigin::Defaults);
        assert_eq!(r.model_info.context_window, 128_000);
        assert_eq!(
            (r.model_info.input_price, r.model_info.output_price),
            (None, None)
        );
        assert_eq!(r.notices.len(), 1, "{:?}", r.notices);
        assert!(r.notices[0].contains("`deepseek-nope`"), "{:?}", r.notices);
        assert!(r.notices[0].contains("cost unknown"), "{:?}", r.notices);
        // One edit from a known id: the warning says which.
        let r = resolve("[act]\nprovider = \"deepseek\"\nmodel = \"deepseek-chot\"\n");
        assert_eq!(r.model_id, "deepseek-chot");
        assert!(
            r.notices[0].contains("did you mean `deepseek-chat`?"),
            "{:?}",
            r.notices
        );
    }

    #[test]
    fn an_unknown_openai_reasoning_id_goes_to_responses() {
        let r = resolve("[act]\nprovider = \"openai-native\"\nmodel = \"gpt-5.9-pro\"\n");
        assert_eq!(r.model_id, "gpt-5.9-pro");
        assert!(r.model_info.uses_responses_api());
        assert!(r.notices[0].contains("Responses API"), "{:?}", r.notices);
        let r = resolve("[act]\nprovider = \"openai-native\"\nmodel = \"gpt-4.5-turbo\"\n");
        assert!(!r.model_info.uses_responses_api());
    }

    #[test]
    fn a_typed_known_id_is_the_id_sent_with_its_info() {
        let r = resolve("[act]\nprovider = \"openai-native\"\nmodel = \"gpt-5.1\"\n");
        assert_eq!(r.model_id, "gpt-5.1");
        assert!(r.notices.is_empty(), "{:?}", r.notices);
        assert!(matches!(r.model_origin, ModelInfoOrigin::Catalogue { .. }));
        // A dated variant: sent as typed, the base's info.
        let r = resolve("[act]\nprovider = \"openai-native\"\nmodel = \"gpt-5.2-2026-01-15\"\n");
        assert_eq!(r.model_id, "gpt-5.2-2026-01-15");
        assert!(r.notices.is_empty(), "{:?}", r.notices);
        match &r.model_origin {
            ModelInfoOrigin::Variant { base, .. } => assert_eq!(base, "gpt-5.2"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn defaults_are_the_catalogues() {
        let r = resolve("[act]\nprovider = \"anthropic\"\n");
        assert_eq!(r.model_id, "claude-sonnet-5");
        assert!(r.notices.is_empty(), "{:?}", r.notices);
        let r = resolve("[act]\nprovider = \"openai-native\"\n");
        assert_eq!(r.model_id, "gpt-5.5");
    }

    #[test]
    fn qwen_and_zai_regions_pick_table_and_endpoint() {
        let r = resolve("[act]\nprovider = \"qwen\"\n");
        assert_eq!(r.region.as_deref(), Some("international"));
        assert_eq!(r.model_id, "qwen3-coder-plus");
        assert_eq!(
            r.base_url,
            "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"
        );
        let r = resolve("[act]\nprovider = \"qwen\"\n[providers.qwen]\nregion = \"china\"\n");
        assert_eq!(r.region.as_deref(), Some("china"));
        assert_eq!(r.model_id, "qwen3-235b-a22b");
        assert_eq!(
            r.base_url,
            "https://dashscope.aliyuncs.com/compatible-mode/v1"
        );
        // The reference's option name works too.
        let r = resolve("[act]\nprovider = \"zai\"\n[providers.zai]\napi_line = \"china\"\n");
        assert_eq!(r.base_url, "https://open.bigmodel.cn/api/paas/v4");
        assert!(matches!(
            &r.model_origin,
            ModelInfoOrigin::Catalogue { source: EntrySource::Reference { table } } if table == "mainlandZAiModels"
        ));
        let c = ApiConfiguration::from_toml(
            "[act]\nprovider = \"qwen\"\n[providers.qwen]\nregion = \"mars\"\n",
            "c",
            env(&[]),
        )
        .unwrap();
        let e = resolve_mode(&c, Mode::Act).unwrap_err().to_string();
        assert!(
            e.contains("`mars`") && e.contains("international or china"),
            "{e}"
        );
    }

    #[test]
    fn a_local_model_servers_model_is_free_and_unwarned() {
        for provider in ["ollama", "lmstudio"] {
            let r = resolve(&format!(
                "[act]\nprovider = \"{provider}\"\nmodel = \"my-local\"\n"
            ));
            assert!(r.notices.is_empty(), "{:?}", r.notices);
            assert_eq!(
                (r.model_info.input_price, r.model_info.output_price),
                (Some(0.0), Some(0.0))
            );
        }
        // A gateway or an OpenAI-compatible URL on this machine may forward to a paid
        // provider: its cost stays unknown.
        for text in [
            "[act]\nprovider = \"litellm\"\nmodel = \"my-model\"\n",
            "[act]\nprovider = \"openai\"\nmodel = \"m\"\n[providers.openai]\nbase_url = \"http://127.0.0.1:1/v1\"\n",
        ] {
            let r = resolve(text);
            assert_eq!(r.model_info.input_price, None, "{text}");
            assert_eq!(r.notices.len(), 1, "{text}");
        }
    }

    #[test]
    fn a_user_catalogue_describes_a_model() {
        let text = "[act]\nprovider = \"openai\"\nmodel = \"team-model\"\n";
        let mut c =
            ApiConfiguration::from_toml(text, "c", env(&[("OPENAI_API_KEY", "k")])).unwrap();
        let user = "[openai.models.\"team-model\"]\ncontext_window = 32000\ninput_price = 1.0\noutput_price = 4.0\n";
        c.catalogue = Some(std::sync::Arc::new(
            crate::model::Catalogue::with_user_text(user, std::path::Path::new("/m.toml")).unwrap(),
        ));
        let r = resolve_mode(&c, Mode::Act).unwrap();
        assert!(r.notices.is_empty(), "{:?}", r.notices);
        assert_eq!(r.model_info.context_window, 32_000);
        assert_eq!(r.model_info.output_price, Some(4.0));
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
        // The issue-14 finding: a host that starts like a loopback address is not one.
        assert!(!is_loopback("https://127.0.0.1.attacker.example/v1"));
        assert!(!is_loopback("http://localhost@evil.example/v1"));
        assert!(!is_loopback("http://127.0.0.1:8089@evil.example/v1"));
        assert!(!is_loopback("not a url"));
        assert!(is_loopback("http://127.0.0.2:1/v1"));
        assert!(is_loopback("http://LOCALHOST.:1/v1"));
    }
}
