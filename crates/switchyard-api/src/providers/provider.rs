//! [`Provider`], a pure request builder and stream mapper per wire family, and [`ProviderHandler`],
//! which runs any of them over the shared transport.
//! Spec: R4.1, R3.5.

use std::sync::Arc;

use crate::cache_hints::CacheAt;
use crate::config::ConfigError;
use crate::error::ApiError;
use crate::handler::{
    ApiHandler, ApiHandlerModel, DEFAULT_DEADLINES, ForwardDialect, RequestOptions,
    RequestOverrides, refused_forward,
};
use crate::message::{Message, ToolSpec};
use crate::providers::forward;
use crate::providers::model_choice::name_nearest_models;
use crate::providers::overrides;
use crate::providers::resolve::ResolvedMode;
use crate::providers::silent_overflow;
use crate::stream::{ApiStream, ApiStreamChunk};
use crate::transport::{
    self, Endpoint, EventParser, HttpClient, Origin, PendingRequest, WireRequest,
};
use crate::wire::sse::SseEventRef;

/// What one request asks of the model: system prompt, Anthropic-shaped conversation oldest first,
/// tools and the caller's own parameters; the reasoning ones reach the body through the mode.
/// Spec: R14.1.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prompt<'a> {
    pub(crate) system_prompt: &'a str,
    pub(crate) messages: &'a [Message],
    pub(crate) tools: &'a [ToolSpec],
    pub(crate) overrides: &'a RequestOverrides,
}

/// One wire family's request builder and stream mapper. Implementations do no I/O except in
/// [`Provider::authorize`], which only fetches credentials.
pub(crate) trait Provider: Send + Sync + 'static {
    type Parser: EventParser;

    /// The request for `prompt` under `mode`: URL, headers with the key, and body.
    fn request(&self, mode: &ResolvedMode, prompt: &Prompt<'_>) -> WireRequest;

    fn parser(&self, mode: &ResolvedMode) -> Self::Parser;

    /// Finishes `request` with what needs I/O, such as a token or signature, inside the stream.
    fn authorize(&self, _mode: &ResolvedMode, request: WireRequest) -> PendingRequest {
        Box::pin(std::future::ready(Ok(request)))
    }

    /// Whether a `401` is retried once through [`Provider::reauthorize`], as for OAuth sign-ins.
    fn reauthorizes(&self) -> bool {
        false
    }

    /// Like [`Provider::authorize`], after refreshing the sign-in whatever its expiry says.
    fn reauthorize(&self, mode: &ResolvedMode, request: WireRequest) -> PendingRequest {
        self.authorize(mode, request)
    }

    /// The dialect a client's own body can be forwarded to this provider in, with its URL, headers
    /// and stream mapper.
    /// Spec: R14.2.
    fn forwards(&self, _mode: &ResolvedMode) -> Option<ForwardDialect> {
        None
    }

    /// The overrides of `o` not carried under `mode`, read from the body built with them for one
    /// tool.
    /// Spec: R14.2.
    fn dropped(&self, mode: &ResolvedMode, o: &RequestOverrides) -> Vec<&'static str> {
        let tools = [ToolSpec {
            name: "probe".into(),
            description: String::new(),
            input_schema: serde_json::json!({ "type": "object" }),
        }];
        let prompt = Prompt {
            system_prompt: "",
            messages: &[],
            tools: &tools,
            overrides: o,
        };
        let body = serde_json::from_str(&self.request(mode, &prompt).body)
            .unwrap_or(serde_json::Value::Null);
        overrides::dropped(&body, o)
    }
}

/// The [`ApiHandler`] of any [`Provider`].
pub(crate) struct ProviderHandler<P> {
    mode: ResolvedMode,
    endpoint: Endpoint,
    provider: P,
}

impl<P: Provider> ProviderHandler<P> {
    /// The handler for `mode`, sharing the HTTP client of equal settings and making no network
    /// request; fails with [`ConfigError::Http`] on an unreadable CA bundle.
    pub(crate) fn boxed(
        mode: ResolvedMode,
        provider: P,
    ) -> Result<Box<dyn ApiHandler>, ConfigError> {
        let client = http_client(&mode, &mode.base_url)?;
        let endpoint = Endpoint {
            client,
            origin: Origin {
                provider_id: mode.provider_id.clone(),
                model_id: mode.model_id.clone(),
                base_url: mode.base_url.clone(),
            },
            headers: mode
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            retry: mode.preset.retry,
            deadlines: DEFAULT_DEADLINES.with(mode.deadlines),
        };
        Ok(Box::new(Self {
            mode,
            endpoint,
            provider,
        }))
    }
}

impl<P: Provider> ProviderHandler<P> {
    /// `stream` with a "model not found" answer naming the nearest known ids.
    /// Spec: R2.5.
    fn naming_nearest_models(&self, stream: ApiStream) -> ApiStream {
        let (model_id, nearest) = (self.mode.model_id.clone(), self.mode.nearest_models.clone());
        Box::pin(futures_util::TryStreamExt::map_err(stream, move |e| {
            name_nearest_models(e, &model_id, &nearest)
        }))
    }
}

impl<P: Provider> ApiHandler for ProviderHandler<P> {
    fn create_message(
        &self,
        system_prompt: &str,
        messages: &[Message],
        tools: &[ToolSpec],
        options: RequestOptions,
    ) -> ApiStream {
        let prompt = Prompt {
            system_prompt,
            messages,
            tools,
            overrides: &options.overrides,
        };
        let mode = overrides::reasoning_mode(&self.mode, &options.overrides);
        let request = self.provider.request(&mode, &prompt);
        // The reauthorized request is built now but finished only if a 401 asks for it.
        let reauthorize = self
            .provider
            .reauthorizes()
            .then(|| self.provider.reauthorize(&self.mode, request.clone()));
        let pending = self.provider.authorize(&self.mode, request);
        let stream = transport::stream(
            &self.endpoint,
            pending,
            reauthorize,
            self.provider.parser(&self.mode),
            options,
        );
        let estimate = crate::estimate::estimate_input(system_prompt, messages, tools);
        let window = self.mode.model_info.context_window;
        let stream = silent_overflow::reading_a_silent_end(stream, estimate, window);
        self.naming_nearest_models(stream)
    }

    fn forwards(&self) -> Option<ForwardDialect> {
        self.provider.forwards(&self.mode)
    }

    fn forward(
        &self,
        dialect: ForwardDialect,
        mut body: serde_json::Map<String, serde_json::Value>,
        options: RequestOptions,
    ) -> ApiStream {
        if self.forwards() != Some(dialect) {
            return refused_forward(&self.mode.provider_id, dialect);
        }
        let mut options = options;
        let mode = overrides::reasoning_mode(&self.mode, &options.overrides);
        // This provider's own request for an empty prompt, with the client's body in place of its
        // own.
        let empty = Prompt {
            system_prompt: "",
            messages: &[],
            tools: &[],
            overrides: &RequestOverrides::default(),
        };
        let mut request = self.provider.request(&mode, &empty);
        let own: serde_json::Value = serde_json::from_str(&request.body).unwrap_or_default();
        let model = own.get("model").cloned();
        let model = model.unwrap_or_else(|| serde_json::json!(mode.model_id));
        forward::prepare(dialect, &mut body, model, &mode, &options.overrides);
        let estimate = silent_overflow::estimate_body(&body);
        forward::merge_headers(&request.headers, &mut options.headers);
        request.body = serde_json::Value::Object(body).to_string();
        let pending = self.provider.authorize(&self.mode, request);
        let parser = forward::Forwarding::new(self.provider.parser(&self.mode));
        let stream = transport::stream(&self.endpoint, pending, None, parser, options);
        let window = self.mode.model_info.context_window;
        let stream = silent_overflow::reading_a_silent_end(stream, estimate, window);
        self.naming_nearest_models(stream)
    }

    fn get_model(&self) -> ApiHandlerModel {
        self.mode.handler_model()
    }

    fn provider_id(&self) -> &str {
        &self.mode.provider_id
    }

    fn dropped_overrides(&self, o: &RequestOverrides) -> Vec<&'static str> {
        // Nothing set, nothing dropped: no probe body is built for a request without overrides.
        if *o == RequestOverrides::default() {
            return Vec::new();
        }
        let mode = overrides::reasoning_mode(&self.mode, o);
        let mut dropped = self.provider.dropped(&mode, o);
        if o.cache.placed() && !carries_cache_marks(&self.provider, &mode) {
            dropped.push("cache_control");
        }
        dropped
    }
}

/// Whether `provider`'s body under `mode` carries a client's cache marks, read from a body built
/// with the system prompt and one message marked. A body whose layer marks the same places on
/// its own counts as carrying them, since the cache ends at the same prefixes.
fn carries_cache_marks<P: Provider>(provider: &P, mode: &ResolvedMode) -> bool {
    let mut overrides = RequestOverrides::default();
    overrides.cache.mark(CacheAt::System, None);
    overrides.cache.mark(
        CacheAt::Block {
            message: 0,
            block: 0,
        },
        None,
    );
    let messages = [Message::user_text("probe")];
    let prompt = Prompt {
        system_prompt: "probe",
        messages: &messages,
        tools: &[],
        overrides: &overrides,
    };
    let body = provider.request(mode, &prompt).body;
    body.contains("\"cache_control\"") || body.contains("\"cachePoint\"")
}

/// The HTTP client of `mode`'s settings for requests to `url`, shared with every handler of equal
/// settings; fails with [`ConfigError::Http`] on an unreadable CA bundle.
pub(crate) fn http_client(mode: &ResolvedMode, url: &str) -> Result<Arc<HttpClient>, ConfigError> {
    HttpClient::shared(&mode.http, url).map_err(|message| ConfigError::Http {
        provider: mode.provider_id.clone(),
        message,
    })
}

/// The JSON of one SSE event's data: `None` for an empty event or a `[DONE]` marker, and for
/// data that is not JSON, whose decode error is pushed to `out`.
pub(crate) fn event_json(
    event: &SseEventRef<'_>,
    out: &mut Vec<Result<ApiStreamChunk, ApiError>>,
) -> Option<serde_json::Value> {
    let data = event.data.trim();
    if data.is_empty() || data == "[DONE]" {
        return None;
    }
    match parse_json(data) {
        Ok(v) => Some(v),
        Err(e) => {
            out.push(Err(*e));
            None
        }
    }
}

/// Parses an event's JSON data, or a decode error quoting its start, which never holds a key.
pub(crate) fn parse_json(data: &str) -> Result<serde_json::Value, Box<ApiError>> {
    serde_json::from_str(data).map_err(|e| {
        let snippet: String = data.chars().take(120).collect();
        Box::new(ApiError::decode(format!(
            "the provider sent an event that is not valid JSON ({e}): {snippet}"
        )))
    })
}
