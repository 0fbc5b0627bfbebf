//! Single sign-on to the dashboard through an OpenID provider: discovery from the issuer URL,
//! the authorization code flow with PKCE, state and nonce, and the ID token's checks.
//! Spec: R14.11b.

mod grants;
mod http;
mod pending;
mod token;

use std::net::IpAddr;
use std::time::Duration;

use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthType, AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RequestTokenError, Scope,
};
use switchyard_api::ApiConfiguration;
use switchyard_api::config::OidcSettings;
use tokio::sync::Mutex;
use tokio::time::Instant;

pub(crate) use grants::{Grant, grant};
pub(crate) use pending::LOGIN_TTL;
pub(crate) use token::Identity;

use http::IdpHttp;
use pending::{Login, Pending};

/// How long a discovery document and its keys are used before they are fetched again.
const DISCOVERY_TTL: Duration = Duration::from_secs(3600);

/// How soon the keys may be fetched again for a token signed by a key not among them.
const REFETCH_AFTER: Duration = Duration::from_secs(60);

/// The longest callback query read, and its longest code.
const QUERY_MAX: usize = 8 * 1024;
const CODE_MAX: usize = 4096;

/// The provider's discovery document with its key set, and when it was fetched.
struct Discovered {
    at: Instant,
    metadata: CoreProviderMetadata,
}

/// The dashboard's OpenID client, built from `[serve.oidc]`.
pub(crate) struct Oidc {
    pub(crate) settings: OidcSettings,
    secret: Option<ClientSecret>,
    http: IdpHttp,
    discovered: Mutex<Option<Discovered>>,
    pending: Pending,
}

impl Oidc {
    /// The client `config` describes, `None` without `[serve.oidc]`, or why it cannot work.
    pub(crate) fn new(config: &ApiConfiguration) -> Result<Option<Self>, String> {
        let Some(settings) = config.serve.oidc.clone() else {
            return Ok(None);
        };
        let secret = match &settings.client_secret_env {
            None => None,
            Some(var) => match config.providers.api_keys.get(var) {
                Some(key) => Some(ClientSecret::new(key.expose().to_owned())),
                None => {
                    return Err(format!(
                        "[serve.oidc] client_secret_env names {var}, which is not set: export the client secret the identity provider gave the gateway in it"
                    ));
                }
            },
        };
        for (group, g) in &settings.groups {
            if let Some(b) = &g.budget {
                switchyard_core::store::read_budget(b)
                    .map_err(|e| format!("[serve.oidc.groups.\"{group}\"] budget = {b:?}: {e}"))?;
            }
        }
        Ok(Some(Self {
            settings,
            secret,
            http: IdpHttp::new()?,
            discovered: Mutex::new(None),
            pending: Pending::default(),
        }))
    }

    /// What keeps `[serve.oidc]` in `config` from working: a client secret variable not set,
    /// a group's budget that does not read.
    pub(crate) fn check(config: &ApiConfiguration) -> Result<(), String> {
        Self::new(config).map(|_| ())
    }

    /// The provider's metadata and keys: fetched when none are held, when they are older than
    /// an hour, or on `refetch` when they are older than a minute.
    async fn metadata(&self, refetch: bool) -> Result<CoreProviderMetadata, String> {
        let mut held = self.discovered.lock().await;
        let stale = match &*held {
            None => true,
            Some(d) => {
                d.at.elapsed() > DISCOVERY_TTL || (refetch && d.at.elapsed() > REFETCH_AFTER)
            }
        };
        if stale {
            let issuer = IssuerUrl::new(self.settings.issuer.clone())
                .map_err(|e| format!("the issuer URL is not valid: {e}"))?;
            let metadata = CoreProviderMetadata::discover_async(issuer, &self.http)
                .await
                .map_err(|e| {
                    format!("the identity provider's discovery document could not be used: {e}")
                })?;
            *held = Some(Discovered {
                at: Instant::now(),
                metadata,
            });
        }
        Ok(held
            .as_ref()
            .map(|d| d.metadata.clone())
            .ok_or("no discovery document")?)
    }

    fn client(&self, metadata: CoreProviderMetadata) -> Result<ClientFor, String> {
        let redirect = RedirectUrl::new(self.settings.redirect_url())
            .map_err(|e| format!("the redirect URL is not valid: {e}"))?;
        let basic = (metadata.token_endpoint_auth_methods_supported())
            .is_none_or(|m| m.iter().any(|m| m.as_ref() == "client_secret_basic"));
        let client = CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.settings.client_id.clone()),
            self.secret.clone(),
        )
        .set_redirect_uri(redirect)
        .set_auth_type(if basic {
            AuthType::BasicAuth
        } else {
            AuthType::RequestBody
        });
        Ok(client)
    }

    /// Starts a sign-in from `address` in the browser whose login cookie is `browser`: the id
    /// for that cookie and the provider's URL to send it to. A browser keeps its id, so a second
    /// sign-in started in another tab does not make the first one's answer a stranger's.
    pub(crate) async fn begin(
        &self,
        address: IpAddr,
        browser: Option<&str>,
    ) -> Result<(String, String), String> {
        let client = self.client(self.metadata(false).await?)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client.authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        );
        for scope in &self.settings.scopes {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
        let browser =
            browser.map_or_else(|| CsrfToken::new_random().secret().clone(), str::to_owned);
        let login = Login::new(
            verifier.secret().clone(),
            nonce.secret().clone(),
            browser.clone(),
            address,
        );
        self.pending.insert(state.secret().clone(), login);
        Ok((browser, url.to_string()))
    }

    /// Finishes the sign-in the callback `query` answers, in the browser whose login cookie is
    /// `browser`: who signed in, or one sentence why not.
    pub(crate) async fn finish(
        &self,
        query: &str,
        browser: Option<&str>,
    ) -> Result<Identity, String> {
        let (code, state) = callback(query)?;
        // RFC 9207: a provider that names itself in the answer must be ours.
        if let Some(iss) =
            crate::ui::form::field(query, "iss").filter(|i| *i != self.settings.issuer)
        {
            let iss: String = iss.chars().take(200).collect();
            return Err(format!(
                "the sign-in answer came from {iss}, not from {}",
                self.settings.issuer
            ));
        }
        let login = (self.pending.take(&state, browser)).ok_or("this sign-in was not started in this browser or took more than 10 minutes: start again")?;
        let metadata = self.metadata(false).await?;
        let client = self.client(metadata.clone())?;
        let exchange = client
            .exchange_code(AuthorizationCode::new(code))
            .map_err(|e| format!("the provider has no token endpoint: {e}"))?;
        let tokens = (exchange
            .set_pkce_verifier(PkceCodeVerifier::new(login.verifier))
            .request_async(&self.http)
            .await)
            .map_err(token_error)?;
        let raw = (tokens.extra_fields().id_token())
            .ok_or("the identity provider sent no ID token: check that the scopes include openid")?
            .to_string();
        let check = |keys| {
            token::verify(
                &raw,
                &token::Expected {
                    client_id: &self.settings.client_id,
                    issuer: &self.settings.issuer,
                    keys,
                    nonce: &login.nonce,
                    groups_claim: &self.settings.groups_claim,
                    now: chrono::Utc::now(),
                },
            )
        };
        match check(metadata.jwks()) {
            // The provider may have rotated its keys since they were fetched.
            Err(e) if e.contains("No matching key found") => {
                let fresh = self.metadata(true).await?;
                check(fresh.jwks())
            }
            other => other,
        }
    }
}

type ClientFor = openidconnect::core::CoreClient<
    openidconnect::EndpointSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointMaybeSet,
    openidconnect::EndpointMaybeSet,
>;

/// The callback's code and state, each bounded, or the provider's refusal as a sentence.
fn callback(query: &str) -> Result<(String, String), String> {
    if query.len() > QUERY_MAX {
        return Err(format!(
            "the sign-in answer is longer than {QUERY_MAX} bytes"
        ));
    }
    let field = |name| crate::ui::form::field(query, name);
    if let Some(error) = field("error") {
        let why: String = field("error_description")
            .unwrap_or_default()
            .chars()
            .take(200)
            .collect();
        let error: String = error.chars().take(64).collect();
        return Err(
            format!("the identity provider refused the sign-in ({error}) {why}")
                .trim_end()
                .to_owned(),
        );
    }
    let code = field("code").filter(|c| !c.is_empty() && c.len() <= CODE_MAX);
    let state = field("state").filter(|s| !s.is_empty() && s.len() <= 128);
    match (code, state) {
        (Some(code), Some(state)) => Ok((code, state)),
        _ => Err("the sign-in answer has no usable code and state: start again".to_owned()),
    }
}

/// A failed code exchange in one sentence; the provider's body is never quoted whole.
fn token_error<E: std::error::Error>(
    e: RequestTokenError<
        E,
        openidconnect::StandardErrorResponse<openidconnect::core::CoreErrorResponseType>,
    >,
) -> String {
    match e {
        RequestTokenError::ServerResponse(r) => {
            let why: String = r
                .error_description()
                .map_or(String::new(), |d| d.chars().take(200).collect());
            format!(
                "the identity provider refused the code ({}) {why}",
                r.error()
            )
            .trim_end()
            .to_owned()
        }
        RequestTokenError::Request(e) => format!("the code could not be exchanged: {e}"),
        RequestTokenError::Parse(_, _) => {
            "the identity provider's token answer could not be read".to_owned()
        }
        RequestTokenError::Other(e) => format!("the code could not be exchanged: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callback_is_read_bounded_and_a_refusal_is_named() {
        assert_eq!(
            callback("code=abc&state=xyz").unwrap(),
            ("abc".to_owned(), "xyz".to_owned())
        );
        let e =
            callback("error=access_denied&error_description=User+cancelled&state=s").unwrap_err();
        assert!(
            e.contains("access_denied") && e.contains("User cancelled"),
            "{e}"
        );
        assert!(callback("state=xyz").is_err());
        assert!(callback(&format!("code={}&state=s", "a".repeat(CODE_MAX + 1))).is_err());
        assert!(callback(&format!("code=a&state={}", "s".repeat(129))).is_err());
        assert!(callback(&"x".repeat(QUERY_MAX + 1)).is_err());
    }
}
