//! `qwen-code`: Qwen's coding models with the Qwen CLI's sign-in, over Chat Completions at the
//! configured URL, else the sign-in's `resource_url`, else DashScope's. Unlike the reference, a
//! delta that repeats the previous one is kept: Qwen streams plain deltas, and that guard drops
//! real repeats such as two newlines.
//! Spec: R4.2.

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

pub(crate) struct QwenCode {
    auth: Arc<QwenAuth>,
}

impl QwenCode {
    /// Reads no file and makes no request until the first request.
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

    /// The body; [`Provider::authorize`] adds the URL and the token.
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
