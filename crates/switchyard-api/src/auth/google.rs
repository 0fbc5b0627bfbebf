//! Google Cloud credentials for Vertex AI, by the `gcp_auth` crate: the service-account file
//! configured, else gcp_auth's standard chain. Tokens are cached until they expire.
//! Spec: R3.5, R3.6.

use std::sync::Arc;

use gcp_auth::{CustomServiceAccount, TokenProvider};
use tokio::sync::OnceCell;

use crate::error::body::innermost;
use crate::error::{ApiError, ErrorKind};

/// The OAuth scope Vertex AI requests need.
pub(crate) const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// Where a Vertex handler gets its access tokens; nothing is read until the first request.
pub(crate) struct GoogleAuth {
    credentials_file: Option<String>,
    provider: OnceCell<Arc<dyn TokenProvider>>,
}

impl GoogleAuth {
    /// With an explicit credentials file, or `None` for the standard chain.
    pub fn new(credentials_file: Option<String>) -> Self {
        Self {
            credentials_file,
            provider: OnceCell::new(),
        }
    }

    async fn provider(&self) -> Result<&Arc<dyn TokenProvider>, ApiError> {
        self.provider
            .get_or_try_init(|| async {
                match &self.credentials_file {
                    Some(path) => CustomServiceAccount::from_file(path)
                        .map(|sa| Arc::new(sa) as Arc<dyn TokenProvider>)
                        .map_err(|e| {
                            auth_error(format!(
                                "cannot use the Google credentials file {path} ({}); it must be a service-account key JSON",
                                innermost(&e)
                            ))
                        }),
                    None => gcp_auth::provider().await.map_err(|e| {
                        auth_error(format!(
                            "no Google Cloud credentials found ({}): set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, or run `gcloud auth application-default login`",
                            innermost(&e)
                        ))
                    }),
                }
            })
            .await
    }

    /// An access token for the `cloud-platform` scope, or an [`ErrorKind::Auth`] error.
    pub async fn token(&self) -> Result<String, ApiError> {
        let provider = self.provider().await?;
        let token = provider.token(&[CLOUD_PLATFORM_SCOPE]).await.map_err(|e| {
            auth_error(format!(
                "could not get a Google Cloud access token ({}); check the credentials",
                innermost(&e)
            ))
        })?;
        Ok(token.as_str().to_owned())
    }

    /// The project of the credentials, when they name one.
    pub async fn project_id(&self) -> Option<String> {
        let provider = self.provider().await.ok()?;
        provider.project_id().await.ok().map(|p| p.to_string())
    }
}

fn auth_error(message: String) -> ApiError {
    ApiError::new(ErrorKind::Auth, message)
}
