//! The tool loop of a user turn: run the model's MCP tool calls and send their results back.
//! Spec: R11.2.

use serde_json::Value;
use switchyard_api::{ApiError, ContentBlock, ErrorKind, Message, Role};

use super::attempt::ApiRequestContext;
use super::conversation::Conversation;
use super::events::TaskEvent;
use super::observer::{BoxFuture, TurnObserver};
use super::request::{RejectedToolCall, RequestStatus};
use super::turn::{TurnOutcome, append, run_turn};
use crate::mcp::McpServerHub;
use crate::prompt::{McpToolBinding, mcp_tool_bindings};

/// The default limit of tool-call rounds in one user turn.
pub const DEFAULT_MAX_TOOL_ROUNDS: u32 = 25;

/// Limits of the tool loop.
#[derive(Debug, Clone, Copy)]
pub struct ToolLoopSettings {
    /// Rounds of tool calls before the loop stops with an error.
    pub max_rounds: u32,
}

impl Default for ToolLoopSettings {
    fn default() -> Self {
        Self {
            max_rounds: DEFAULT_MAX_TOOL_ROUNDS,
        }
    }
}

/// One tool call that needs the user's approval.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallRequest {
    /// The tool call's id as the model gave it.
    pub id: String,
    /// The function name the model called, `{server}__{tool}`.
    pub function_name: String,
    /// The MCP server it routes to, by its name in the settings file.
    pub server: String,
    /// The tool it routes to, by its name on the server.
    pub tool: String,
    /// The arguments the model gave, a JSON object.
    pub arguments: Value,
}

/// Decides whether a tool call may run; not asked for tools in their server's `autoApprove` list.
pub trait ToolApprover: Send + Sync {
    /// True to run the call; false to deny it, which the model is told.
    fn approve<'a>(&'a self, call: &'a ToolCallRequest) -> BoxFuture<'a, bool>;
}

/// Denies every tool call that needs approval; a `Task`'s default.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyToolCalls;

impl ToolApprover for DenyToolCalls {
    fn approve<'a>(&'a self, _call: &'a ToolCallRequest) -> BoxFuture<'a, bool> {
        Box::pin(std::future::ready(false))
    }
}

/// The `kind` of the `error` event when the round limit stops the loop.
pub const TOOL_ROUNDS_EXCEEDED: &str = "tool_rounds_exceeded";

/// The text of the tool result of a denied call.
pub const TOOL_CALL_DENIED: &str = "The user denied this tool call.";

/// Runs one user turn with its tool calls until the model answers without one.
///
/// Every call gets one result in call order: providers reject an answer whose calls lack any.
pub(crate) async fn run_turn_with_tools(
    ctx: &ApiRequestContext<'_>,
    tools: &ToolLoop<'_>,
    conversation: &mut Conversation,
    request_index: &mut u32,
    observer: &mut dyn TurnObserver,
) -> TurnOutcome {
    let mut total: Option<TurnOutcome> = None;
    let mut previous_total = ctx.previous_request_total_tokens;
    let mut rounds: u32 = 0;
    loop {
        let round_ctx = ApiRequestContext {
            previous_request_total_tokens: previous_total,
            cancel: ctx.cancel.clone(),
            ..*ctx
        };
        let mut outcome = run_turn(&round_ctx, conversation, request_index, observer).await;
        previous_total = outcome.last_request_total_tokens;
        let completed = matches!(outcome.status, RequestStatus::Completed);
        let rejected = std::mem::take(&mut outcome.rejected_tool_calls);
        let mut sum = merge(total.take(), outcome);
        if !completed {
            return sum;
        }
        match tool_step(tools, &mut rounds, conversation, &rejected, observer).await {
            ToolStep::Answered => return sum,
            ToolStep::Stopped(error) => {
                sum.status = RequestStatus::Failed(error);
                return sum;
            }
            ToolStep::Results(message) => {
                if let Err(e) = append(conversation, message, observer).await {
                    sum.status = RequestStatus::Failed(e);
                    return sum;
                }
            }
        }
        total = Some(sum);
    }
}

#[derive(Clone, Copy)]
pub(crate) struct ToolLoop<'a> {
    pub hub: &'a McpServerHub,
    pub approver: &'a dyn ToolApprover,
    pub settings: ToolLoopSettings,
}

#[derive(Debug)]
enum ToolStep {
    /// The answer calls none of the MCP tools offered: the turn is over.
    Answered,
    /// The calls were carried out: this message of results, one per call in order, goes next.
    Results(Message),
    /// The round limit was reached and the turn fails with this error.
    Stopped(ApiError),
}

/// Answers the calls of the last assistant message; a call with bad arguments is not run.
async fn tool_step(
    tools: &ToolLoop<'_>,
    rounds: &mut u32,
    conversation: &Conversation,
    rejected: &[RejectedToolCall],
    observer: &mut dyn TurnObserver,
) -> ToolStep {
    let calls = pending_tool_calls(conversation);
    let bindings = mcp_tool_bindings(&tools.hub.connected_servers());
    // Calls to tools other than ours were shown as `tool_call` events; the turn ends as it is.
    let rejection = |id: &str| rejected.iter().find(|r| r.call.id == id);
    if !calls.iter().any(|(id, name, _)| {
        rejection(id).is_some() || bindings.iter().any(|b| &b.function_name == name)
    }) {
        return ToolStep::Answered;
    }
    let max_rounds = tools.settings.max_rounds;
    if *rounds >= max_rounds {
        return ToolStep::Stopped(rounds_exceeded(max_rounds, observer).await);
    }
    *rounds += 1;
    let mut results = Vec::with_capacity(calls.len());
    for (id, function_name, input) in calls {
        let binding = bindings.iter().find(|b| b.function_name == function_name);
        let (content, is_error) = match (rejection(&id), binding) {
            (Some(rejected), _) => (rejection_text(rejected), true),
            (None, None) => (
                format!(
                    "There is no tool named \"{function_name}\" (its MCP server may have \
                     disconnected). Use one of the tools offered."
                ),
                true,
            ),
            (None, Some(binding)) => run_call(tools, binding, &id, &function_name, input).await,
        };
        observer
            .event(TaskEvent::ToolResult {
                id: id.clone(),
                name: function_name,
                content: content.clone(),
                is_error,
            })
            .await;
        results.push(ContentBlock::ToolResult {
            tool_use_id: id,
            content,
            is_error,
        });
    }
    ToolStep::Results(Message {
        role: Role::User,
        content: results,
    })
}

async fn rounds_exceeded(max_rounds: u32, observer: &mut dyn TurnObserver) -> ApiError {
    let message =
        format!("stopped after {max_rounds} rounds of tool calls: the model kept calling tools");
    observer
        .event(TaskEvent::Error {
            kind: TOOL_ROUNDS_EXCEEDED.to_owned(),
            message: message.clone(),
            status: None,
        })
        .await;
    ApiError::new(ErrorKind::InvalidRequest, message)
}

async fn run_call(
    tools: &ToolLoop<'_>,
    binding: &McpToolBinding,
    id: &str,
    function_name: &str,
    arguments: Value,
) -> (String, bool) {
    let request = ToolCallRequest {
        id: id.to_owned(),
        function_name: function_name.to_owned(),
        server: binding.server.clone(),
        tool: binding.tool.clone(),
        arguments,
    };
    let approved = tools.hub.is_auto_approved(&request.server, &request.tool)
        || tools.approver.approve(&request).await;
    if !approved {
        return (TOOL_CALL_DENIED.to_owned(), true);
    }
    let out = tools
        .hub
        .call_tool(&request.server, &request.tool, request.arguments)
        .await;
    (out.content, out.is_error)
}

fn pending_tool_calls(conversation: &Conversation) -> Vec<(String, String, Value)> {
    match conversation.api_conversation_history.last() {
        Some(m) if m.role == Role::Assistant => m
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolUse {
                    id, name, input, ..
                } => Some((id.clone(), name.clone(), input.clone())),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The longest part, in characters, of a rejected call's arguments quoted back to the model.
const QUOTED_ARGUMENTS: usize = 200;

fn rejection_text(rejected: &RejectedToolCall) -> String {
    let arguments = &rejected.call.arguments;
    let quoted: String = arguments.chars().take(QUOTED_ARGUMENTS).collect();
    let more = if quoted.len() < arguments.len() {
        format!("… ({} bytes in all)", arguments.len())
    } else {
        String::new()
    };
    format!(
        "This call was not run: its arguments are {}. They were: {quoted}{more}. Call the tool \
         again with its complete arguments as one JSON object (one call per tool use).",
        rejected.reason
    )
}

fn merge(sum: Option<TurnOutcome>, next: TurnOutcome) -> TurnOutcome {
    let Some(mut sum) = sum else {
        return next;
    };
    sum.usage += &next.usage;
    sum.cost_usd = crate::cost::add_costs(sum.cost_usd, next.cost_usd);
    sum.requests += next.requests;
    sum.first_token = sum.first_token.or(next.first_token);
    sum.last_request_total_tokens = next.last_request_total_tokens;
    sum.status = next.status;
    sum
}
