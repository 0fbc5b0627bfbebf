//! Checking what the user typed: an unknown `--provider` (SPEC R3.4 keeps its fallback for a
//! file only) is an error naming the nearest id; any `--model` is sent as typed (R2.3, R2.5).

use switchyard_api::model::lookup::closest;
use switchyard_api::providers::presets::{PRESETS, preset};
use switchyard_api::{ApiConfiguration, ConfigError};

use crate::cli::SelectionArgs;

/// Checks what the user typed on the command line, once `config` (loaded with `selection`)
/// is in effect: an unknown `--provider` is an error naming the nearest id (a configuration
/// file keeps SPEC R3.4's fallback instead). A model id is never refused here: a model newer
/// than the catalogue is sent as typed with the resolver's one notice (SPEC R2.3), and a
/// typo costs one unbilled "model not found" answer, which names the nearest known ids
/// (R2.5).
///
/// # Errors
///
/// [`ConfigError::UnknownProvider`].
pub fn check_typed(
    config: &ApiConfiguration,
    selection: &SelectionArgs,
) -> Result<(), ConfigError> {
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
