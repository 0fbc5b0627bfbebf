//! Bedrock and Vertex AI settings from `[providers.ID]` and the environment, and their sources.
//! Spec: R4.8.

use crate::config::{ApiKey, ProviderEndpoint, ProviderSettings};
use crate::providers::presets::{ProviderPreset, WireFamily};

/// Bedrock and Vertex settings; every secret is an [`ApiKey`], so `Debug` never shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CloudSettings {
    /// The region when known before any request; Bedrock may still find one in the AWS profile.
    pub region: Option<String>,
    /// Where the region came from, such as `$AWS_REGION` or `default`.
    pub region_source: Option<String>,
    /// The AWS profile named in the settings or `AWS_PROFILE`.
    pub profile: Option<String>,
    /// `AWS_CONFIG_FILE` and `AWS_SHARED_CREDENTIALS_FILE` when set.
    pub aws_config_file: Option<String>,
    pub aws_shared_credentials_file: Option<String>,
    /// The Google Cloud project when known before any request.
    pub project: Option<String>,
    pub project_source: Option<String>,
    /// The Google credentials file named in the settings or `GOOGLE_APPLICATION_CREDENTIALS`.
    pub credentials_file: Option<String>,
    /// Bedrock cross-region inference.
    pub use_cross_region_inference: bool,
    /// Bedrock `global.` inference profiles, with cross-region inference on.
    pub use_global_inference: bool,
    /// Static AWS credentials from the environment, when both parts are set.
    pub aws_access_key_id: Option<ApiKey>,
    pub aws_secret_access_key: Option<ApiKey>,
    pub aws_session_token: Option<ApiKey>,
    /// Whether `base_url` was configured, for tests, VPC endpoints or proxies, over the region's
    /// host.
    pub base_url_overridden: bool,
}

/// The [`CloudSettings`] of `preset` from its `endpoint` section and the environment; only the
/// flags for other providers.
pub(crate) fn resolve_cloud(
    preset: &ProviderPreset,
    endpoint: &ProviderEndpoint,
    providers: &ProviderSettings,
) -> CloudSettings {
    let env = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| providers.env.get(*n).map(|v| (v.clone(), format!("${n}"))))
    };
    let configured = |v: &Option<String>, field: &str| {
        v.as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| (v.to_owned(), format!("[providers.{}] {field}", preset.id)))
    };
    let mut cloud = CloudSettings {
        base_url_overridden: endpoint.base_url.is_some(),
        use_cross_region_inference: endpoint.use_cross_region_inference.unwrap_or(false),
        use_global_inference: endpoint.use_global_inference.unwrap_or(false),
        ..CloudSettings::default()
    };
    let region = match preset.family {
        WireFamily::Bedrock => configured(&endpoint.region, "region")
            .or_else(|| env(&["AWS_REGION", "AWS_DEFAULT_REGION"])),
        WireFamily::Vertex => configured(&endpoint.region, "region")
            .or_else(|| env(&["GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"]))
            .or_else(|| Some(("global".to_owned(), "default".to_owned()))),
        _ => None,
    };
    if let Some((r, src)) = region {
        cloud.region = Some(r);
        cloud.region_source = Some(src);
    }
    match preset.family {
        WireFamily::Bedrock => {
            cloud.profile = configured(&endpoint.profile, "profile")
                .or_else(|| env(&["AWS_PROFILE"]))
                .map(|(p, _)| p);
            cloud.aws_config_file = env(&["AWS_CONFIG_FILE"]).map(|(p, _)| p);
            cloud.aws_shared_credentials_file =
                env(&["AWS_SHARED_CREDENTIALS_FILE"]).map(|(p, _)| p);
            let key = |n: &str| providers.api_keys.get(n).cloned();
            if let (Some(id), Some(secret)) =
                (key("AWS_ACCESS_KEY_ID"), key("AWS_SECRET_ACCESS_KEY"))
            {
                cloud.aws_access_key_id = Some(id);
                cloud.aws_secret_access_key = Some(secret);
                cloud.aws_session_token = key("AWS_SESSION_TOKEN");
            }
        }
        WireFamily::Vertex => {
            if let Some((p, src)) = configured(&endpoint.project, "project")
                .or_else(|| env(&["GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"]))
            {
                cloud.project = Some(p);
                cloud.project_source = Some(src);
            }
            cloud.credentials_file = configured(&endpoint.credentials_file, "credentials_file")
                .or_else(|| env(&["GOOGLE_APPLICATION_CREDENTIALS"]))
                .map(|(p, _)| p);
        }
        _ => {}
    }
    cloud
}
