//! What a resumed task keeps when the configuration now says otherwise.
//! Spec: R10.3.

use std::path::Path;

use switchyard_api::{ApiConfiguration, Mode};
use switchyard_core::store::{TaskRecord, UNKNOWN_MODEL};

use super::refused::Refused;
use crate::cli::{SelectionArgs, TaskOptions};
use crate::endpoint::Endpoint;
use crate::settings;

/// A resumed task keeps its provider and model: `--model` alone keeps the provider, and
/// `--provider` takes that provider's configured model.
pub(super) fn keep_model(
    config: &mut ApiConfiguration,
    config_path: Option<&Path>,
    mode: Mode,
    selection: &SelectionArgs,
    task: &TaskRecord,
) -> Result<(), Refused> {
    let in_effect = config.mode_settings(mode);
    let same = in_effect.provider.as_deref() == Some(task.provider.as_str())
        && (selection.model.is_some()
            || in_effect.model_id.as_deref() == Some(task.model.as_str()));
    if !same && task.model != UNKNOWN_MODEL {
        let keep = SelectionArgs {
            provider: Some(task.provider.clone()),
            model: selection.model.clone().or_else(|| Some(task.model.clone())),
            ..selection.clone()
        };
        *config = settings::load(config_path, &keep, Some(mode))
            .map_err(Refused::config)?
            .0;
    }
    Ok(())
}

/// A resumed task goes where its conversation was held unless `--base-url` or
/// `--allow-new-host` say otherwise; returns the endpoint to record when it changed.
pub(super) fn keep_endpoint(
    config: &mut switchyard_api::ApiConfiguration,
    config_path: Option<&Path>,
    mode: Mode,
    options: &TaskOptions,
    recorded: Option<&Endpoint>,
    id: &str,
) -> Result<Option<Endpoint>, Refused> {
    let now = Endpoint::of(config, mode);
    let Some(recorded) = recorded else {
        return Ok(now);
    };
    let Some(mut now) = now else {
        return Ok(None);
    };
    if options.selection.base_url.is_none()
        && now.provider == recorded.provider
        && now.base_url != recorded.base_url
    {
        // The model in effect stays: naming the provider again would reset it.
        let keep = SelectionArgs {
            base_url: Some(recorded.base_url.clone()),
            provider: Some(recorded.provider.clone()),
            model: options
                .selection
                .model
                .clone()
                .or_else(|| config.mode_settings(mode).model_id.clone()),
        };
        *config = settings::load(config_path, &keep, Some(mode))
            .map_err(Refused::config)?
            .0;
        now = Endpoint::of(config, mode).unwrap_or(now);
    }
    if now.host() != recorded.host() && !options.allow_new_host {
        return Err(Refused::config(format!(
            "task {id} was held with {} at {}; this run would send it to {} at {}. Pass --base-url {} to stay, or --allow-new-host to move the conversation there",
            recorded.provider, recorded.base_url, now.provider, now.base_url, recorded.base_url
        )));
    }
    Ok((now != *recorded).then_some(now))
}
