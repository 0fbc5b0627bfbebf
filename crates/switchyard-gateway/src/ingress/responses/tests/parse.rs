//! Request bodies → `GatewayRequest`.

use serde_json::json;
use switchyard_api::{ContentBlock, ReasoningEffort, Role, ToolChoice};

use super::super::parse_request;
use super::{collect, run};
use crate::ingress::encode::StopReason;
use crate::ingress::request::{ClientTool, GatewayRequest};
use switchyard_api::ApiStreamChunk;

fn parse(body: serde_json::Value) -> GatewayRequest {
    parse_request(body.to_string().as_bytes()).expect("parses")
}

/// The names of the request's custom tools.
fn custom(r: &GatewayRequest) -> Vec<&str> {
    (r.client_tools.iter())
        .filter(|t| t.custom)
        .map(|t| t.name.as_str())
        .collect()
}

fn error(body: serde_json::Value) -> (String, String) {
    let e = parse_request(body.to_string().as_bytes()).expect_err("rejected");
    (e.field, e.message)
}

/// A second-turn body as Codex CLI sends it (codex-rs `ResponsesApiRequest`): developer and
/// user context messages, the model's reasoning item with its encrypted content, a function
/// call and its output, hosted and custom tools next to function ones.
fn codex_body() -> serde_json::Value {
    json!({
        "model": "gpt-5-codex",
        "instructions": "You are Codex, a coding agent.",
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions>workspace-write</permissions>"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>cwd=/repo</environment_context>"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list the files"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "I should run ls."}],
             "content": null, "encrypted_content": "gAAAAB-enc"},
            {"type": "function_call", "id": "fc_1", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": "call_A"},
            {"type": "function_call_output", "call_id": "call_A", "output": "Cargo.toml\nsrc\n"}
        ],
        "tools": [
            {"type": "function", "name": "shell", "description": "Runs a command", "strict": false,
             "parameters": {"type": "object", "properties": {"command": {"type": "array", "items": {"type": "string"}}}, "required": ["command"]}},
            {"type": "local_shell"},
            {"type": "web_search"},
            {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}}
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": false,
        "reasoning": {"effort": "high", "summary": "auto"},
        "store": false,
        "stream": true,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "0199-session"
    })
}

#[test]
fn codex_second_turn() {
    let r = parse(codex_body());
    assert_eq!(r.model, "gpt-5-codex");
    assert_eq!(
        r.system_prompt,
        "You are Codex, a coding agent.\n\n<permissions>workspace-write</permissions>"
    );
    assert!(r.stream);
    assert!(!r.store);
    assert_eq!(r.overrides.reasoning_effort, Some(ReasoningEffort::High));
    assert_eq!(r.overrides.tool_choice, Some(ToolChoice::Auto));
    assert_eq!(r.tools.len(), 2, "the function tool and the custom one");
    assert_eq!(r.tools[0].name, "shell");
    assert_eq!(r.tools[0].description, "Runs a command");
    assert_eq!(r.tools[0].input_schema["required"], json!(["command"]));
    assert_eq!(r.tools[1].name, "apply_patch");
    assert_eq!(custom(&r), ["apply_patch"]);
    assert_eq!(
        r.dropped,
        [
            "tools[type=local_shell]",
            "tools[type=web_search]",
            "tools[type=custom].format",
            "parallel_tool_calls"
        ]
    );
    // user (two context/text items merged), assistant (thinking + call), user (result).
    assert_eq!(r.messages.len(), 3);
    assert_eq!(r.messages[0].role, Role::User);
    assert_eq!(r.messages[0].content.len(), 2);
    assert_eq!(r.messages[1].role, Role::Assistant);
    assert_eq!(
        r.messages[1].content,
        vec![
            ContentBlock::Thinking {
                thinking: "I should run ls.".into(),
                signature: "gAAAAB-enc".into()
            },
            ContentBlock::ToolUse {
                id: "call_A".into(),
                name: "shell".into(),
                input: json!({"command": ["ls"]}),
                signature: None
            },
        ]
    );
    assert_eq!(
        r.messages[2].content,
        vec![ContentBlock::ToolResult {
            tool_use_id: "call_A".into(),
            content: "Cargo.toml\nsrc\n".into(),
            is_error: false
        }]
    );
}

/// `client.responses.create(model=..., input="...")` from the openai SDKs.
#[test]
fn sdk_string_input() {
    let r = parse(
        json!({"model": "openai/gpt-5", "input": "Say hi", "max_output_tokens": 256,
                          "temperature": 0.2, "top_p": 0.9}),
    );
    assert_eq!(r.messages.len(), 1);
    assert_eq!(r.messages[0].role, Role::User);
    assert_eq!(
        r.messages[0].content,
        vec![ContentBlock::Text {
            text: "Say hi".into()
        }]
    );
    assert_eq!(r.overrides.max_tokens, Some(256));
    assert_eq!(r.overrides.temperature, Some(0.2));
    assert_eq!(r.overrides.top_p, Some(0.9));
    assert!(!r.stream);
    assert!(r.store, "store defaults to true");
    assert!(r.dropped.is_empty());
    assert_eq!(r.system_prompt, "");
    assert_eq!(r.overrides.reasoning_effort, None);
}

/// Easy input messages (`{role, content}` without `type`), string content, a system message.
#[test]
fn easy_messages_and_system() {
    let r = parse(json!({"model": "m", "instructions": "Be brief.", "input": [
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Bonjour", "annotations": []}]},
        {"role": "user", "content": "How are you?"}
    ]}));
    assert_eq!(r.system_prompt, "Be brief.\n\nAnswer in French.");
    let roles: Vec<Role> = r.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::User]);
    assert_eq!(
        r.messages[1].content,
        vec![ContentBlock::Text {
            text: "Bonjour".into()
        }]
    );
}

/// Parallel calls and their outputs: one assistant message with both calls, one user
/// message with both results (Anthropic alternates roles).
#[test]
fn parallel_calls_merge() {
    let r = parse(json!({"model": "m", "input": [
        {"role": "user", "content": "read a and b"},
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{\"p\":\"a\"}"},
        {"type": "function_call", "call_id": "c2", "name": "read", "arguments": ""},
        {"type": "function_call_output", "call_id": "c1", "output": "A"},
        {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "B1"}, {"type": "input_text", "text": "B2"}]},
        {"role": "user", "content": "thanks"}
    ]}));
    assert_eq!(r.messages.len(), 3);
    assert!(
        matches!(&r.messages[1].content[1], ContentBlock::ToolUse { id, input, .. } if id == "c2" && *input == json!({}))
    );
    let user = &r.messages[2];
    assert_eq!(user.role, Role::User);
    assert_eq!(user.content.len(), 3, "results first, then the text");
    assert!(
        matches!(&user.content[1], ContentBlock::ToolResult { tool_use_id, content, .. } if tool_use_id == "c2" && content == "B1\nB2")
    );
}

#[test]
fn reasoning_items() {
    let r = parse(json!({"model": "m", "input": [
        {"role": "user", "content": "q"},
        {"type": "reasoning", "summary": [], "encrypted_content": "opaque"},
        {"type": "reasoning", "summary": []},
        {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "raw thought"}]},
        {"role": "assistant", "content": "a"}
    ]}));
    assert_eq!(
        r.messages[1].content,
        vec![
            ContentBlock::RedactedThinking {
                data: "opaque".into()
            },
            ContentBlock::Thinking {
                thinking: "raw thought".into(),
                signature: String::new()
            },
            ContentBlock::Text { text: "a".into() },
        ]
    );
}

#[test]
fn images() {
    let r = parse(json!({"model": "m", "input": [{"role": "user", "content": [
        {"type": "input_text", "text": "what is this?"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"}
    ]}]}));
    match &r.messages[0].content[1] {
        ContentBlock::Image { source } => {
            assert_eq!(source.kind, "base64");
            assert_eq!(source.media_type, "image/png");
            assert_eq!(source.data, "iVBORw0KGgo=");
        }
        other => panic!("{other:?}"),
    }
    let (field, message) = error(json!({"model": "m", "input": [{"role": "user", "content": [
        {"type": "input_text", "text": "x"}, {"type": "input_image", "image_url": "https://example.com/cat.png"}]}]}));
    assert_eq!(field, "input[0].content[1].image_url");
    assert!(message.contains("data:"), "{message}");
    let (field, _) = error(
        json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]}),
    );
    assert_eq!(field, "input[0].content[0].type");
}

#[test]
fn tool_choices() {
    let choice =
        |c: serde_json::Value| parse(json!({"model": "m", "input": "x", "tool_choice": c}));
    assert_eq!(
        choice(json!("none")).overrides.tool_choice,
        Some(ToolChoice::None)
    );
    assert_eq!(
        choice(json!("required")).overrides.tool_choice,
        Some(ToolChoice::Required)
    );
    assert_eq!(
        choice(json!({"type": "function", "name": "shell"}))
            .overrides
            .tool_choice,
        Some(ToolChoice::Tool("shell".into()))
    );
    // A custom tool and a group's member are offered as functions, so they can be forced.
    assert_eq!(
        choice(json!({"type": "custom", "name": "apply_patch"}))
            .overrides
            .tool_choice,
        Some(ToolChoice::Tool("apply_patch".into()))
    );
    assert_eq!(
        choice(json!({"type": "function", "name": "close_agent", "namespace": "multi_agent_v1"}))
            .overrides
            .tool_choice,
        Some(ToolChoice::Tool("multi_agent_v1__close_agent".into()))
    );
    let r = choice(json!({"type": "allowed_tools", "mode": "auto", "tools": []}));
    assert_eq!(r.overrides.tool_choice, None);
    assert_eq!(r.dropped, ["tool_choice[type=allowed_tools]"]);
    assert_eq!(
        error(json!({"model": "m", "input": "x", "tool_choice": "any"})).0,
        "tool_choice"
    );
    assert_eq!(
        error(json!({"model": "m", "input": "x", "tool_choice": {"type": "function"}})).0,
        "tool_choice.name"
    );
}

#[test]
fn efforts() {
    let effort = |e: &str| {
        parse(json!({"model": "m", "input": "x", "reasoning": {"effort": e}}))
            .overrides
            .reasoning_effort
    };
    assert_eq!(effort("minimal"), Some(ReasoningEffort::Low));
    assert_eq!(effort("none"), Some(ReasoningEffort::None));
    assert_eq!(effort("xhigh"), Some(ReasoningEffort::Xhigh));
    let r = parse(json!({"model": "m", "input": "x", "reasoning": {"summary": "detailed"}}));
    assert_eq!(
        r.overrides.reasoning_effort, None,
        "summary alone is ignored"
    );
    assert_eq!(
        error(json!({"model": "m", "input": "x", "reasoning": {"effort": "max"}})).0,
        "reasoning.effort"
    );
}

#[test]
fn dropped_parameters() {
    let r = parse(json!({"model": "m", "input": [
            {"type": "item_reference", "id": "msg_1"},
            {"role": "user", "content": "x"}],
        "text": {"format": {"type": "json_schema", "name": "s", "schema": {}}, "verbosity": "low"},
        "include": ["reasoning.encrypted_content", "message.output_text.logprobs"],
        "truncation": "auto", "top_logprobs": 3, "background": true, "service_tier": "flex",
        "max_tool_calls": 2, "parallel_tool_calls": true, "metadata": {"a": "b"}, "user": "u"}));
    assert_eq!(
        r.dropped,
        [
            "input[type=item_reference]",
            "text.format",
            "text.verbosity",
            "include[message.output_text.logprobs]",
            "truncation",
            "top_logprobs",
            "background",
            "max_tool_calls",
            "service_tier"
        ]
    );
    let r = parse(
        json!({"model": "m", "input": "x", "text": {"format": {"type": "text"}},
                          "truncation": "disabled", "service_tier": "auto"}),
    );
    assert!(
        r.dropped.is_empty(),
        "defaults change nothing: {:?}",
        r.dropped
    );
}

#[test]
fn previous_response_id() {
    let r = parse(
        json!({"model": "m", "previous_response_id": "resp_abc", "input": [
        {"type": "function_call_output", "call_id": "c1", "output": "done"}]}),
    );
    assert_eq!(r.previous_response_id.as_deref(), Some("resp_abc"));
    assert_eq!(r.messages[0].role, Role::User);
    let r = parse(json!({"model": "m", "previous_response_id": "resp_abc"}));
    assert!(r.messages.is_empty());
    assert_eq!(error(json!({"model": "m"})).0, "input");
}

#[test]
fn malformed_bodies_name_the_field() {
    let cases = [
        (json!([1]), "body"),
        (json!({"input": "x"}), "model"),
        (json!({"model": 5, "input": "x"}), "model"),
        (json!({"model": "m", "input": 5}), "input"),
        (json!({"model": "m", "input": [5]}), "input[0]"),
        (
            json!({"model": "m", "input": [{"content": "x"}]}),
            "input[0].type",
        ),
        (
            json!({"model": "m", "input": [{"role": "tool", "content": "x"}]}),
            "input[0].role",
        ),
        (
            json!({"model": "m", "input": [{"role": "user", "content": 3}]}),
            "input[0].content",
        ),
        (
            json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_text"}]}]}),
            "input[0].content[0].text",
        ),
        (
            json!({"model": "m", "input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}),
            "input[0].call_id",
        ),
        (
            json!({"model": "m", "input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{\"a\":"}]}),
            "input[0].arguments",
        ),
        (
            json!({"model": "m", "input": [{"type": "function_call_output", "output": "x"}]}),
            "input[0].call_id",
        ),
        (json!({"model": "m", "input": "x", "tools": {}}), "tools"),
        (
            json!({"model": "m", "input": "x", "tools": [{"type": "function", "name": "a"}, {"type": "function"}]}),
            "tools[1].name",
        ),
        (
            json!({"model": "m", "input": "x", "tools": [{"type": "function", "name": "a", "parameters": "x"}]}),
            "tools[0].parameters",
        ),
        (
            json!({"model": "m", "input": "x", "max_output_tokens": -1}),
            "max_output_tokens",
        ),
        (
            json!({"model": "m", "input": "x", "max_output_tokens": 0}),
            "max_output_tokens",
        ),
        (
            json!({"model": "m", "input": "x", "temperature": "hot"}),
            "temperature",
        ),
        (
            json!({"model": "m", "input": "x", "stream": "yes"}),
            "stream",
        ),
        (json!({"model": "m", "input": "x", "store": 1}), "store"),
        (
            json!({"model": "m", "input": "x", "reasoning": "high"}),
            "reasoning",
        ),
        (
            json!({"model": "m", "input": "x", "instructions": ["a"]}),
            "instructions",
        ),
    ];
    for (body, field) in cases {
        let (got, message) = error(body.clone());
        assert_eq!(got, field, "{body}");
        assert!(
            !message.is_empty() && !message.contains('\n'),
            "one sentence: {message}"
        );
    }
    let e = parse_request(b"{not json").unwrap_err();
    assert_eq!(e.field, "body");
    assert!(
        e.to_string()
            .starts_with("`body`: the body is not valid JSON"),
        "{e}"
    );
}

/// A tool without parameters gets an empty object schema; Chat-style nesting is read too.
#[test]
fn tool_shapes() {
    let r = parse(json!({"model": "m", "input": "x", "tools": [
        {"type": "function", "name": "now"},
        {"type": "function", "function": {"name": "read", "description": "d", "parameters": {"type": "object"}}}
    ]}));
    assert_eq!(
        r.tools[0].input_schema,
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(r.tools[1].name, "read");
    assert_eq!(r.tools[1].description, "d");
}

/// What the gateway answered, sent back as the next request's input (the Codex loop with
/// `store: false`): the calls keep their `call_id`, reasoning its opaque content.
#[test]
fn answer_round_trips_as_input() {
    let chunks = [
        ApiStreamChunk::reasoning("Need the file."),
        ApiStreamChunk::reasoning_signature("sig-1"),
        ApiStreamChunk::text("Reading it."),
        ApiStreamChunk::tool_call("toolu_1", "read", "{\"path\":"),
        ApiStreamChunk::tool_call("toolu_1", "read", "\"a.rs\"}"),
    ];
    let response = collect(&chunks, StopReason::ToolUse);
    let mut input = vec![json!({"role": "user", "content": "read a.rs"})];
    input.extend(response["output"].as_array().unwrap().iter().cloned());
    input.push(
        json!({"type": "function_call_output", "call_id": "toolu_1", "output": "fn main() {}"}),
    );
    let r = parse(json!({"model": "m", "input": input}));
    assert_eq!(r.messages.len(), 3);
    assert_eq!(
        r.messages[1].content,
        vec![
            ContentBlock::Thinking {
                thinking: "Need the file.".into(),
                signature: "sig-1".into()
            },
            ContentBlock::Text {
                text: "Reading it.".into()
            },
            ContentBlock::ToolUse {
                id: "toolu_1".into(),
                name: "read".into(),
                input: json!({"path": "a.rs"}),
                signature: None
            },
        ]
    );
    assert!(
        matches!(&r.messages[2].content[0], ContentBlock::ToolResult { tool_use_id, .. } if tool_use_id == "toolu_1")
    );
    // The streamed answer's `output_item.done` items are the same items.
    let done: Vec<serde_json::Value> = run(&chunks, StopReason::ToolUse)
        .into_iter()
        .filter(|(n, _)| n == "response.output_item.done")
        .map(|(_, d)| d["item"].clone())
        .collect();
    assert_eq!(&done, response["output"].as_array().unwrap());
}

/// A system or developer message holds text only (the system prompt is text).
#[test]
fn system_image_is_rejected() {
    let (field, message) = error(
        json!({"model": "m", "input": [{"role": "developer", "content": [
        {"type": "input_text", "text": "rules"},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]}]}),
    );
    assert_eq!(field, "input[0].content");
    assert!(message.contains("user message"), "{message}");
}

/// Each dropped name is reported once, in first-seen order.
#[test]
fn dropped_names_are_unique() {
    let r = parse(json!({"model": "m", "input": [
            {"type": "local_shell_call", "call_id": "a"},
            {"type": "local_shell_call", "call_id": "b"},
            {"role": "user", "content": "x"}],
        "tools": [{"type": "web_search"}, {"type": "function", "name": "f"}, {"type": "web_search"}]}));
    assert_eq!(
        r.dropped,
        ["input[type=local_shell_call]", "tools[type=web_search]"]
    );
    assert_eq!(r.tools.len(), 1);
}

/// An OpenAI Agents SDK (openai-agents-python) replay: output items echoed with their ids and
/// statuses, a strict function tool, a forced tool choice.
#[test]
fn agents_sdk_replay() {
    let r = parse(json!({"model": "m", "stream": true, "input": [
        {"content": "Weather in Paris?", "role": "user"},
        {"id": "fc_1", "arguments": "{\"city\":\"Paris\"}", "call_id": "call_1", "name": "get_weather",
         "type": "function_call", "status": "completed"},
        {"call_id": "call_1", "output": "18C", "type": "function_call_output"},
        {"id": "msg_1", "content": [{"annotations": [], "text": "It is 18C.", "type": "output_text", "logprobs": []}],
         "role": "assistant", "status": "completed", "type": "message"},
        {"content": "And Rome?", "role": "user"}],
        "tools": [{"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": false}, "strict": true, "type": "function",
                   "description": "Get the weather"}],
        "tool_choice": {"type": "function", "name": "get_weather"},
        "include": [], "parallel_tool_calls": true, "truncation": "disabled"}));
    let roles: Vec<Role> = r.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::User
        ]
    );
    assert_eq!(
        r.overrides.tool_choice,
        Some(ToolChoice::Tool("get_weather".into()))
    );
    assert_eq!(
        r.tools[0].input_schema["additionalProperties"],
        json!(false)
    );
    assert!(r.dropped.is_empty(), "{:?}", r.dropped);
}

/// The tools Codex CLI 0.171.0 offers for a `gpt-5.5` model (its first request, captured
/// through a custom provider; descriptions and schemas trimmed): function tools, the
/// freeform `apply_patch` with its lark grammar, the client-run `tool_search`, the hosted
/// `web_search`, and (for models it does not know) a `namespace` group.
fn codex_0171_tools() -> serde_json::Value {
    json!([
        {"type": "function", "name": "exec_command", "description": "Runs a command in a PTY, returning output or a session ID for ongoing interaction.", "strict": false,
         "parameters": {"type": "object", "properties": {"cmd": {"type": "string", "description": "Shell command to execute."}}, "required": ["cmd"], "additionalProperties": false}},
        {"type": "custom", "name": "apply_patch", "description": "The `apply_patch` tool can be used to edit files. This is a FREEFORM tool, so do not wrap the patch in JSON.",
         "format": {"type": "grammar", "syntax": "lark", "definition": "start: begin_patch hunk+ end_patch\nbegin_patch: \"*** Begin Patch\" LF\n"}},
        {"type": "tool_search", "execution": "client", "description": "# Tool discovery",
         "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
        {"type": "web_search", "external_web_access": true, "search_content_types": ["text", "image"]},
        {"type": "namespace", "name": "multi_agent_v1", "description": "Tools for spawning and managing sub-agents.", "tools": [
            {"type": "function", "name": "close_agent", "description": "Close an agent and any open descendants when they are no longer needed.", "strict": false,
             "parameters": {"type": "object", "properties": {"target": {"type": "string", "description": "Agent id to close (from spawn_agent)."}}, "required": ["target"], "additionalProperties": false}}
        ]}
    ])
}

/// Codex's freeform `apply_patch` reaches a provider without custom tools as a function
/// tool taking the patch as one string, its grammar in the description (the model reads it;
/// no provider enforces it, so `format` is named dropped); hosted and client-run tools that
/// have no function form are dropped by type.
#[test]
fn codex_custom_tool_becomes_a_function_tool_with_one_input_string() {
    let r = parse(
        json!({"model": "gpt-5.5", "input": "create hello.txt containing hi", "tools": codex_0171_tools()}),
    );
    let names: Vec<&str> = r.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["exec_command", "apply_patch", "multi_agent_v1__close_agent"]
    );
    assert_eq!(custom(&r), ["apply_patch"]);
    let patch = &r.tools[1];
    assert_eq!(
        patch.input_schema,
        json!({"type": "object",
               "properties": {"input": {"type": "string", "description": "The tool's whole input, as raw text."}},
               "required": ["input"], "additionalProperties": false})
    );
    assert!(
        patch
            .description
            .starts_with("The `apply_patch` tool can be used to edit files.")
    );
    assert!(
        patch
            .description
            .contains("send the whole of it as the string `input`")
    );
    assert!(
        patch
            .description
            .contains("lark grammar:\nstart: begin_patch hunk+ end_patch"),
        "{}",
        patch.description
    );
    assert_eq!(
        r.dropped,
        [
            "tools[type=custom].format",
            "tools[type=tool_search]",
            "tools[type=web_search]"
        ]
    );
    // A plain-text custom tool carries everything: nothing dropped.
    let r = parse(json!({"model": "m", "input": "x", "tools": [
        {"type": "custom", "name": "note", "format": {"type": "text"}},
        {"type": "custom", "name": "memo"}
    ]}));
    assert_eq!(custom(&r), ["note", "memo"]);
    assert!(r.dropped.is_empty(), "{:?}", r.dropped);
    assert!(
        r.tools[0]
            .description
            .starts_with("This tool takes raw text")
    );
    let (field, _) = error(json!({"model": "m", "input": "x", "tools": [{"type": "custom"}]}));
    assert_eq!(field, "tools[0].name");
}

/// Codex's second turn after an `apply_patch` call, as 0.171.0 sent it: the
/// `custom_tool_call` item becomes the call of the function form (the patch as `input`),
/// its `custom_tool_call_output` the tool result, so the provider sees the whole exchange.
#[test]
fn codex_custom_tool_call_and_output_items_carry_the_history() {
    let r = parse(
        json!({"model": "gpt-5.5", "tools": codex_0171_tools(), "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "create hello.txt containing hi"}]},
            {"type": "custom_tool_call", "id": "ctc_1", "status": "completed", "call_id": "call_1", "name": "apply_patch",
             "input": "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"},
            {"type": "custom_tool_call_output", "id": "ctco_01a2", "call_id": "call_1",
             "output": "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA hello.txt\n"}
        ]}),
    );
    assert!(
        !r.dropped.iter().any(|d| d.starts_with("input")),
        "{:?}",
        r.dropped
    );
    assert_eq!(r.messages.len(), 3);
    assert_eq!(
        r.messages[1].content,
        vec![ContentBlock::ToolUse {
            id: "call_1".into(),
            name: "apply_patch".into(),
            input: json!({"input": "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"}),
            signature: None
        }]
    );
    assert!(matches!(
        &r.messages[2].content[..],
        [ContentBlock::ToolResult { tool_use_id, content, is_error: false }]
            if tool_use_id == "call_1" && content.ends_with("A hello.txt\n")
    ));
    let (field, _) = error(json!({"model": "m", "input": [
        {"type": "custom_tool_call", "call_id": "c", "name": "apply_patch", "input": 5}
    ]}));
    assert_eq!(field, "input[0].input");
}

/// Codex CLI 0.171.0 groups tools in `namespace` tools (its sub-agent tools for a model it
/// does not know, and each MCP server's tools) and runs a member only when its call names
/// the member and its `namespace` (a bare `close_agent` is "unsupported call", tried here).
/// A provider without groups is offered each member as `NAMESPACE__NAME`, its description
/// saying the group's; the client's history of such calls (`function_call` with
/// `namespace`) is named the same way. (A proxy that drops the groups loses every MCP tool:
/// github.com/router-for-me/CLIProxyAPI/issues/3199.)
#[test]
fn codex_namespace_members_are_offered_by_qualified_names() {
    let r = parse(
        json!({"model": "claude-sonnet-4-5", "tools": codex_0171_tools(), "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "close it"}]},
            {"type": "function_call", "status": "completed", "id": "fc_1", "name": "close_agent",
             "namespace": "multi_agent_v1", "arguments": "{\"target\": \"a1\"}", "call_id": "call_1"},
            {"type": "function_call_output", "call_id": "call_1", "output": "closed"},
            {"type": "custom_tool_call", "call_id": "call_2", "name": "edit", "namespace": "mcp__files", "input": "x"}
        ]}),
    );
    let member = r
        .tools
        .iter()
        .find(|t| t.name == "multi_agent_v1__close_agent")
        .unwrap();
    assert_eq!(member.input_schema["required"], json!(["target"]));
    assert_eq!(
        member.description,
        "Close an agent and any open descendants when they are no longer needed.\n\n\
         (One of the tools of `multi_agent_v1`: Tools for spawning and managing sub-agents.)"
    );
    assert_eq!(
        r.client_tools
            .iter()
            .find(|t| t.name == "multi_agent_v1__close_agent"),
        Some(&ClientTool {
            name: "multi_agent_v1__close_agent".into(),
            custom: false,
            namespace: Some(("multi_agent_v1".into(), "close_agent".into())),
        })
    );
    assert!(
        !r.dropped.iter().any(|d| d.contains("namespace")),
        "{:?}",
        r.dropped
    );
    let names: Vec<&str> = r.messages[1]
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["multi_agent_v1__close_agent"]);
    assert!(matches!(
        &r.messages[3].content[0],
        ContentBlock::ToolUse { name, .. } if name == "mcp__files__edit"
    ));
    // A group's hosted member, or a group in a group, is dropped, named as such.
    let r = parse(json!({"model": "m", "input": "x", "tools": [
        {"type": "namespace", "name": "g", "tools": [{"type": "web_search"}, {"type": "function", "name": "f"}]}
    ]}));
    assert_eq!(r.tools[0].name, "g__f");
    assert_eq!(r.tools[0].description, "");
    assert_eq!(r.dropped, ["tools[type=namespace].tools[type=web_search]"]);
}

/// How a member is named: `NAMESPACE__NAME`, unless the name already carries the group's.
#[test]
fn qualified_names() {
    use super::super::input::qualified;
    assert_eq!(
        qualified("multi_agent_v1", "spawn_agent"),
        "multi_agent_v1__spawn_agent"
    );
    assert_eq!(
        qualified("mcp__github", "mcp__github__search"),
        "mcp__github__search"
    );
    assert_eq!(qualified("mcp__github__", "search"), "mcp__github__search");
    assert_eq!(qualified("tool", "tool"), "tool");
}

/// Codex's "Responses Lite" requests (Codex Desktop 0.144; reported for recent CLIs too)
/// declare tools in an `additional_tools` input item, the top-level `tools` null: they are
/// offered like top-level ones (a custom `exec`, a function, a `namespace` group), and the
/// item is no message (github.com/router-for-me/CLIProxyAPI/issues/4219,
/// github.com/10/chatgpt-codex-proxy/issues/9).
#[test]
fn codex_additional_tools_items_declare_tools() {
    let r = parse(json!({"model": "gpt-5.5", "tools": null, "input": [
        {"type": "additional_tools", "role": "developer", "id": "at_1", "tools": [
            {"type": "custom", "name": "exec", "description": "Run code."},
            {"type": "function", "name": "wait", "parameters": {"type": "object", "properties": {}}},
            {"type": "namespace", "name": "collaboration", "tools": [{"type": "function", "name": "send"}]}
        ]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    ]}));
    let names: Vec<&str> = r.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["exec", "wait", "collaboration__send"]);
    assert_eq!(custom(&r), ["exec"]);
    assert!(r.dropped.is_empty(), "{:?}", r.dropped);
    assert_eq!(r.messages.len(), 1);
    assert_eq!(r.system_prompt, "");
    let (field, _) = error(json!({"model": "m", "input": [
        {"type": "additional_tools", "tools": [{"type": "function"}]}
    ]}));
    assert_eq!(field, "input[0].tools[0].name");
}
