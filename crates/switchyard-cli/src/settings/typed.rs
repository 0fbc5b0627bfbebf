//! Checking what the user typed: an unknown `--provider` (SPEC R3.4 keeps its fallback for a
//! file only) or a `--model` one edit away from a catalogue id (R2.3) is an error naming the
//! nearest id.

use switchyard_api::model::lookup::{closest, suggest};
use switchyard_api::providers::presets::{PRESETS, preset};
use switchyard_api::{ApiConfiguration, ConfigError, Mode, ModelInfoOrigin, resolve_mode};

use crate::cli::SelectionArgs;

/// Checks what the user typed on the command line, once `config` (loaded with `selection`
/// for `mode`) is in effect: an unknown `--provider` is an error naming the nearest id (a
/// configuration file keeps SPEC R3.4's fallback instead), and so is a `--model` that the
/// catalogue lacks and that is one edit away from an id it has, most likely a typo (SPEC
/// R2.3). Any other unknown model id is sent as typed, with the resolver's warning.
///
/// # Errors
///
/// [`ConfigError::UnknownProvider`], [`ConfigError::UnknownModel`].
pub fn check_typed(
    config: &ApiConfiguration,
    mode: Mode,
    selection: &SelectionArgs,
) -> Result<(), ConfigError> {
    check_provider(config, selection)?;
    if selection.model.is_some() {
        check_model(config, mode)?;
    }
    Ok(())
}

fn check_provider(config: &ApiConfiguration, selection: &SelectionArgs) -> Result<(), ConfigError> {
    let Some(typed) = selection.provider.as_deref().map(str::trim) else {
        return Ok(());
    };
    if preset(typed).is_some() {
        return Ok(());
    }
    let known = PRESETS
        .iter()
        .map(|p| p.id)
        .chain(config.catalogue().providers());
    Err(ConfigError::UnknownProvider {
        provider: typed.to_owned(),
        suggestion: closest(known, typed).map(str::to_owned),
    })
}

fn check_model(config: &ApiConfiguration, mode: Mode) -> Result<(), ConfigError> {
    let Ok(resolved) = resolve_mode(config, mode) else {
        // The task reports this problem itself.
        return Ok(());
    };
    if resolved.model_origin != ModelInfoOrigin::Defaults {
        return Ok(());
    }
    let suggestion = config
        .model_table(&resolved.provider_id, resolved.region.as_deref())
        .and_then(|t| suggest(t, &resolved.model_id));
    match suggestion {
        Some(s) => Err(ConfigError::UnknownModel {
            provider: resolved.provider_id,
            model: resolved.model_id,
            suggestion: s.to_owned(),
        }),
        None => Ok(()),
    }
}
