//! SAP AI Core's credentials: the service key exchanged for an access token kept in memory,
//! as the reference does, and the deployment serving a model.
//! Spec: R4.2.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use crate::auth::oauth::{self, RefreshBody};
use crate::auth::signin_file::auth_error;
use crate::config::{ApiKey, ConfigError};
use crate::error::body::innermost;
use crate::error::{ApiError, ErrorKind};
use crate::transport::HttpClient;

#[derive(Deserialize)]
struct ServiceKeyJson {
    clientid: String,
    clientsecret: String,
    url: String,
    serviceurls: ServiceUrls,
}

#[derive(Deserialize)]
struct ServiceUrls {
    #[serde(rename = "AI_API_URL")]
    ai_api_url: String,
}

/// A parsed service key. `Debug` shows no secret.
#[derive(Clone)]
pub(crate) struct ServiceKey {
    client_id: ApiKey,
    client_secret: ApiKey,
    /// The authentication and AI API servers, without a trailing slash.
    pub(crate) auth_url: String,
    pub(crate) ai_api_url: String,
}

impl std::fmt::Debug for ServiceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceKey")
            .field("auth_url", &self.auth_url)
            .field("ai_api_url", &self.ai_api_url)
            .finish_non_exhaustive()
    }
}

impl ServiceKey {
    /// Parses the key read from `var`; the error never quotes it.
    pub(crate) fn parse(key: &ApiKey, var: &str) -> Result<Self, ConfigError> {
        let parsed: ServiceKeyJson = serde_json::from_str(key.expose()).map_err(|_| {
            ConfigError::ProviderUnavailable {
                provider: "sapaicore".into(),
                reason: format!(
                    "${var} is not an SAP AI Core service key: set it to the whole service key JSON of your AI Core instance (with clientid, clientsecret, url and serviceurls.AI_API_URL)"
                ),
            }
        })?;
        Ok(Self {
            client_id: ApiKey::new(parsed.clientid),
            client_secret: ApiKey::new(parsed.clientsecret),
            auth_url: parsed.url.trim().trim_end_matches('/').to_owned(),
            ai_api_url: parsed
                .serviceurls
                .ai_api_url
                .trim()
                .trim_end_matches('/')
                .to_owned(),
        })
    }
}

/// One deployment: its id and the model it serves as `name:version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Deployment {
    pub(crate) id: String,
    pub(crate) model: String,
}

pub(crate) struct SapAuth {
    key: ServiceKey,
    token_url: String,
    client: Arc<HttpClient>,
    token: tokio::sync::Mutex<Option<(String, Instant)>>,
    deployments: tokio::sync::Mutex<Vec<Deployment>>,
}

const SIGN_IN: &str = "check AICORE_SERVICE_KEY (the service key of your AI Core instance, which may have been rotated) and `token_url` under [providers.sapaicore]";

impl SapAuth {
    /// `token_url` is the authentication server; nothing is requested before the first request.
    pub(crate) fn new(key: ServiceKey, token_url: Option<&str>, client: Arc<HttpClient>) -> Self {
        let token_url = token_url.map_or_else(|| key.auth_url.clone(), str::to_owned);
        Self {
            key,
            token_url,
            client,
            token: tokio::sync::Mutex::new(None),
            deployments: tokio::sync::Mutex::new(Vec::new()),
        }
    }

    /// An access token, from memory until a minute before it expires.
    pub(crate) async fn token(&self) -> Result<String, ApiError> {
        let mut cached = self.token.lock().await;
        if let Some((token, until)) = cached.as_ref() {
            if Instant::now() < *until {
                return Ok(token.clone());
            }
        }
        let answer = oauth::refresh(
            &self.client,
            &format!("{}/oauth/token", self.token_url),
            RefreshBody::Form(&[
                ("grant_type", "client_credentials"),
                ("client_id", self.key.client_id.expose()),
                ("client_secret", self.key.client_secret.expose()),
            ]),
            SIGN_IN,
        )
        .await?;
        let token = answer
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                auth_error(format!(
                    "SAP AI Core's token endpoint returned no access token; {SIGN_IN}"
                ))
            })?
            .to_owned();
        let lifetime = answer
            .get("expires_in")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let until = Instant::now() + Duration::from_secs(lifetime.saturating_sub(60));
        *cached = Some((token.clone(), until));
        Ok(token)
    }

    /// The id of the running deployment serving `model_id`, compared without a `:version`.
    pub(crate) async fn deployment_for(
        &self,
        base_url: &str,
        resource_group: &str,
        model_id: &str,
    ) -> Result<String, ApiError> {
        let base = |name: &str| name.split(':').next().unwrap_or("").to_ascii_lowercase();
        let wanted = base(model_id);
        let mut known = self.deployments.lock().await;
        if let Some(d) = known.iter().find(|d| base(&d.model) == wanted) {
            return Ok(d.id.clone());
        }
        *known = self.list_deployments(base_url, resource_group).await?;
        known
            .iter()
            .find(|d| base(&d.model) == wanted)
            .map(|d| d.id.clone())
            .ok_or_else(|| {
                let running: Vec<&str> = known.iter().map(|d| d.model.as_str()).collect();
                ApiError::new(
                    ErrorKind::InvalidRequest,
                    format!(
                        "no running SAP AI Core deployment serves `{model_id}` in resource group `{resource_group}` (running: {}); deploy it, or set `deployment_id` under [providers.sapaicore]",
                        if running.is_empty() { "none".to_owned() } else { running.join(", ") }
                    ),
                )
            })
    }

    async fn list_deployments(
        &self,
        base_url: &str,
        resource_group: &str,
    ) -> Result<Vec<Deployment>, ApiError> {
        let token = self.token().await?;
        let client = self
            .client
            .get()
            .map_err(|m| ApiError::new(ErrorKind::InvalidRequest, m))?;
        let url = format!("{base_url}/v2/lm/deployments?$top=10000&$skip=0");
        let response = client
            .get(&url)
            .bearer_auth(token)
            .header("AI-Resource-Group", resource_group)
            .header("AI-Client-Type", "Switchyard")
            .send()
            .await
            .map_err(|e| {
                ApiError::new(
                    ErrorKind::Network,
                    format!(
                        "could not list SAP AI Core's deployments at {base_url} ({})",
                        innermost(&e)
                    ),
                )
            })?;
        let status = response.status().as_u16();
        let bytes = response.bytes().await.unwrap_or_default();
        if !(200..300).contains(&status) {
            let v: Value = serde_json::from_slice(&bytes).unwrap_or_default();
            let message = v
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("listing the deployments failed");
            let mut e = ApiError::from_provider(Some(status), None, message, None);
            e.message = format!(
                "SAP AI Core refused to list the deployments of resource group `{resource_group}`: {}",
                e.message
            );
            return Err(e);
        }
        let v: Value = serde_json::from_slice(&bytes).unwrap_or_default();
        Ok(v.get("resources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|d| d.get("targetStatus").and_then(Value::as_str) == Some("RUNNING"))
            .filter_map(|d| {
                let model = d.pointer("/details/resources/backend_details/model")?;
                let name = model.get("name")?.as_str()?;
                let version = model.get("version")?.as_str()?;
                Some(Deployment {
                    id: d.get("id")?.as_str()?.to_owned(),
                    model: format!("{name}:{version}"),
                })
            })
            .collect())
    }
}
