//! Request bodies as real clients send them → GatewayRequest (SPEC R14.1, R14.4).

use serde_json::json;
use switchyard_api::message::ImageSource;
use switchyard_api::{CacheAt, ContentBlock, ReasoningEffort, Role, ToolChoice};

use super::super::parse_request;
use crate::ingress::GatewayRequest;

fn parse(body: serde_json::Value) -> GatewayRequest {
    parse_request(body.to_string().as_bytes()).expect("parses")
}

fn error_field(body: serde_json::Value) -> String {
    let e = parse_request(body.to_string().as_bytes()).expect_err("rejected");
    assert!(
        !e.message.is_empty() && e.message.ends_with('.'),
        "one sentence: {e}"
    );
    e.field
}

/// The Python and Node SDKs' README example, as they serialize it.
#[test]
fn sdk_minimal_body() {
    let body = br#"{"max_tokens":1024,"messages":[{"role":"user","content":"Hello, Claude"}],"model":"claude-sonnet-4-5-20250929"}"#;
    let r = parse_request(body).unwrap();
    assert_eq!(r.model, "claude-sonnet-4-5-20250929");
    assert_eq!(r.overrides.max_tokens, Some(1024));
    assert_eq!(r.messages.len(), 1);
    assert_eq!(r.messages[0].role, Role::User);
    assert_eq!(
        r.messages[0].content,
        vec![ContentBlock::Text {
            text: "Hello, Claude".into()
        }]
    );
    assert!(!r.stream);
    assert!(r.dropped.is_empty(), "{:?}", r.dropped);
    assert_eq!(r.system_prompt, "");
    assert!(r.tools.is_empty());
    assert_eq!(r.overrides.thinking_budget_tokens, None);
}

/// The shape of a Claude Code request (2.x, `?beta=true`): system blocks with
/// `cache_control`, a `role: "system"` message inside `messages`, `thinking: adaptive`,
/// `context_management`, `metadata.user_id`, custom tools with `cache_control` on the last,
/// a server tool, and a tool round with thinking and a signature.
#[test]
fn claude_code_body() {
    let body = json!({
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 32000,
        "stream": true,
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1"},
            {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "You are an interactive CLI tool.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
        ],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>context</system-reminder>"},
                {"type": "text", "text": "create hello.txt containing hi", "cache_control": {"type": "ephemeral"}}
            ]},
            {"role": "system", "content": "MCP server instructions: none."},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I will write the file.", "signature": "EqQBCkYIBxgC"},
                {"type": "text", "text": "Writing it."},
                {"type": "tool_use", "id": "toolu_01A", "name": "Write", "input": {"file_path": "/tmp/hello.txt", "content": "hi"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01A", "content": [{"type": "text", "text": "File created successfully"}]}
            ]}
        ],
        "tools": [
            {"name": "Bash", "description": "Runs a command.", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
            {"name": "Write", "description": "Writes a file.", "input_schema": {"type": "object", "properties": {}}, "cache_control": {"type": "ephemeral"}}
        ],
        "tool_choice": {"type": "auto"},
        "metadata": {"user_id": "user_abc_account__session_1"},
        "thinking": {"type": "adaptive"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "temperature": 1
    });
    let r = parse(body);
    assert!(r.stream);
    assert_eq!(r.overrides.max_tokens, Some(32000));
    assert_eq!(
        r.system_prompt,
        "x-anthropic-billing-header: cc_version=2.1\n\nYou are Claude Code, Anthropic's official CLI for Claude.\n\nYou are an interactive CLI tool.\n\nMCP server instructions: none."
    );
    assert_eq!(r.messages.len(), 3, "the system message left `messages`");
    assert_eq!(r.messages[0].content.len(), 2);
    assert_eq!(
        r.messages[1].content,
        vec![
            ContentBlock::Thinking {
                thinking: "I will write the file.".into(),
                signature: "EqQBCkYIBxgC".into()
            },
            ContentBlock::Text {
                text: "Writing it.".into()
            },
            ContentBlock::ToolUse {
                id: "toolu_01A".into(),
                name: "Write".into(),
                input: json!({"file_path": "/tmp/hello.txt", "content": "hi"}),
                signature: None
            },
        ]
    );
    assert_eq!(
        r.messages[2].content,
        vec![ContentBlock::ToolResult {
            tool_use_id: "toolu_01A".into(),
            content: "File created successfully".into(),
            is_error: false
        }]
    );
    let names: Vec<&str> = r.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["Bash", "Write"]);
    assert_eq!(r.tools[0].input_schema["required"], json!(["command"]));
    assert_eq!(r.overrides.tool_choice, Some(ToolChoice::Auto));
    assert_eq!(
        r.overrides.thinking_budget_tokens, None,
        "adaptive keeps the route's default"
    );
    assert_eq!(r.overrides.temperature, Some(1.0));
    assert_eq!(r.dropped, ["web_search_20250305", "context_management"]);
    // Claude Code's breakpoints are kept where it put them: the tool it marked, the
    // system prompt's end with the last mark's one-hour TTL, and the first message's last block.
    let marks: Vec<(CacheAt, Option<String>)> = (r.overrides.cache.marks.iter())
        .map(|m| (m.at.clone(), m.ttl.clone()))
        .collect();
    assert_eq!(
        marks,
        [
            (CacheAt::Tool(1), None),
            (CacheAt::System, Some("1h".into())),
            (
                CacheAt::Block {
                    message: 0,
                    block: 1
                },
                None
            ),
        ]
    );
}

/// Parameters of the anthropic SDKs (Python 2.14.0 `messages.create(speed=…,
/// inference_geo=…)`, as it serializes them) that no route's provider takes: named, not
/// silently lost (SPEC R14.2) — a client that asked for fast mode or for where the model runs
/// must be told it did not get it.
#[test]
fn sdk_speed_and_inference_geo_are_named_dropped() {
    let body = br#"{"max_tokens":50,"messages":[{"role":"user","content":"hi"}],"model":"m","speed":"fast","inference_geo":"us"}"#;
    let r = parse_request(body).unwrap();
    assert_eq!(r.dropped, ["speed", "inference_geo"]);
}

/// Claude Code 2.1.154+ sends `role: "system"` inside `messages`; gateways that rejected it
/// broke it (chenyme/grok2api#598, codeaashu/free-claude-code#1, Laisky/one-api#350).
/// It joins the top-level system, in order, text blocks included.
#[test]
fn inline_system_messages_join_the_system_prompt() {
    let r = parse(json!({
        "model": "m", "max_tokens": 100, "system": "You are helpful.",
        "messages": [
            {"role": "system", "content": "Be concise."},
            {"role": "user", "content": "hi"},
            {"role": "system", "content": [{"type": "text", "text": "Reminder."}]}
        ]
    }));
    assert_eq!(
        r.system_prompt,
        "You are helpful.\n\nBe concise.\n\nReminder."
    );
    assert_eq!(r.messages, vec![switchyard_api::Message::user_text("hi")]);
}

/// Anthropic requires `max_tokens`; a missing or odd one is a 400 naming it.
#[test]
fn max_tokens_is_required() {
    let msgs = json!([{"role": "user", "content": "hi"}]);
    assert_eq!(
        error_field(json!({"model": "m", "messages": msgs})),
        "max_tokens"
    );
    assert_eq!(
        error_field(json!({"model": "m", "max_tokens": null, "messages": msgs})),
        "max_tokens"
    );
    assert_eq!(
        error_field(json!({"model": "m", "max_tokens": 0, "messages": msgs})),
        "max_tokens"
    );
    assert_eq!(
        error_field(json!({"model": "m", "max_tokens": "64", "messages": msgs})),
        "max_tokens"
    );
    assert_eq!(
        error_field(json!({"model": "m", "max_tokens": 1.5, "messages": msgs})),
        "max_tokens"
    );
    let e = parse_request(
        json!({"model": "m", "messages": msgs})
            .to_string()
            .as_bytes(),
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with("`max_tokens`: is required"),
        "{e}"
    );
}

#[test]
fn malformed_bodies_name_the_field() {
    let e = parse_request(b"{\"model\": ").unwrap_err();
    assert_eq!(e.field, "body");
    assert!(e.message.contains("not valid JSON"), "{e}");
    assert_eq!(parse_request(b"[1]").unwrap_err().field, "body");
    let ok_msgs = json!([{"role": "user", "content": "hi"}]);
    assert_eq!(
        error_field(json!({"max_tokens": 1, "messages": ok_msgs})),
        "model"
    );
    assert_eq!(
        error_field(json!({"model": 5, "max_tokens": 1, "messages": ok_msgs})),
        "model"
    );
    assert_eq!(
        error_field(json!({"model": "m", "max_tokens": 1})),
        "messages"
    );
    assert_eq!(
        error_field(json!({"model": "m", "max_tokens": 1, "messages": {}})),
        "messages"
    );
    let bad = |messages: serde_json::Value| {
        error_field(json!({"model": "m", "max_tokens": 1, "messages": messages}))
    };
    assert_eq!(bad(json!(["hi"])), "messages[0]");
    assert_eq!(bad(json!([{"content": "hi"}])), "messages[0].role");
    assert_eq!(
        bad(json!([{"role": "tool", "content": "hi"}])),
        "messages[0].role"
    );
    assert_eq!(bad(json!([{"role": "user"}])), "messages[0].content");
    assert_eq!(
        bad(json!([{"role": "user", "content": 3}])),
        "messages[0].content"
    );
    assert_eq!(
        bad(
            json!([{"role": "user", "content": "a"}, {"role": "user", "content": [{"text": "x"}]}])
        ),
        "messages[1].content[0].type"
    );
    assert_eq!(
        bad(json!([{"role": "user", "content": [{"type": "text"}]}])),
        "messages[0].content[0].text"
    );
    assert_eq!(
        bad(
            json!([{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "input": {}}]}])
        ),
        "messages[0].content[0].name"
    );
    assert_eq!(
        bad(
            json!([{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": "{}"}]}])
        ),
        "messages[0].content[0].input"
    );
    assert_eq!(
        bad(json!([{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}])),
        "messages[0].content[0].tool_use_id"
    );
    assert_eq!(
        bad(
            json!([{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": "AA"}}]}])
        ),
        "messages[0].content[0].source.media_type"
    );
    let top = |extra: serde_json::Value| {
        let mut body =
            json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        error_field(body)
    };
    assert_eq!(top(json!({"system": 3})), "system");
    assert_eq!(
        top(json!({"system": [{"type": "image"}]})),
        "system[0].type"
    );
    assert_eq!(top(json!({"temperature": "hot"})), "temperature");
    assert_eq!(top(json!({"stop_sequences": "END"})), "stop_sequences");
    assert_eq!(
        top(json!({"stop_sequences": ["a", 1]})),
        "stop_sequences[1]"
    );
    assert_eq!(top(json!({"stream": "yes"})), "stream");
    assert_eq!(top(json!({"tools": {}})), "tools");
    assert_eq!(
        top(json!({"tools": [{"name": "a"}]})),
        "tools[0].input_schema"
    );
    assert_eq!(
        top(json!({"tools": [{"input_schema": {}}]})),
        "tools[0].name"
    );
    assert_eq!(top(json!({"tool_choice": "auto"})), "tool_choice");
    assert_eq!(
        top(json!({"tool_choice": {"type": "tool"}})),
        "tool_choice.name"
    );
    assert_eq!(
        top(json!({"tool_choice": {"type": "required"}})),
        "tool_choice.type"
    );
    assert_eq!(
        top(json!({"thinking": {"type": "enabled"}})),
        "thinking.budget_tokens"
    );
    assert_eq!(top(json!({"thinking": {"type": "on"}})), "thinking.type");
    assert_eq!(
        top(json!({"output_config": {"effort": "extreme"}})),
        "output_config.effort"
    );
}

#[test]
fn thinking_budgets() {
    let with = |thinking: serde_json::Value| {
        parse(
            json!({"model": "m", "max_tokens": 8000, "thinking": thinking, "messages": [{"role": "user", "content": "hi"}]}),
        )
    };
    assert_eq!(
        with(json!({"type": "enabled", "budget_tokens": 4096}))
            .overrides
            .thinking_budget_tokens,
        Some(4096)
    );
    assert_eq!(
        with(json!({"type": "disabled"}))
            .overrides
            .thinking_budget_tokens,
        Some(0)
    );
    let adaptive = with(json!({"type": "adaptive"}));
    assert_eq!(adaptive.overrides.thinking_budget_tokens, None);
    assert!(
        adaptive.dropped.is_empty(),
        "adaptive is honoured by the route's default, not dropped"
    );
    assert_eq!(
        with(serde_json::Value::Null)
            .overrides
            .thinking_budget_tokens,
        None
    );
}

#[test]
fn tool_choices() {
    let with = |choice: serde_json::Value| {
        parse(
            json!({"model": "m", "max_tokens": 1, "tool_choice": choice, "messages": [{"role": "user", "content": "hi"}]}),
        )
    };
    assert_eq!(
        with(json!({"type": "auto"})).overrides.tool_choice,
        Some(ToolChoice::Auto)
    );
    assert_eq!(
        with(json!({"type": "any"})).overrides.tool_choice,
        Some(ToolChoice::Required)
    );
    assert_eq!(
        with(json!({"type": "none"})).overrides.tool_choice,
        Some(ToolChoice::None)
    );
    let tool =
        with(json!({"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true}));
    assert_eq!(
        tool.overrides.tool_choice,
        Some(ToolChoice::Tool("get_weather".into()))
    );
    assert_eq!(tool.dropped, ["disable_parallel_tool_use"]);
    assert!(
        with(json!({"type": "auto", "disable_parallel_tool_use": false}))
            .dropped
            .is_empty()
    );
}

/// Server tools are dropped by their type; a custom tool may say `type: "custom"`.
#[test]
fn server_tools_are_dropped_by_type() {
    let r = parse(
        json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}], "tools": [
            {"type": "custom", "name": "lookup", "input_schema": {"type": "object"}},
            {"type": "bash_20250124", "name": "bash"},
            {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
            {"type": "web_search_20250305", "name": "web_search"},
            {"type": "web_search_20250305", "name": "web_search_2"},
            {"name": "plain", "input_schema": {"type": "object"}, "strict": true}
        ]}),
    );
    let names: Vec<&str> = r.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["lookup", "plain"]);
    assert_eq!(r.tools[1].description, "");
    assert_eq!(
        r.dropped,
        [
            "bash_20250124",
            "text_editor_20250728",
            "web_search_20250305",
            "strict"
        ]
    );
}

#[test]
fn sampling_and_stop_sequences() {
    let r = parse(json!({
        "model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.2, "top_p": 0.9, "top_k": 40, "stop_sequences": ["\n\nHuman:", "END"],
        "metadata": {"user_id": "u"}, "mcp_servers": [{"type": "url", "url": "https://x", "name": "x"}],
        "container": "container_1", "service_tier": "auto"
    }));
    assert_eq!(r.overrides.temperature, Some(0.2));
    assert_eq!(r.overrides.top_p, Some(0.9));
    assert_eq!(r.overrides.stop, ["\n\nHuman:", "END"]);
    assert_eq!(
        r.dropped,
        ["top_k", "mcp_servers", "container", "service_tier"]
    );
}

/// Claude Code's `effort` beta sends `output_config.effort`.
#[test]
fn output_config_effort() {
    let with = |config: serde_json::Value| {
        parse(
            json!({"model": "m", "max_tokens": 1, "output_config": config, "messages": [{"role": "user", "content": "hi"}]}),
        )
    };
    assert_eq!(
        with(json!({"effort": "high"})).overrides.reasoning_effort,
        Some(ReasoningEffort::High)
    );
    assert_eq!(
        with(json!({"effort": "max"})).overrides.reasoning_effort,
        Some(ReasoningEffort::Xhigh)
    );
    assert_eq!(
        with(json!({"effort": "low"})).overrides.reasoning_effort,
        Some(ReasoningEffort::Low)
    );
    let format = with(json!({"format": {"type": "json_schema", "schema": {}}}));
    assert_eq!(format.overrides.reasoning_effort, None);
    assert_eq!(format.dropped, ["output_config.format"]);
}

#[test]
fn images_base64_kept_url_dropped() {
    let r = parse(
        json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "doc"}},
            {"type": "text", "text": "What is in these?"}
        ]}]}),
    );
    assert_eq!(r.messages[0].content.len(), 2);
    match &r.messages[0].content[0] {
        ContentBlock::Image { source } => {
            assert_eq!(
                (
                    source.kind.as_str(),
                    source.media_type.as_str(),
                    source.data.as_str()
                ),
                ("base64", "image/png", "iVBORw0KGgo=")
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.dropped, ["image.source.url", "document"]);
}

#[test]
fn tool_results_and_redacted_thinking() {
    let r = parse(json!({"model": "m", "max_tokens": 1, "messages": [
        {"role": "assistant", "content": [
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
            {"type": "thinking", "thinking": "no signature"},
            {"type": "tool_use", "id": "toolu_1", "name": "ls"},
            {"type": "tool_use", "id": "toolu_2", "name": "cat", "input": {"path": "a"}}
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a\nb"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true, "content": [
                {"type": "text", "text": "line 1"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}}, {"type": "text", "text": "line 2"}
            ]},
            {"type": "tool_result", "tool_use_id": "toolu_3"}
        ]}
    ]}));
    assert_eq!(
        r.messages[0].content,
        vec![
            ContentBlock::RedactedThinking {
                data: "EmwKAhgBEgy3va3pzix".into()
            },
            ContentBlock::Thinking {
                thinking: "no signature".into(),
                signature: String::new()
            },
            ContentBlock::ToolUse {
                id: "toolu_1".into(),
                name: "ls".into(),
                input: json!({}),
                signature: None
            },
            ContentBlock::ToolUse {
                id: "toolu_2".into(),
                name: "cat".into(),
                input: json!({"path": "a"}),
                signature: None
            },
        ]
    );
    assert_eq!(
        r.messages[1].content,
        vec![
            ContentBlock::ToolResult {
                tool_use_id: "toolu_1".into(),
                content: "a\nb".into(),
                is_error: false
            },
            ContentBlock::ToolResult {
                tool_use_id: "toolu_2".into(),
                content: "line 1\nline 2".into(),
                is_error: true
            },
            ContentBlock::ToolResult {
                tool_use_id: "toolu_3".into(),
                content: String::new(),
                is_error: false
            },
            // A result's image follows the message's results, as Anthropic wants them first.
            ContentBlock::Image {
                source: ImageSource {
                    kind: "base64".into(),
                    media_type: "image/png".into(),
                    data: "AA".into()
                }
            },
        ]
    );
    assert!(r.dropped.is_empty(), "{:?}", r.dropped);
}

/// Cline's Anthropic provider: system as one text block with `cache_control`, and
/// `cache_control` on the last two user messages' last text block.
#[test]
fn cline_body() {
    let r = parse(json!({
        "model": "claude-sonnet-4-5", "max_tokens": 8192, "temperature": 0, "stream": true,
        "system": [{"type": "text", "text": "You are Cline.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "<task>hi</task>", "cache_control": {"type": "ephemeral"}}]},
            {"role": "assistant", "content": "<thinking>ok</thinking>"},
            {"role": "user", "content": [{"type": "text", "text": "[ERROR] use a tool", "cache_control": {"type": "ephemeral"}}]}
        ],
        "thinking": {"type": "enabled", "budget_tokens": 1024}
    }));
    assert_eq!(r.system_prompt, "You are Cline.");
    assert_eq!(r.messages.len(), 3);
    assert_eq!(r.messages[1].role, Role::Assistant);
    assert_eq!(r.overrides.temperature, Some(0.0));
    assert_eq!(r.overrides.thinking_budget_tokens, Some(1024));
    assert!(r.dropped.is_empty(), "{:?}", r.dropped);
    let at: Vec<CacheAt> = r
        .overrides
        .cache
        .marks
        .iter()
        .map(|m| m.at.clone())
        .collect();
    let block = |message| CacheAt::Block { message, block: 0 };
    assert_eq!(at, [CacheAt::System, block(0), block(2)]);
}

/// A fifth breakpoint is more than Anthropic takes: the earliest goes, named in `dropped`.
#[test]
fn a_fifth_cache_mark_is_dropped_and_named() {
    let marked =
        |text: &str| json!({"type": "text", "text": text, "cache_control": {"type": "ephemeral"}});
    let r = parse(json!({
        "model": "m", "max_tokens": 16,
        "system": [marked("s")],
        "messages": [
            {"role": "user", "content": [marked("1")]},
            {"role": "assistant", "content": [marked("2")]},
            {"role": "user", "content": [marked("3")]},
            {"role": "assistant", "content": [marked("4")]}
        ]
    }));
    assert_eq!(r.dropped, ["cache_control"]);
    assert_eq!(r.overrides.cache.marks.len(), 4);
    assert_eq!(
        r.overrides.cache.marks[0].at,
        CacheAt::Block {
            message: 0,
            block: 0
        }
    );
}

/// Unknown top-level fields (clients send many) are ignored, and `null`s mean "not set".
#[test]
fn unknown_fields_and_nulls_are_ignored() {
    let r = parse(json!({
        "model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi", "id": "x"}],
        "anthropic_version": "bedrock-2023-05-31", "betas": ["x"], "some_future_field": {"a": 1},
        "system": null, "tools": null, "tool_choice": null, "temperature": null, "top_k": null,
        "stop_sequences": null, "stream": null, "thinking": null, "container": null
    }));
    assert!(r.dropped.is_empty(), "{:?}", r.dropped);
    assert_eq!(r.overrides.temperature, None);
    assert!(!r.stream);
}
