//! Request parsing: realistic bodies (Cline, aider, the SDKs, Claude-Code-style parts),
//! every parameter, and the 400s of malformed bodies.

use serde_json::json;
use switchyard_api::message::ImageSource;
use switchyard_api::{CacheAt, ContentBlock, Message, ReasoningEffort, Role, ToolChoice};

use super::{parse, refuse};

/// A one-message body ("hi") with the members of `extra` added.
fn hi_with(extra: serde_json::Value) -> serde_json::Value {
    let mut body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    body
}

fn text(t: &str) -> ContentBlock {
    ContentBlock::Text { text: t.into() }
}

#[test]
fn a_minimal_body_is_one_user_message_and_nothing_set() {
    let r =
        parse(&json!({"model": "openai/gpt-5", "messages": [{"role": "user", "content": "hi"}]}));
    assert_eq!(r.model, "openai/gpt-5");
    assert_eq!(r.messages, vec![Message::user_text("hi")]);
    assert_eq!(r.system_prompt, "");
    assert!(r.tools.is_empty());
    assert_eq!(r.overrides, Default::default());
    assert!(!r.stream && !r.include_usage && !r.store);
    assert!(r.dropped.is_empty());
    assert_eq!(r.previous_response_id, None);
}

/// Cline's OpenAI-compatible provider: a system prompt, user parts, an assistant turn with
/// text and a tool call, its result, streaming with usage.
#[test]
fn a_cline_body_with_a_tool_round() {
    let body = json!({
        "model": "claude-sonnet",
        "messages": [
            {"role": "system", "content": "You are Cline."},
            {"role": "user", "content": [
                {"type": "text", "text": "<task>create hello.txt</task>"},
                {"type": "text", "text": "<environment_details>…</environment_details>"}
            ]},
            {"role": "assistant", "content": "I'll write it.", "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "write_to_file", "arguments": "{\"path\":\"hello.txt\",\"content\":\"hi\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "File written."}
        ],
        "tools": [{"type": "function", "function": {
            "name": "write_to_file", "description": "Write a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
        }}],
        "temperature": 0,
        "stream": true,
        "stream_options": {"include_usage": true}
    });
    let r = parse(&body);
    assert_eq!(r.system_prompt, "You are Cline.");
    assert_eq!(r.messages.len(), 3);
    assert_eq!(
        r.messages[0].content,
        vec![
            text("<task>create hello.txt</task>"),
            text("<environment_details>…</environment_details>")
        ]
    );
    assert_eq!(r.messages[1].role, Role::Assistant);
    assert_eq!(
        r.messages[1].content,
        vec![
            text("I'll write it."),
            ContentBlock::ToolUse {
                id: "call_1".into(),
                name: "write_to_file".into(),
                input: json!({"path": "hello.txt", "content": "hi"}),
                signature: None,
            }
        ]
    );
    assert_eq!(
        r.messages[2],
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "call_1".into(),
                content: "File written.".into(),
                is_error: false
            }]
        }
    );
    assert_eq!(r.tools.len(), 1);
    assert_eq!(r.tools[0].name, "write_to_file");
    assert_eq!(r.tools[0].description, "Write a file.");
    assert_eq!(r.tools[0].input_schema["required"], json!(["path"]));
    assert_eq!(r.overrides.temperature, Some(0.0));
    assert!(r.stream && r.include_usage);
    assert!(r.dropped.is_empty(), "{:?}", r.dropped);
}

/// aider through LiteLLM's OpenAI client: plain strings, a streamed answer, no tools.
/// Cline CLI 3.0.65's second turn, as captured (trimmed: two of its 25 tools, the system
/// prompt cut): string contents, an assistant turn of `content: null` with `reasoning_content`
/// (it echoes the reasoning it was streamed) and a call of its `editor` tool, the result as a
/// JSON string, tool schemas with `$schema`, `anyOf` nulls and 2^53 bounds (kept as sent),
/// `reasoning_effort` from `--thinking high`.
#[test]
fn a_cline_cli_body_echoes_reasoning_beside_a_tool_call() {
    let editor_schema = json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1},
            "old_text": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "new_text": {"type": "string"},
            "insert_line": {"anyOf": [
                {"type": "integer", "minimum": -9007199254740991_i64, "maximum": 9007199254740991_i64},
                {"type": "null"}
            ]}
        },
        "required": ["path", "new_text"],
        "additionalProperties": false
    });
    let ask_schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"question": {"type": "string"}, "options": {"type": "array", "minItems": 2}},
        "required": ["question", "options"],
        "additionalProperties": false
    });
    let result = r#"{"query":"edit:hello.txt","result":"File created successfully at: /w/hello.txt","success":true}"#;
    let body = json!({
        "model": "cline-agent",
        "reasoning_effort": "high",
        "messages": [
            {"role": "system", "content": "You are Cline, an AI coding agent."},
            {"role": "user", "content": "create hello.txt containing hi"},
            {"role": "assistant", "content": null, "reasoning_content": "Thinking.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {
                    "name": "editor", "arguments": "{\"path\":\"hello.txt\",\"new_text\":\"hi\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": result}
        ],
        "tools": [
            {"type": "function", "function": {"name": "editor", "description": "An editor.", "parameters": editor_schema}},
            {"type": "function", "function": {"name": "ask_question", "description": "Ask.", "parameters": ask_schema}}
        ],
        "tool_choice": "auto",
        "stream": true,
        "stream_options": {"include_usage": true}
    });
    let r = parse(&body);
    assert_eq!(r.system_prompt, "You are Cline, an AI coding agent.");
    assert_eq!(
        r.messages,
        vec![
            Message::user_text("create hello.txt containing hi"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Thinking {
                        thinking: "Thinking.".into(),
                        signature: String::new()
                    },
                    ContentBlock::ToolUse {
                        id: "call_1".into(),
                        name: "editor".into(),
                        input: json!({"path": "hello.txt", "new_text": "hi"}),
                        signature: None,
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "call_1".into(),
                    content: result.into(),
                    is_error: false,
                }],
            },
        ]
    );
    assert_eq!(r.tools.len(), 2);
    assert_eq!(r.tools[0].input_schema, editor_schema);
    assert_eq!(r.tools[1].input_schema, ask_schema);
    assert_eq!(r.overrides.tool_choice, Some(ToolChoice::Auto));
    assert_eq!(r.overrides.reasoning_effort, Some(ReasoningEffort::High));
    assert!(r.stream && r.include_usage);
    assert!(r.dropped.is_empty(), "{:?}", r.dropped);
}

#[test]
fn an_aider_body() {
    let body = json!({
        "model": "openai/my-route",
        "messages": [
            {"role": "system", "content": "Act as an expert software developer."},
            {"role": "user", "content": "Change greeting.py"},
            {"role": "assistant", "content": "Ok, send me the file."},
            {"role": "user", "content": "greeting.py\n```\nprint('hi')\n```"}
        ],
        "stream": true,
        "temperature": 0
    });
    let r = parse(&body);
    assert_eq!(r.messages.len(), 3);
    assert_eq!(
        r.messages[1],
        Message::assistant_text("Ok, send me the file.")
    );
    assert!(r.stream && !r.include_usage);
}

/// The openai SDKs serialise unset parameters as absent, but hand-written clients and
/// LangChain send explicit nulls: a null is an absent field.
#[test]
fn nulls_are_absent() {
    let body = json!({
        "model": "m", "messages": [{"role": "user", "content": "hi", "name": null}],
        "tools": null, "tool_choice": null, "max_tokens": null, "temperature": null, "top_p": null,
        "stop": null, "stream": null, "stream_options": null, "n": null, "seed": null,
        "logprobs": null, "response_format": null, "reasoning_effort": null, "user": null
    });
    let r = parse(&body);
    assert_eq!(r.overrides, Default::default());
    assert!(r.dropped.is_empty(), "{:?}", r.dropped);
}

#[test]
fn system_and_developer_messages_join_into_the_system_prompt_wherever_they_stand() {
    let body = json!({"model": "m", "messages": [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": [{"type": "text", "text": "Use British spelling."}]},
        {"role": "system", "content": ""}
    ]});
    let r = parse(&body);
    assert_eq!(r.system_prompt, "Be brief.\n\nUse British spelling.");
    assert_eq!(r.messages, vec![Message::user_text("hi")]);
}

#[test]
fn data_url_images_become_base64_blocks_and_remote_ones_are_dropped() {
    let body = json!({"model": "m", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/PNG;base64,iVBORw0KGgo=", "detail": "high"}},
        {"type": "image_url", "image_url": "data:image/jpeg;base64,/9j/4AAQ"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
        {"type": "image_url", "image_url": {"url": "data:text/plain,hello"}},
        {"type": "input_audio", "input_audio": {"data": "UklGR", "format": "wav"}}
    ]}]});
    let r = parse(&body);
    let image = |media: &str, data: &str| ContentBlock::Image {
        source: ImageSource {
            kind: "base64".into(),
            media_type: media.into(),
            data: data.into(),
        },
    };
    assert_eq!(
        r.messages[0].content,
        vec![
            text("What is this?"),
            image("image/png", "iVBORw0KGgo="),
            image("image/jpeg", "/9j/4AAQ")
        ]
    );
    assert_eq!(r.dropped, vec!["image_url", "input_audio"]);
}

#[test]
fn a_data_url_that_is_not_an_image_is_a_400_naming_its_part_not_an_image() {
    // A PDF sent as an image_url was forwarded as an image (tests/cases/CASES.md, the long tail).
    let body = json!({"model": "m", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "Summarise this."},
        {"type": "image_url", "image_url": {"url": "data:application/pdf;base64,JVBERi0xLjQ="}}
    ]}]});
    let error = refuse(&body);
    assert_eq!(error.field, "messages[0].content[1].image_url");
    assert!(
        error
            .message
            .contains("`application/pdf`, which is not an image"),
        "{error}"
    );
}

#[test]
fn assistant_reasoning_comes_first_as_thinking_and_tool_only_turns_have_no_text() {
    let body = json!({"model": "m", "messages": [
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": null, "reasoning_content": "I should call ls.",
         "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "ls", "arguments": ""}},
            {"id": "b", "function": {"name": "cat", "arguments": {"path": "x"}}}
         ]},
        {"role": "tool", "tool_call_id": "a", "content": "x"},
        {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "reasoning": "OpenRouter spelling", "content": "done",
         "function_call": null, "audio": null, "refusal": null, "annotations": []}
    ]});
    let r = parse(&body);
    assert_eq!(r.messages.len(), 4);
    assert_eq!(
        r.messages[1].content,
        vec![
            ContentBlock::Thinking {
                thinking: "I should call ls.".into(),
                signature: String::new()
            },
            ContentBlock::ToolUse {
                id: "a".into(),
                name: "ls".into(),
                input: json!({}),
                signature: None
            },
            ContentBlock::ToolUse {
                id: "b".into(),
                name: "cat".into(),
                input: json!({"path": "x"}),
                signature: None
            },
        ]
    );
    let result = |id: &str, content: &str| ContentBlock::ToolResult {
        tool_use_id: id.into(),
        content: content.into(),
        is_error: false,
    };
    assert_eq!(
        r.messages[2],
        Message {
            role: Role::User,
            content: vec![result("a", "x"), result("b", "one\ntwo"), text("thanks")]
        }
    );
    assert_eq!(
        r.messages[3].content,
        vec![
            ContentBlock::Thinking {
                thinking: "OpenRouter spelling".into(),
                signature: String::new()
            },
            text("done")
        ]
    );
    assert!(
        r.dropped.is_empty(),
        "a replayed SDK message's nulls are absent: {:?}",
        r.dropped
    );
    let legacy = parse(&json!({"model": "m", "messages": [
        {"role": "assistant", "content": "x", "function_call": {"name": "f", "arguments": "{}"}}
    ]}));
    assert_eq!(legacy.dropped, vec!["function_call"]);
}

#[test]
fn a_user_message_after_an_assistant_is_not_merged_with_an_earlier_one() {
    let body = json!({"model": "m", "messages": [
        {"role": "user", "content": "a"}, {"role": "user", "content": "b"},
        {"role": "tool", "tool_call_id": "t", "content": "r"},
        {"role": "assistant", "content": "c"}, {"role": "tool", "tool_call_id": "u", "content": "s"}
    ]});
    let r = parse(&body);
    let roles: Vec<Role> = r.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        vec![
            Role::User,
            Role::User,
            Role::User,
            Role::Assistant,
            Role::User
        ]
    );
}

#[test]
fn tool_call_arguments_must_be_a_json_object() {
    let call = |arguments: serde_json::Value| {
        json!({"model": "m", "messages": [
            {"role": "assistant", "tool_calls": [{"id": "a", "type": "function",
              "function": {"name": "f", "arguments": arguments}}]}
        ]})
    };
    let e = refuse(&call(json!("{\"path\": \"x")));
    assert_eq!(e.field, "messages[0].tool_calls[0].function.arguments");
    assert!(e.message.starts_with("is not valid JSON"), "{e}");
    let e = refuse(&call(json!("[1, 2]")));
    assert_eq!(e.field, "messages[0].tool_calls[0].function.arguments");
    assert!(e.message.contains("an array"), "{e}");
    let e = refuse(&call(json!(3)));
    assert!(e.message.contains("a number"), "{e}");
    let r = parse(&call(json!("  ")));
    assert!(
        matches!(&r.messages[0].content[0], ContentBlock::ToolUse { input, .. } if input == &json!({}))
    );
}

#[test]
fn tool_calls_need_an_id_a_function_and_a_name() {
    let body = |call: serde_json::Value| json!({"model": "m", "messages": [{"role": "assistant", "tool_calls": [call]}]});
    assert_eq!(
        refuse(&body(json!({"function": {"name": "f"}}))).field,
        "messages[0].tool_calls[0].id"
    );
    assert_eq!(
        refuse(&body(json!({"id": "a"}))).field,
        "messages[0].tool_calls[0].function"
    );
    assert_eq!(
        refuse(&body(json!({"id": "a", "function": {}}))).field,
        "messages[0].tool_calls[0].function.name"
    );
    let e = refuse(&body(
        json!({"id": "a", "type": "custom", "custom": {"name": "apply_patch"}}),
    ));
    assert_eq!(e.field, "messages[0].tool_calls[0].type");
    assert_eq!(
        refuse(&json!({"model": "m", "messages": [{"role": "tool", "content": "r"}]})).field,
        "messages[0].tool_call_id"
    );
}

#[test]
fn function_tools_are_carried_and_others_dropped() {
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [
        {"type": "function", "function": {"name": "no_params"}},
        {"type": "custom", "custom": {"name": "apply_patch"}},
        {"type": "function", "function": {"name": "strict_one", "strict": true,
            "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}}
    ]});
    let r = parse(&body);
    let names: Vec<&str> = r.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["no_params", "strict_one"]);
    assert_eq!(
        r.tools[0].input_schema,
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(r.tools[0].description, "");
    assert_eq!(r.dropped, vec!["tools[1].type=custom", "strict"]);
    let e = refuse(
        &json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"parameters": {}}}]}),
    );
    assert_eq!(e.field, "tools[0].function.name");
    let e = refuse(
        &json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": "{}"}}]}),
    );
    assert_eq!(e.field, "tools[0].function.parameters");
}

#[test]
fn tool_choice_in_every_spelling() {
    let with = |choice: serde_json::Value| json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "tool_choice": choice});
    assert_eq!(
        parse(&with(json!("auto"))).overrides.tool_choice,
        Some(ToolChoice::Auto)
    );
    assert_eq!(
        parse(&with(json!("none"))).overrides.tool_choice,
        Some(ToolChoice::None)
    );
    assert_eq!(
        parse(&with(json!("required"))).overrides.tool_choice,
        Some(ToolChoice::Required)
    );
    assert_eq!(
        parse(&with(
            json!({"type": "function", "function": {"name": "ls"}})
        ))
        .overrides
        .tool_choice,
        Some(ToolChoice::Tool("ls".into()))
    );
    let allowed = parse(&with(
        json!({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": []}}),
    ));
    assert_eq!(allowed.overrides.tool_choice, None);
    assert_eq!(allowed.dropped, vec!["tool_choice"]);
    let e = refuse(&with(json!("any")));
    assert_eq!(e.field, "tool_choice");
    assert!(e.message.contains("`any`"), "{e}");
    assert_eq!(
        refuse(&with(json!({"type": "function"}))).field,
        "tool_choice.function"
    );
    assert_eq!(refuse(&with(json!(true))).field, "tool_choice");
}

#[test]
fn output_limit_sampling_and_stop() {
    let r = parse(&hi_with(
        json!({"max_tokens": 100, "max_completion_tokens": 200, "top_p": 0.9, "temperature": 1.5, "stop": "END"}),
    ));
    assert_eq!(
        r.overrides.max_tokens,
        Some(200),
        "max_completion_tokens wins"
    );
    assert_eq!(r.overrides.top_p, Some(0.9));
    assert_eq!(r.overrides.temperature, Some(1.5));
    assert_eq!(r.overrides.stop, vec!["END"]);
    assert_eq!(
        parse(&hi_with(json!({"max_tokens": 64})))
            .overrides
            .max_tokens,
        Some(64)
    );
    assert_eq!(
        parse(&hi_with(json!({"stop": ["a", "", "b"]})))
            .overrides
            .stop,
        vec!["a", "b"]
    );
    assert_eq!(
        refuse(&hi_with(json!({"max_tokens": 0}))).field,
        "max_tokens"
    );
    assert_eq!(
        refuse(&hi_with(json!({"max_completion_tokens": -5}))).field,
        "max_completion_tokens"
    );
    assert_eq!(
        refuse(&hi_with(json!({"max_tokens": 1.5}))).field,
        "max_tokens"
    );
    assert_eq!(
        refuse(&hi_with(json!({"temperature": 2.5}))).field,
        "temperature"
    );
    assert_eq!(
        refuse(&hi_with(json!({"temperature": "hot"}))).field,
        "temperature"
    );
    assert_eq!(refuse(&hi_with(json!({"top_p": 1.1}))).field, "top_p");
    assert_eq!(refuse(&hi_with(json!({"stop": ["a", 3]}))).field, "stop[1]");
    assert_eq!(refuse(&hi_with(json!({"stop": 3}))).field, "stop");
    assert_eq!(refuse(&hi_with(json!({"stream": "yes"}))).field, "stream");
    assert_eq!(
        refuse(&hi_with(json!({"stream_options": {"include_usage": 1}}))).field,
        "stream_options.include_usage"
    );
}

#[test]
fn reasoning_effort_and_budgets() {
    let effort = |e: &str| {
        parse(&hi_with(json!({"reasoning_effort": e})))
            .overrides
            .reasoning_effort
    };
    assert_eq!(effort("minimal"), Some(ReasoningEffort::Low));
    assert_eq!(effort("low"), Some(ReasoningEffort::Low));
    assert_eq!(effort("medium"), Some(ReasoningEffort::Medium));
    assert_eq!(effort("high"), Some(ReasoningEffort::High));
    assert_eq!(effort("xhigh"), Some(ReasoningEffort::Xhigh));
    assert_eq!(effort("none"), Some(ReasoningEffort::None));
    let e = refuse(&hi_with(json!({"reasoning_effort": "max"})));
    assert_eq!(e.field, "reasoning_effort");
    let r = parse(&hi_with(
        json!({"reasoning": {"effort": "high", "max_tokens": 2048}}),
    ));
    assert_eq!(r.overrides.reasoning_effort, Some(ReasoningEffort::High));
    assert_eq!(r.overrides.thinking_budget_tokens, Some(2048));
    assert_eq!(
        refuse(&hi_with(json!({"reasoning": {"effort": "lots"}}))).field,
        "reasoning.effort"
    );
    let r = parse(&hi_with(
        json!({"thinking": {"type": "enabled", "budget_tokens": 4096}}),
    ));
    assert_eq!(r.overrides.thinking_budget_tokens, Some(4096));
    let r = parse(&hi_with(json!({"thinking": {"type": "disabled"}})));
    assert_eq!(r.overrides.thinking_budget_tokens, Some(0));
}

#[test]
fn parameters_that_change_the_answer_are_dropped_and_defaults_are_not() {
    let dropped_of = |extra: serde_json::Value| parse(&hi_with(extra)).dropped;
    let defaults = dropped_of(json!({
        "n": 1, "logprobs": false, "response_format": {"type": "text"}, "frequency_penalty": 0,
        "presence_penalty": 0.0, "logit_bias": {}, "parallel_tool_calls": true, "modalities": ["text"],
        "user": "u-1", "metadata": {"a": "b"}, "store": true, "service_tier": "auto",
        "prompt_cache_key": "k", "prediction": {"type": "content", "content": "x"}, "top_logprobs": 0
    }));
    assert!(defaults.is_empty(), "{defaults:?}");
    let dropped = dropped_of(json!({
        "n": 2, "logprobs": true, "top_logprobs": 3,
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}},
        "seed": 7, "frequency_penalty": 0.5, "presence_penalty": -1, "logit_bias": {"50256": -100},
        "parallel_tool_calls": false, "functions": [{"name": "f"}], "function_call": "auto",
        "modalities": ["text", "audio"], "audio": {"voice": "alloy", "format": "wav"},
        "web_search_options": {}, "verbosity": "low"
    }));
    assert_eq!(
        dropped,
        vec![
            "n",
            "logprobs",
            "top_logprobs",
            "response_format",
            "seed",
            "frequency_penalty",
            "presence_penalty",
            "logit_bias",
            "parallel_tool_calls",
            "functions",
            "function_call",
            "modalities",
            "audio",
            "web_search_options",
            "verbosity"
        ]
    );
    assert_eq!(
        dropped_of(json!({"response_format": {"type": "json_object"}})),
        vec!["response_format"]
    );
}

#[test]
fn malformed_bodies_name_the_field() {
    let e = super::super::parse_request(b"{\"model\": ").unwrap_err();
    assert_eq!(e.field, "body");
    assert!(e.message.starts_with("is not valid JSON"), "{e}");
    assert_eq!(refuse(&json!([1])).field, "body");
    assert_eq!(
        refuse(&json!({"messages": [{"role": "user", "content": "hi"}]})).field,
        "model"
    );
    assert_eq!(
        refuse(&json!({"model": "", "messages": [{"role": "user", "content": "hi"}]})).field,
        "model"
    );
    assert_eq!(refuse(&json!({"model": 4, "messages": []})).field, "model");
    assert_eq!(refuse(&json!({"model": "m"})).field, "messages");
    assert_eq!(
        refuse(&json!({"model": "m", "messages": []})).field,
        "messages"
    );
    assert_eq!(
        refuse(&json!({"model": "m", "messages": {"role": "user"}})).field,
        "messages"
    );
    assert_eq!(
        refuse(&json!({"model": "m", "messages": ["hi"]})).field,
        "messages[0]"
    );
    assert_eq!(
        refuse(&json!({"model": "m", "messages": [{"content": "hi"}]})).field,
        "messages[0].role"
    );
    let e = refuse(&json!({"model": "m", "messages": [{"role": "human", "content": "hi"}]}));
    assert_eq!(e.field, "messages[0].role");
    assert!(e.message.contains("`human`"), "{e}");
    let e = refuse(
        &json!({"model": "m", "messages": [{"role": "function", "name": "f", "content": "x"}]}),
    );
    assert!(e.message.contains("tool"), "{e}");
    assert_eq!(
        refuse(&json!({"model": "m", "messages": [{"role": "user", "content": 5}]})).field,
        "messages[0].content"
    );
    assert_eq!(
        refuse(&json!({"model": "m", "messages": [{"role": "user", "content": [{"text": "x"}]}]}))
            .field,
        "messages[0].content[0].type"
    );
    assert_eq!(
        refuse(
            &json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "text"}]}]})
        )
        .field,
        "messages[0].content[0].text"
    );
    assert_eq!(refuse(&json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]})).field, "messages[0].content[0].image_url");
    assert_eq!(refuse(&json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})).field, "messages[0].content[0].image_url.url");
    let e = refuse(&json!({"model": "m", "messages": [{"role": "assistant", "tool_calls": {}}]}));
    assert_eq!(e.field, "messages[0].tool_calls");
    assert_eq!(
        e.to_string(),
        "`messages[0].tool_calls`: must be an array (got an object)."
    );
}

#[test]
fn empty_messages_are_left_out_and_unknown_fields_ignored() {
    let body = json!({"model": "m", "unknown_top": {"x": 1}, "messages": [
        {"role": "user", "content": [], "unknown": 1},
        {"role": "user", "content": null},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "hi", "name": "alice"}
    ]});
    let r = parse(&body);
    assert_eq!(r.messages, vec![Message::user_text("hi")]);
    assert!(r.dropped.is_empty());
}

/// Cases P01, P03 and P06: an OpenRouter-style client's `cache_control` on the system
/// part, on a tool message and on a user message's part marks the end of each; the tool
/// results merged into one user message put the mark on the marked result's block; the key and
/// retention are kept and never named dropped.
#[test]
fn cache_control_and_the_cache_key_are_read() {
    let mark = json!({"type": "ephemeral", "ttl": "1h"});
    let r = parse(&json!({
        "model": "m", "prompt_cache_key": "s-1", "prompt_cache_retention": "24h",
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "s", "cache_control": mark}]},
            {"role": "user", "content": [
                {"type": "text", "text": "a"},
                {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}
            ]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": "one", "cache_control": {"type": "ephemeral"}},
            {"role": "tool", "tool_call_id": "c2", "content": "two"}
        ]
    }));
    assert!(r.dropped.is_empty(), "{:?}", r.dropped);
    let cache = &r.overrides.cache;
    assert_eq!(cache.key.as_deref(), Some("s-1"));
    assert_eq!(cache.retention.as_deref(), Some("24h"));
    let at: Vec<(CacheAt, Option<String>)> = (cache.marks.iter())
        .map(|m| (m.at.clone(), m.ttl.clone()))
        .collect();
    assert_eq!(
        at,
        [
            (CacheAt::System, Some("1h".into())),
            (
                CacheAt::Block {
                    message: 0,
                    block: 1
                },
                None
            ),
            (
                CacheAt::Block {
                    message: 2,
                    block: 0
                },
                None
            ),
        ]
    );
}
