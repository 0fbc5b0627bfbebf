//! Vertex AI: Gemini models with the Gemini body and stream, Claude models through the Anthropic
//! endpoint with the Anthropic body less `model`, both with Google OAuth tokens. The project comes
//! from the configuration, `GOOGLE_CLOUD_PROJECT` or the credentials.
//! Spec: R4.1, R4.7.

use std::sync::Arc;

use serde_json::json;

use crate::auth::google::GoogleAuth;
use crate::error::{ApiError, ErrorKind};
use crate::handler::ForwardDialect;
use crate::providers::anthropic;
use crate::providers::anthropic::AnthropicParser;
use crate::providers::gemini::{self, GeminiParser};
use crate::providers::provider::{Prompt, Provider};
use crate::providers::resolve::ResolvedMode;
use crate::providers::routed::FamilyParser;
use crate::transport::{PendingRequest, WireRequest};

/// The `anthropic_version` Vertex's Anthropic endpoint takes in the body.
pub(crate) const VERTEX_ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// True when `model_id` is served by Vertex's Anthropic endpoint.
pub(crate) fn is_claude(model_id: &str) -> bool {
    model_id.starts_with("claude")
}

/// The request path below the host, for `project`.
fn path(mode: &ResolvedMode, project: &str) -> String {
    let region = mode.cloud.region.as_deref().unwrap_or("global");
    let (publisher, method) = if is_claude(&mode.model_id) {
        ("anthropic", "streamRawPredict")
    } else {
        ("google", "streamGenerateContent?alt=sse")
    };
    // `:1m` is Switchyard's marker for the 1M-context beta header, not part of the id.
    let model = anthropic::wire_model_id(&mode.model_id);
    format!(
        "/v1/projects/{project}/locations/{region}/publishers/{publisher}/models/{model}:{method}"
    )
}

/// Vertex AI, with the Google credentials of one configuration.
pub(crate) struct Vertex {
    auth: Arc<GoogleAuth>,
}

impl Vertex {
    /// Makes no network request and reads no credential until the first request.
    pub(crate) fn new(mode: &ResolvedMode) -> Self {
        Self {
            auth: Arc::new(GoogleAuth::new(mode.cloud.credentials_file.clone())),
        }
    }
}

impl Provider for Vertex {
    type Parser = FamilyParser;

    /// The family's body; [`Provider::authorize`] adds the URL, which names the project, and the
    /// token.
    fn request(&self, mode: &ResolvedMode, prompt: &Prompt<'_>) -> WireRequest {
        let body = if is_claude(&mode.model_id) {
            let mut body = anthropic::request_body(mode, prompt);
            if let Some(obj) = body.as_object_mut() {
                obj.remove("model");
                obj.insert("anthropic_version".into(), json!(VERTEX_ANTHROPIC_VERSION));
            }
            body
        } else {
            gemini::request_body(mode, prompt)
        };
        WireRequest::sse(String::new(), &body)
            .header_opt("anthropic-beta", anthropic::beta_header(&mode.model_id))
    }

    fn parser(&self, mode: &ResolvedMode) -> FamilyParser {
        if is_claude(&mode.model_id) {
            FamilyParser::Anthropic(AnthropicParser::default())
        } else {
            FamilyParser::Gemini(GeminiParser::default())
        }
    }

    /// A Gemini model takes a Gemini client's own body; Claude's endpoint is not forwarded to.
    fn forwards(&self, mode: &ResolvedMode) -> Option<ForwardDialect> {
        (!is_claude(&mode.model_id)).then_some(ForwardDialect::Gemini)
    }

    /// The project, configured else the credentials', the URL and an access token.
    fn authorize(&self, mode: &ResolvedMode, mut request: WireRequest) -> PendingRequest {
        let auth = Arc::clone(&self.auth);
        let configured_project = mode.cloud.project.clone();
        let base_url = mode.base_url.clone();
        let template = path(mode, "{project}");
        Box::pin(async move {
            let project = match configured_project {
                Some(p) => p,
                None => auth.project_id().await.ok_or_else(|| {
                    ApiError::new(
                        ErrorKind::Auth,
                        "no Google Cloud project for Vertex AI: set `project` under [providers.vertex] or GOOGLE_CLOUD_PROJECT",
                    )
                })?,
            };
            let token = auth.token().await?;
            request.url = format!("{base_url}{}", template.replacen("{project}", &project, 1));
            Ok(request.bearer(Some(&token)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_follow_the_region() {
        use crate::providers::resolve::vertex_base_url;
        assert_eq!(
            vertex_base_url(Some("global")),
            "https://aiplatform.googleapis.com"
        );
        assert_eq!(
            vertex_base_url(Some("us-east5")),
            "https://us-east5-aiplatform.googleapis.com"
        );
        assert!(is_claude("claude-sonnet-4-5@20250929"));
        assert!(!is_claude("gemini-2.5-pro"));
    }
}
