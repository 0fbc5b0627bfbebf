//! The Qwen CLI's sign-in in `~/.qwen/oauth_creds.json`: refreshed when about to expire or
//! refused, under the CLI's own lock file, and written back in its shape.
//! Spec: R4.2.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::auth::oauth::{self, RefreshBody};
use crate::auth::signin_file::{self, Env, LockFile, SigninSource, auth_error, now_millis};
use crate::error::ApiError;

pub(crate) const CLIENT_ID: &str = "f0304373b74a44d2b584a3fb70ca9e56";
pub(crate) const TOKEN_URL: &str = "https://chat.qwen.ai/api/v1/oauth2/token";
/// A token this close to its expiry is refreshed first: the CLI's `TOKEN_REFRESH_BUFFER_MS`.
const REFRESH_MARGIN_MS: u64 = 30_000;

const SIGN_IN: &str = "run `qwen` and sign in with Qwen OAuth (or name the file with `credentials_file` under [providers.qwen-code])";

/// `oauth_creds.json`, fields in the CLI's order; fields it may add later are kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Credentials {
    access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token_type: Option<String>,
    refresh_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resource_url: Option<String>,
    #[serde(default)]
    expiry_date: u64,
    #[serde(flatten)]
    other: Map<String, Value>,
}

impl Credentials {
    fn fresh(&self) -> bool {
        !self.access_token.is_empty()
            && now_millis().saturating_add(REFRESH_MARGIN_MS) < self.expiry_date
    }
}

pub(crate) struct QwenToken {
    pub(crate) access_token: String,
    /// The API base URL the sign-in names, when it names one.
    pub(crate) base_url: Option<String>,
}

/// One `qwen-code` handler's access to the sign-in file, read on each request so that the
/// CLI's own refreshes are seen at once.
pub(crate) struct QwenAuth(pub(crate) SigninSource);

impl QwenAuth {
    /// A valid access token, refreshed first when about to expire or `force`.
    pub(crate) async fn token(&self, force: bool) -> Result<QwenToken, ApiError> {
        let path = self.0.path("qwen-code", SIGN_IN).map_err(auth_error)?;
        let creds: Credentials = signin_file::read(path, SIGN_IN).map_err(auth_error)?;
        if !force && creds.fresh() {
            return Ok(token_of(&creds));
        }
        let _one_at_a_time = self.0.refreshing.lock().await;
        let _lock = LockFile::acquire(path.with_file_name("oauth_creds.lock")).await?;
        // Another process may have refreshed while this one waited.
        let mut creds: Credentials = signin_file::read(path, SIGN_IN).map_err(auth_error)?;
        if !force && creds.fresh() {
            return Ok(token_of(&creds));
        }
        if creds.refresh_token.is_empty() {
            return Err(auth_error(format!(
                "the Qwen sign-in in {} has no refresh token: {SIGN_IN}",
                path.display()
            )));
        }
        let answer = oauth::refresh(
            &self.0.client,
            &self.0.token_url,
            RefreshBody::Form(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", &creds.refresh_token),
                ("client_id", CLIENT_ID),
            ]),
            SIGN_IN,
        )
        .await?;
        let text = |k: &str| oauth::text_field(&answer, k);
        let Some(access_token) = text("access_token") else {
            return Err(auth_error(format!(
                "the Qwen token endpoint returned no access token: {SIGN_IN}"
            )));
        };
        creds.access_token = access_token;
        if let Some(t) = text("token_type") {
            creds.token_type = Some(t);
        }
        if let Some(r) = text("refresh_token") {
            creds.refresh_token = r;
        }
        if let Some(r) = text("resource_url") {
            creds.resource_url = Some(r);
        }
        let expires_in = answer
            .get("expires_in")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        creds.expiry_date = now_millis().saturating_add(expires_in.saturating_mul(1000));
        signin_file::write_atomically(path, &creds).map_err(auth_error)?;
        Ok(token_of(&creds))
    }
}

/// Where the sign-in is: `credentials_file`, else `~/.qwen/oauth_creds.json`.
pub(crate) fn signin_path(credentials_file: Option<&str>, env: Env<'_>) -> Option<PathBuf> {
    match credentials_file {
        Some(file) => Some(signin_file::expand_home(file, env)),
        None => signin_file::in_home(".qwen/oauth_creds.json", env),
    }
}

/// Whether `path` holds a Qwen sign-in; `Err` says why it cannot be used.
pub(crate) fn usable(path: &std::path::Path) -> Result<(), String> {
    signin_file::read::<Credentials>(path, SIGN_IN).map(|_| ())
}

fn token_of(creds: &Credentials) -> QwenToken {
    crate::secrets::register(&creds.access_token);
    crate::secrets::register(&creds.refresh_token);
    QwenToken {
        access_token: creds.access_token.clone(),
        base_url: creds.resource_url.as_deref().map(api_base_url),
    }
}

#[cfg(feature = "fuzzing")]
pub(crate) fn fuzz_credentials(text: &str) {
    let Ok(creds) = serde_json::from_str::<Credentials>(text) else {
        return;
    };
    let _ = (
        creds.fresh(),
        creds.resource_url.as_deref().map(api_base_url),
    );
    crate::auth::signin_file::assert_written_back(&creds, text);
}

/// `resource_url` as an API base URL, with `https://` and `/v1` added where missing.
pub(crate) fn api_base_url(resource_url: &str) -> String {
    let url = resource_url.trim().trim_end_matches('/');
    let url = if url.starts_with("http://") || url.starts_with("https://") {
        url.to_owned()
    } else {
        format!("https://{url}")
    };
    if url.ends_with("/v1") {
        url
    } else {
        format!("{url}/v1")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_urls_become_api_base_urls() {
        assert_eq!(api_base_url("portal.qwen.ai"), "https://portal.qwen.ai/v1");
        assert_eq!(
            api_base_url("https://dashscope.aliyuncs.com/compatible-mode/v1"),
            "https://dashscope.aliyuncs.com/compatible-mode/v1"
        );
        assert_eq!(api_base_url("http://127.0.0.1:9/"), "http://127.0.0.1:9/v1");
    }

    #[test]
    fn the_file_keeps_its_shape_and_unknown_fields() {
        let text = r#"{"access_token":"a","token_type":"Bearer","refresh_token":"r","resource_url":"portal.qwen.ai","expiry_date":1,"id_token":"x"}"#;
        let c: Credentials = serde_json::from_str(text).unwrap();
        let out = serde_json::to_string(&c).unwrap();
        assert_eq!(out, text);
    }
}
