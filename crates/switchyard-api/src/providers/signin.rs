//! The sign-in file of a provider that borrows a CLI's OAuth sign-in (Qwen Code, OpenAI Codex;
//! SPEC R4.2, R3.5): where it is and where its token is refreshed, set up without reading it.

use std::path::PathBuf;

use crate::auth::signin_file::{Env, SigninSource, process_env};
use crate::config::ConfigError;
use crate::providers::provider::http_client;
use crate::providers::resolve::ResolvedMode;

/// The sign-in of `mode`: the configured `credentials_file` or the CLI's own (`signin_path`),
/// refreshed at the configured `token_url`, else at `default_token_url`. No file is read and
/// no request made (SPEC R3.5).
///
/// # Errors
///
/// [`ConfigError::Http`] when the CA bundle cannot be read.
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
