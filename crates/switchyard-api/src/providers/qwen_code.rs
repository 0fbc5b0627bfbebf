//! `qwen-code`: Qwen's coding models with the Qwen CLI's sign-in, over Chat Completions
//! (SPEC R4.2; the reference's `providers/qwen-code.ts`).
//!
//! Request: the body of [`chat_body`] (the reference's: temperature 0,
//! `max_completion_tokens` = the model's limit, tools with `tool_choice: auto`), `POST
//! {base}/chat/completions` with `Authorization: Bearer {access token}`, where `base` is the
//! configured `base_url`, else the sign-in's `resource_url` (`https://portal.qwen.ai/v1` for
//! most accounts), else DashScope's compatible-mode URL. The token comes from
//! [`crate::auth::qwen`], refreshed when it is about to expire, and once more when the API
//! answers 401. Stream: the Chat Completions mapper (`openai_chat.rs`).
//!
//! Not copied from the reference: it drops the start of a text delta that repeats the
//! previous delta (a guard against servers resending the whole text), which also drops real
//! repeats such as two newlines in a row; Qwen's API streams plain deltas, as the Qwen CLI
//! reads them.

use std::sync::Arc;

use crate::auth::qwen::{QwenAuth, TOKEN_URL, signin_path};
use crate::config::ConfigError;
use crate::providers::chat_body;
use crate::providers::openai_chat::ChatParser;
use crate::providers::presets::ChatDialect;
use crate::providers::provider::{Prompt, Provider};
use crate::providers::resolve::ResolvedMode;
use crate::providers::signin::signin_source;
use crate::providers::think_tags::ThinkTags;
use crate::transport::{PendingRequest, WireRequest};

/// The `qwen-code` provider: the sign-in of one configuration.
pub(crate) struct QwenCode {
    auth: Arc<QwenAuth>,
}

impl QwenCode {
    /// No file is read and no request made until the first request (SPEC R3.5).
    pub(crate) fn new(mode: &ResolvedMode) -> Result<Self, ConfigError> {
        let source = signin_source(mode, TOKEN_URL, signin_path)?;
        Ok(Self {
            auth: Arc::new(QwenAuth(source)),
        })
    }

    fn finish(&self, mode: &ResolvedMode, mut request: WireRequest, force: bool) -> PendingRequest {
        let auth = Arc::clone(&self.auth);
        let configured = mode
            .cloud
            .base_url_overridden
            .then(|| mode.base_url.clone());
        let default = mode.base_url.clone();
        Box::pin(async move {
            let token = auth.token(force).await?;
            let base = configured.or(token.base_url).unwrap_or(default);
            request.url = format!("{base}/chat/completions");
            Ok(request.bearer(Some(&token.access_token)))
        })
    }
}

impl Provider for QwenCode {
    type Parser = ChatParser;

    /// The body; the URL and the token are added by [`Provider::authorize`].
    fn request(&self, mode: &ResolvedMode, prompt: &Prompt<'_>) -> WireRequest {
        WireRequest::sse(String::new(), &chat_body::request_body(mode, prompt))
    }

    fn parser(&self, _mode: &ResolvedMode) -> ChatParser {
        ChatParser::new(ChatDialect::Generic, ThinkTags::Opening)
    }

    fn authorize(&self, mode: &ResolvedMode, request: WireRequest) -> PendingRequest {
        self.finish(mode, request, false)
    }

    fn reauthorizes(&self) -> bool {
        true
    }

    fn reauthorize(&self, mode: &ResolvedMode, request: WireRequest) -> PendingRequest {
        self.finish(mode, request, true)
    }
}
