//! `switchyard task PROMPT`: one request, streamed to the terminal or as JSON lines.

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use switchyard_api::{ApiHandler, ToolSpec};
use switchyard_api::{Message, Mode, build_api_handler};
use switchyard_core::prompt::{SystemPromptContext, default_global_rules_dir, get_system_prompt};
use switchyard_core::task::{
    ApiRequestContext, AttemptSettings, CancelReason, Conversation, RequestStatus, TaskEvent,
    TaskStatus, ToolLoopSettings, TurnOutcome, run_task_with_tools,
};

use crate::cli::TaskArgs;
use crate::decide::OnFailure;
use crate::render::Renderer;
use crate::settings;

/// Runs the task; returns 0 when it completed, 1 when it failed, 130 when cancelled, 2 for a
/// configuration problem.
pub async fn run(config_path: Option<&std::path::Path>, args: TaskArgs) -> ExitCode {
    let mut renderer = Renderer::new(args.json, args.quiet);
    let mode = args.mode.as_deref().and_then(|m| m.parse::<Mode>().ok());
    let fail = |renderer: &mut Renderer, kind: &str, message: String| {
        renderer.event(&TaskEvent::Error {
            kind: kind.to_owned(),
            message,
            status: None,
        });
        if args.json {
            renderer.event(&TaskEvent::TaskFinished {
                status: TaskStatus::Failed,
                first_token_ms: None,
                duration_ms: 0,
            });
        }
        ExitCode::from(2)
    };
    if args.prompt.trim().is_empty() {
        return fail(&mut renderer, "config", "the prompt is empty; pass what to ask, e.g. switchyard task \"Explain Rust lifetimes\"".into());
    }
    let (config, _source, mode) = match settings::load(config_path, &args.selection, mode) {
        Ok(c) => c,
        Err(e) => return fail(&mut renderer, "config", e.to_string()),
    };
    let handler = match build_api_handler(&config, mode) {
        Ok(h) => h,
        Err(e) => return fail(&mut renderer, "config", e.to_string()),
    };
    // MCP servers connect in the background while the task starts (SPEC R11, R6.1).
    let mcp_hub = match crate::commands::mcp::start_hub(args.mcp_config.as_deref()) {
        Ok(h) => h,
        Err(e) => return fail(&mut renderer, "config", e),
    };
    let model = handler.get_model();
    let task_id = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis().to_string())
        .unwrap_or_default();
    renderer.event(&TaskEvent::TaskStarted {
        task_id,
        mode: mode.as_str().to_owned(),
        provider: handler.provider_id().to_owned(),
        model: model.id.clone(),
    });

    // One SystemPromptContext feeds the system prompt (SPEC R6.2): the working directory, OS
    // and shell, the mode, and the user's rules files. `--system` replaces it entirely.
    let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("."));
    let prompt_context = SystemPromptContext::gather(
        &cwd,
        default_global_rules_dir().as_deref(),
        handler.provider_id(),
        &model.id,
        mode,
    );
    let system_override = args.system.clone();
    let prompt_hub = std::sync::Arc::clone(&mcp_hub);
    let build_prompt = move || {
        let ctx = prompt_context.clone().with_native_tool_calling(true);
        let (text, tools) =
            get_system_prompt(&ctx.with_mcp_servers(prompt_hub.connected_servers()));
        (system_override.clone().unwrap_or(text), tools)
    };
    let mut conversation = Conversation {
        api_conversation_history: vec![Message::user_text(args.prompt.clone())],
        conversation_history_deleted_range: None,
    };
    let decider = OnFailure::choose(args.on_failure.as_deref(), args.json);
    let mut request_index = 0;
    let started = tokio::time::Instant::now();
    // The first content as the user saw it, so a cancelled task still reports it.
    let mut first_content: Option<std::time::Duration> = None;
    let outcome = {
        let mut on_event = |e: TaskEvent| {
            if first_content.is_none()
                && matches!(
                    e,
                    TaskEvent::Text { .. }
                        | TaskEvent::Reasoning { .. }
                        | TaskEvent::ToolCall { .. }
                )
            {
                first_content = Some(started.elapsed());
            }
            renderer.event(&e);
        };
        tokio::select! {
            o = turn(handler.as_ref(), &build_prompt, &mut conversation, &mut request_index, &decider, args.retries, &mcp_hub, args.yes, &mut on_event) => Some(o),
            _ = tokio::signal::ctrl_c() => None,
        }
    };
    mcp_hub.shutdown().await;
    let first_token_ms = outcome
        .as_ref()
        .and_then(|o| o.first_token)
        .or(first_content)
        .map(|d| d.as_millis() as u64);
    let (status, code) = match &outcome {
        None => {
            // R9.5: the stream is dropped (its connection closed) and the request recorded as
            // cancelled by the user.
            handler.abort();
            renderer.event(&TaskEvent::ApiReqFinished {
                request_index,
                cancel_reason: Some(CancelReason::UserCancelled),
                streaming_failed_message: None,
            });
            (TaskStatus::Cancelled, ExitCode::from(130))
        }
        Some(o) => match o.status {
            RequestStatus::Completed => (TaskStatus::Completed, ExitCode::SUCCESS),
            RequestStatus::Failed(_) => (TaskStatus::Failed, ExitCode::from(1)),
        },
    };
    renderer.event(&TaskEvent::TaskFinished {
        status,
        first_token_ms,
        duration_ms: started.elapsed().as_millis() as u64,
    });
    code
}

/// One turn: requests prepared, probed and recovered by `attempt_api_request` (SPEC R6) and
/// consumed by the request loop (R9), which also recovers a stream that fails part-way.
#[allow(clippy::too_many_arguments)]
async fn turn(
    handler: &dyn ApiHandler,
    build_prompt: &(dyn Fn() -> (String, Vec<ToolSpec>) + Send + Sync),
    conversation: &mut Conversation,
    request_index: &mut u32,
    decider: &OnFailure,
    max_auto_retries: u32,
    mcp_hub: &switchyard_core::mcp::McpServerHub,
    yes: bool,
    on_event: &mut (dyn FnMut(TaskEvent) + Send),
) -> TurnOutcome {
    let ctx = ApiRequestContext {
        handler,
        mcp_hub,
        decider,
        system_prompt: build_prompt,
        previous_request_total_tokens: 0,
        request_index: 1,
        settings: AttemptSettings {
            max_auto_retries,
            ..AttemptSettings::default()
        },
    };
    // Nothing is persisted yet (the task store comes later): the range lives in memory.
    let mut on_range_changed = |_range| {};
    // The model's MCP tool calls are approved, run and answered until it stops calling tools.
    let approver = crate::commands::mcp::TerminalApprover { yes };
    run_task_with_tools(
        &ctx,
        mcp_hub,
        &approver,
        ToolLoopSettings::default(),
        conversation,
        request_index,
        &mut on_range_changed,
        on_event,
    )
    .await
}
