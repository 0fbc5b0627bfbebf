//! Bedrock ConverseStream: the request, signed with SigV4 or sent with a Bedrock API key as a
//! bearer token, and in `bedrock/stream.rs` the mapping of its AWS event-stream frames.
//! Spec: R4.1, R4.8, R1.3.

mod stream;

use std::sync::Arc;

use serde_json::{Value, json};

use crate::auth::aws::AwsAuth;
use crate::cache_hints::{CacheAt, CacheHints};
use crate::error::{ApiError, ErrorKind};
use crate::message::{ContentBlock, Message};
use crate::providers::anthropic::{
    DEFAULT_MAX_TOKENS, MIN_THINKING_BUDGET, cached_user_messages, system_mark,
};
use crate::providers::overrides;
use crate::providers::provider::{Prompt, Provider};
use crate::providers::resolve::{ResolvedMode, bedrock_base_url, strip_cross_region_prefix};
use crate::transport::{PendingRequest, WireRequest};
pub(super) use stream::ConverseStreamParser;

/// The model id to send for `model_id` in `region`, as the reference's `getModelId`. With
/// cross-region inference it gets `global.` when global inference is on and the model has a global
/// profile, else a prefix by region: `us.`, `eu.`, `jp.` for a model with a Japan profile in
/// `ap-northeast-1` or `-3`, else `apac.`. Ids with a prefix, ARNs and other regions go as given.
pub(crate) fn wire_model_id(
    model_id: &str,
    region: &str,
    info: &crate::model::ModelInfo,
    use_cross_region_inference: bool,
    use_global_inference: bool,
) -> String {
    let id = model_id.strip_suffix(":1m").unwrap_or(model_id);
    if !use_cross_region_inference
        || id.starts_with("arn:")
        || strip_cross_region_prefix(id).is_some()
    {
        return id.to_owned();
    }
    if use_global_inference && info.supports_global_endpoint {
        return format!("global.{id}");
    }
    match region.get(..3) {
        Some("us-") => format!("us.{id}"),
        Some("eu-") => format!("eu.{id}"),
        Some("ap-")
            if info.supports_jp_endpoint
                && matches!(region, "ap-northeast-1" | "ap-northeast-3") =>
        {
            format!("jp.{id}")
        }
        Some("ap-") => format!("apac.{id}"),
        _ => id.to_owned(),
    }
}

/// Percent-encodes a model id or ARN for the URL path: all but RFC 3986 unreserved characters.
fn encode_path_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Bedrock's ConverseStream, with the AWS credentials of one configuration.
pub(crate) struct Bedrock {
    auth: Arc<AwsAuth>,
}

impl Bedrock {
    /// Makes no network request and loads no credential until the first request.
    pub(crate) fn new(mode: &ResolvedMode) -> Self {
        Self {
            auth: Arc::new(AwsAuth::new(&mode.cloud)),
        }
    }
}

/// Whether the model is Claude, which takes thinking, user-message cache points and
/// `toolResult.status`.
fn is_claude(model_id: &str) -> bool {
    model_id.contains("anthropic.") || model_id.contains("claude")
}

fn cache_point() -> Value {
    json!({ "cachePoint": { "type": "default" } })
}

/// `messages` in Converse's shape with a cache point after each block the client marked when
/// `client`, or else after the last two user messages when `layer`.
fn wire_messages(
    messages: &[Message],
    layer: bool,
    client: bool,
    hints: &CacheHints,
    status_supported: bool,
) -> Vec<Value> {
    let layer = cached_user_messages(messages, layer && !hints.placed());
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let mut content: Vec<Value> = Vec::with_capacity(m.content.len() + 1);
        for (j, b) in m.content.iter().enumerate() {
            content.extend(convert_block(b, status_supported));
            let at = CacheAt::Block {
                message: i,
                block: j,
            };
            let after_point = content.last().is_none_or(|v| v.get("cachePoint").is_some());
            if client && hints.at(&at).is_some() && !after_point {
                content.push(cache_point());
            }
        }
        if content.is_empty() {
            continue;
        }
        if layer.contains(&i) {
            content.push(cache_point());
        }
        out.push(json!({ "role": m.role, "content": content }));
    }
    out
}

pub(crate) fn request_body(mode: &ResolvedMode, prompt: &Prompt<'_>) -> Value {
    let info = &mode.model_info;
    let max_tokens =
        (prompt.overrides.max_tokens).unwrap_or(info.max_tokens_or(DEFAULT_MAX_TOKENS));
    let budget = mode.thinking_budget_tokens;
    let thinking = is_claude(&mode.model_id)
        && info.supports_reasoning
        && budget >= MIN_THINKING_BUDGET
        && budget < max_tokens;
    let cache = info.supports_prompt_cache;
    // `toolResult.status` is only accepted by Claude and Nova models.
    let status_supported = is_claude(&mode.model_id) || mode.model_id.contains("amazon.nova");

    let hints = &prompt.overrides.cache;
    let mut system = vec![json!({ "text": prompt.system_prompt })];
    if cache && system_mark(hints, true).is_some() {
        system.push(cache_point());
    }
    // Cache points after the last two user messages, as for Anthropic; other caching models such as
    // Nova take one, after the system prompt only. A client's own marks go where it put them.
    let caching = cache && is_claude(&mode.model_id);
    let wire_messages = wire_messages(prompt.messages, caching, cache, hints, status_supported);

    let mut inference = json!({ "maxTokens": max_tokens });
    if !thinking {
        inference["temperature"] = json!(info.temperature.unwrap_or(0.0));
    }
    let mut body = json!({
        "messages": wire_messages,
        "system": system,
        "inferenceConfig": inference,
    });
    let mut additional = serde_json::Map::new();
    if thinking {
        additional.insert(
            "thinking".into(),
            json!({ "type": "enabled", "budget_tokens": budget }),
        );
    }
    if mode.model_id.ends_with(":1m") {
        additional.insert(
            "anthropic_beta".into(),
            json!([crate::providers::anthropic::CONTEXT_1M_BETA]),
        );
    }
    if !additional.is_empty() {
        body["additionalModelRequestFields"] = Value::Object(additional);
    }
    if !prompt.tools.is_empty() {
        let specs: Vec<Value> = prompt
            .tools
            .iter()
            .map(|t| {
                json!({ "toolSpec": {
                    "name": t.name,
                    "description": t.description,
                    "inputSchema": { "json": t.input_schema },
                } })
            })
            .collect();
        let mut specs = specs;
        // A tool list's cache point follows the tool it ends at; later ones first keep indices.
        let mut marked: Vec<usize> = (hints.marks.iter())
            .filter_map(|m| match m.at {
                CacheAt::Tool(i) if cache && i < specs.len() => Some(i + 1),
                _ => None,
            })
            .collect();
        marked.sort_unstable();
        for at in marked.into_iter().rev() {
            specs.insert(at, cache_point());
        }
        body["toolConfig"] = json!({ "tools": specs, "toolChoice": { "auto": {} } });
    }
    overrides::apply_converse(&mut body, prompt.overrides, thinking);
    body
}

/// One Anthropic-shaped block as a Converse block; Bedrock rejects blank text and unsigned
/// reasoning, so both are dropped.
fn convert_block(block: &ContentBlock, status_supported: bool) -> Option<Value> {
    Some(match block {
        ContentBlock::Text { text } if text.trim().is_empty() => return None,
        ContentBlock::Text { text } => json!({ "text": text }),
        ContentBlock::Image { source } => {
            let format = source
                .media_type
                .strip_prefix("image/")
                .unwrap_or(&source.media_type)
                .replace("jpg", "jpeg");
            json!({ "image": { "format": format, "source": { "bytes": source.data } } })
        }
        ContentBlock::ToolUse {
            id, name, input, ..
        } => {
            json!({ "toolUse": { "toolUseId": id, "name": name, "input": input } })
        }
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => {
            let text = if content.is_empty() {
                "(empty)"
            } else {
                content
            };
            let mut result = json!({ "toolUseId": tool_use_id, "content": [{ "text": text }] });
            if status_supported {
                result["status"] = json!(if *is_error { "error" } else { "success" });
            }
            json!({ "toolResult": result })
        }
        ContentBlock::Thinking { signature, .. } if signature.is_empty() => return None,
        ContentBlock::Thinking {
            thinking,
            signature,
        } => json!({ "reasoningContent": { "reasoningText": {
            "text": thinking,
            "signature": signature,
        } } }),
        ContentBlock::RedactedThinking { data } => {
            json!({ "reasoningContent": { "redactedContent": data } })
        }
    })
}

impl Provider for Bedrock {
    type Parser = ConverseStreamParser;

    /// The body and headers to sign; [`Provider::authorize`] adds the URL once the region is known.
    fn request(&self, mode: &ResolvedMode, prompt: &Prompt<'_>) -> WireRequest {
        let body = request_body(mode, prompt);
        WireRequest::json(String::new(), &body)
            .header("accept", "application/vnd.amazon.eventstream")
    }

    fn parser(&self, _mode: &ResolvedMode) -> ConverseStreamParser {
        ConverseStreamParser::default()
    }

    /// Finds the region, from the settings else the AWS profile, the model id on the wire and the
    /// URL, then sends the Bedrock API key as a bearer token or signs with SigV4.
    fn authorize(&self, mode: &ResolvedMode, mut request: WireRequest) -> PendingRequest {
        let auth = Arc::clone(&self.auth);
        let mode = mode.clone();
        Box::pin(async move {
            let region = auth.region().await.ok_or_else(|| {
                ApiError::new(
                    ErrorKind::Auth,
                    "no AWS region for Bedrock: set `region` under [providers.bedrock], or AWS_REGION, or a region in your AWS profile",
                )
            })?;
            let model_id = wire_model_id(
                &mode.model_id,
                &region,
                &mode.model_info,
                mode.cloud.use_cross_region_inference,
                mode.cloud.use_global_inference,
            );
            let base_url = if mode.cloud.base_url_overridden {
                mode.base_url.clone()
            } else {
                bedrock_base_url(Some(&region))
            };
            request.url = format!(
                "{base_url}/model/{}/converse-stream",
                encode_path_segment(&model_id)
            );
            match &mode.api_key {
                // A Bedrock API key replaces SigV4.
                Some(key) => Ok(request.bearer(Some(key.expose()))),
                None => {
                    let credentials = auth.credentials().await?;
                    let signed = crate::auth::aws::sign_request(
                        "POST",
                        &request.url,
                        &request.headers,
                        request.body.as_bytes(),
                        &credentials,
                        &region,
                        "bedrock",
                        std::time::SystemTime::now(),
                    )
                    .map_err(|e| ApiError::new(ErrorKind::InvalidRequest, e))?;
                    request.headers.extend(signed);
                    Ok(request)
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Message, Role};
    use crate::model::ModelInfo;

    #[test]
    fn cross_region_prefixes_follow_the_region() {
        let plain = ModelInfo::default();
        let global = ModelInfo {
            supports_global_endpoint: true,
            supports_jp_endpoint: true,
            ..ModelInfo::default()
        };
        let id = "anthropic.claude-sonnet-4-5-20250929-v1:0";
        let w = |region, info, cross, glob| wire_model_id(id, region, info, cross, glob);
        assert_eq!(w("us-east-1", &plain, false, false), id);
        assert_eq!(w("us-east-1", &plain, true, false), format!("us.{id}"));
        assert_eq!(w("eu-west-1", &plain, true, false), format!("eu.{id}"));
        assert_eq!(
            w("ap-southeast-2", &plain, true, false),
            format!("apac.{id}")
        );
        assert_eq!(
            w("ap-northeast-1", &plain, true, false),
            format!("apac.{id}")
        );
        assert_eq!(
            w("ap-northeast-1", &global, true, false),
            format!("jp.{id}")
        );
        assert_eq!(
            w("ap-southeast-1", &global, true, false),
            format!("apac.{id}")
        );
        assert_eq!(w("sa-east-1", &plain, true, false), id);
        assert_eq!(w("eu-west-1", &global, true, true), format!("global.{id}"));
        // Global asked for but the model has no global profile: the region's group.
        assert_eq!(w("eu-west-1", &plain, true, true), format!("eu.{id}"));
        // Already a profile id, or an ARN: as given.
        assert_eq!(
            wire_model_id(&format!("eu.{id}"), "us-east-1", &plain, true, false),
            format!("eu.{id}")
        );
        let arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc";
        assert_eq!(wire_model_id(arn, "us-east-1", &plain, true, false), arn);
        // The 1M-context suffix is ours.
        assert_eq!(
            wire_model_id(&format!("{id}:1m"), "us-east-1", &plain, true, false),
            format!("us.{id}")
        );
        assert_eq!(strip_cross_region_prefix(&format!("apac.{id}")), Some(id));
        assert_eq!(strip_cross_region_prefix(id), None);
    }

    /// A Messages client's breakpoints reach Converse as cache points after the blocks it marked,
    /// one after the tool it marked, none after the system prompt it left unmarked, and none of
    /// the layer's.
    #[test]
    fn a_clients_cache_marks_become_cache_points_where_placed() {
        let text = "[act]\nprovider = \"bedrock\"\nmodel = \"anthropic.claude-sonnet-4-5-20250929-v1:0\"\n[providers.bedrock]\nregion = \"us-east-1\"\n";
        let config = crate::config::ApiConfiguration::from_toml(text, "t", |_| None).unwrap();
        let mode = crate::providers::resolve_mode(&config, crate::config::Mode::Act).unwrap();
        let mut overrides = crate::handler::RequestOverrides::default();
        overrides.cache.mark(
            CacheAt::Block {
                message: 0,
                block: 0,
            },
            None,
        );
        overrides.cache.mark(CacheAt::Tool(0), None);
        let messages = [
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::Text { text: "a".into() },
                    ContentBlock::Text { text: "b".into() },
                ],
            },
            Message::assistant_text("c"),
            Message::user_text("d"),
        ];
        let tools = [crate::message::ToolSpec {
            name: "t".into(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
        }];
        let prompt = Prompt {
            system_prompt: "s",
            messages: &messages,
            tools: &tools,
            overrides: &overrides,
        };
        let body = request_body(&mode, &prompt);
        let point = cache_point();
        assert_eq!(body["system"], json!([{"text": "s"}]));
        assert_eq!(
            body["messages"][0]["content"],
            json!([{"text": "a"}, point, {"text": "b"}])
        );
        assert_eq!(body["messages"][2]["content"], json!([{"text": "d"}]));
        assert_eq!(body["toolConfig"]["tools"][1], point);
        // A model without prompt caching gets no cache point, which Bedrock would refuse.
        let text = text.replace(
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
            "meta.llama3-3-70b-instruct-v1:0",
        );
        let config = crate::config::ApiConfiguration::from_toml(&text, "t", |_| None).unwrap();
        let mode = crate::providers::resolve_mode(&config, crate::config::Mode::Act).unwrap();
        let body = request_body(&mode, &prompt).to_string();
        assert!(!body.contains("cachePoint"), "{body}");
    }

    fn body_for(model: &str, messages: &[Message]) -> Value {
        let text = format!(
            "[act]\nprovider = \"bedrock\"\nmodel = \"{model}\"\n[providers.bedrock]\nregion = \"us-east-1\"\n"
        );
        let config = crate::config::ApiConfiguration::from_toml(&text, "t", |_| None).unwrap();
        let mode = crate::providers::resolve_mode(&config, crate::config::Mode::Act).unwrap();
        let prompt = Prompt {
            system_prompt: "s",
            messages,
            tools: &[],
            overrides: &crate::handler::RequestOverrides::default(),
        };
        request_body(&mode, &prompt)
    }

    #[test]
    fn tool_result_status_only_for_models_that_accept_it() {
        let messages = [Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "t1".into(),
                content: String::new(),
                is_error: false,
            }],
        }];
        let result = |model: &str| body_for(model, &messages)["messages"][0]["content"][0].clone();
        assert_eq!(
            result("meta.llama3-3-70b-instruct-v1:0"),
            json!({"toolResult": {"toolUseId": "t1", "content": [{"text": "(empty)"}]}})
        );
        assert_eq!(
            result("amazon.nova-micro-v1:0")["toolResult"]["status"],
            "success"
        );
        // Claude without a budget: temperature 0, no thinking; no cache points for Llama.
        let body = body_for("meta.llama3-3-70b-instruct-v1:0", &messages);
        assert_eq!(body["system"], json!([{"text": "s"}]));
        // Nova caches the system prompt only.
        let nova = body_for("amazon.nova-pro-v1:0", &[Message::user_text("q")]);
        assert_eq!(
            nova["system"],
            json!([{"text": "s"}, {"cachePoint": {"type": "default"}}])
        );
        assert_eq!(nova["messages"][0]["content"], json!([{"text": "q"}]));
        assert_eq!(
            body["inferenceConfig"],
            json!({"maxTokens": 8192, "temperature": 0.0})
        );
    }

    #[test]
    fn model_ids_are_percent_encoded_in_the_path() {
        assert_eq!(
            encode_path_segment("us.anthropic.claude-3-5-haiku-20241022-v1:0"),
            "us.anthropic.claude-3-5-haiku-20241022-v1%3A0"
        );
        assert_eq!(
            encode_path_segment("arn:aws:bedrock:x/y"),
            "arn%3Aaws%3Abedrock%3Ax%2Fy"
        );
    }
}
