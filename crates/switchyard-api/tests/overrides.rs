//! A caller's own request parameters (`RequestOptions::overrides`, SPEC R14.1, R14.2) in each
//! wire family's body, as the testkit server records it: every override set (each field and
//! value in the provider's spelling), none set (the body as the configuration makes it), and
//! what each handler names as dropped for `x-switchyard-dropped`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::StreamExt;
use serde_json::{Value, json};
use switchyard_api::{
    ApiHandler, Message, ReasoningEffort, RequestOptions, RequestOverrides, ToolChoice, ToolSpec,
};
use switchyard_testkit::{HttpResponse, MockServer, Reply};

mod common;

/// A provider and model, the base-URL path the handler is given, and the fixture it answers.
struct Family {
    provider: &'static str,
    model: &'static str,
    path: &'static str,
    fixture: &'static str,
}

const ANTHROPIC: Family = Family {
    provider: "anthropic",
    model: "claude-sonnet-4-5-20250929",
    path: "",
    fixture: "anthropic_text",
};
const OPENAI_COMPATIBLE: Family = Family {
    provider: "openai",
    model: "gpt-4o",
    path: "/v1",
    fixture: "openai_chat_text",
};
const OPENAI_REASONING: Family = Family {
    provider: "openai-native",
    model: "o4-mini",
    path: "/v1",
    fixture: "openai_chat_text",
};
const OPENROUTER: Family = Family {
    provider: "openrouter",
    model: "anthropic/claude-sonnet-4.5",
    path: "/api/v1",
    fixture: "openai_chat_text",
};
const RESPONSES: Family = Family {
    provider: "openai-native",
    model: "gpt-5.4",
    path: "/v1",
    fixture: "openai_responses",
};
const GEMINI: Family = Family {
    provider: "gemini",
    model: "gemini-2.5-flash",
    path: "",
    fixture: "gemini_stream",
};
const OLLAMA: Family = Family {
    provider: "ollama",
    model: "qwen3:8b",
    path: "",
    fixture: "ollama_chat",
};
#[cfg(feature = "bedrock")]
const BEDROCK: Family = Family {
    provider: "bedrock",
    model: "anthropic.claude-sonnet-4-5-20250929-v1:0",
    path: "",
    fixture: "bedrock_converse_stream",
};

fn tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "reads a file".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }
}

/// Every override set: a limit above the budget, so Claude's thinking stays on.
fn all_set() -> RequestOverrides {
    RequestOverrides {
        max_tokens: Some(4096),
        temperature: Some(0.25),
        top_p: Some(0.5),
        stop: vec!["END".into()],
        tool_choice: Some(ToolChoice::Tool("read_file".into())),
        reasoning_effort: Some(ReasoningEffort::High),
        thinking_budget_tokens: Some(2048),
        ..RequestOverrides::default()
    }
}

fn handler(family: &Family, base_url: &str) -> Box<dyn ApiHandler> {
    let url = format!("{base_url}{}", family.path);
    common::handler(family.provider, family.model, &url, "")
}

/// The body `family`'s handler sent for one request with `overrides` and one tool, and what
/// the handler names as dropped.
async fn sent(family: &Family, overrides: RequestOverrides) -> (Value, Vec<&'static str>) {
    let reply = Reply::new(HttpResponse::fixture(family.fixture));
    let server = MockServer::start(vec![reply]).await;
    let handler = handler(family, &server.url());
    let dropped = handler.dropped_overrides(&overrides);
    let options = RequestOptions {
        overrides,
        ..RequestOptions::default()
    };
    let items: Vec<_> = handler
        .create_message("SYSTEM", &[Message::user_text("hi")], &[tool()], options)
        .collect()
        .await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    (server.requests()[0].json(), dropped)
}

/// Asserts the value at each JSON pointer of `fields` (`None`: absent).
fn assert_fields(body: &Value, fields: &[(&str, Option<Value>)]) {
    for (pointer, want) in fields {
        assert_eq!(body.pointer(pointer), want.as_ref(), "{pointer} in {body}");
    }
}

#[tokio::test]
async fn anthropic_while_thinking_takes_no_temperature_low_top_p_or_forced_tool() {
    let (body, dropped) = sent(&ANTHROPIC, all_set()).await;
    assert_fields(
        &body,
        &[
            ("/max_tokens", Some(json!(4096))),
            ("/stop_sequences", Some(json!(["END"]))),
            (
                "/thinking",
                Some(json!({"type": "enabled", "budget_tokens": 2048})),
            ),
            ("/temperature", None),
            ("/top_p", None),
            ("/tool_choice", None),
        ],
    );
    assert_eq!(
        dropped,
        ["temperature", "top_p", "tool_choice", "reasoning_effort"]
    );
    // With thinking, Claude takes a `top_p` from 0.95 to 1.
    let high = RequestOverrides {
        top_p: Some(0.97),
        ..all_set()
    };
    let (body, dropped) = sent(&ANTHROPIC, high).await;
    assert_eq!(body["top_p"], json!(0.97));
    assert!(!dropped.contains(&"top_p"), "{dropped:?}");
}

#[tokio::test]
async fn anthropic_without_thinking_takes_temperature_and_the_tool_choice() {
    let overrides = RequestOverrides {
        thinking_budget_tokens: Some(0),
        reasoning_effort: None,
        ..all_set()
    };
    let (body, dropped) = sent(&ANTHROPIC, overrides).await;
    assert_fields(
        &body,
        &[
            ("/temperature", Some(json!(0.25))),
            (
                "/tool_choice",
                Some(json!({"type": "tool", "name": "read_file"})),
            ),
            ("/thinking", None),
            ("/top_p", None),
        ],
    );
    // Claude Sonnet 4.5 and later refuse temperature and top_p together: top_p is dropped.
    assert_eq!(dropped, ["top_p"], "{dropped:?}");
    for (choice, wire) in [
        (ToolChoice::Auto, json!({"type": "auto"})),
        (ToolChoice::None, json!({"type": "none"})),
        (ToolChoice::Required, json!({"type": "any"})),
    ] {
        let overrides = RequestOverrides {
            tool_choice: Some(choice),
            ..RequestOverrides::default()
        };
        let (body, _) = sent(&ANTHROPIC, overrides).await;
        assert_eq!(body["tool_choice"], wire);
    }
}

#[tokio::test]
async fn openai_compatible_chat_takes_the_sampling_stop_and_tool_choice() {
    let (body, dropped) = sent(&OPENAI_COMPATIBLE, all_set()).await;
    assert_fields(
        &body,
        &[
            ("/max_tokens", Some(json!(4096))),
            ("/temperature", Some(json!(0.25))),
            ("/top_p", Some(json!(0.5))),
            ("/stop", Some(json!(["END"]))),
            (
                "/tool_choice",
                Some(json!({"type": "function", "function": {"name": "read_file"}})),
            ),
            ("/reasoning_effort", None),
        ],
    );
    assert_eq!(dropped, ["reasoning_effort", "thinking"]);
    for (choice, wire) in [
        (ToolChoice::Auto, json!("auto")),
        (ToolChoice::None, json!("none")),
        (ToolChoice::Required, json!("required")),
    ] {
        let overrides = RequestOverrides {
            tool_choice: Some(choice),
            ..RequestOverrides::default()
        };
        let (body, _) = sent(&OPENAI_COMPATIBLE, overrides).await;
        assert_eq!(body["tool_choice"], wire);
    }
}

#[tokio::test]
async fn an_openai_reasoning_model_takes_the_limit_as_max_completion_tokens_and_the_effort() {
    let (body, dropped) = sent(&OPENAI_REASONING, all_set()).await;
    assert_fields(
        &body,
        &[
            ("/max_completion_tokens", Some(json!(4096))),
            ("/max_tokens", None),
            ("/reasoning_effort", Some(json!("high"))),
            ("/stop", Some(json!(["END"]))),
            ("/temperature", None),
            ("/top_p", None),
        ],
    );
    assert_eq!(dropped, ["temperature", "top_p", "thinking"]);
}

#[tokio::test]
async fn openrouter_takes_the_budget_as_reasoning_max_tokens_and_no_sampling() {
    let (body, dropped) = sent(&OPENROUTER, all_set()).await;
    assert_fields(
        &body,
        &[
            ("/max_tokens", Some(json!(4096))),
            ("/reasoning", Some(json!({"max_tokens": 2048}))),
            ("/stop", Some(json!(["END"]))),
            ("/tool_choice/function/name", Some(json!("read_file"))),
            ("/temperature", None),
            ("/top_p", None),
        ],
    );
    assert_eq!(dropped, ["temperature", "top_p", "reasoning_effort"]);
}

#[tokio::test]
async fn responses_takes_the_limit_effort_and_tool_choice_but_has_no_stop() {
    let (body, dropped) = sent(&RESPONSES, all_set()).await;
    assert_fields(
        &body,
        &[
            ("/max_output_tokens", Some(json!(4096))),
            ("/reasoning/effort", Some(json!("high"))),
            (
                "/tool_choice",
                Some(json!({"type": "function", "name": "read_file"})),
            ),
            ("/stop", None),
            ("/temperature", None),
            ("/top_p", None),
        ],
    );
    assert_eq!(dropped, ["temperature", "top_p", "stop", "thinking"]);
}

#[tokio::test]
async fn gemini_takes_generation_config_and_a_function_calling_mode() {
    let (body, dropped) = sent(&GEMINI, all_set()).await;
    assert_fields(
        &body,
        &[
            ("/generationConfig/maxOutputTokens", Some(json!(4096))),
            ("/generationConfig/temperature", Some(json!(0.25))),
            ("/generationConfig/topP", Some(json!(0.5))),
            ("/generationConfig/stopSequences", Some(json!(["END"]))),
            (
                "/generationConfig/thinkingConfig/thinkingBudget",
                Some(json!(2048)),
            ),
            (
                "/toolConfig/functionCallingConfig",
                Some(json!({"mode": "ANY", "allowedFunctionNames": ["read_file"]})),
            ),
        ],
    );
    assert_eq!(dropped, ["reasoning_effort"]);
    let off = RequestOverrides {
        thinking_budget_tokens: Some(0),
        tool_choice: Some(ToolChoice::None),
        ..RequestOverrides::default()
    };
    let (body, dropped) = sent(&GEMINI, off).await;
    assert_eq!(
        body["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 0})
    );
    assert_eq!(
        body["toolConfig"]["functionCallingConfig"],
        json!({"mode": "NONE"})
    );
    assert!(dropped.is_empty(), "{dropped:?}");
}

#[tokio::test]
async fn ollama_takes_options_and_has_no_tool_choice() {
    let (body, dropped) = sent(&OLLAMA, all_set()).await;
    assert_fields(
        &body,
        &[
            ("/options/num_predict", Some(json!(4096))),
            ("/options/temperature", Some(json!(0.25))),
            ("/options/top_p", Some(json!(0.5))),
            ("/options/stop", Some(json!(["END"]))),
            ("/think", Some(json!(true))),
            ("/tool_choice", None),
        ],
    );
    assert_eq!(dropped, ["tool_choice", "reasoning_effort"]);
    let off = RequestOverrides {
        thinking_budget_tokens: Some(0),
        ..RequestOverrides::default()
    };
    let (body, dropped) = sent(&OLLAMA, off).await;
    assert_eq!(body["think"], json!(false));
    assert!(dropped.is_empty(), "{dropped:?}");
}

#[cfg(feature = "bedrock")]
#[tokio::test]
async fn bedrock_takes_inference_config_and_no_forced_tool_while_thinking() {
    let (body, dropped) = sent(&BEDROCK, all_set()).await;
    assert_fields(
        &body,
        &[
            ("/inferenceConfig/maxTokens", Some(json!(4096))),
            ("/inferenceConfig/stopSequences", Some(json!(["END"]))),
            ("/inferenceConfig/temperature", None),
            ("/inferenceConfig/topP", None),
            (
                "/additionalModelRequestFields/thinking/budget_tokens",
                Some(json!(2048)),
            ),
            ("/toolConfig/toolChoice", None),
        ],
    );
    assert_eq!(
        dropped,
        ["temperature", "top_p", "tool_choice", "reasoning_effort"]
    );
    let overrides = RequestOverrides {
        thinking_budget_tokens: Some(0),
        reasoning_effort: None,
        ..all_set()
    };
    let (body, dropped) = sent(&BEDROCK, overrides).await;
    assert_eq!(body["inferenceConfig"]["temperature"], json!(0.25));
    assert_eq!(body["inferenceConfig"]["topP"], json!(0.5));
    assert_eq!(body["inferenceConfig"]["topP"], json!(0.5));
    assert_eq!(
        body["toolConfig"]["toolChoice"],
        json!({"tool": {"name": "read_file"}})
    );
    assert!(dropped.is_empty(), "{dropped:?}");
    let none = RequestOverrides {
        tool_choice: Some(ToolChoice::None),
        ..RequestOverrides::default()
    };
    let (body, dropped) = sent(&BEDROCK, none).await;
    assert_eq!(body["toolConfig"].get("toolChoice"), None, "{body}");
    assert_eq!(dropped, ["tool_choice"]);
}

/// With no override set, no family sends a field only an override puts there, the limits
/// are the configuration's, and nothing is named dropped.
#[tokio::test]
async fn no_override_leaves_every_body_as_configured() {
    let mut families = vec![
        (ANTHROPIC, vec!["/top_p", "/stop_sequences", "/tool_choice"]),
        (OPENAI_COMPATIBLE, vec!["/top_p", "/stop"]),
        (OPENAI_REASONING, vec!["/top_p", "/stop", "/temperature"]),
        (OPENROUTER, vec!["/top_p", "/stop"]),
        (RESPONSES, vec!["/top_p", "/tool_choice", "/temperature"]),
        (
            GEMINI,
            vec![
                "/toolConfig",
                "/generationConfig/topP",
                "/generationConfig/stopSequences",
            ],
        ),
        (
            OLLAMA,
            vec!["/options/top_p", "/options/stop", "/tool_choice"],
        ),
    ];
    #[cfg(feature = "bedrock")]
    families.push((
        BEDROCK,
        vec!["/inferenceConfig/topP", "/inferenceConfig/stopSequences"],
    ));
    for (family, absent) in &families {
        let (body, dropped) = sent(family, RequestOverrides::default()).await;
        for pointer in absent {
            assert_eq!(
                body.pointer(pointer),
                None,
                "{} {pointer}: {body}",
                family.provider
            );
        }
        assert!(dropped.is_empty(), "{}: {dropped:?}", family.provider);
    }
    let (body, _) = sent(&ANTHROPIC, RequestOverrides::default()).await;
    assert_eq!(body["max_tokens"], json!(64_000), "the model's own limit");
    let (body, _) = sent(&OPENAI_COMPATIBLE, RequestOverrides::default()).await;
    assert_eq!(body["tool_choice"], json!("auto"), "as before");
}

/// Providers whose wire has no place for these name every override set; the Claude Code CLI
/// takes the limit and the thinking budget (as variables), nothing else.
#[test]
fn providers_without_the_fields_name_what_they_drop() {
    let every = [
        "max_tokens",
        "temperature",
        "top_p",
        "stop",
        "tool_choice",
        "reasoning_effort",
        "thinking",
    ];
    for provider in ["dify", "asksage"] {
        let handler = common::handler(provider, "m", "http://127.0.0.1:9", "");
        assert_eq!(handler.dropped_overrides(&all_set()), every, "{provider}");
        let none = handler.dropped_overrides(&RequestOverrides::default());
        assert!(none.is_empty(), "{provider}: {none:?}");
    }
    let claude = common::handler("claude-code", "claude-sonnet-4-5", "http://127.0.0.1:9", "");
    assert_eq!(
        claude.dropped_overrides(&all_set()),
        [
            "temperature",
            "top_p",
            "stop",
            "tool_choice",
            "reasoning_effort"
        ]
    );
    assert!(
        claude
            .dropped_overrides(&RequestOverrides::default())
            .is_empty()
    );
}
