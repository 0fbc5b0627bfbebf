//! Requests as Gemini CLI and the SDKs send them, read into a `GatewayRequest`.

use serde_json::json;
use switchyard_api::{ContentBlock, ReasoningEffort, Role, ToolChoice};

use super::super::parse::{parse_call, parse_count, parse_request};
use super::{STREAM, parse, refuse};

/// A turn of Gemini CLI 0.61 after one tool call, as it sends it: the system instruction,
/// the user's prompt, the model's call with its id and thought signature, the response with the
/// same id, tools as JSON schemas, thinking on with thoughts shown.
fn gemini_cli_turn() -> serde_json::Value {
    json!({
        "contents": [
            {"role": "user", "parts": [{"text": "create hello.txt containing hi"}]},
            {"role": "model", "parts": [{"functionCall": {"id": "write_file__abc", "name": "write_file",
                "args": {"file_path": "hello.txt", "content": "hi"}}, "thoughtSignature": "c2ln"}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "write_file__abc", "name": "write_file",
                "response": {"output": "Successfully created hello.txt."}}}]}
        ],
        "systemInstruction": {"role": "user", "parts": [{"text": "You are Gemini CLI."}]},
        "tools": [{"functionDeclarations": [{"name": "write_file", "description": "Writes a file.",
            "parametersJsonSchema": {"type": "object", "properties": {"file_path": {"type": "string"},
                "content": {"type": "string"}}, "required": ["file_path", "content"]}}]}],
        "generationConfig": {"temperature": 0, "topP": 1,
            "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 8192}}
    })
}

#[test]
fn a_gemini_cli_turn_reads_as_a_system_prompt_a_conversation_and_tools() {
    let r = parse(&gemini_cli_turn());
    assert_eq!(r.model, "gemini-2.5-pro");
    assert!(r.stream && !r.json_array && !r.hide_thoughts);
    assert_eq!(r.system_prompt, "You are Gemini CLI.");
    assert_eq!(r.messages.len(), 3);
    assert_eq!(r.messages[1].role, Role::Assistant);
    assert_eq!(
        r.messages[1].content,
        [ContentBlock::ToolUse {
            id: "write_file__abc".into(),
            name: "write_file".into(),
            input: json!({"file_path": "hello.txt", "content": "hi"}),
            signature: Some("c2ln".into()),
        }]
    );
    assert_eq!(
        r.messages[2].content,
        [ContentBlock::ToolResult {
            tool_use_id: "write_file__abc".into(),
            content: "Successfully created hello.txt.".into(),
            is_error: false,
        }]
    );
    assert_eq!(r.tools[0].name, "write_file");
    assert_eq!(
        r.tools[0].input_schema["required"],
        json!(["file_path", "content"])
    );
    assert_eq!(r.overrides.temperature, Some(0.0));
    assert_eq!(r.overrides.top_p, Some(1.0));
    assert_eq!(r.overrides.thinking_budget_tokens, Some(8192));
    assert!(r.dropped.is_empty(), "{:?}", r.dropped);
}

#[test]
fn the_url_names_the_model_and_how_the_answer_streams() {
    let body = json!({"contents": [{"parts": [{"text": "hi"}]}]}).to_string();
    let at = |target: &str| parse_call(target, body.as_bytes()).unwrap();
    let whole = at("/v1beta/models/gemini-2.5-flash:generateContent");
    assert_eq!(
        (whole.model.as_str(), whole.stream),
        ("gemini-2.5-flash", false)
    );
    let array = at("/v1/models/gemini-2.5-flash:streamGenerateContent");
    assert!(array.stream && array.json_array);
    let sse = at("/v1beta/models/m:streamGenerateContent?key=k&alt=sse");
    assert!(sse.stream && !sse.json_array);
    assert_eq!(
        at("/v1beta/models/anthropic%2Fclaude-sonnet-4-5:generateContent").model,
        "anthropic/claude-sonnet-4-5"
    );
    assert_eq!(
        at("/v1beta/models/openrouter/openai/gpt-5:generateContent").model,
        "openrouter/openai/gpt-5"
    );
    let error = parse_call("/v1beta/models/:generateContent", body.as_bytes()).unwrap_err();
    assert_eq!(error.field, "model");
}

#[test]
fn a_body_alone_has_no_model_and_does_not_stream() {
    let r = parse_request(br#"{"contents": [{"parts": [{"text": "hi"}]}]}"#).unwrap();
    assert_eq!((r.model.as_str(), r.stream), ("", false));
    assert_eq!(
        r.messages[0].role,
        Role::User,
        "a content without a role is the user's"
    );
    assert!(r.hide_thoughts, "Gemini shows thoughts only when asked");
}

#[test]
fn openapi_parameters_become_json_schema_and_a_tool_without_any_takes_none() {
    let body = json!({"contents": [{"parts": [{"text": "hi"}]}],
    "tools": [{"functionDeclarations": [
        {"name": "search", "parameters": {"type": "OBJECT", "properties": {
            "query": {"type": "STRING"}, "type": {"type": "STRING", "enum": ["OBJECT"]},
            "limit": {"type": "INTEGER", "nullable": true}}, "required": ["query"]}},
        {"name": "now"}
    ]}]});
    let r = parse(&body);
    assert_eq!(
        r.tools[0].input_schema,
        json!({"type": "object", "properties": {"query": {"type": "string"},
            "type": {"type": "string", "enum": ["OBJECT"]},
            "limit": {"type": "integer", "nullable": true}}, "required": ["query"]})
    );
    assert_eq!(
        r.tools[1].input_schema,
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(r.tools[1].description, "");
}

#[test]
fn what_cannot_be_carried_is_named_in_googles_spelling() {
    let body = json!({
        "contents": [{"role": "user", "parts": [
            {"text": "look", "thoughtSignature": "sig"},
            {"fileData": {"mimeType": "video/mp4", "fileUri": "gs://b/v.mp4"}},
            {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}}
        ]}],
        "tools": [{"googleSearch": {}}, {"codeExecution": {}}],
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        "cachedContent": "cachedContents/abc",
        "generationConfig": {"topK": 40, "candidateCount": 2, "responseMimeType": "application/json",
            "responseSchema": {"type": "OBJECT"}, "seed": 7}
    });
    let r = parse(&body);
    for name in [
        "thoughtSignature",
        "fileData",
        "inlineData",
        "tools.googleSearch",
        "tools.codeExecution",
        "safetySettings",
        "cachedContent",
        "topK",
        "candidateCount",
        "responseMimeType",
        "responseSchema",
        "seed",
    ] {
        assert!(
            r.dropped.iter().any(|d| d == name),
            "{name} in {:?}",
            r.dropped
        );
    }
    assert_eq!(
        r.messages[0].content,
        [ContentBlock::Text {
            text: "look".into()
        }]
    );
}

#[test]
fn googles_defaults_are_not_named_dropped() {
    let body = json!({"contents": [{"parts": [{"text": "hi"}]}], "safetySettings": [],
        "generationConfig": {"candidateCount": 1, "responseMimeType": "text/plain",
            "presencePenalty": 0.0, "frequencyPenalty": 0.0, "responseModalities": ["TEXT"]}});
    assert_eq!(parse(&body).dropped, Vec::<String>::new());
}

#[test]
fn sampling_the_limit_and_stop_sequences_are_carried() {
    let body = json!({"contents": [{"parts": [{"text": "hi"}]}],
        "generationConfig": {"temperature": 0.7, "topP": 0.9, "maxOutputTokens": 1024,
            "stopSequences": ["END", "\n\n"]}});
    let o = parse(&body).overrides;
    assert_eq!(
        (o.temperature, o.top_p, o.max_tokens),
        (Some(0.7), Some(0.9), Some(1024))
    );
    assert_eq!(o.stop, ["END", "\n\n"]);
}

#[test]
fn thinking_budget_level_and_shown_thoughts() {
    let with = |config: serde_json::Value| {
        parse(&json!({"contents": [{"parts": [{"text": "hi"}]}],
            "generationConfig": {"thinkingConfig": config}}))
    };
    assert_eq!(
        with(json!({"thinkingBudget": -1}))
            .overrides
            .thinking_budget_tokens,
        None
    );
    assert_eq!(
        with(json!({"thinkingBudget": 0}))
            .overrides
            .thinking_budget_tokens,
        Some(0)
    );
    assert_eq!(
        with(json!({"thinkingBudget": 512}))
            .overrides
            .thinking_budget_tokens,
        Some(512)
    );
    let level = with(json!({"thinkingLevel": "high", "includeThoughts": false}));
    assert_eq!(
        level.overrides.reasoning_effort,
        Some(ReasoningEffort::High)
    );
    assert!(level.hide_thoughts);
    let low = with(json!({"thinkingLevel": "MINIMAL", "includeThoughts": true}));
    assert_eq!(low.overrides.reasoning_effort, Some(ReasoningEffort::Low));
    assert!(!low.hide_thoughts);
    let bad = refuse(&json!({"contents": [{"parts": [{"text": "hi"}]}],
        "generationConfig": {"thinkingConfig": {"thinkingBudget": -5}}}));
    assert_eq!(bad.field, "generationConfig.thinkingConfig.thinkingBudget");
}

#[test]
fn function_calling_modes_and_allowed_names() {
    let choice = |config: serde_json::Value| {
        let r = parse(&json!({"contents": [{"parts": [{"text": "hi"}]}],
            "toolConfig": {"functionCallingConfig": config}}));
        (r.overrides.tool_choice, r.dropped)
    };
    assert_eq!(choice(json!({"mode": "AUTO"})).0, Some(ToolChoice::Auto));
    assert_eq!(choice(json!({"mode": "NONE"})).0, Some(ToolChoice::None));
    assert_eq!(
        choice(json!({"mode": "ANY", "allowedFunctionNames": ["edit"]})).0,
        Some(ToolChoice::Tool("edit".into()))
    );
    let (any, dropped) = choice(json!({"mode": "ANY", "allowedFunctionNames": ["a", "b"]}));
    assert_eq!(
        (any, dropped),
        (
            Some(ToolChoice::Required),
            vec!["allowedFunctionNames".to_owned()]
        )
    );
    let (validated, dropped) = choice(json!({"mode": "VALIDATED"}));
    assert_eq!(validated, Some(ToolChoice::Auto));
    assert_eq!(dropped, ["functionCallingConfig.mode=VALIDATED"]);
    let bad = refuse(&json!({"contents": [{"parts": [{"text": "hi"}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "SOMETIMES"}}}));
    assert_eq!(bad.field, "toolConfig.functionCallingConfig.mode");
}

#[test]
fn thoughts_images_and_responses_of_every_shape() {
    let body = json!({"contents": [
        {"role": "user", "parts": [{"text": "see"}, {"inlineData": {"mimeType": "IMAGE/PNG", "data": "iVBO"}}]},
        {"role": "model", "parts": [{"text": "plan", "thought": true}, {"text": ""},
            {"functionCall": {"name": "shot"}}, {"functionCall": {"name": "run", "args": {"c": "ls"}}}]},
        {"role": "function", "parts": [
            {"functionResponse": {"name": "run", "response": {"error": "not found"}}},
            {"functionResponse": {"name": "shot", "response": {"a": 1, "b": [2]},
                "parts": [{"inlineData": {"mimeType": "image/jpeg", "data": "/9j/"}}]}}
        ]}
    ]});
    let r = parse(&body);
    assert_eq!(
        r.messages[0].content[1],
        ContentBlock::Image {
            source: switchyard_api::message::ImageSource {
                kind: "base64".into(),
                media_type: "image/png".into(),
                data: "iVBO".into()
            }
        }
    );
    let model = &r.messages[1].content;
    assert!(
        matches!(&model[0], ContentBlock::Thinking { thinking, signature } if thinking == "plan" && signature.is_empty())
    );
    assert_eq!(model.len(), 3, "the empty text is no part: {model:?}");
    assert!(
        matches!(&model[1], ContentBlock::ToolUse { id, input, .. } if id == "call_1_2" && *input == json!({}))
    );
    let results = &r.messages[2].content;
    assert_eq!(r.messages[2].role, Role::User);
    assert_eq!(
        results[0],
        ContentBlock::ToolResult {
            tool_use_id: "call_1_3".into(),
            content: "not found".into(),
            is_error: true
        }
    );
    assert_eq!(
        results[1],
        ContentBlock::ToolResult {
            tool_use_id: "call_1_2".into(),
            content: r#"{"a":1,"b":[2]}"#.into(),
            is_error: false
        }
    );
    assert!(
        matches!(&results[2], ContentBlock::Image { source } if source.media_type == "image/jpeg")
    );
}

#[test]
fn malformed_requests_are_400s_naming_the_field() {
    let cases = [
        (json!({}), "contents"),
        (json!({"contents": "hi"}), "contents"),
        (
            json!({"contents": [{"role": "system", "parts": [{"text": "x"}]}]}),
            "contents[0].role",
        ),
        (
            json!({"contents": [{"parts": [{"text": 5}]}]}),
            "contents[0].parts[0].text",
        ),
        (
            json!({"contents": [{"role": "model", "parts": [{"functionCall": {"name": "f", "args": "[1]"}}]}]}),
            "contents[0].parts[0].functionCall.args",
        ),
        (
            json!({"contents": [{"parts": [{"functionCall": {"args": {}}}]}]}),
            "contents[0].parts[0].functionCall.name",
        ),
        (
            json!({"contents": [{"parts": [{"inlineData": {"mimeType": "image/png", "data": " "}}]}]}),
            "contents[0].parts[0].inlineData.data",
        ),
        (
            json!({"contents": [{"role": "model", "parts": [{"text": "x", "thought": true}]}]}),
            "contents",
        ),
        (
            json!({"contents": [{"parts": [{"text": "hi"}]}], "tools": [{"functionDeclarations": {}}]}),
            "tools[0].functionDeclarations",
        ),
        (
            json!({"contents": [{"parts": [{"text": "hi"}]}], "generationConfig": {"temperature": "hot"}}),
            "generationConfig.temperature",
        ),
    ];
    for (body, field) in cases {
        assert_eq!(refuse(&body).field, field, "{body}");
    }
    let not_json = parse_call(STREAM, b"{").unwrap_err();
    assert_eq!(not_json.field, "body");
}

#[test]
fn count_tokens_takes_contents_or_a_whole_request() {
    let target = "/v1beta/models/gemini-2.5-flash:countTokens";
    let bare = parse_count(
        target,
        br#"{"contents": [{"parts": [{"text": "count me"}]}]}"#,
    )
    .unwrap();
    assert_eq!(bare.model, "gemini-2.5-flash");
    assert_eq!(bare.messages.len(), 1);
    let whole = json!({"generateContentRequest": {"model": "models/x",
        "contents": [{"parts": [{"text": "count me"}]}],
        "systemInstruction": {"parts": [{"text": "sys"}]},
        "tools": [{"functionDeclarations": [{"name": "f"}]}]}});
    let whole = parse_count(target, whole.to_string().as_bytes()).unwrap();
    assert_eq!(
        (whole.system_prompt.as_str(), whole.tools.len()),
        ("sys", 1)
    );
    assert_eq!(
        whole.model, "gemini-2.5-flash",
        "the URL's model, not the inner one"
    );
    let empty = parse_count(target, br#"{"contents": []}"#).unwrap();
    assert!(
        empty.messages.is_empty(),
        "nothing to count is 0 tokens, not a 400"
    );
    let bad = parse_count(target, br#"{"generateContentRequest": {"contents": 3}}"#).unwrap_err();
    assert_eq!(bad.field, "generateContentRequest.contents");
}

#[test]
fn a_system_instruction_joins_its_texts() {
    let r = parse(&json!({"contents": [{"parts": [{"text": "hi"}]}],
        "systemInstruction": {"parts": [{"text": "one"}, {"text": ""}, {"text": "two"}]}}));
    assert_eq!(r.system_prompt, "one\n\ntwo");
    let plain =
        parse(&json!({"contents": [{"parts": [{"text": "hi"}]}], "systemInstruction": "s"}));
    assert_eq!(plain.system_prompt, "s");
}
