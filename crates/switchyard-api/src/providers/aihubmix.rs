//! `aihubmix`: AIhubmix's gateway, one key for four wire families chosen by the model id, tools
//! included. `APP-Code` is sent only when configured: the reference's default, Cline's own code,
//! credits Cline's account with the user's traffic.
//! Spec: R4.2.

use crate::config::ApiKey;
use crate::providers::anthropic;
use crate::providers::anthropic::AnthropicParser;
use crate::providers::gemini::{self, GeminiParser};
use crate::providers::openai_chat::{ChatParser, OpenAiChat};
use crate::providers::openai_responses::{OpenAiResponses, ResponsesParser};
use crate::providers::presets::ChatDialect;
use crate::providers::provider::{Prompt, Provider};
use crate::providers::resolve::ResolvedMode;
use crate::providers::routed::FamilyParser;
use crate::providers::think_tags::ThinkTags;
use crate::transport::WireRequest;

/// The wire a model id goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    Anthropic,
    Gemini,
    Responses,
    Chat,
}

/// The route of `model_id`, as the reference's `routeModel`.
pub(crate) fn route(model_id: &str) -> Route {
    if model_id.starts_with("claude") {
        Route::Anthropic
    } else if model_id.starts_with("gemini")
        && !model_id.ends_with("-nothink")
        && !model_id.ends_with("-search")
    {
        Route::Gemini
    } else if matches!(model_id, "gpt-5-pro" | "gpt-5-codex") {
        Route::Responses
    } else {
        Route::Chat
    }
}

pub(crate) struct Aihubmix;

/// `mode` with the base URL of `route`'s family under the gateway.
fn routed(mode: &ResolvedMode, route: Route) -> ResolvedMode {
    let mut inner = mode.clone();
    inner.base_url = match route {
        Route::Anthropic => mode.base_url.clone(),
        Route::Gemini => format!("{}/gemini", mode.base_url),
        Route::Responses | Route::Chat => format!("{}/v1", mode.base_url),
    };
    inner
}

impl Provider for Aihubmix {
    type Parser = FamilyParser;

    fn request(&self, mode: &ResolvedMode, prompt: &Prompt<'_>) -> WireRequest {
        let route = route(&mode.model_id);
        let inner = routed(mode, route);
        let request = match route {
            Route::Anthropic => anthropic::Anthropic.request(&inner, prompt),
            Route::Gemini => gemini::Gemini
                .request(&inner, prompt)
                .bearer(mode.api_key.as_ref().map(ApiKey::expose)),
            Route::Responses => OpenAiResponses.request(&inner, prompt),
            Route::Chat => OpenAiChat.request(&inner, prompt),
        };
        request.header_opt("APP-Code", mode.options.app_code.as_deref())
    }

    fn parser(&self, mode: &ResolvedMode) -> FamilyParser {
        match route(&mode.model_id) {
            Route::Anthropic => FamilyParser::Anthropic(AnthropicParser::default()),
            Route::Gemini => FamilyParser::Gemini(GeminiParser::default()),
            Route::Responses => FamilyParser::Responses(ResponsesParser::default()),
            Route::Chat => {
                FamilyParser::Chat(ChatParser::new(ChatDialect::Generic, ThinkTags::Opening))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_follow_the_reference() {
        assert_eq!(route("claude-sonnet-4-5"), Route::Anthropic);
        assert_eq!(route("gemini-2.5-pro"), Route::Gemini);
        assert_eq!(route("gemini-2.5-flash-nothink"), Route::Chat);
        assert_eq!(route("gemini-2.5-pro-search"), Route::Chat);
        assert_eq!(route("gpt-5-codex"), Route::Responses);
        assert_eq!(route("gpt-5"), Route::Chat);
        assert_eq!(route("deepseek-v3"), Route::Chat);
    }
}
