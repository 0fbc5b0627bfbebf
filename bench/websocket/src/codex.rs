//! What a Codex-shaped session sends and what its scripted model answers.

use serde_json::{Value, json};
use switchyard_testkit::{AgentTurn, AgentTurnRequest};

/// A Codex-sized `response.create`: 12 KB of instructions and 20 tools of about 700 bytes,
/// continuing `previous` when given.
pub(crate) fn create(input: Vec<Value>, previous: Option<&str>) -> Value {
    let tool = |i: usize| {
        json!({"type": "function", "name": format!("tool_{i}"), "description": "Does one thing. ".repeat(40),
               "strict": false, "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}})
    };
    let mut create = json!({
        "type": "response.create",
        "model": "gpt-5.5",
        "instructions": "You are a coding agent. ".repeat(500),
        "input": input,
        "tools": (0..20).map(tool).collect::<Vec<_>>(),
        "tool_choice": "auto",
        "parallel_tool_calls": false,
        "reasoning": null,
        "store": false,
        "stream": true,
        "include": [],
    });
    if let Some(previous) = previous {
        create["previous_response_id"] = json!(previous);
    }
    create
}

pub(crate) fn user(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

/// The model: `tool_0` until the session's last turn, then text.
pub(crate) fn model(r: &AgentTurnRequest, turns: usize) -> AgentTurn {
    if r.tool_results + 1 < turns {
        AgentTurn::tool_call("tool_0", json!({"cmd": "ls"}))
    } else {
        AgentTurn::text("Done.")
    }
}

/// What a turn's answer adds to the conversation: its call and a 2 KB output for it.
pub(crate) fn next(response: &Value) -> Vec<Value> {
    let mut items = response["output"].as_array().cloned().unwrap_or_default();
    let call = items.iter().find(|i| i["type"] == "function_call").cloned();
    if let Some(call) = call {
        items.push(json!({"type": "function_call_output", "call_id": call["call_id"], "output": "x".repeat(2048)}));
    }
    items
}
