//! The sign-in file of a provider that borrows a CLI's OAuth sign-in, set up without reading it.
//! Spec: R4.2, R3.5.

use std::path::PathBuf;

use crate::auth::signin_file::{Env, SigninSource, process_env};
use crate::config::ConfigError;
use crate::providers::provider::http_client;
use crate::providers::resolve::ResolvedMode;

/// The sign-in of `mode`: the configured `credentials_file` or the CLI's own, refreshed at
/// `token_url`, else at `default_token_url`. It reads nothing yet.
pub(crate) fn signin_source(
    mode: &ResolvedMode,
    default_token_url: &str,
    signin_path: fn(Option<&str>, Env<'_>) -> Option<PathBuf>,
) -> Result<SigninSource, ConfigError> {
    let token_url = mode
        .options
        .token_url
        .as_deref()
        .unwrap_or(default_token_url);
    let client = http_client(mode, token_url)?;
    let path = signin_path(mode.options.credentials_file.as_deref(), &process_env);
    Ok(SigninSource::new(path, token_url, client))
}
