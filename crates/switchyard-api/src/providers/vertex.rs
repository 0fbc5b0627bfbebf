//! Vertex AI (`vertex`): Gemini models through Vertex's `streamGenerateContent`, Claude models
//! through Vertex's Anthropic endpoint, with Google Cloud OAuth tokens (SPEC R4.1, R4.7).
//!
//! Host (cloud.google.com/vertex-ai/docs/reference/rest): `https://{region}-aiplatform.googleapis.com`,
//! or `https://aiplatform.googleapis.com` for region `global`. Paths under
//! `/v1/projects/{project}/locations/{region}/publishers/`:
//! - Gemini (`google/models/{model}:streamGenerateContent?alt=sse`): the Gemini API's body
//!   and stream exactly (`providers/gemini.rs`): thinking budget or level, thought parts,
//!   function calls, `RetryInfo`, blocked prompts and `SAFETY` finishes as errors.
//! - Claude (`anthropic/models/{model}:streamRawPredict`, ids starting `claude`): the
//!   Anthropic Messages body (`providers/anthropic.rs`) without `model` and with
//!   `anthropic_version: "vertex-2023-10-16"` (Anthropic's "Claude on Vertex AI" docs), and
//!   the Anthropic SSE stream.
//!
//! Authorization: `Bearer {access token}` from [`crate::auth::google`]. The project comes from
//! `[providers.vertex] project`, `GOOGLE_CLOUD_PROJECT`/`GCLOUD_PROJECT`, or the credentials.
//!
//! Usage rules (SPEC R1.3) are those of the two families: Claude's `input_tokens` is already
//! uncached (Anthropic rule of R9.2); Gemini's `promptTokenCount` minus
//! `cachedContentTokenCount`, thoughts billed as output.

use std::sync::Arc;

use serde_json::json;

use crate::auth::google::GoogleAuth;
use crate::config::ResolvedMode;
use crate::error::{ApiError, ErrorKind};
use crate::handler::{ApiHandler, RequestOptions};
use crate::message::{Message, ToolSpec};
use crate::providers::anthropic::{AnthropicHandler, AnthropicParser};
use crate::providers::gemini::{GeminiHandler, GeminiParser};
use crate::stream::ApiStream;
use crate::transport;

/// The `anthropic_version` Vertex's Anthropic endpoint takes in the body.
pub const VERTEX_ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// The Vertex host for `region`: `https://aiplatform.googleapis.com` for `global` (and when
/// unknown), else `https://{region}-aiplatform.googleapis.com`.
pub fn default_base_url(region: Option<&str>) -> String {
    match region {
        None | Some("global") => "https://aiplatform.googleapis.com".to_owned(),
        Some(r) => format!("https://{r}-aiplatform.googleapis.com"),
    }
}

/// True when `model_id` is served by Vertex's Anthropic endpoint.
pub fn is_claude(model_id: &str) -> bool {
    model_id.starts_with("claude")
}

/// A handler for Vertex AI.
pub struct VertexHandler {
    mode: ResolvedMode,
    auth: Arc<GoogleAuth>,
    gemini: GeminiHandler,
    anthropic: AnthropicHandler,
}

impl VertexHandler {
    /// Builds the handler; no network request is made and no credential is read until the
    /// first request (SPEC R3.5).
    pub fn new(mode: ResolvedMode) -> Self {
        let auth = Arc::new(GoogleAuth::new(mode.cloud.credentials_file.clone()));
        Self {
            gemini: GeminiHandler::new(mode.clone()),
            anthropic: AnthropicHandler::new(mode.clone()),
            mode,
            auth,
        }
    }

    /// The request path below the host, for `project`.
    fn path(&self, project: &str) -> String {
        let region = self.mode.cloud.region.as_deref().unwrap_or("global");
        let (publisher, method) = if is_claude(&self.mode.model_id) {
            ("anthropic", "streamRawPredict")
        } else {
            ("google", "streamGenerateContent?alt=sse")
        };
        // `:1m` is Switchyard's marker for the 1M-context beta header, not part of the id.
        let model = self
            .mode
            .model_id
            .strip_suffix(":1m")
            .unwrap_or(&self.mode.model_id);
        format!(
            "/v1/projects/{project}/locations/{region}/publishers/{publisher}/models/{model}:{method}"
        )
    }
}

impl ApiHandler for VertexHandler {
    fn create_message(
        &self,
        system_prompt: &str,
        messages: &[Message],
        tools: &[ToolSpec],
        options: RequestOptions,
    ) -> ApiStream {
        let claude = is_claude(&self.mode.model_id);
        let body = if claude {
            let mut body = self.anthropic.request_body(system_prompt, messages, tools);
            if let Some(obj) = body.as_object_mut() {
                obj.remove("model");
                obj.insert("anthropic_version".into(), json!(VERTEX_ANTHROPIC_VERSION));
            }
            body
        } else {
            self.gemini.request_body(system_prompt, messages, tools)
        }
        .to_string();
        let auth = Arc::clone(&self.auth);
        let configured_project = self.mode.cloud.project.clone();
        let base_url = self.mode.base_url.clone();
        let one_m = self.mode.model_id.ends_with(":1m");
        let path_for = {
            let template = self.path("{project}");
            move |project: &str| template.replacen("{project}", project, 1)
        };
        let build = async move {
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
            let mut request = transport::client()
                .post(format!("{base_url}{}", path_for(&project)))
                .header("content-type", "application/json")
                .header("accept", "text/event-stream")
                .header("authorization", format!("Bearer {token}"));
            if one_m {
                request = request.header("anthropic-beta", "context-1m-2025-08-07");
            }
            Ok(request.body(body))
        };
        if claude {
            transport::post_sse_built(&self.mode, build, AnthropicParser::default(), options)
        } else {
            transport::post_sse_built(&self.mode, build, GeminiParser::default(), options)
        }
    }

    handler_plumbing!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_follow_the_region() {
        assert_eq!(
            default_base_url(Some("global")),
            "https://aiplatform.googleapis.com"
        );
        assert_eq!(
            default_base_url(Some("us-east5")),
            "https://us-east5-aiplatform.googleapis.com"
        );
        assert!(is_claude("claude-sonnet-4-5@20250929"));
        assert!(!is_claude("gemini-2.5-pro"));
    }
}
