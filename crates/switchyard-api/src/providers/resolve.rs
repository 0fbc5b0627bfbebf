//! From configuration to what a handler is built from, one function per step: provider, endpoint,
//! model, effort, clipped thinking budget and key.
//! Spec: R3.1, R3.2, R3.3, R3.4.

use crate::config::{
    ApiConfiguration, ApiKey, ConfigError, Mode, ProviderEndpoint, ProviderSettings,
    ReasoningEffort,
};
use crate::providers::cloud::resolve_cloud;
use crate::providers::endpoint::regional_endpoint;
use crate::providers::model_choice::{ChosenModel, choose_model};
use crate::providers::presets::{ProviderPreset, WireFamily, preset};

pub use crate::providers::cloud::CloudSettings;
#[cfg(feature = "bedrock")]
pub(crate) use crate::providers::endpoint::strip_cross_region_prefix;
pub use crate::providers::endpoint::{REGIONAL_ENDPOINTS, is_loopback, url_host};
pub(crate) use crate::providers::endpoint::{bedrock_base_url, vertex_base_url};
pub use crate::providers::model_choice::ModelInfoOrigin;
pub use crate::providers::resolved::{ProviderOptions, ResolvedMode};

/// Resolves `mode`'s provider, model, endpoint and key. A missing key is not an error here, so
/// `config check` can show everything else; see [`ResolvedMode::check_key`].
/// Spec: R2.3.
pub fn resolve_mode(config: &ApiConfiguration, mode: Mode) -> Result<ResolvedMode, ConfigError> {
    let settings = config.mode_settings(mode);
    let mut notices = Vec::new();
    let preset = choose_preset(settings.provider.as_deref(), mode, &mut notices)?;
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
    let base_url = base_url(preset, &endpoint, default_base_url)?;
    let region = regional.map(|(r, _)| r.to_owned());
    let ChosenModel {
        id,
        info,
        origin,
        nearest,
    } = choose_model(config, mode, preset, region.as_deref(), &mut notices)?;
    let reasoning_effort =
        reasoning_effort(settings.reasoning_effort.as_deref(), mode, &mut notices);
    let budget = clip_budget(
        settings.thinking_budget_tokens,
        info.max_tokens,
        &mut notices,
    );
    let (api_key_env, api_key) = find_key(preset, &endpoint, &config.providers);

    Ok(ResolvedMode {
        mode,
        provider_id: preset.id.to_owned(),
        preset,
        model_id: id,
        model_info: info,
        model_origin: origin,
        nearest_models: nearest,
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

/// The preset of the mode's provider id: an unknown or missing id falls back to Anthropic with a
/// notice, and a provider that cannot work from here is an error.
fn choose_preset(
    requested: Option<&str>,
    mode: Mode,
    notices: &mut Vec<String>,
) -> Result<&'static ProviderPreset, ConfigError> {
    let requested = requested.map(str::trim).filter(|s| !s.is_empty());
    let chosen = match requested.and_then(preset) {
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
    match chosen.family {
        WireFamily::NotYetSupported(family) => Err(ConfigError::UnsupportedProvider {
            provider: chosen.id.to_owned(),
            family: family.to_owned(),
        }),
        WireFamily::Unavailable(reason) => Err(ConfigError::ProviderUnavailable {
            provider: chosen.id.to_owned(),
            reason: reason.to_owned(),
        }),
        _ => Ok(chosen),
    }
}

/// The base URL without a trailing slash: the configured one, else `default`; `http(s)` unless the
/// handler finds it later, as for a child process or from SAP AI Core's service key.
fn base_url(
    preset: &ProviderPreset,
    endpoint: &ProviderEndpoint,
    default: String,
) -> Result<String, ConfigError> {
    let base_url = endpoint
        .base_url
        .clone()
        .unwrap_or(default)
        .trim()
        .trim_end_matches('/')
        .to_owned();
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
    Ok(base_url)
}

/// The mode's reasoning effort; an unknown value reads as `medium`, with a notice.
fn reasoning_effort(
    raw: Option<&str>,
    mode: Mode,
    notices: &mut Vec<String>,
) -> Option<ReasoningEffort> {
    raw.map(|raw| {
        let effort = ReasoningEffort::parse_lenient(raw);
        if effort.as_str() != raw.trim().to_ascii_lowercase() {
            notices.push(format!(
                "unknown reasoning effort `{raw}` for {} mode; using `medium` (known: none, low, medium, high, xhigh)",
                mode.as_str()
            ));
        }
        effort
    })
}

/// A budget over the model's known max output becomes that max less one, with a notice.
fn clip_budget(budget: u64, max_tokens: u64, notices: &mut Vec<String>) -> u64 {
    if budget > 0 && max_tokens > 0 && budget > max_tokens {
        let clipped = max_tokens - 1;
        notices.push(format!(
            "thinking budget {budget} exceeds the model's max output of {max_tokens} tokens; using {clipped}"
        ));
        return clipped;
    }
    budget
}

/// The key's variable and the key when set: the configured variable, else the first of the preset's
/// that is set, else the first it names.
fn find_key(
    preset: &ProviderPreset,
    endpoint: &ProviderEndpoint,
    providers: &ProviderSettings,
) -> (String, Option<ApiKey>) {
    let candidates: Vec<String> = match &endpoint.api_key_env {
        Some(v) => vec![v.clone()],
        None => preset.api_key_env.iter().map(|v| (*v).to_owned()).collect(),
    };
    let found = candidates
        .iter()
        .find_map(|v| providers.api_keys.get(v).map(|k| (v.clone(), k.clone())));
    match found {
        Some((var, key)) => (var, Some(key)),
        None => (candidates.first().cloned().unwrap_or_default(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_env as env;
    use crate::model::EntrySource;
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
        // A proxy (LiteLLM) or an OpenAI-compatible URL on this machine may forward to a paid
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
}
