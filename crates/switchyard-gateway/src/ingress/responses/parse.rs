//! OpenAI Responses request bodies, as the official SDKs and Codex CLI send them, read into
//! a [`GatewayRequest`]. `instructions` and system or developer items become the system
//! prompt; the other `input` items become messages in `input.rs`.
//! Spec: R14.1, R14.2, R14.5.

use serde_json::Value;
use switchyard_api::{ContentBlock, ReasoningEffort, Role, ToolChoice, ToolSpec};

use super::input::{ADDITIONAL_TOOLS, CUSTOM_INPUT, Input, qualified};
use crate::ingress::fields::{Object, get, note_dropped, quoted};
use crate::ingress::openai;
use crate::ingress::request::{ClientTool, GatewayRequest, IngressError};

/// Parses a Responses request body. `store` defaults to true, as in the API.
pub(crate) fn parse_request(body: &[u8]) -> Result<GatewayRequest, IngressError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        IngressError::new(
            "body",
            format!("the body is not valid JSON ({e}); send one JSON object"),
        )
    })?;
    let Value::Object(obj) = value else {
        return Err(IngressError::new(
            "body",
            "the body must be one JSON object",
        ));
    };
    let mut req = GatewayRequest {
        store: true,
        ..GatewayRequest::default()
    };
    req.model = quoted(&obj, "model", "a string", Value::as_str)?
        .ok_or_else(|| {
            IngressError::new("model", "`model` is required: send the model or route name")
        })?
        .to_owned();
    let mut system = Vec::new();
    if let Some(text) = quoted(&obj, "instructions", "a string", Value::as_str)? {
        system.push(text.to_owned());
    }
    req.previous_response_id =
        quoted(&obj, "previous_response_id", "a string", Value::as_str)?.map(str::to_owned);
    let mut input = Input::default();
    match get(&obj, "input") {
        None if req.previous_response_id.is_some() => {}
        None => {
            return Err(IngressError::new(
                "input",
                "`input` is required: send a string or a list of input items",
            ));
        }
        Some(Value::String(text)) => {
            input.push(Role::User, ContentBlock::Text { text: text.clone() })
        }
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                input.item(item, &format!("input[{i}]"), &mut system, &mut req.dropped)?;
            }
        }
        Some(_) => {
            return Err(IngressError::new(
                "input",
                "`input` must be a string or a list of input items",
            ));
        }
    }
    req.messages = input.messages;
    req.system_prompt = system.join("\n\n");
    (req.tools, req.client_tools) = tools(&obj, &mut req.dropped)?;
    options(&obj, &mut req)?;
    dropped_options(&obj, &mut req.dropped);
    Ok(req)
}

fn options(obj: &Object, req: &mut GatewayRequest) -> Result<(), IngressError> {
    let o = &mut req.overrides;
    o.tool_choice = tool_choice(get(obj, "tool_choice"), &mut req.dropped)?;
    o.max_tokens = match get(obj, "max_output_tokens") {
        None => None,
        Some(v) => Some(v.as_u64().filter(|n| *n > 0).ok_or_else(|| {
            IngressError::new(
                "max_output_tokens",
                "`max_output_tokens` must be a positive whole number of tokens",
            )
        })?),
    };
    o.temperature = quoted(obj, "temperature", "a number", Value::as_f64)?;
    o.top_p = quoted(obj, "top_p", "a number", Value::as_f64)?;
    o.cache.key = quoted(obj, "prompt_cache_key", "a string", Value::as_str)?.map(str::to_owned);
    o.cache.retention =
        quoted(obj, "prompt_cache_retention", "a string", Value::as_str)?.map(str::to_owned);
    o.reasoning_effort = match get(obj, "reasoning") {
        None => None,
        Some(Value::Object(r)) => effort(get(r, "effort"))?,
        Some(_) => {
            return Err(IngressError::new(
                "reasoning",
                "`reasoning` must be an object such as {\"effort\": \"medium\"}",
            ));
        }
    };
    req.stream = quoted(obj, "stream", "true or false", Value::as_bool)?.unwrap_or(false);
    req.store = quoted(obj, "store", "true or false", Value::as_bool)?.unwrap_or(true);
    Ok(())
}

/// `reasoning.effort`, `minimal` read as `low`, the least Switchyard's efforts offer.
fn effort(v: Option<&Value>) -> Result<Option<ReasoningEffort>, IngressError> {
    let field = "reasoning.effort";
    let Some(v) = v else {
        return Ok(None);
    };
    let effort = v.as_str().and_then(openai::effort).ok_or_else(|| {
        IngressError::new(
            field,
            "`reasoning.effort` must be one of none, minimal, low, medium, high, xhigh",
        )
    })?;
    Ok(Some(effort))
}

/// `tool_choice`: a mode, or a function or custom tool by name. An `allowed_tools` or
/// hosted-tool choice is dropped.
fn tool_choice(
    v: Option<&Value>,
    dropped: &mut Vec<String>,
) -> Result<Option<ToolChoice>, IngressError> {
    let field = "tool_choice";
    let choice = match v {
        None => return Ok(None),
        Some(Value::String(s)) => openai::tool_choice(s).ok_or_else(|| {
            IngressError::new(
                field,
                "`tool_choice` must be auto, none, required or {\"type\": \"function\", \"name\": …}",
            )
        })?,
        Some(Value::Object(o)) => match o.get("type").and_then(Value::as_str) {
            Some(kind @ ("function" | "custom")) => {
                let name = o.get("name").and_then(Value::as_str).ok_or_else(|| {
                    IngressError::new(
                        "tool_choice.name",
                        format!("a {kind} `tool_choice` needs the tool's `name`"),
                    )
                })?;
                // A `namespace` member is offered by its qualified name.
                match o.get("namespace").and_then(Value::as_str) {
                    Some(namespace) if !namespace.is_empty() => {
                        ToolChoice::Tool(qualified(namespace, name))
                    }
                    _ => ToolChoice::Tool(name.to_owned()),
                }
            }
            Some(other) => {
                note_dropped(dropped, &format!("tool_choice[type={other}]"));
                return Ok(None);
            }
            None => {
                return Err(IngressError::new(
                    "tool_choice.type",
                    "an object `tool_choice` needs a `type`",
                ));
            }
        },
        Some(_) => {
            return Err(IngressError::new(
                field,
                "`tool_choice` must be a string or an object",
            ));
        }
    };
    Ok(Some(choice))
}

/// `tools[]` and the tools of `additional_tools` input items: function tools, custom tools
/// and `namespace` groups' members, which Codex CLI uses for sub-agents and MCP servers.
/// Hosted tools cannot be offered to another provider and are dropped, named by type.
fn tools(
    obj: &Object,
    dropped: &mut Vec<String>,
) -> Result<(Vec<ToolSpec>, Vec<ClientTool>), IngressError> {
    let mut tools = Tools::default();
    match get(obj, "tools") {
        None => {}
        Some(Value::Array(list)) => {
            for (i, tool) in list.iter().enumerate() {
                tools.add(tool, &format!("tools[{i}]"), None, dropped)?;
            }
        }
        Some(_) => {
            return Err(IngressError::new(
                "tools",
                "`tools` must be a list of tools",
            ));
        }
    }
    // Codex's "Responses Lite" requests declare tools in `additional_tools` input items, with
    // the top-level `tools` null (router-for-me/CLIProxyAPI#4219).
    let items = get(obj, "input").and_then(Value::as_array);
    for (i, item) in items.into_iter().flatten().enumerate() {
        if item.get("type").and_then(Value::as_str) != Some(ADDITIONAL_TOOLS) {
            continue;
        }
        let list = item.get("tools").and_then(Value::as_array);
        for (j, tool) in list.into_iter().flatten().enumerate() {
            tools.add(tool, &format!("input[{i}].tools[{j}]"), None, dropped)?;
        }
    }
    Ok((tools.specs, tools.client))
}

/// The tools being read: what the provider is offered, and which the client declared
/// otherwise.
#[derive(Default)]
struct Tools {
    specs: Vec<ToolSpec>,
    client: Vec<ClientTool>,
}

impl Tools {
    fn add(
        &mut self,
        tool: &Value,
        field: &str,
        namespace: Option<(&str, &str)>,
        dropped: &mut Vec<String>,
    ) -> Result<(), IngressError> {
        let kind = tool
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("function");
        let mut spec = match kind {
            "function" => function_tool(tool, field)?,
            "custom" => custom_tool(tool, field, dropped)?,
            "namespace" if namespace.is_none() => return self.namespace(tool, field, dropped),
            kind => {
                let group = if namespace.is_some() {
                    "tools[type=namespace]."
                } else {
                    ""
                };
                note_dropped(dropped, &format!("{group}tools[type={kind}]"));
                return Ok(());
            }
        };
        let own = spec.name.clone();
        if let Some((group, about)) = namespace {
            spec.name = qualified(group, &own);
            if !about.is_empty() {
                spec.description = format!(
                    "{}\n\n(One of the tools of `{group}`: {about})",
                    spec.description
                )
                .trim_start()
                .to_owned();
            }
        }
        if kind == "custom" || namespace.is_some() {
            self.client.push(ClientTool {
                name: spec.name.clone(),
                custom: kind == "custom",
                namespace: namespace.map(|(group, _)| (group.to_owned(), own)),
            });
        }
        self.specs.push(spec);
        Ok(())
    }

    /// A `namespace` group at `field`: its member tools, each offered as `NAMESPACE__NAME`.
    fn namespace(
        &mut self,
        tool: &Value,
        field: &str,
        dropped: &mut Vec<String>,
    ) -> Result<(), IngressError> {
        let group = tool_name(tool, field, "a namespace")?;
        let about = description(tool);
        let members = tool.get("tools").and_then(Value::as_array);
        for (j, member) in members.into_iter().flatten().enumerate() {
            self.add(
                member,
                &format!("{field}.tools[{j}]"),
                Some((&group, about)),
                dropped,
            )?;
        }
        Ok(())
    }
}

fn function_tool(tool: &Value, field: &str) -> Result<ToolSpec, IngressError> {
    // Some clients send the Chat Completions nesting, `{type, function: {name, …}}`.
    let f = tool
        .get("function")
        .filter(|f| f.is_object())
        .unwrap_or(tool);
    let name = tool_name(f, field, "a function tool")?;
    let schema = match f.get("parameters") {
        None | Some(Value::Null) => serde_json::json!({"type": "object", "properties": {}}),
        Some(p @ Value::Object(_)) => p.clone(),
        Some(_) => {
            return Err(IngressError::new(
                format!("{field}.parameters"),
                "`parameters` must be a JSON Schema object",
            ));
        }
    };
    Ok(ToolSpec {
        name,
        description: description(f).to_owned(),
        input_schema: schema,
    })
}

/// A custom tool, whose input is one raw text such as Codex CLI's `apply_patch` patch: no
/// other provider's tools take that, so it is offered as a function with one string
/// parameter, [`CUSTOM_INPUT`]. A `format` grammar goes into the description, where the
/// model reads it, but no provider can hold its output to it, so it is named dropped.
fn custom_tool(
    tool: &Value,
    field: &str,
    dropped: &mut Vec<String>,
) -> Result<ToolSpec, IngressError> {
    let name = tool_name(tool, field, "a custom tool")?;
    let mut description = description(tool).to_owned();
    if !description.is_empty() {
        description.push_str("\n\n");
    }
    description.push_str(&format!(
        "This tool takes raw text, not JSON: send the whole of it as the string `{CUSTOM_INPUT}`."
    ));
    let format = tool.get("format");
    if format.and_then(|f| f.get("type")).and_then(Value::as_str) == Some("grammar") {
        note_dropped(dropped, "tools[type=custom].format");
        let f = format.unwrap_or(&Value::Null);
        let syntax = f.get("syntax").and_then(Value::as_str).unwrap_or("lark");
        if let Some(definition) = f.get("definition").and_then(Value::as_str) {
            description.push_str(&format!(
                " The text must match this {syntax} grammar:\n{definition}"
            ));
        }
    }
    let input = serde_json::json!({"type": "string", "description": "The tool's whole input, as raw text."});
    Ok(ToolSpec {
        name,
        description,
        input_schema: serde_json::json!({
            "type": "object",
            "properties": {CUSTOM_INPUT: input},
            "required": [CUSTOM_INPUT],
            "additionalProperties": false,
        }),
    })
}

fn tool_name(tool: &Value, field: &str, what: &str) -> Result<String, IngressError> {
    tool.get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| IngressError::new(format!("{field}.name"), format!("{what} needs a `name`")))
}

fn description(tool: &Value) -> &str {
    tool.get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Parameters the gateway reads but cannot carry, named when set to something that changes
/// the answer.
fn dropped_options(obj: &Object, dropped: &mut Vec<String>) {
    if obj.get("parallel_tool_calls") == Some(&Value::Bool(false)) {
        note_dropped(dropped, "parallel_tool_calls");
    }
    if let Some(text) = obj.get("text") {
        let format = text.pointer("/format/type").and_then(Value::as_str);
        if format.is_some_and(|f| f != "text") {
            note_dropped(dropped, "text.format");
        }
        if text.get("verbosity").is_some_and(|v| !v.is_null()) {
            note_dropped(dropped, "text.verbosity");
        }
    }
    for entry in obj
        .get("include")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match entry.as_str() {
            Some("reasoning.encrypted_content") => {}
            Some(other) => note_dropped(dropped, &format!("include[{other}]")),
            None => note_dropped(dropped, "include"),
        }
    }
    if obj.get("truncation").and_then(Value::as_str) == Some("auto") {
        note_dropped(dropped, "truncation");
    }
    if obj
        .get("top_logprobs")
        .and_then(Value::as_u64)
        .is_some_and(|n| n > 0)
    {
        note_dropped(dropped, "top_logprobs");
    }
    if obj.get("background") == Some(&Value::Bool(true)) {
        note_dropped(dropped, "background");
    }
    for key in ["max_tool_calls", "prompt", "conversation"] {
        if get(obj, key).is_some() {
            note_dropped(dropped, key);
        }
    }
    let tier = obj.get("service_tier").and_then(Value::as_str);
    if tier.is_some_and(|t| t != "auto" && t != "default") {
        note_dropped(dropped, "service_tier");
    }
}
