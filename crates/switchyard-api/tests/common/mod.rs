//! Shared by the tests that replay stored responses (`fixtures.rs`, `cases.rs`,
//! `connection_reuse.rs`); each uses part of it.
#![allow(dead_code)]

use serde_json::{Value, json};
use switchyard_api::{
    ApiConfiguration, ApiError, ApiHandler, ApiStreamChunk, Mode, Usage, build_api_handler,
};

/// The key every provider is configured with; it must never show in an error.
pub const KEY: &str = "sk-test-key-never-shown-0123456789";

/// A handler for `provider` / `model` whose base URL is `base_url` (the mock server's), with
/// `extra` lines added to `[act]`. Bedrock gets a region (for the model id's cross-region
/// prefix), and the key then goes as a Bedrock API key (bearer token); tests/bedrock.rs covers
/// SigV4.
pub fn handler(provider: &str, model: &str, base_url: &str, extra: &str) -> Box<dyn ApiHandler> {
    let region = if provider == "bedrock" {
        "region = \"us-east-1\"\n"
    } else {
        ""
    };
    let text = format!(
        "[act]\nprovider = \"{provider}\"\nmodel = \"{model}\"\n{extra}\n[providers.\"{provider}\"]\nbase_url = \"{base_url}\"\n{region}"
    );
    let config = ApiConfiguration::from_toml(&text, "test.toml", |_| Some(KEY.to_owned()))
        .unwrap_or_else(|e| panic!("{e}"));
    build_api_handler(&config, Mode::Act).unwrap_or_else(|e| panic!("{e}"))
}

/// A usage chunk in the provider's raw numbers, as the expected files write them: the
/// OpenAI family's and Gemini's prompt counts include cache reads (we yield the non-cached
/// input, SPEC R1.3), Anthropic's and Bedrock's do not; Gemini's candidate count excludes the
/// thoughts we bill as output. Optional counts are present exactly when the wire sent them.
///
/// The OpenAI family's prompt count also includes cache writes (OpenRouter's
/// `cache_write_tokens`, gateways' `cache_creation_input_tokens`). DeepSeek (`family`
/// `deepseek`): its cache misses are reported as cache writes (the reference's rule,
/// `providers/openai_chat.rs`), derived rather than sent, so they are not a wire field.
pub fn raw_usage(family: &str, u: &Usage) -> Value {
    let input = match family {
        "anthropic" | "bedrock" => u.input_tokens,
        _ => u.input_tokens + u.cache_read_tokens.unwrap_or(0) + u.cache_write_tokens.unwrap_or(0),
    };
    let cache_write = u.cache_write_tokens.filter(|_| family != "deepseek");
    let output = if family == "gemini" {
        u.output_tokens - u.thoughts_tokens.unwrap_or(0)
    } else {
        u.output_tokens
    };
    let mut v = json!({"type": "usage", "input_tokens": input, "output_tokens": output});
    for (key, n) in [
        ("cache_read_tokens", u.cache_read_tokens),
        ("cache_write_tokens", cache_write),
        ("reasoning_tokens", u.thoughts_tokens),
    ] {
        if let Some(n) = n {
            v[key] = json!(n);
        }
    }
    if let Some(c) = u.total_cost_usd {
        v["cost"] = json!(c);
    }
    v
}

/// A text or reasoning chunk as the expected files write it (`tests/fixtures/README.md`): one
/// per wire delta; a signature, or opaque redacted data (marked `redacted`), in `signature`.
/// `None` for the other chunk kinds.
pub fn text_or_reasoning(chunk: &ApiStreamChunk) -> Option<Value> {
    match chunk {
        ApiStreamChunk::Text { text, .. } => Some(json!({"type": "text", "text": text})),
        ApiStreamChunk::Reasoning {
            reasoning,
            signature,
            redacted_data,
            ..
        } => {
            let mut v = json!({"type": "reasoning", "reasoning": reasoning});
            if let Some(d) = redacted_data {
                v["signature"] = json!(d);
                v["redacted"] = json!(true);
            } else if let Some(s) = signature {
                v["signature"] = json!(s);
            }
            Some(v)
        }
        _ => None,
    }
}

/// Our items in the expected files' shape (`tests/fixtures/README.md`, `tests/cases/README.md`):
/// text and reasoning one chunk per wire delta; tool-call fragments assembled per id, the call
/// placed at its last fragment with its arguments as one string; usage in the provider's raw
/// numbers ([`raw_usage`] for wire `family`); an error as `error` makes it.
pub fn normalise(
    family: &str,
    items: &[Result<ApiStreamChunk, ApiError>],
    error: impl Fn(&ApiError) -> Value,
) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut tool_pos: Vec<(String, usize)> = Vec::new();
    for item in items {
        match item {
            Ok(ApiStreamChunk::ToolCalls {
                id,
                name,
                arguments_delta,
                ..
            }) => {
                if let Some(i) = tool_pos.iter().position(|(tid, _)| tid == id) {
                    let (_, at) = tool_pos.remove(i);
                    let mut call = out.remove(at);
                    for (_, p) in tool_pos.iter_mut() {
                        if *p > at {
                            *p -= 1;
                        }
                    }
                    let args =
                        call["arguments"].as_str().unwrap_or_default().to_owned() + arguments_delta;
                    call["arguments"] = json!(args);
                    out.push(call);
                } else {
                    out.push(json!({"type": "tool_call", "id": id, "name": name, "arguments": arguments_delta}));
                }
                tool_pos.push((id.clone(), out.len() - 1));
            }
            Ok(ApiStreamChunk::Usage(u)) => out.push(raw_usage(family, u)),
            Ok(chunk) => out.extend(text_or_reasoning(chunk)),
            Err(e) => out.push(error(e)),
        }
    }
    out
}

/// `items` with each run of plain text (or plain reasoning) chunks joined into one: where one
/// delta ends is not part of the answer, and the secret scrubber (SPEC R10.5) holds back a
/// delta's tail that could start a configured key (the cases' key starts `sk-`) until the next
/// delta says it does not.
pub fn merge_text_runs(items: &[Value]) -> Vec<Value> {
    let plain = |v: &Value, field: &str| {
        v.as_object()
            .is_some_and(|o| o.len() == 2 && o.get(field).is_some_and(Value::is_string))
    };
    let mut out: Vec<Value> = Vec::new();
    for item in items {
        let field = match item["type"].as_str() {
            Some("text") => "text",
            Some("reasoning") => "reasoning",
            _ => "",
        };
        if let Some(last) = out.last_mut().filter(|last| {
            !field.is_empty()
                && last["type"] == item["type"]
                && plain(last, field)
                && plain(item, field)
        }) {
            let joined = format!(
                "{}{}",
                last[field].as_str().unwrap(),
                item[field].as_str().unwrap()
            );
            last[field] = Value::String(joined);
            continue;
        }
        out.push(item.clone());
    }
    out
}
