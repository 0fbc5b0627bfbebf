//! The model a mode calls and what is known of it: the id as typed, its catalogue entry or the one
//! it is a variant of, else assumed defaults with one warning, then the mode's `[MODE.model_info]`
//! overrides.
//! Spec: R2.3, R2.5.

use crate::config::{ApiConfiguration, ConfigError, Mode};
use crate::error::ApiError;
use crate::model::catalogue::merge_fields;
use crate::model::lookup;
use crate::model::{EntrySource, ModelInfo};
use crate::providers::model_family::is_reasoning_family;
use crate::providers::presets::{ChatDialect, ProviderPreset};

/// Where a resolved model's info came from.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelInfoOrigin {
    /// The catalogue's entry for the model id.
    Catalogue { source: EntrySource },
    /// The entry of `base`, of which the model id is a dated or suffixed variant.
    Variant { base: String, source: EntrySource },
    /// No entry: the defaults, a 128k context and unknown prices.
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

/// Whether the preset is a model server on the user's machine, Ollama or LM Studio, whose models
/// cost nothing; a loopback proxy may forward to a paid provider, so it is not one.
fn is_local_model_server(preset: &ProviderPreset) -> bool {
    preset.retry == crate::retry::RetryPolicy::LOCAL_SERVER
}

/// The info assumed for a model id the catalogue lacks: a 128k context, no max output, prices
/// unknown or $0 on a local model server. On `openai-native`, OpenAI's reasoning families and newer
/// ones get the Responses API, where the reference sends them.
fn assumed_info(preset: &ProviderPreset, model_id: &str) -> ModelInfo {
    let mut info = ModelInfo::default();
    if preset.id == "openai-native" && (is_reasoning_family(model_id) || is_newer_family(model_id))
    {
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

/// An OpenAI family newer than the reference knows: `gpt-N` for N ≥ 6, `oN` for N ≥ 5, no "chat".
fn is_newer_family(model_id: &str) -> bool {
    let id = model_id.to_ascii_lowercase();
    let number_after = |prefix: &str| -> Option<u32> {
        let rest = id.strip_prefix(prefix)?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    !id.contains("chat")
        && (number_after("gpt-").is_some_and(|n| n >= 6)
            || number_after("o").is_some_and(|n| n >= 5))
}

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
    let cost = if preset.dialect == ChatDialect::OpenRouter {
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
/// The model a mode calls: its id, what is known of it, and where that came from.
pub(crate) struct ChosenModel {
    /// The id sent: as typed, else the table's or the preset's default.
    pub(crate) id: String,
    /// The info, after `[MODE.model_info]` overrides.
    pub(crate) info: ModelInfo,
    pub(crate) origin: ModelInfoOrigin,
    /// The catalogue's ids nearest to `id`, at most [`NEAREST`], for a "model not found" answer.
    pub(crate) nearest: Vec<String>,
}

/// How many known ids a "model not found" error names.
const NEAREST: usize = 3;

/// The model of `mode` under `preset` and its table for `region`: the typed id with the catalogue's
/// entry or the one it is a variant of, else assumed info with one notice unless on a local model
/// server or with `[MODE.model_info]`; then the mode's overrides, field by field. Fails with
/// [`ConfigError::ModelInfo`] when an override does not apply or leaves invalid info.
pub(crate) fn choose_model(
    config: &ApiConfiguration,
    mode: Mode,
    preset: &ProviderPreset,
    region: Option<&str>,
    notices: &mut Vec<String>,
) -> Result<ChosenModel, ConfigError> {
    let settings = config.mode_settings(mode);
    let requested = settings
        .model_id
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let table = config.model_table(preset.id, region);
    let id = requested
        .map(str::to_owned)
        .or_else(|| table.and_then(|t| t.default.clone()))
        .unwrap_or_else(|| preset.default_model.to_owned());
    let (mut info, origin) = match table.and_then(|t| lookup::find(t, &id)) {
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
            let info = assumed_info(preset, &id);
            if settings.model_info.is_none() && !is_local_model_server(preset) {
                let suggestion = table.and_then(|t| lookup::suggest(t, &id));
                notices.push(unknown_model_notice(preset, &id, &info, suggestion));
            }
            (info, ModelInfoOrigin::Defaults)
        }
    };
    if let Some(overrides) = &settings.model_info {
        info = merge_fields(&info, overrides)
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
    let nearest = table
        .map(|t| lookup::nearest(t, &id, NEAREST))
        .unwrap_or_default()
        .into_iter()
        .map(str::to_owned)
        .collect();
    Ok(ChosenModel {
        id,
        info,
        origin,
        nearest,
    })
}

/// `e` naming the catalogue's ids nearest to the model when it is the provider's "model not found"
/// answer, or saying how to list the ids when none is near.
pub(crate) fn name_nearest_models(mut e: ApiError, model_id: &str, nearest: &[String]) -> ApiError {
    let said = e.code.as_deref();
    if !crate::error::is_model_not_found(e.status, said, &e.message, model_id) {
        return e;
    }
    let hint = match nearest {
        [] => "`switchyard models` lists the ids Switchyard knows".to_owned(),
        ids => {
            let ids: Vec<String> = ids.iter().map(|id| format!("`{id}`")).collect();
            format!("did you mean {}?", ids.join(" or "))
        }
    };
    e.message = format!(
        "{} (the provider does not serve model `{model_id}`: {hint})",
        e.message.trim_end_matches('.')
    );
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_openai_families_are_recognised() {
        for id in [
            "gpt-6-codex",
            "gpt-6",
            "gpt-10-mini",
            "o5",
            "o5-mini",
            "GPT-7",
        ] {
            assert!(is_newer_family(id), "{id}");
        }
        for id in [
            "gpt-4o",
            "gpt-5",
            "o3",
            "gpt-6-chat-latest",
            "omni",
            "ollama",
            "o",
        ] {
            assert!(!is_newer_family(id), "{id}");
        }
    }

    #[test]
    fn a_model_not_found_answer_names_the_nearest_ids() {
        let e = ApiError::from_provider(
            Some(404),
            Some("model_not_found"),
            "The model `gpt-6-codex` does not exist or you do not have access to it.",
            None,
        );
        let nearest = vec!["gpt-5-codex".to_owned(), "gpt-5.1-codex".to_owned()];
        let e = name_nearest_models(e, "gpt-6-codex", &nearest);
        assert!(
            e.message
                .contains("did you mean `gpt-5-codex` or `gpt-5.1-codex`?"),
            "{}",
            e.message
        );
        // Any other failure is left as it was.
        let other =
            ApiError::from_provider(Some(400), None, "messages: roles must alternate", None);
        assert_eq!(
            name_nearest_models(other.clone(), "gpt-6-codex", &nearest),
            other
        );
        // No id near: say how to list them.
        let e = ApiError::from_provider(
            Some(404),
            Some("not_found_error"),
            "model: claude-zzz",
            None,
        );
        assert!(
            name_nearest_models(e, "claude-zzz", &[])
                .message
                .contains("switchyard models")
        );
    }
}
