//! `switchyard task PROMPT` and `switchyard resume TASK_ID [PROMPT]`: a persisted conversation,
//! streamed to the terminal or as JSON lines. In a terminal (and without `--json`) the user is
//! asked for a follow-up after each answer until an empty line, Ctrl-D or Ctrl-C.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use switchyard_api::{ApiHandler, CancellationToken, ToolSpec};
use switchyard_api::{Mode, build_api_handler};
use switchyard_core::prompt::{SystemPromptContext, default_global_rules_dir, get_system_prompt};
use switchyard_core::store::{NewTask, StoreError, UNKNOWN_MODEL};
use switchyard_core::task::runner::TaskRunner;
use switchyard_core::task::{
    ApiRequestContext, AttemptSettings, CONTINUE_AFTER_INTERRUPTION, RequestStatus, TaskEvent,
    TaskStatus, ToolLoopSettings, TurnOutcome,
};

use crate::cli::{SelectionArgs, TaskArgs};
use crate::decide::OnFailure;
use crate::render::Renderer;
use crate::settings;

/// What the session starts from.
pub enum Start {
    /// A new task with `TaskArgs::prompt`.
    New,
    /// A saved task; `TaskArgs::prompt` (may be empty) is the next message.
    Resume(String),
}

/// Runs a new task; returns 0 when it completed, 1 when it failed, 130 when cancelled, 2 for a
/// configuration, input or task-database problem.
pub async fn run(config_path: Option<&Path>, data_dir: Option<&Path>, args: TaskArgs) -> ExitCode {
    session(config_path, data_dir, args, Start::New).await
}

/// Runs a new or resumed task (see [`run`] for the exit codes).
pub async fn session(
    config_path: Option<&Path>,
    data_dir: Option<&Path>,
    args: TaskArgs,
    start: Start,
) -> ExitCode {
    let TaskArgs {
        prompt,
        options: args,
    } = args;
    let mut renderer = Renderer::new(args.json, args.quiet);
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
    if matches!(start, Start::New) && prompt.trim().is_empty() {
        return fail(&mut renderer, "config", "the prompt is empty; pass what to ask, e.g. switchyard task \"Explain Rust lifetimes\"".into());
    }
    let store = match settings::open_store(data_dir) {
        Ok(s) => Arc::new(s),
        Err(e) => return fail(&mut renderer, "store", e),
    };
    // A resumed task keeps its mode, provider and model unless the flags say otherwise.
    let saved = match &start {
        Start::New => None,
        Start::Resume(id) => match store.task(id) {
            Ok(t) => Some(t),
            Err(e) => return fail(&mut renderer, "store", e.to_string()),
        },
    };
    let selection = args.selection.clone();
    let mut mode = args.mode.as_deref().and_then(|m| m.parse::<Mode>().ok());
    if let Some(task) = &saved {
        mode = mode.or_else(|| task.mode.parse::<Mode>().ok());
    }
    let (mut config, _source, mode) = match settings::load(config_path, &selection, mode) {
        Ok(c) => c,
        Err(e) => return fail(&mut renderer, "config", e.to_string()),
    };
    if let Some(task) = saved.as_ref().filter(|_| selection.provider.is_none()) {
        // A resumed task keeps its provider and model when the configuration (file or
        // built-in default, with its endpoint) now says otherwise: `--model` alone keeps the
        // task's provider; `--provider` takes that provider's configured model. An imported
        // task that named no model (`unknown`) runs with the configuration's.
        let in_effect = config.mode_settings(mode);
        let same = in_effect.provider.as_deref() == Some(task.provider.as_str())
            && (selection.model.is_some()
                || in_effect.model_id.as_deref() == Some(task.model.as_str()));
        if !same && task.model != UNKNOWN_MODEL {
            let keep = SelectionArgs {
                provider: Some(task.provider.clone()),
                model: selection.model.clone().or_else(|| Some(task.model.clone())),
                ..selection.clone()
            };
            config = match settings::load(config_path, &keep, Some(mode)) {
                Ok((c, _, _)) => c,
                Err(e) => return fail(&mut renderer, "config", e.to_string()),
            };
        }
    }
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
    let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("."));
    let opened = match &start {
        Start::New => TaskRunner::create(
            store,
            &NewTask {
                cwd: cwd.display().to_string(),
                mode: mode.as_str().to_owned(),
                provider: handler.provider_id().to_owned(),
                model: model.id.clone(),
                first_prompt: prompt.clone(),
            },
        )
        .map(|r| (r, None)),
        Start::Resume(id) => TaskRunner::resume(store, id).map(|(r, report)| (r, Some(report))),
    };
    let (mut runner, report) = match opened {
        Ok(r) => r,
        Err(e) => return fail(&mut renderer, "store", e.to_string()),
    };
    if let Err(e) = runner.set_model(mode.as_str(), handler.provider_id(), &model.id) {
        return fail(&mut renderer, "store", e.to_string());
    }
    let started_event = TaskEvent::TaskStarted {
        task_id: runner.task_id().to_owned(),
        mode: mode.as_str().to_owned(),
        provider: handler.provider_id().to_owned(),
        model: model.id.clone(),
    };
    if let Err(e) = runner.record_event(&started_event) {
        return fail(&mut renderer, "store", e.to_string());
    }
    renderer.event(&started_event);
    let id = runner.task_id().to_owned();
    renderer.info(&format!(
        "task {id} (continue it with: switchyard resume {id})"
    ));
    if let Some(report) = report.filter(|r| r.recovered_partial_bytes > 0) {
        renderer.info(&format!(
            "the previous answer was cut off; its {} bytes were kept",
            report.recovered_partial_bytes
        ));
    }

    // One SystemPromptContext feeds the system prompt (SPEC R6.2): the working directory, OS
    // and shell, the mode, and the user's rules files. `--system` replaces it entirely.
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
    let decider = OnFailure::choose(args.on_failure.as_deref(), args.json);
    let interactive = !args.json && std::io::stdin().is_terminal();

    // The first message: the prompt, or (resume without one) the unanswered last message.
    let mut next = Some(prompt.clone()).filter(|p| !p.trim().is_empty());
    if next.is_none() && runner.last_answer_was_cut_off() {
        // Resumed after an answer was cut off (a failure, Ctrl-C, or a crash; R9.3): the
        // model goes on where it stopped.
        next = Some(CONTINUE_AFTER_INTERRUPTION.to_owned());
    }
    if next.is_none() && !runner.awaits_answer() && !interactive {
        return fail(
            &mut renderer,
            "config",
            format!(
                "task {id} has been answered; pass the next message: switchyard resume {id} \"PROMPT\""
            ),
        );
    }
    let started = tokio::time::Instant::now();
    // The first content as the user saw it, so a cancelled task still reports it.
    let mut first_content: Option<std::time::Duration> = None;
    let mut first_token: Option<std::time::Duration> = None;
    let (status, code) = loop {
        if let Some(prompt) = next.take() {
            if let Err(e) = runner.add_user_message(&prompt) {
                break store_failed(&mut renderer, &e);
            }
        }
        if !runner.awaits_answer() {
            // Resumed in a terminal with nothing to answer: ask first.
            match ask_follow_up().await {
                Some(line) => {
                    next = Some(line);
                    continue;
                }
                None => break (TaskStatus::Completed, ExitCode::SUCCESS),
            }
        }
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
        let outcome = tokio::select! {
            o = user_turn(&mut runner, handler.as_ref(), &build_prompt, &decider, args.retries, &mcp_hub, args.yes, &mut on_event) => Some(o),
            _ = tokio::signal::ctrl_c() => None,
        };
        let outcome = match outcome {
            None => {
                // R9.5: the stream is dropped (its connection closed), what streamed is kept
                // and the request recorded as cancelled by the user.
                if let Err(e) = runner.record_cancelled(&mut on_event) {
                    break store_failed(&mut renderer, &e);
                }
                break (TaskStatus::Cancelled, ExitCode::from(130));
            }
            Some(Err(e)) => break store_failed(&mut renderer, &e),
            Some(Ok(o)) => o,
        };
        if first_token.is_none() {
            first_token = outcome.first_token;
        }
        if let RequestStatus::Failed(_) = outcome.status {
            break (TaskStatus::Failed, ExitCode::from(1));
        }
        if !interactive {
            break (TaskStatus::Completed, ExitCode::SUCCESS);
        }
        match ask_follow_up().await {
            Some(line) => next = Some(line),
            None => break (TaskStatus::Completed, ExitCode::SUCCESS),
        }
    };
    mcp_hub.shutdown().await;
    let first_token_ms = first_token.or(first_content).map(|d| d.as_millis() as u64);
    let finished = TaskEvent::TaskFinished {
        status,
        first_token_ms,
        duration_ms: started.elapsed().as_millis() as u64,
    };
    if let Err(e) = runner.record_event(&finished) {
        store_failed(&mut renderer, &e);
    }
    renderer.event(&finished);
    code
}

/// Reports a task-database failure; the task fails with exit code 1.
fn store_failed(renderer: &mut Renderer, e: &StoreError) -> (TaskStatus, ExitCode) {
    renderer.event(&TaskEvent::Error {
        kind: "store".to_owned(),
        message: e.to_string(),
        status: None,
    });
    (TaskStatus::Failed, ExitCode::from(1))
}

/// Asks for the next message on stderr and reads a line from stdin on its own thread (so
/// Ctrl-C is still heard). `None` on an empty line, end of input (Ctrl-D) or Ctrl-C.
async fn ask_follow_up() -> Option<String> {
    use std::io::{BufRead, Write};
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\n> ");
        let _ = err.flush();
        drop(err);
        let mut line = String::new();
        let read = std::io::stdin().lock().read_line(&mut line).unwrap_or(0);
        let _ = tx.send((read > 0).then_some(line));
    });
    let line = tokio::select! {
        line = rx => line.ok().flatten(),
        _ = tokio::signal::ctrl_c() => None,
    }?;
    let line = line.trim_end_matches(['\n', '\r']).to_owned();
    (!line.trim().is_empty()).then_some(line)
}

/// One user turn, persisted by the runner: requests prepared, probed and recovered by
/// `attempt_api_request` (SPEC R6) and consumed by the request loop (R9), which also recovers
/// a stream that fails part-way. The one place a turn runs, so a tool loop can take its place.
#[allow(clippy::too_many_arguments)]
async fn user_turn(
    runner: &mut TaskRunner,
    handler: &dyn ApiHandler,
    build_prompt: &(dyn Fn() -> (String, Vec<ToolSpec>) + Send + Sync),
    decider: &OnFailure,
    max_auto_retries: u32,
    mcp_hub: &switchyard_core::mcp::McpServerHub,
    yes: bool,
    on_event: &mut (dyn FnMut(TaskEvent) + Send),
) -> Result<TurnOutcome, StoreError> {
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
        cancel: CancellationToken::new(),
    };
    // The model's MCP tool calls are approved, run and answered until it stops calling tools.
    let approver = crate::commands::mcp::TerminalApprover { yes };
    runner
        .run_turn_with_tools(
            &ctx,
            mcp_hub,
            &approver,
            ToolLoopSettings::default(),
            on_event,
        )
        .await
}
