//! The Codex CLI's ChatGPT sign-in: the tokens it keeps in `auth.json`, refreshed when about
//! to expire or refused, and written back in the CLI's shape.
//! Spec: R4.2.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::auth::oauth::{self, RefreshBody};
use crate::auth::signin_file::{
    self, Env, SigninSource, auth_error, jwt_claims, now_millis, parse_rfc3339,
};
use crate::error::ApiError;

pub(crate) const CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
pub(crate) const TOKEN_URL: &str = "https://auth.openai.com/oauth/token";
/// A token this close to its expiry is refreshed first, the reference's 5-minute buffer.
const REFRESH_MARGIN_SECS: u64 = 5 * 60;
/// Without an expiry in the token, refresh this long after `last_refresh`, as the CLI does.
const REFRESH_INTERVAL_SECS: u64 = 8 * 24 * 3600;

const SIGN_IN: &str = "run `codex login` and sign in with ChatGPT (or name the file with `credentials_file` under [providers.openai-codex])";

/// `auth.json` in the CLI's field order; fields it may add later are kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct AuthFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    auth_mode: Option<Value>,
    /// Written as `null` when absent, as the CLI writes it.
    #[serde(rename = "OPENAI_API_KEY", default)]
    openai_api_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tokens: Option<Tokens>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_refresh: Option<String>,
    #[serde(flatten)]
    other: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Tokens {
    id_token: String,
    access_token: String,
    refresh_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    account_id: Option<String>,
    #[serde(flatten)]
    other: Map<String, Value>,
}

impl AuthFile {
    /// The ChatGPT tokens, or why there are none.
    fn tokens(&self, path: &std::path::Path) -> Result<&Tokens, String> {
        match &self.tokens {
            Some(t) => Ok(t),
            None if self.openai_api_key.is_some() => Err(format!(
                "the Codex CLI in {} is signed in with an API key, not a ChatGPT account: use provider `openai-native` with that key, or run `codex login` with ChatGPT",
                path.display()
            )),
            None => Err(format!(
                "{} holds no ChatGPT sign-in: {SIGN_IN}",
                path.display()
            )),
        }
    }

    fn fresh(&self) -> bool {
        let Some(tokens) = &self.tokens else {
            return false;
        };
        let now = now_millis() / 1000;
        let exp =
            jwt_claims(&tokens.access_token).and_then(|c| c.get("exp").and_then(Value::as_u64));
        match exp {
            Some(exp) => now.saturating_add(REFRESH_MARGIN_SECS) < exp,
            None => self
                .last_refresh
                .as_deref()
                .and_then(parse_rfc3339)
                .is_some_and(|at| now < at.saturating_add(REFRESH_INTERVAL_SECS)),
        }
    }
}

/// What a request needs from the sign-in.
pub(crate) struct CodexToken {
    pub(crate) access_token: String,
    pub(crate) account_id: Option<String>,
}

fn token_of(tokens: &Tokens) -> CodexToken {
    crate::secrets::register(&tokens.access_token);
    crate::secrets::register(&tokens.refresh_token);
    crate::secrets::register(&tokens.id_token);
    CodexToken {
        access_token: tokens.access_token.clone(),
        account_id: account_id(tokens),
    }
}

/// The `ChatGPT-Account-Id`: the file's `account_id`, else the id token's claim.
fn account_id(tokens: &Tokens) -> Option<String> {
    tokens.account_id.clone().or_else(|| {
        jwt_claims(&tokens.id_token).and_then(|c| {
            c.pointer("/https:~1~1api.openai.com~1auth/chatgpt_account_id")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
    })
}

/// The fuzz target `signin_file`'s reading of `text` as `auth.json`.
#[cfg(feature = "fuzzing")]
pub(crate) fn fuzz_auth_file(text: &str) {
    let Ok(file) = serde_json::from_str::<AuthFile>(text) else {
        return;
    };
    let _ = (file.fresh(), file.tokens.as_ref().map(account_id));
    crate::auth::signin_file::assert_written_back(&file, text);
}

/// Where the sign-in is: `credentials_file`, else `$CODEX_HOME/auth.json`, else
/// `~/.codex/auth.json`; `None` without a home folder.
pub(crate) fn signin_path(credentials_file: Option<&str>, env: Env<'_>) -> Option<PathBuf> {
    match credentials_file {
        Some(file) => Some(signin_file::expand_home(file, env)),
        None => env("CODEX_HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join("auth.json"))
            .or_else(|| signin_file::in_home(".codex/auth.json", env)),
    }
}

/// Whether `path` holds ChatGPT tokens; `Err` says why it cannot be used.
pub(crate) fn usable(path: &std::path::Path) -> Result<(), String> {
    let file: AuthFile = signin_file::read(path, SIGN_IN)?;
    file.tokens(path).map(|_| ())
}

/// One `openai-codex` handler's access to `auth.json`, refreshed one at a time.
pub(crate) struct CodexAuth(pub(crate) SigninSource);

impl CodexAuth {
    /// A valid access token and the account id, refreshed first when about to expire or `force`.
    pub(crate) async fn token(&self, force: bool) -> Result<CodexToken, ApiError> {
        let path = self.0.path("openai-codex", SIGN_IN).map_err(auth_error)?;
        let file: AuthFile = signin_file::read(path, SIGN_IN).map_err(auth_error)?;
        let used = file.tokens(path).map_err(auth_error)?.refresh_token.clone();
        if !force && file.fresh() {
            return Ok(token_of(file.tokens(path).map_err(auth_error)?));
        }
        let _one_at_a_time = self.0.refreshing.lock().await;
        // The CLI or another process may have refreshed meanwhile, spending the token read above.
        let mut file: AuthFile = signin_file::read(path, SIGN_IN).map_err(auth_error)?;
        let current = file.tokens(path).map_err(auth_error)?;
        if current.refresh_token != used || (!force && file.fresh()) {
            return Ok(token_of(current));
        }
        // Converted sign-ins can hold an empty refresh token, which the endpoint would only refuse.
        if current.refresh_token.is_empty() {
            return Err(auth_error(format!(
                "the ChatGPT sign-in in {} has no refresh token: {SIGN_IN}",
                path.display()
            )));
        }
        let answer = oauth::refresh(
            &self.0.client,
            &self.0.token_url,
            RefreshBody::Json(json!({
                "client_id": CLIENT_ID,
                "grant_type": "refresh_token",
                "refresh_token": current.refresh_token,
                "scope": "openid profile email",
            })),
            SIGN_IN,
        )
        .await?;
        let text = |k: &str| oauth::text_field(&answer, k);
        let Some(tokens) = file.tokens.as_mut() else {
            return Err(auth_error(format!(
                "{} holds no ChatGPT sign-in: {SIGN_IN}",
                path.display()
            )));
        };
        let Some(access_token) = text("access_token") else {
            return Err(auth_error(format!(
                "the ChatGPT token endpoint returned no access token: {SIGN_IN}"
            )));
        };
        tokens.access_token = access_token;
        if let Some(id) = text("id_token") {
            tokens.id_token = id;
        }
        if let Some(r) = text("refresh_token") {
            tokens.refresh_token = r;
        }
        file.last_refresh = Some(signin_file::rfc3339_now());
        signin_file::write_atomically(path, &file).map_err(auth_error)?;
        file.tokens(path).map(token_of).map_err(auth_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_keeps_its_shape() {
        let text = r#"{"OPENAI_API_KEY":null,"tokens":{"id_token":"i","access_token":"a","refresh_token":"r","account_id":"acc"},"last_refresh":"2025-10-01T12:24:56.123456Z"}"#;
        let f: AuthFile = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&f).unwrap(), text);
        assert_eq!(
            token_of(f.tokens.as_ref().unwrap()).account_id.as_deref(),
            Some("acc")
        );
    }

    #[test]
    fn freshness_follows_the_jwt_expiry_then_last_refresh() {
        let jwt = |exp: u64| {
            let claims = format!("{{\"exp\":{exp}}}");
            format!("h.{}.s", base64url(claims.as_bytes()))
        };
        let now = now_millis() / 1000;
        let file = |access: String, last: Option<String>| AuthFile {
            auth_mode: None,
            openai_api_key: None,
            tokens: Some(Tokens {
                id_token: String::new(),
                access_token: access,
                refresh_token: "r".into(),
                account_id: None,
                other: Map::new(),
            }),
            last_refresh: last,
            other: Map::new(),
        };
        assert!(file(jwt(now + 3600), None).fresh());
        assert!(
            !file(jwt(now + 60), None).fresh(),
            "within the 5-minute margin"
        );
        let recent = signin_file::rfc3339(now - 3600, 0);
        let old = signin_file::rfc3339(now - 9 * 24 * 3600, 0);
        assert!(file("opaque".into(), Some(recent)).fresh());
        assert!(!file("opaque".into(), Some(old)).fresh());
        assert!(!file("opaque".into(), None).fresh());
    }

    fn base64url(bytes: &[u8]) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b))
                << (8 * (3 - chunk.len()));
            for i in 0..=chunk.len() {
                out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
            }
        }
        out
    }
}
