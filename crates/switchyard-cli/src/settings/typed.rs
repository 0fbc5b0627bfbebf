//! Checking what the user typed on the command line.
//! Spec: R2.3, R2.5, R3.4.

use switchyard_api::model::lookup::closest;
use switchyard_api::providers::presets::{PRESETS, preset};
use switchyard_api::{ApiConfiguration, ConfigError};

use crate::cli::SelectionArgs;

/// An unknown `--provider` is an error naming the nearest id; only a configuration file keeps
/// the unknown-id fallback.
///
/// A model id is never refused here: a model newer than the catalogue is sent as typed, and a
/// typo costs one unbilled "model not found" answer naming the nearest ids.
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
