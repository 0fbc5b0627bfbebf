//! From configuration to what a handler is built from: a mode's provider, model, endpoint,
//! key and connection settings, resolved against the presets and model tables
//! (SPEC R2.3, R3.1–R3.4, R4.8).

use std::collections::BTreeMap;

use crate::config::{
    ApiConfiguration, ApiKey, ConfigError, HttpSettings, Mode, ProviderEndpoint, ProviderSettings,
    ReasoningEffort,
};
use crate::handler::Deadlines;
use crate::model::{ModelInfo, model_table};
use crate::providers::presets::{ProviderPreset, WireFamily, preset};

/// Cross-region inference prefixes Bedrock uses in inference-profile ids.
const CROSS_REGION_PREFIXES: &[&str] = &[
    "us.", "eu.", "apac.", "jp.", "au.", "ca.", "us-gov.", "global.",
];

/// The base model id of a Bedrock inference-profile id (`us.anthropic.x` → `anthropic.x`), or
/// `None` when `id` has no cross-region prefix.
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
                .then(|| strip_cross_region_prefix(id))
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
        WireFamily::Bedrock => bedrock_base_url(cloud.region.as_deref()),
        WireFamily::Vertex => vertex_base_url(cloud.region.as_deref()),
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
