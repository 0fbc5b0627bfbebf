//! A Gemini `generateContent` body, as Gemini CLI and Google's SDKs send it, read into a
//! `GatewayRequest`: `contents.rs` reads the conversation, `config.rs` the `generationConfig`.
//! Spec: R14.12, R14.2.

use serde_json::Value;
use switchyard_api::{ContentBlock, ToolChoice, ToolSpec};

use super::super::fields::{
    Object, as_object, element, get, member, note_dropped, opt_array, opt_object, opt_str, req_str,
    wrong_kind,
};
use super::super::request::{GatewayRequest, IngressError};
use super::{call, config, contents};

/// Parses a body alone: the model and the stream are the URL's, so they are left unset.
pub(crate) fn parse_request(body: &[u8]) -> Result<GatewayRequest, IngressError> {
    let req = read(&object(body)?, "")?;
    let sendable = (req.messages.iter().flat_map(|m| &m.content))
        .any(|b| !matches!(b, ContentBlock::Thinking { .. }));
    if !sendable {
        return Err(IngressError::new(
            "contents",
            "holds no text, image or function part to send: add a user turn with a `text` part.",
        ));
    }
    Ok(req)
}

/// Parses a request to `target`, whose path names the model and whether it streams.
pub(super) fn parse_call(target: &str, body: &[u8]) -> Result<GatewayRequest, IngressError> {
    let call = call::read(target)?;
    let mut req = parse_request(body)?;
    req.model = call.model;
    req.stream = call.stream;
    req.json_array = call.stream && !call.sse;
    Ok(req)
}

/// Parses a `countTokens` body: `contents`, or a whole `generateContentRequest`.
pub(super) fn parse_count(target: &str, body: &[u8]) -> Result<GatewayRequest, IngressError> {
    let call = call::read(target)?;
    let obj = object(body)?;
    let mut req = match opt_object(&obj, "generateContentRequest", "")? {
        Some(inner) => read(inner, "generateContentRequest")?,
        None => read(&obj, "")?,
    };
    req.model = call.model;
    Ok(req)
}

fn object(body: &[u8]) -> Result<Object, IngressError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| IngressError::new("body", format!("the body is not valid JSON ({e}).")))?;
    match value {
        Value::Object(obj) => Ok(obj),
        other => Err(wrong_kind("body", "a JSON object", &other)),
    }
}

/// The request of the object at `parent` (the top, or `generateContentRequest`).
fn read(obj: &Object, parent: &str) -> Result<GatewayRequest, IngressError> {
    let mut req = GatewayRequest {
        // Gemini shows thinking only to a client that asks with `includeThoughts`.
        hide_thoughts: true,
        ..GatewayRequest::default()
    };
    let at = member(parent, "contents");
    let contents = opt_array(obj, "contents", parent)?.ok_or_else(|| {
        IngressError::new(
            &at,
            "is required: the conversation, an array of {role, parts}.",
        )
    })?;
    req.messages = contents::messages(contents, &at, &mut req.dropped)?;
    if let Some(system) = get(obj, "systemInstruction") {
        let at = member(parent, "systemInstruction");
        req.system_prompt = contents::system(system, &at, &mut req.dropped)?;
    }
    req.tools = tools(obj, parent, &mut req.dropped)?;
    if let Some(config) = opt_object(obj, "toolConfig", parent)? {
        let at = member(parent, "toolConfig");
        req.overrides.tool_choice = tool_choice(config, &at, &mut req.dropped)?;
    }
    if let Some(config) = opt_object(obj, "generationConfig", parent)? {
        config::read(config, &member(parent, "generationConfig"), &mut req)?;
    }
    for name in ["safetySettings", "cachedContent", "labels"] {
        let set = get(obj, name).is_some_and(|v| match v {
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            Value::String(s) => !s.is_empty(),
            _ => true,
        });
        if set {
            note_dropped(&mut req.dropped, name);
        }
    }
    Ok(req)
}

/// `tools[]`: each tool's `functionDeclarations` become `ToolSpec`s; Google's own tools
/// (`googleSearch`, `codeExecution`, …) are named dropped as `tools.NAME`.
fn tools(
    obj: &Object,
    parent: &str,
    dropped: &mut Vec<String>,
) -> Result<Vec<ToolSpec>, IngressError> {
    let mut out = Vec::new();
    let list = opt_array(obj, "tools", parent)?;
    for (i, tool) in list.into_iter().flatten().enumerate() {
        let at = element(&member(parent, "tools"), i);
        for (key, value) in as_object(tool, &at)? {
            if key != "functionDeclarations" {
                if !value.is_null() {
                    note_dropped(dropped, &format!("tools.{key}"));
                }
                continue;
            }
            let at = member(&at, key);
            let Some(declarations) = value.as_array() else {
                return Err(wrong_kind(&at, "an array", value));
            };
            for (j, declaration) in declarations.iter().enumerate() {
                let at = element(&at, j);
                out.push(function(as_object(declaration, &at)?, &at, dropped)?);
            }
        }
    }
    Ok(out)
}

/// One function declaration: its JSON schema in `parametersJsonSchema`, else its OpenAPI
/// `parameters`, either with Google's upper-case type names made JSON Schema's.
fn function(d: &Object, at: &str, dropped: &mut Vec<String>) -> Result<ToolSpec, IngressError> {
    let name = req_str(d, "name", at)?.to_owned();
    let description = opt_str(d, "description", at)?
        .unwrap_or_default()
        .to_owned();
    let mut input_schema = match (
        opt_object(d, "parametersJsonSchema", at)?,
        opt_object(d, "parameters", at)?,
    ) {
        (Some(schema), _) | (None, Some(schema)) => json_schema(&Value::Object(schema.clone())),
        (None, None) => serde_json::json!({"type": "object", "properties": {}}),
    };
    // Gemini takes a schema of properties alone; Anthropic refuses one without its `type`.
    if let Some(schema) = input_schema.as_object_mut() {
        schema
            .entry("type")
            .or_insert_with(|| Value::from("object"));
    }
    for key in ["response", "responseJsonSchema", "behavior"] {
        if get(d, key).is_some() {
            note_dropped(dropped, &format!("functionDeclarations.{key}"));
        }
    }
    Ok(ToolSpec {
        name,
        description,
        input_schema,
    })
}

/// An OpenAPI schema of Google's with each upper-case `type` (`OBJECT`, `STRING`, …) in JSON
/// Schema's lower case.
fn json_schema(schema: &Value) -> Value {
    const TYPES: [&str; 7] = [
        "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL",
    ];
    match schema {
        Value::Object(map) => Value::Object(
            (map.iter())
                .map(|(key, value)| {
                    let value = match value {
                        Value::String(t) if key == "type" && TYPES.contains(&t.as_str()) => {
                            Value::String(t.to_ascii_lowercase())
                        }
                        other => json_schema(other),
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(json_schema).collect()),
        other => other.clone(),
    }
}

/// `toolConfig.functionCallingConfig`: `AUTO`, `ANY` (one allowed name: that function), `NONE`;
/// `VALIDATED` is carried as `AUTO`, and names that cannot be carried are named dropped.
fn tool_choice(
    config: &Object,
    at: &str,
    dropped: &mut Vec<String>,
) -> Result<Option<ToolChoice>, IngressError> {
    if get(config, "retrievalConfig").is_some() {
        note_dropped(dropped, "toolConfig.retrievalConfig");
    }
    let Some(f) = opt_object(config, "functionCallingConfig", at)? else {
        return Ok(None);
    };
    let at = member(at, "functionCallingConfig");
    let mut names = Vec::new();
    for (i, name) in opt_array(f, "allowedFunctionNames", &at)?
        .into_iter()
        .flatten()
        .enumerate()
    {
        let path = element(&member(&at, "allowedFunctionNames"), i);
        names.push(
            name.as_str()
                .ok_or_else(|| wrong_kind(&path, "a string", name))?,
        );
    }
    let mode = opt_str(f, "mode", &at)?.unwrap_or("AUTO");
    let choice = match mode.to_ascii_uppercase().as_str() {
        "AUTO" | "MODE_UNSPECIFIED" => ToolChoice::Auto,
        "ANY" => match names.as_slice() {
            [one] => ToolChoice::Tool((*one).to_owned()),
            _ => ToolChoice::Required,
        },
        "NONE" => ToolChoice::None,
        "VALIDATED" => {
            note_dropped(dropped, "functionCallingConfig.mode=VALIDATED");
            ToolChoice::Auto
        }
        _ => {
            return Err(IngressError::new(
                member(&at, "mode"),
                format!("`{mode}` is not one of AUTO, ANY, NONE, VALIDATED."),
            ));
        }
    };
    if !names.is_empty() && !matches!(choice, ToolChoice::Tool(_)) {
        note_dropped(dropped, "allowedFunctionNames");
    }
    Ok(Some(choice))
}
