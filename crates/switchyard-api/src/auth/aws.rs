//! AWS credentials and SigV4 signing for Bedrock: the configuration's static keys, else
//! `aws-config`'s default chain, whose credentials are reused until shortly before they expire.
//! Spec: R4.1, R3.5, R3.6.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use aws_config::BehaviorVersion;
use aws_credential_types::Credentials;
use aws_credential_types::provider::ProvideCredentials;
use aws_runtime::env_config::file::{EnvConfigFileKind, EnvConfigFiles};
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use tokio::sync::OnceCell;

use crate::error::body::innermost;
use crate::error::{ApiError, ErrorKind};
use crate::providers::resolve::CloudSettings;

/// Credentials closer than this to their expiry are fetched again.
const REFRESH_BEFORE_EXPIRY: Duration = Duration::from_secs(300);

struct Chain {
    provider: Option<aws_credential_types::provider::SharedCredentialsProvider>,
    region: Option<String>,
}

/// Where a Bedrock handler gets its region and credentials, loading the chain on first use.
pub(crate) struct AwsAuth {
    static_credentials: Option<Credentials>,
    region: Option<String>,
    profile: Option<String>,
    config_file: Option<String>,
    credentials_file: Option<String>,
    chain: OnceCell<Chain>,
    cached: Mutex<Option<Credentials>>,
}

impl AwsAuth {
    /// From resolved settings: static keys when both parts are set.
    pub fn new(cloud: &CloudSettings) -> Self {
        let static_credentials = match (&cloud.aws_access_key_id, &cloud.aws_secret_access_key) {
            (Some(id), Some(secret)) => Some(Credentials::new(
                id.expose(),
                secret.expose(),
                cloud
                    .aws_session_token
                    .as_ref()
                    .map(|t| t.expose().to_owned()),
                None,
                "Environment",
            )),
            _ => None,
        };
        Self {
            static_credentials,
            region: cloud.region.clone(),
            profile: cloud.profile.clone(),
            config_file: cloud.aws_config_file.clone(),
            credentials_file: cloud.aws_shared_credentials_file.clone(),
            chain: OnceCell::new(),
            cached: Mutex::new(None),
        }
    }

    async fn chain(&self) -> &Chain {
        self.chain
            .get_or_init(|| async {
                let mut loader = aws_config::defaults(BehaviorVersion::latest());
                if let Some(profile) = &self.profile {
                    loader = loader.profile_name(profile);
                }
                if let Some(region) = &self.region {
                    loader = loader.region(aws_config::Region::new(region.clone()));
                }
                if self.config_file.is_some() || self.credentials_file.is_some() {
                    // The files the configuration's environment named, besides the process's.
                    let mut files = EnvConfigFiles::builder();
                    match &self.config_file {
                        Some(p) => files = files.with_file(EnvConfigFileKind::Config, p),
                        None => files = files.include_default_config_file(true),
                    }
                    match &self.credentials_file {
                        Some(p) => files = files.with_file(EnvConfigFileKind::Credentials, p),
                        None => files = files.include_default_credentials_file(true),
                    }
                    loader = loader.profile_files(files.build());
                }
                let config = loader.load().await;
                Chain {
                    provider: config.credentials_provider(),
                    region: config.region().map(|r| r.as_ref().to_owned()),
                }
            })
            .await
    }

    pub async fn region(&self) -> Option<String> {
        if let Some(r) = &self.region {
            return Some(r.clone());
        }
        self.chain().await.region.clone()
    }

    /// Credentials for the next request, or an [`ErrorKind::Auth`] error saying how to give them.
    pub async fn credentials(&self) -> Result<Credentials, ApiError> {
        if let Some(c) = &self.static_credentials {
            return Ok(c.clone());
        }
        let fresh = |c: &Credentials| {
            c.expiry()
                .is_none_or(|at| at > SystemTime::now() + REFRESH_BEFORE_EXPIRY)
        };
        if let Some(c) = self.cached.lock().ok().and_then(|c| c.clone()) {
            if fresh(&c) {
                return Ok(c);
            }
        }
        let no_credentials = |why: String| {
            ApiError::new(
                ErrorKind::Auth,
                format!(
                    "no AWS credentials for Bedrock ({why}): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, choose a profile with `profile` under [providers.bedrock] or AWS_PROFILE (run `aws sso login` for SSO profiles), or set AWS_BEARER_TOKEN_BEDROCK to a Bedrock API key"
                ),
            )
        };
        let provider =
            self.chain().await.provider.clone().ok_or_else(|| {
                no_credentials("the AWS credential chain is not available".into())
            })?;
        let credentials = provider
            .provide_credentials()
            .await
            .map_err(|e| no_credentials(innermost(&e)))?;
        if let Ok(mut slot) = self.cached.lock() {
            *slot = Some(credentials.clone());
        }
        Ok(credentials)
    }
}

/// Signs a request with SigV4 and returns the headers to add; `url` must be percent-encoded,
/// and `headers` are signed with `host`. The error never holds a secret.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sign_request(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
    credentials: &Credentials,
    region: &str,
    service: &str,
    time: SystemTime,
) -> Result<Vec<(String, String)>, String> {
    let identity: Identity = credentials.clone().into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| format!("cannot sign the request: {e}"))?
        .into();
    let signable = SignableRequest::new(
        method,
        url,
        headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        SignableBody::Bytes(body),
    )
    .map_err(|e| format!("cannot sign the request to {url}: {e}"))?;
    let (instructions, _signature) = sign(signable, &params)
        .map_err(|e| format!("cannot sign the request to {url}: {e}"))?
        .into_parts();
    let (signed_headers, _params) = instructions.into_parts();
    Ok(signed_headers
        .into_iter()
        .map(|h| (h.name().to_owned(), h.value().to_owned()))
        .collect())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;

    #[test]
    fn signer_matches_the_aws_sigv4_test_suite_get_vanilla() {
        // aws-sig-v4-test-suite `get-vanilla`: AKIDEXAMPLE, 2015-08-30T12:36:00Z, us-east-1,
        // service "service", `GET /` to example.amazonaws.com.
        let credentials = aws_credential_types::Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            None,
            None,
            "test",
        );
        let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_440_938_160);
        let headers = sign_request(
            "GET",
            "https://example.amazonaws.com/",
            &[],
            b"",
            &credentials,
            "us-east-1",
            "service",
            time,
        )
        .unwrap();
        let get = |n: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(n))
                .map(|(_, v)| v.clone())
        };
        assert_eq!(get("x-amz-date").as_deref(), Some("20150830T123600Z"));
        assert_eq!(
            get("authorization").as_deref(),
            Some(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
            )
        );
        assert_eq!(get("x-amz-security-token"), None);
    }
}
