//! `--base-url` without `--model`: the OpenAI-compatible server is asked which model it serves,
//! instead of sending a preset's default id to a server that has never heard of it.

use switchyard_api::{ApiConfiguration, Mode};

use super::refused::Refused;
use crate::cli::SelectionArgs;
use crate::settings::ConfigSource;

const ASKED_PROVIDER: &str = "openai";

const DEFAULT_KEY_VAR: &str = "OPENAI_API_KEY";

/// How many listed ids an error names before "…".
const NAMED: usize = 8;

/// Sets the mode's model to the one the server lists and says so, when no model is set
/// elsewhere; errors when the server lists none or several, or cannot say.
pub(super) async fn choose(
    config: &mut ApiConfiguration,
    source: &ConfigSource,
    mode: Mode,
    selection: &SelectionArgs,
) -> Result<(), Refused> {
    let Some(base_url) = selection.base_url.as_deref().map(str::trim) else {
        return Ok(());
    };
    let settings = config.mode_settings(mode);
    let unset = settings.model_id.is_none() || matches!(source, ConfigSource::BuiltInLocal);
    if selection.model.is_some() || !unset || settings.provider.as_deref() != Some(ASKED_PROVIDER) {
        return Ok(());
    }
    let endpoint = config
        .providers
        .endpoints
        .get(ASKED_PROVIDER)
        .cloned()
        .unwrap_or_default();
    let var = endpoint.api_key_env.as_deref().unwrap_or(DEFAULT_KEY_VAR);
    let key = config.providers.api_keys.get(var).map(|k| k.expose());
    let listed = switchyard_api::served_models(base_url, key, &endpoint.http_settings()).await;
    let model = one_model(base_url, listed).map_err(Refused::config)?;
    eprintln!(
        "note: using model {model}, the one model {base_url}/models lists (pass --model to choose another)"
    );
    config.mode_settings_mut(mode).model_id = Some(model);
    Ok(())
}

fn one_model(base_url: &str, listed: Result<Vec<String>, String>) -> Result<String, String> {
    match listed {
        Ok(mut ids) if ids.len() == 1 => Ok(ids.remove(0)),
        Ok(ids) if ids.is_empty() => Err(format!(
            "no --model was given and the server at {base_url} lists no models; pass --model MODEL"
        )),
        Ok(ids) => {
            let mut named = ids
                .iter()
                .take(NAMED)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if ids.len() > NAMED {
                named.push_str(", …");
            }
            Err(format!(
                "no --model was given and the server at {base_url} serves {} models ({named}); choose one with --model MODEL",
                ids.len()
            ))
        }
        Err(why) => Err(format!(
            "no --model was given and the server at {base_url} could not say which models it serves ({why}); pass --model MODEL"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::one_model;

    #[test]
    fn one_listed_model_is_chosen_and_any_other_answer_says_how_to_choose() {
        let url = "http://127.0.0.1:1/v1";
        assert_eq!(one_model(url, Ok(vec!["qwen".into()])), Ok("qwen".into()));
        let many: Vec<String> = (0..10).map(|i| format!("m{i}")).collect();
        let e = one_model(url, Ok(many)).unwrap_err();
        assert!(
            e.contains("serves 10 models (m0, m1, m2, m3, m4, m5, m6, m7, …)"),
            "{e}"
        );
        assert!(e.contains("--model"), "{e}");
        assert!(
            one_model(url, Ok(vec![]))
                .unwrap_err()
                .contains("lists no models")
        );
        let e = one_model(url, Err("GET x answered HTTP 404".into())).unwrap_err();
        assert!(e.contains("HTTP 404") && e.contains("pass --model"), "{e}");
    }
}
