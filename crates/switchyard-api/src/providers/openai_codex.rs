//! `openai-codex`: OpenAI's models through a ChatGPT subscription with the Codex CLI's sign-in,
//! over Responses at the ChatGPT backend, which takes no `temperature` or `max_output_tokens`. The
//! token is refreshed before expiry and once more on a 401.
//! Spec: R4.2.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::auth::codex::{CodexAuth, TOKEN_URL, signin_path};
use crate::config::ConfigError;
use crate::providers::mapper::{Chunks, JsonEvents};
use crate::providers::openai_responses::{self, ResponsesParser};
use crate::providers::overrides;
use crate::providers::provider::{Prompt, Provider};
use crate::providers::resolve::ResolvedMode;
use crate::providers::signin::signin_source;
use crate::stream::ApiStreamChunk;
use crate::transport::{PendingRequest, WireRequest};

/// The `openai-codex` provider: the sign-in of one configuration and its session id.
pub(crate) struct OpenAiCodex {
    auth: Arc<CodexAuth>,
    session_id: String,
}

impl OpenAiCodex {
    /// Reads no file and makes no request until the first request.
    pub(crate) fn new(mode: &ResolvedMode) -> Result<Self, ConfigError> {
        let source = signin_source(mode, TOKEN_URL, signin_path)?;
        Ok(Self {
            auth: Arc::new(CodexAuth(source)),
            session_id: session_id(),
        })
    }

    fn finish(&self, request: WireRequest, force: bool) -> PendingRequest {
        let auth = Arc::clone(&self.auth);
        Box::pin(async move {
            let token = auth.token(force).await?;
            Ok(request
                .bearer(Some(&token.access_token))
                .header_opt("chatgpt-account-id", token.account_id.as_deref()))
        })
    }
}

/// A random version-4 UUID for the backend's `session_id`: an identifier, not a secret, so the
/// standard library's randomly keyed hasher is random enough.
fn session_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut bytes = [0u8; 16];
    for (i, half) in bytes.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        half.copy_from_slice(&h.finish().to_le_bytes());
    }
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// The JSON request body the reference sends, the effort `medium` unless set. Tools go with
/// `strict: false`, since MCP tool schemas are not strict-mode schemas.
pub(crate) fn request_body(mode: &ResolvedMode, prompt: &Prompt<'_>) -> Value {
    let mut body = json!({
        "model": mode.model_id,
        "input": openai_responses::convert_messages(prompt.messages),
        "stream": true,
        "store": false,
        "instructions": prompt.system_prompt,
    });
    let effort = mode.reasoning_effort.unwrap_or_default();
    if effort != crate::config::ReasoningEffort::None {
        body["include"] = json!(["reasoning.encrypted_content"]);
        body["reasoning"] = json!({ "effort": effort.as_str(), "summary": "auto" });
    }
    if !prompt.tools.is_empty() {
        body["tools"] = openai_responses::function_tools(prompt.tools, Some(false));
        // The backend takes a caller's tool choice, and the effort through the mode; nothing else.
        if let Some(choice) = &prompt.overrides.tool_choice {
            body["tool_choice"] = overrides::responses_tool_choice(choice);
        }
    }
    body
}

impl Provider for OpenAiCodex {
    type Parser = CodexParser;

    /// URL, body and the session's headers; [`Provider::authorize`] adds the token.
    fn request(&self, mode: &ResolvedMode, prompt: &Prompt<'_>) -> WireRequest {
        WireRequest::sse(
            format!("{}/responses", mode.base_url),
            &request_body(mode, prompt),
        )
        .header("originator", "switchyard")
        .header("session_id", self.session_id.clone())
    }

    fn parser(&self, _mode: &ResolvedMode) -> CodexParser {
        CodexParser::default()
    }

    fn authorize(&self, _mode: &ResolvedMode, request: WireRequest) -> PendingRequest {
        self.finish(request, false)
    }

    fn reauthorizes(&self) -> bool {
        true
    }

    fn reauthorize(&self, _mode: &ResolvedMode, request: WireRequest) -> PendingRequest {
        self.finish(request, true)
    }
}

/// The Responses mapper with the subscription's cost, 0, since it bills no tokens.
#[derive(Debug, Default)]
pub(crate) struct CodexParser(ResponsesParser);

impl JsonEvents for CodexParser {
    fn on_json(&mut self, name: &str, v: &Value, out: &mut Chunks) {
        let start = out.len();
        self.0.on_json(name, v, out);
        for item in &mut out[start..] {
            if let Ok(ApiStreamChunk::Usage(u)) = item {
                u.total_cost_usd = Some(0.0);
            }
        }
    }

    fn on_json_end(&mut self, out: &mut Chunks) {
        self.0.on_json_end(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_v4_uuids() {
        let a = session_id();
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
        assert_ne!(a, session_id());
    }
}
