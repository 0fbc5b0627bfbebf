//! Request bodies of OpenRouter, the Vercel AI Gateway and the OpenAI-compatible presets, field
//! by field per model family, as the testkit server records them (issue 11 item 6): what the
//! reference (Cline v4.0.10, `openrouter-stream.ts`, `vercel-ai-gateway-stream.ts`,
//! `openai.ts` and each provider's handler) sends for the same model and settings, and the
//! deliberate differences `chat_body.rs` and `router_body.rs` list.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::StreamExt;
use serde_json::{Value, json};
use switchyard_api::{
    ApiConfiguration, ContentBlock, Message, Mode, RequestOptions, Role, ToolSpec,
    build_api_handler,
};
use switchyard_testkit::{HttpResponse, MockServer, Reply, test_data_dir};

const KEY: &str = "sk-bodies-test-key-0123456789";

/// One request's settings.
#[derive(Default, Clone)]
struct Case<'a> {
    provider: &'a str,
    model: &'a str,
    /// TOML lines under `[act]`.
    mode: &'a str,
    /// TOML lines under `[providers.ID]`.
    endpoint: &'a str,
    tools: bool,
}

fn tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "reads a file".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }
}

/// A conversation of two user turns with an assistant answer between them.
fn conversation() -> Vec<Message> {
    vec![
        Message::user_text("first question"),
        Message::assistant_text("first answer"),
        Message::user_text("second question"),
    ]
}

/// The body the server received for `case` with `messages`.
async fn body_with(case: &Case<'_>, messages: &[Message]) -> Value {
    body_with_system(case, "SYSTEM PROMPT", messages).await
}

/// [`body_with`] under the system prompt `system`.
async fn body_with_system(case: &Case<'_>, system: &str, messages: &[Message]) -> Value {
    let server =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
    let text = format!(
        "[act]\nprovider = \"{}\"\nmodel = \"{}\"\n{}\n[providers.\"{}\"]\nbase_url = \"{}/v1\"\n{}\n",
        case.provider,
        case.model,
        case.mode,
        case.provider,
        server.url(),
        case.endpoint
    );
    let config = ApiConfiguration::from_toml(&text, "t.toml", |_| Some(KEY.to_owned())).unwrap();
    let handler = build_api_handler(&config, Mode::Act).unwrap();
    let tools = if case.tools { vec![tool()] } else { vec![] };
    let items: Vec<_> = handler
        .create_message(system, messages, &tools, RequestOptions::default())
        .collect()
        .await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/chat/completions");
    requests[0].json()
}

async fn body(case: &Case<'_>) -> Value {
    body_with(case, &conversation()).await
}

fn openrouter<'a>(model: &'a str) -> Case<'a> {
    Case {
        provider: "openrouter",
        model,
        ..Case::default()
    }
}

const EPHEMERAL: &str = r#"{"type":"ephemeral"}"#;

fn ephemeral() -> Value {
    serde_json::from_str(EPHEMERAL).unwrap()
}

/// The body's fields other than `messages`, for whole-object comparisons.
fn fields(body: &Value) -> Value {
    let mut b = body.clone();
    b.as_object_mut().unwrap().remove("messages");
    b
}

#[tokio::test]
async fn openrouter_claude_gets_cache_marks_temperature_zero_and_parallel_tools() {
    let body = body(&Case {
        tools: true,
        ..openrouter("anthropic/claude-sonnet-4.5")
    })
    .await;
    assert_eq!(
        fields(&body),
        json!({
            "model": "anthropic/claude-sonnet-4.5",
            "temperature": 0.0,
            "stream": true,
            "stream_options": {"include_usage": true},
            "include_reasoning": true,
            "tools": [{"type": "function", "function": {"name": "read_file", "description": "reads a file",
                       "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}],
            "tool_choice": "auto",
            "parallel_tool_calls": true,
        })
    );
    // The system prompt and the last two user messages carry the cache marks.
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": [{"type": "text", "text": "SYSTEM PROMPT", "cache_control": ephemeral()}]},
            {"role": "user", "content": [{"type": "text", "text": "first question", "cache_control": ephemeral()}]},
            {"role": "assistant", "content": "first answer"},
            {"role": "user", "content": [{"type": "text", "text": "second question", "cache_control": ephemeral()}]},
        ])
    );
}

#[tokio::test]
async fn openrouter_claude_thinking_budget_is_reasoning_max_tokens_without_temperature() {
    let body = body(&Case {
        mode: "thinking_budget_tokens = 4096",
        ..openrouter("anthropic/claude-sonnet-4.5")
    })
    .await;
    assert_eq!(body["reasoning"], json!({"max_tokens": 4096}));
    assert_eq!(body["include_reasoning"], true);
    assert!(body.get("temperature").is_none(), "{body}");
    assert!(body.get("max_tokens").is_none(), "{body}");
    assert!(
        body.get("tools").is_none(),
        "no tools, no tool fields: {body}"
    );
    assert!(body.get("parallel_tool_calls").is_none(), "{body}");
}

#[tokio::test]
async fn openrouter_1m_suffix_becomes_the_anthropic_route() {
    let body = body(&Case {
        endpoint: "provider_sorting = \"price\"",
        ..openrouter("anthropic/claude-sonnet-4.5:1m")
    })
    .await;
    assert_eq!(body["model"], "anthropic/claude-sonnet-4.5");
    assert_eq!(
        body["provider"],
        json!({"order": ["anthropic", "google-vertex/global"], "allow_fallbacks": false})
    );
    // Still a Claude model: cache marks on the plain id.
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"],
        ephemeral()
    );
}

#[tokio::test]
async fn openrouter_adaptive_claude_thinks_by_effort_with_verbosity() {
    let body_high = body(&Case {
        mode: "reasoning_effort = \"high\"",
        ..openrouter("anthropic/claude-opus-4.6")
    })
    .await;
    assert_eq!(body_high["reasoning"], json!({"enabled": true}));
    assert_eq!(body_high["verbosity"], "high");
    assert_eq!(body_high["include_reasoning"], true);
    assert!(body_high.get("temperature").is_none());
    assert!(body_high.get("top_p").is_none());
    // A budget without an effort thinks at `high`.
    let budget = body(&Case {
        mode: "thinking_budget_tokens = 2048",
        ..openrouter("anthropic/claude-opus-4.6")
    })
    .await;
    assert_eq!(budget["reasoning"], json!({"enabled": true}));
    assert_eq!(budget["verbosity"], "high");
    // `none` turns it off.
    let off = body(&Case {
        mode: "reasoning_effort = \"none\"\nthinking_budget_tokens = 2048",
        ..openrouter("anthropic/claude-opus-4.6")
    })
    .await;
    assert!(off.get("reasoning").is_none(), "{off}");
    assert!(off.get("verbosity").is_none(), "{off}");
    assert_eq!(off["include_reasoning"], false);
    assert!(off.get("temperature").is_none());
}

#[tokio::test]
async fn openrouter_effort_models_get_reasoning_effort_and_no_cache_marks() {
    let body = body(&Case {
        mode: "reasoning_effort = \"low\"",
        ..openrouter("openai/o3")
    })
    .await;
    assert_eq!(body["reasoning"], json!({"effort": "low"}));
    assert_eq!(body["include_reasoning"], true);
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "SYSTEM PROMPT"})
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "user", "content": "second question"})
    );
    // A budget does not turn an effort model into a budget model.
    let budget = super_body("openai/o3", "thinking_budget_tokens = 4096").await;
    assert!(budget.get("reasoning").is_none(), "{budget}");
    assert_eq!(budget["temperature"], 0.0);
    // Grok 4's reasoning stream is left out; its effort is still sent.
    let grok = super_body("x-ai/grok-4", "reasoning_effort = \"medium\"").await;
    assert_eq!(grok["include_reasoning"], false);
    assert_eq!(grok["reasoning"], json!({"effort": "medium"}));
    // Effort `none`: no reasoning at all.
    let none = super_body("openai/o3", "reasoning_effort = \"none\"").await;
    assert_eq!(none["include_reasoning"], false);
    assert!(none.get("reasoning").is_none());
}

async fn super_body(model: &str, mode: &str) -> Value {
    body(&Case {
        mode,
        ..openrouter(model)
    })
    .await
}

#[tokio::test]
async fn openrouter_gemini_flash_is_capped_and_gemini_3_runs_at_temperature_one() {
    let flash = super_body("google/gemini-2.5-flash", "").await;
    assert_eq!(flash["max_tokens"], 8192);
    assert_eq!(flash["temperature"], 0.0);
    assert_eq!(
        flash["messages"][0]["content"], "SYSTEM PROMPT",
        "no cache marks"
    );
    // The model's own smaller limit wins.
    let small = super_body(
        "google/gemini-2.5-flash-lite",
        "[act.model_info]\nmax_tokens = 4000",
    )
    .await;
    assert_eq!(small["max_tokens"], 4000);
    let pro = super_body("google/gemini-3-pro-preview", "").await;
    assert_eq!(pro["temperature"], 1.0);
    assert!(pro.get("max_tokens").is_none());
}

#[tokio::test]
async fn openrouter_r1_models_get_the_r1_format_and_deepseek_sampling() {
    let body = super_body("deepseek/deepseek-r1", "").await;
    assert_eq!(body["temperature"], 0.7);
    assert_eq!(body["top_p"], 0.95);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": "SYSTEM PROMPT\nfirst question"},
            {"role": "assistant", "content": "first answer"},
            {"role": "user", "content": "second question"},
        ])
    );
}

#[tokio::test]
async fn openrouter_provider_routing_follows_the_reference_table_then_the_sorting_setting() {
    let qwen = body(&Case {
        endpoint: "provider_sorting = \"throughput\"",
        ..openrouter("qwen/qwen3-coder")
    })
    .await;
    assert_eq!(
        qwen["provider"],
        json!({"order": ["nebius", "baseten", "fireworks", "together", "deepinfra"], "allow_fallbacks": false})
    );
    let other = body(&Case {
        endpoint: "provider_sorting = \"price\"",
        ..openrouter("meta-llama/llama-3.3-70b-instruct")
    })
    .await;
    assert_eq!(other["provider"], json!({"sort": "price"}));
    let plain = super_body("meta-llama/llama-3.3-70b-instruct", "").await;
    assert!(plain.get("provider").is_none());
    assert_eq!(plain["include_reasoning"], true);
    assert!(plain.get("reasoning").is_none());
}

#[tokio::test]
async fn openrouter_explicit_cache_ids_and_minimax_get_cache_marks() {
    for model in [
        "deepseek/deepseek-v3.2",
        "minimax/minimax-m2",
        "qwen/qwen3-coder-plus",
    ] {
        let body = super_body(model, "").await;
        assert_eq!(
            body["messages"][0]["content"][0]["cache_control"],
            ephemeral(),
            "{model}"
        );
        assert_eq!(
            body["messages"][3]["content"][0]["cache_control"],
            ephemeral(),
            "{model}"
        );
    }
}

#[tokio::test]
async fn openrouter_parallel_tool_calls_follow_the_setting() {
    let body = body(&Case {
        tools: true,
        endpoint: "parallel_tool_calls = false",
        ..openrouter("openai/gpt-4o-mini")
    })
    .await;
    assert_eq!(body["parallel_tool_calls"], false);
    assert_eq!(body["tool_choice"], "auto");
}

#[tokio::test]
async fn openrouter_budget_on_other_thinking_models_is_reasoning_max_tokens() {
    // A thinking model without effort support: its budget is `reasoning.max_tokens`.
    let body = super_body(
        "mistralai/magistral-medium-2506",
        "thinking_budget_tokens = 3000\n[act.model_info]\nsupports_reasoning = true",
    )
    .await;
    assert_eq!(body["reasoning"], json!({"max_tokens": 3000}));
    assert!(body.get("temperature").is_none());
    // Without thinking support, a budget sends nothing.
    let plain = super_body("mistralai/mistral-large", "thinking_budget_tokens = 3000").await;
    assert!(plain.get("reasoning").is_none());
    assert_eq!(plain["temperature"], 0.0);
}

#[tokio::test]
async fn openrouter_provider_preferences_equal_the_reference_table() {
    let reference: Value = serde_json::from_str(
        &std::fs::read_to_string(test_data_dir().join("reference/cline-v4.0.10-models.json"))
            .unwrap(),
    )
    .unwrap();
    let table = reference["other_exports"]["OPENROUTER_PROVIDER_PREFERENCES"]
        .as_object()
        .unwrap();
    assert_eq!(table.len(), 20);
    for (model, pref) in table {
        let body = super_body(model, "").await;
        assert_eq!(&body["provider"], pref, "{model}");
    }
}

#[tokio::test]
async fn vercel_gateway_bodies() {
    let claude = body(&Case {
        provider: "vercel-ai-gateway",
        model: "anthropic/claude-sonnet-4.5",
        mode: "thinking_budget_tokens = 5000\n[act.model_info]\nmax_tokens = 64000\nsupports_reasoning = true",
        tools: true,
        ..Case::default()
    })
    .await;
    assert_eq!(claude["max_tokens"], 64000);
    assert_eq!(claude["reasoning"], json!({"max_tokens": 5000}));
    assert!(claude.get("temperature").is_none());
    assert_eq!(
        claude["messages"][0]["content"][0]["cache_control"],
        ephemeral()
    );
    assert_eq!(claude["parallel_tool_calls"], false);
    assert!(claude.get("provider").is_none());
    let r1 = body(&Case {
        provider: "vercel-ai-gateway",
        model: "deepseek/deepseek-r1",
        ..Case::default()
    })
    .await;
    assert_eq!(
        r1["temperature"], 0.0,
        "the gateway keeps its temperature for R1"
    );
    assert_eq!(r1["top_p"], 0.95);
    assert_eq!(
        r1["messages"][0]["content"],
        "SYSTEM PROMPT\nfirst question"
    );
}

fn compatible<'a>(model: &'a str, mode: &'a str) -> Case<'a> {
    Case {
        provider: "openai",
        model,
        mode,
        ..Case::default()
    }
}

#[tokio::test]
async fn openai_compatible_temperature_limit_and_tools() {
    let plain = body(&Case {
        tools: true,
        ..compatible("my-model", "")
    })
    .await;
    assert_eq!(plain["temperature"], 0.0);
    assert!(
        plain.get("max_tokens").is_none(),
        "no known limit, none sent"
    );
    assert!(plain.get("reasoning_effort").is_none());
    assert_eq!(plain["tool_choice"], "auto");
    assert_eq!(plain["parallel_tool_calls"], false);
    assert_eq!(
        plain["messages"][0],
        json!({"role": "system", "content": "SYSTEM PROMPT"})
    );
    // A configured temperature of 0 means "none" (the reference's rule); others are sent.
    let zero = body(&compatible(
        "my-model",
        "[act.model_info]\ntemperature = 0.0\nmax_tokens = 1000",
    ))
    .await;
    assert!(zero.get("temperature").is_none(), "{zero}");
    assert_eq!(zero["max_tokens"], 1000);
    let warm = body(&compatible(
        "my-model",
        "[act.model_info]\ntemperature = 0.3",
    ))
    .await;
    assert_eq!(warm["temperature"], 0.3);
}

#[tokio::test]
async fn openai_compatible_reasoning_family() {
    let o3 = body(&compatible(
        "o3-mini",
        "[act.model_info]\nmax_tokens = 5000",
    ))
    .await;
    assert_eq!(o3["messages"][0]["role"], "developer");
    assert_eq!(o3["reasoning_effort"], "medium", "unset effort is medium");
    assert!(o3.get("temperature").is_none());
    assert_eq!(o3["max_completion_tokens"], 5000);
    assert!(o3.get("max_tokens").is_none());
    let none = body(&compatible("gpt-5-mini", "reasoning_effort = \"none\"")).await;
    assert!(none.get("reasoning_effort").is_none());
    assert_eq!(none["messages"][0]["role"], "developer");
    // "chat" models are not the reasoning family.
    let chat = body(&compatible(
        "gpt-5-chat-latest",
        "reasoning_effort = \"high\"",
    ))
    .await;
    assert_eq!(chat["messages"][0]["role"], "system");
    assert!(chat.get("reasoning_effort").is_none());
    assert_eq!(chat["temperature"], 0.0);
}

#[tokio::test]
async fn openai_compatible_deepseek_reasoner_gets_the_r1_format() {
    let body = body(&compatible("deepseek-reasoner", "")).await;
    assert_eq!(
        body["messages"][0],
        json!({"role": "user", "content": "SYSTEM PROMPT\nfirst question"})
    );
    assert_eq!(body["messages"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn tool_history_keeps_the_standard_format_with_null_content() {
    let messages = vec![
        Message::user_text("read it"),
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: "call_1".into(),
                name: "read_file".into(),
                input: json!({"path": "a"}),
                signature: None,
            }],
        },
        Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "call_1".into(),
                    content: "contents".into(),
                    is_error: false,
                },
                ContentBlock::Text {
                    text: "go on".into(),
                },
            ],
        },
    ];
    // Even for an R1 model, a conversation with tool calls keeps them.
    let body = body_with(
        &Case {
            tools: true,
            ..compatible("deepseek-reasoner", "")
        },
        &messages,
    )
    .await;
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "SYSTEM PROMPT"},
            {"role": "user", "content": "read it"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "contents"},
            {"role": "user", "content": "go on"},
        ])
    );
}

/// The limit field a body carries, and its value.
fn limit(body: &Value) -> Option<(&'static str, u64)> {
    ["max_tokens", "max_completion_tokens"]
        .into_iter()
        .find_map(|f| body.get(f).map(|v| (f, v.as_u64().unwrap())))
}

#[tokio::test]
async fn each_preset_sends_the_limit_and_temperature_its_reference_handler_sends() {
    // (provider, model, limit field when the model's limit is known, temperature)
    let rows: &[(&str, &str, Option<&str>, Option<f64>)] = &[
        (
            "deepseek",
            "deepseek-chat",
            Some("max_completion_tokens"),
            Some(0.0),
        ),
        ("fireworks", "some-model", None, Some(0.0)),
        ("together", "some-model", None, Some(0.0)),
        ("qwen", "qwen-max", Some("max_completion_tokens"), Some(0.0)),
        (
            "doubao",
            "some-model",
            Some("max_completion_tokens"),
            Some(0.0),
        ),
        ("mistral", "some-model", None, Some(0.0)),
        ("moonshot", "some-model", Some("max_tokens"), None),
        ("huggingface", "some-model", Some("max_tokens"), Some(0.0)),
        ("nebius", "some-model", None, Some(0.0)),
        ("xai", "grok-4", Some("max_completion_tokens"), Some(0.0)),
        ("sambanova", "some-model", None, Some(0.0)),
        (
            "huawei-cloud-maas",
            "some-model",
            Some("max_completion_tokens"),
            Some(0.0),
        ),
        ("zai", "some-model", Some("max_completion_tokens"), None),
        ("hicap", "some-model", None, Some(1.0)),
        ("nousResearch", "some-model", None, Some(0.0)),
        ("wandb", "some-model", None, Some(0.0)),
        (
            "lmstudio",
            "some-model",
            Some("max_completion_tokens"),
            None,
        ),
        ("requesty", "some-model", Some("max_tokens"), Some(0.0)),
        ("litellm", "some-model", None, Some(1.0)),
        ("groq", "some-model", Some("max_tokens"), Some(0.0)),
        ("baseten", "some-model", Some("max_tokens"), Some(0.0)),
    ];
    for (provider, model, field, temperature) in rows {
        // The model's limit set to a known value, so "sent or not" and "which field" show.
        let mode = "[act.model_info]\nmax_tokens = 7000";
        let body = body(&Case {
            provider,
            model,
            mode,
            tools: true,
            ..Case::default()
        })
        .await;
        assert_eq!(limit(&body), field.map(|f| (f, 7000)), "{provider}: {body}");
        assert_eq!(
            body.get("temperature").and_then(Value::as_f64),
            *temperature,
            "{provider}: {body}"
        );
        assert_eq!(body["model"], *model, "{provider}");
        assert_eq!(
            body["stream_options"],
            json!({"include_usage": true}),
            "{provider}"
        );
        assert_eq!(body["tool_choice"], "auto", "{provider}");
        let parallel = if *provider == "baseten" {
            None
        } else {
            Some(&json!(false))
        };
        assert_eq!(body.get("parallel_tool_calls"), parallel, "{provider}");
    }
    // Fallback limits when the model's is unknown.
    let groq = body(&Case {
        provider: "groq",
        model: "unknown-model",
        ..Case::default()
    })
    .await;
    assert_eq!(limit(&groq), Some(("max_tokens", 8192)));
    let groq_llama = body(&Case {
        provider: "groq",
        model: "llama-3.3-70b-versatile-new",
        ..Case::default()
    })
    .await;
    assert_eq!(limit(&groq_llama), Some(("max_tokens", 32_768)));
    let cerebras = body(&Case {
        provider: "cerebras",
        model: "unknown-model",
        ..Case::default()
    })
    .await;
    assert_eq!(limit(&cerebras), Some(("max_tokens", 16384)));
    assert_eq!(cerebras["temperature"], 0.0);
}

#[tokio::test]
async fn deepseek_thinking_models() {
    // A thinking model (`deepseek-reasoner`, `deepseek-v4-flash`, `deepseek-v4-pro`): no
    // temperature, the effort when set.
    let thinker = body(&Case {
        provider: "deepseek",
        model: "deepseek-reasoner",
        mode: "reasoning_effort = \"high\"",
        ..Case::default()
    })
    .await;
    assert!(thinker.get("temperature").is_none());
    assert_eq!(thinker["reasoning_effort"], "high");
    let chat = body(&Case {
        provider: "deepseek",
        model: "deepseek-chat",
        mode: "reasoning_effort = \"high\"",
        ..Case::default()
    })
    .await;
    assert!(chat.get("reasoning_effort").is_none());
    assert_eq!(chat["temperature"], 0.0);
    // The reasoner gets its thinking back within the current turn only.
    let thinking = |t: &str| Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::Thinking {
                thinking: t.into(),
                signature: String::new(),
            },
            ContentBlock::ToolUse {
                id: format!("call_{t}"),
                name: "read_file".into(),
                input: json!({}),
                signature: None,
            },
        ],
    };
    let result = |t: &str| Message {
        role: Role::User,
        content: vec![ContentBlock::ToolResult {
            tool_use_id: format!("call_{t}"),
            content: "ok".into(),
            is_error: false,
        }],
    };
    let messages = vec![
        Message::user_text("old turn"),
        thinking("old"),
        result("old"),
        Message::user_text("new turn"),
        thinking("new"),
        result("new"),
    ];
    let reasoner = body_with(
        &Case {
            provider: "deepseek",
            model: "deepseek-reasoner",
            tools: true,
            ..Case::default()
        },
        &messages,
    )
    .await;
    let assistants: Vec<&Value> = reasoner["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert!(
        assistants[0].get("reasoning_content").is_none(),
        "{reasoner}"
    );
    assert_eq!(assistants[1]["reasoning_content"], "new");
}

#[tokio::test]
async fn qwen3_thinking_switch() {
    let on = body(&Case {
        provider: "qwen",
        model: "qwen3-coder-plus",
        mode: "thinking_budget_tokens = 2048",
        ..Case::default()
    })
    .await;
    assert_eq!(on["enable_thinking"], true);
    assert_eq!(on["thinking_budget"], 2048);
    assert!(on.get("temperature").is_none());
    assert_eq!(
        on["messages"][0]["role"], "user",
        "R1 format with thinking on"
    );
    let off = body(&Case {
        provider: "qwen",
        model: "qwen3-coder-plus",
        ..Case::default()
    })
    .await;
    assert_eq!(off["enable_thinking"], false);
    assert!(off.get("thinking_budget").is_none());
    assert_eq!(off["temperature"], 0.0);
    assert_eq!(off["messages"][0]["role"], "system");
}

#[tokio::test]
async fn requesty_litellm_groq_and_xai_reasoning_fields() {
    let o = body(&Case {
        provider: "requesty",
        model: "openai/o3",
        ..Case::default()
    })
    .await;
    assert_eq!(o["reasoning_effort"], "medium");
    let claude = body(&Case {
        provider: "requesty",
        model: "anthropic/claude-sonnet-4-20250514",
        mode: "thinking_budget_tokens = 3000",
        ..Case::default()
    })
    .await;
    assert_eq!(
        claude["thinking"],
        json!({"type": "enabled", "budget_tokens": 3000})
    );
    let no_budget = body(&Case {
        provider: "requesty",
        model: "anthropic/claude-sonnet-4-20250514",
        ..Case::default()
    })
    .await;
    assert_eq!(no_budget["thinking"], json!({"type": "disabled"}));
    assert_eq!(no_budget["temperature"], 0.0);

    let litellm = body(&Case {
        provider: "litellm",
        model: "claude-sonnet-4",
        mode: "thinking_budget_tokens = 3000\n[act.model_info]\nsupports_prompt_cache = true",
        ..Case::default()
    })
    .await;
    assert_eq!(
        litellm["thinking"],
        json!({"type": "enabled", "budget_tokens": 3000})
    );
    assert!(litellm.get("temperature").is_none());
    assert_eq!(litellm["drop_params"], true);
    assert_eq!(
        litellm["messages"][0]["content"][0]["cache_control"],
        ephemeral()
    );
    assert_eq!(
        litellm["messages"][3]["content"][0]["cache_control"],
        ephemeral()
    );
    assert!(
        litellm["messages"][2]["content"].is_string(),
        "assistant unmarked"
    );

    let groq = body(&Case {
        provider: "groq",
        model: "deepseek-r1-distill-llama-70b",
        ..Case::default()
    })
    .await;
    assert_eq!(groq["top_p"], 0.95);
    assert_eq!(groq["reasoning_format"], "parsed");

    let mini = body(&Case {
        provider: "xai",
        model: "grok-3-mini",
        mode: "reasoning_effort = \"low\"",
        ..Case::default()
    })
    .await;
    assert_eq!(mini["reasoning_effort"], "low");
    let medium = body(&Case {
        provider: "xai",
        model: "grok-3-mini",
        mode: "reasoning_effort = \"medium\"",
        ..Case::default()
    })
    .await;
    assert!(
        medium.get("reasoning_effort").is_none(),
        "grok-3-mini takes low or high"
    );
}

/// A blank system prompt (a gateway client that sent none) is no message at all: llama.cpp
/// and LM Studio refuse a blank one with a 400 ("all messages must have non-empty content",
/// farion1231/cc-switch#2467, lmstudio-ai/lmstudio-bug-tracker#2); the R1 format gets no
/// blank first user turn either.
#[tokio::test]
async fn a_blank_system_prompt_sends_no_system_message() {
    let plain = Case {
        provider: "openai",
        model: "gpt-4o",
        ..Case::default()
    };
    let body = body_with_system(&plain, "", &conversation()).await;
    let roles: Vec<&str> = (body["messages"].as_array().unwrap().iter())
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"], "{body}");
    let r1 = Case {
        provider: "deepseek",
        model: "deepseek-reasoner",
        ..Case::default()
    };
    let body = body_with_system(&r1, "", &conversation()).await;
    assert_eq!(body["messages"][0]["content"], "first question", "{body}");
}
