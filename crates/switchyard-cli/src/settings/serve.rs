//! A serve configuration loaded and checked: what `switchyard serve` reloads and
//! `switchyard config check` reports, by the same function.
//! Spec: R14.3a.

use std::path::Path;

use switchyard_api::{ApiConfiguration, Mode};

use super::load::{ConfigSource, load};
use crate::cli::SelectionArgs;

/// A serve configuration that checked, with what it warns of.
pub struct ServeConfig {
    pub config: ApiConfiguration,
    pub source: ConfigSource,
    pub warnings: Vec<String>,
}

/// The configuration `serve` would put in effect from `explicit`, or else the default file,
/// or why it must not: it does not read or parse, a setting is out of range, or a route
/// cannot be built. The reason never holds a key.
///
/// # Errors
///
/// Every problem found.
pub fn load_serve(explicit: Option<&Path>) -> Result<ServeConfig, Vec<String>> {
    let loaded = load(explicit, &SelectionArgs::default(), Some(Mode::Act));
    let (config, source, _) = loaded.map_err(|e| vec![scrubbed(e.to_string())])?;
    let (errors, warnings) = switchyard_gateway::check_routes(&config);
    if !errors.is_empty() {
        return Err(errors.into_iter().map(scrubbed).collect());
    }
    Ok(ServeConfig {
        config,
        source,
        warnings: warnings.into_iter().map(scrubbed).collect(),
    })
}

/// `text` with every registered key hidden: a parse error quotes the line it failed on.
fn scrubbed(mut text: String) -> String {
    switchyard_api::secrets::scrub_in_place(&mut text);
    text
}
