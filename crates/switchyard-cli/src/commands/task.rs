//! `switchyard task PROMPT` and `switchyard resume TASK_ID [PROMPT]`: a persisted conversation
//! (a [`Task`] of switchyard-core), streamed to the terminal or as JSON lines. In a terminal
//! (and without `--json`) the user is asked for a follow-up after each answer until an empty
//! line, Ctrl-D or Ctrl-C.
//!
//! This file holds only what is the command line's: the flags and the configuration files
//! become a task, its events go to the [`Renderer`], the follow-up and Ctrl-C come from the
//! terminal.

use std::convert::Infallible;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use switchyard_api::{CancellationToken, ErrorKind, Mode};
use switchyard_core::Task;
use switchyard_core::mcp::McpServerHub;
use switchyard_core::store::{StoreError, TaskStore, UNKNOWN_MODEL};
use switchyard_core::task::{RequestStatus, TaskError, TaskEvent, TaskStatus, TurnOutcome};

use crate::cli::{SelectionArgs, TaskArgs, TaskOptions};
use crate::commands::mcp::TerminalApprover;
use crate::decide::OnFailure;
use crate::endpoint::Endpoint;
use crate::render::Renderer;
use crate::settings;
use crate::signals::{Signal, next_signal};

/// What the session starts from.
pub enum Start {
    /// A new task with `TaskArgs::prompt`.
    New,
    /// A saved task; `TaskArgs::prompt` (may be empty) is the next message.
    Resume(String),
}

/// A problem found before the task runs: the `kind` of its `error` event and its sentence.
struct Refused {
    kind: &'static str,
    message: String,
}

impl Refused {
    fn config(message: impl ToString) -> Self {
        Self {
            kind: "config",
            message: message.to_string(),
        }
    }

    fn store(message: impl ToString) -> Self {
        Self {
            kind: "store",
            message: message.to_string(),
        }
    }
}

impl From<TaskError> for Refused {
    fn from(e: TaskError) -> Self {
        Self {
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

/// Runs a new task; returns 0 when it completed, 1 when it failed, 3 when a spend cap stopped
/// it, 130 when cancelled, 2 for a configuration, input or task-database problem.
pub async fn run(
    config_path: Option<&Path>,
    place: settings::StorePlace<'_>,
    args: TaskArgs,
) -> ExitCode {
    session(config_path, place, args, Start::New).await
}

/// Runs a new or resumed task (see [`run`] for the exit codes).
pub async fn session(
    config_path: Option<&Path>,
    place: settings::StorePlace<'_>,
    args: TaskArgs,
    start: Start,
) -> ExitCode {
    let TaskArgs { prompt, options } = args;
    let mut renderer = Renderer::new(options.json, options.quiet);
    let prompt = match crate::prompt_input::read_prompt(prompt.as_deref(), options.file.as_deref())
    {
        Ok(prompt) => prompt.unwrap_or_default(),
        Err(message) => return fail(&mut renderer, Refused::config(message), options.json),
    };
    let opened = open(config_path, place, &prompt, &options, &start).await;
    let (mut task, hub, store, endpoint, auth_hint) = match opened {
        Ok(opened) => opened,
        Err(refused) => return fail(&mut renderer, refused, options.json),
    };
    let interactive = !options.json && std::io::stdin().is_terminal();
    // The first message of a resumed task: the prompt, or (without one) what the task has
    // pending. A new task was created with its prompt. Nothing to send is refused before the
    // run is recorded (no `task_started` for a run that does nothing).
    let first = Some(prompt).filter(|p| matches!(start, Start::Resume(_)) && !p.trim().is_empty());
    if first.is_none() && !task.has_pending_turn() && !interactive {
        hub.shutdown().await;
        let id = task.id();
        return fail(
            &mut renderer,
            Refused::config(format!(
                "task {id} has been answered; pass the next message: switchyard resume {id} \"PROMPT\""
            )),
            options.json,
        );
    }
    if let Err(e) = task.start(&mut |e| renderer.event(&e)).await {
        hub.shutdown().await;
        return fail(&mut renderer, Refused::store(e), options.json);
    }
    if let Some(hint) = auth_hint {
        renderer.set_auth_hint(hint);
    }
    let id = task.id().to_owned();
    if let Some(endpoint) = endpoint {
        if let Err(e) = crate::endpoint::record(store.as_ref(), &id, &endpoint).await {
            hub.shutdown().await;
            return fail(&mut renderer, Refused::store(e), options.json);
        }
    }
    renderer.info(&format!(
        "task {id} (continue it with: switchyard resume {id})"
    ));
    if let Some(report) = task
        .resume_report()
        .filter(|r| r.recovered_partial_bytes > 0)
    {
        renderer.info(&format!(
            "the previous answer was cut off; its {} bytes were kept",
            report.recovered_partial_bytes
        ));
    }
    let history = settings::data_dir(place.data_dir)
        .ok()
        .map(|d| d.join(crate::follow_up::HISTORY_FILE));
    let mut follow_up = crate::follow_up::FollowUp::new(history);
    let (status, code) =
        converse(&mut task, first, interactive, &mut renderer, &mut follow_up).await;
    if renderer.stdout_closed() {
        // The reader went away (`| head`): the request was cancelled at once; end quietly
        // with the code of a process that SIGPIPE ended (128 + 13), recording the end.
        let _ = task.finish(status, &mut |_| {}).await;
        hub.shutdown().await;
        return ExitCode::from(141);
    }
    hub.shutdown().await;
    if let Some(note) = spend_note(&task, store.as_ref()).await {
        renderer.spend_note(note);
    }
    let mut finished = None;
    if let Err(e) = task.finish(status, &mut |e| finished = Some(e)).await {
        store_failed(&mut renderer, &e);
    }
    if let Some(event) = finished {
        renderer.event(&event);
    }
    code
}

/// What [`open`] makes: the task, its MCP hub, the store, and the endpoint to record for it
/// (`None` when the recorded one is still in effect), and where a rejected key comes from.
type Opened = (
    Task,
    Arc<McpServerHub>,
    Arc<dyn TaskStore>,
    Option<Endpoint>,
    Option<String>,
);

/// Opens the store, the configuration and the MCP servers, and creates or reopens the task.
/// A resumed task keeps its mode, provider and model unless the flags say otherwise.
async fn open(
    config_path: Option<&Path>,
    place: settings::StorePlace<'_>,
    prompt: &str,
    options: &TaskOptions,
    start: &Start,
) -> Result<Opened, Refused> {
    if matches!(start, Start::New) && prompt.trim().is_empty() {
        return Err(Refused::config(
            "the prompt is empty; pass what to ask, e.g. switchyard task \"Explain Rust lifetimes\", pipe it in, or give --file FILE",
        ));
    }
    // A configuration file that does not load is a configuration error, even though the
    // store is opened first (its `store` setting is read from it, once).
    let configured = match place.store.filter(|s| !s.trim().is_empty()) {
        None => settings::configured_store(place).map_err(Refused::config)?,
        Some(_) => None,
    };
    let spec = settings::store_spec_with(place, configured.as_ref()).map_err(Refused::store)?;
    let store = settings::open_spec(&spec).await.map_err(Refused::store)?;
    let saved = match start {
        Start::New => None,
        Start::Resume(id) => Some(store.task(id).await.map_err(Refused::store)?),
    };
    let mut mode = options.mode.as_deref().and_then(|m| m.parse::<Mode>().ok());
    if let Some(task) = &saved {
        mode = mode.or_else(|| task.mode.parse::<Mode>().ok());
    }
    let selection = &options.selection;
    let (mut config, source, mode) =
        settings::load(config_path, selection, mode).map_err(Refused::config)?;

    settings::check_typed(&config, mode, selection).map_err(Refused::config)?;
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
            config = settings::load(config_path, &keep, Some(mode))
                .map_err(Refused::config)?
                .0;
        }
    }
    let endpoint = match start {
        Start::New => Endpoint::of(&config, mode),
        Start::Resume(id) => {
            let recorded = crate::endpoint::recorded(store.as_ref(), id).await;
            keep_endpoint(
                &mut config,
                config_path,
                mode,
                options,
                recorded.as_ref(),
                id,
            )?
        }
    };
    // The built-in default still in effect (no file, no provider, no base URL, no task held
    // elsewhere): the local model server must be listening.
    let local = settings::local_model_base_url();
    if matches!(source, settings::ConfigSource::BuiltInLocal)
        && Endpoint::of(&config, mode).is_some_and(|e| e.base_url == local)
    {
        settings::check_local_model_server()
            .await
            .map_err(Refused::config)?;
    }
    let auth_hint = switchyard_api::resolve_mode(&config, mode)
        .ok()
        .filter(|r| !r.api_key_env.is_empty())
        .map(|r| {
            format!(
                "check {}, the variable the key for {} is read from (or name another with api_key_env under [providers.{}])",
                r.api_key_env, r.provider_id, r.provider_id
            )
        });
    if !options.fallback.is_empty() {
        // Typed ids are checked as --provider and --model are (a typo is an error, not the
        // Anthropic fallback of a configuration file).
        for fallback in &options.fallback {
            let mut entry = config.clone();
            *entry.mode_settings_mut(mode) = fallback.mode_settings();
            let typed = SelectionArgs {
                provider: fallback.provider.clone(),
                model: fallback.model_id.clone(),
                base_url: None,
            };
            settings::check_typed(&entry, mode, &typed).map_err(Refused::config)?;
        }
        // The flags replace the file's chain, as --model replaces its model.
        config.mode_settings_mut(mode).fallbacks = options.fallback.clone();
    }
    let mut builder = Task::builder(&config, mode, Arc::clone(&store)).map_err(Refused::config)?;
    if let Some(usd) = options.max_cost {
        builder = builder.max_cost_usd(usd);
    }
    // MCP servers connect in the background while the task starts (SPEC R11, R6.1).
    let hub =
        crate::commands::mcp::start_hub(options.mcp_config.as_deref()).map_err(Refused::config)?;
    let mut builder = builder
        .mcp_hub(Arc::clone(&hub))
        .failure_decider(Arc::new(OnFailure::choose(
            options.on_failure.as_deref(),
            options.json,
        )))
        .tool_approver(Arc::new(TerminalApprover { yes: options.yes }))
        .max_auto_retries(options.retries);
    if let Some(system) = &options.system {
        builder = builder.system_prompt(system.clone());
    }
    let task = match start {
        Start::New => builder.create(prompt).await,
        Start::Resume(id) => builder.resume(id).await,
    };
    match task {
        Ok(task) => Ok((task, hub, store, endpoint, auth_hint)),
        Err(e) => {
            hub.shutdown().await;
            Err(e.into())
        }
    }
}

/// A resumed task goes where its conversation was held (issue 14): without `--base-url`, the
/// recorded base URL of the task's provider is used again; a request that would now go to
/// another host is refused unless `--allow-new-host`. Returns the endpoint to record when it
/// changed (or none was recorded).
fn keep_endpoint(
    config: &mut switchyard_api::ApiConfiguration,
    config_path: Option<&Path>,
    mode: Mode,
    options: &TaskOptions,
    recorded: Option<&Endpoint>,
    id: &str,
) -> Result<Option<Endpoint>, Refused> {
    let now = Endpoint::of(config, mode);
    let Some(recorded) = recorded else {
        return Ok(now);
    };
    let Some(mut now) = now else {
        return Ok(None);
    };
    if options.selection.base_url.is_none()
        && now.provider == recorded.provider
        && now.base_url != recorded.base_url
    {
        // The model in effect (typed, else the task's) stays: naming the provider again
        // would otherwise reset it to the provider's default.
        let keep = SelectionArgs {
            base_url: Some(recorded.base_url.clone()),
            provider: Some(recorded.provider.clone()),
            model: options
                .selection
                .model
                .clone()
                .or_else(|| config.mode_settings(mode).model_id.clone()),
        };
        *config = settings::load(config_path, &keep, Some(mode))
            .map_err(Refused::config)?
            .0;
        now = Endpoint::of(config, mode).unwrap_or(now);
    }
    if now.host() != recorded.host() && !options.allow_new_host {
        return Err(Refused::config(format!(
            "task {id} was held with {} at {}; this run would send it to {} at {}. Pass --base-url {} to stay, or --allow-new-host to move the conversation there",
            recorded.provider, recorded.base_url, now.provider, now.base_url, recorded.base_url
        )));
    }
    Ok((now != *recorded).then_some(now))
}

/// Runs turns: `first` (or what the task has pending), then, in a terminal, each follow-up
/// until an empty line, Ctrl-D or Ctrl-C. Ctrl-C during a turn cancels it (SPEC R9.5).
/// Returns how the task ended and the exit code.
async fn converse(
    task: &mut Task,
    first: Option<String>,
    interactive: bool,
    renderer: &mut Renderer,
    follow_up: &mut crate::follow_up::FollowUp,
) -> (TaskStatus, ExitCode) {
    let mut next = first;
    loop {
        if next.is_none() && !task.has_pending_turn() {
            // Resumed in a terminal with nothing to answer: ask first.
            match follow_up.ask(&renderer.closed_signal()).await {
                Ok(Some(line)) => next = Some(line),
                Ok(None) => return (TaskStatus::Completed, ExitCode::SUCCESS),
                Err(signal) => {
                    return (TaskStatus::Completed, ExitCode::from(signal.exit_code()));
                }
            }
        }
        let (message, cancel) = (next.take(), CancellationToken::new());
        let closed = renderer.closed_signal();
        let mut on_event = |e: TaskEvent| renderer.event(&e);
        let mut signal = None;
        let outcome = tokio::select! {
            outcome = task.run_turn(message.as_deref(), &cancel, &mut on_event) => outcome,
            never = cancel_on_signal(&cancel, &mut signal, closed) => match never {},
        };
        if let Ok(TurnOutcome {
            status: RequestStatus::Failed(e),
            ..
        }) = &outcome
            && e.kind == ErrorKind::SpendCap
        {
            // Its own exit code (README "Exit codes"): a script can tell a cap from a failure.
            return (TaskStatus::Failed, ExitCode::from(SPEND_CAP_EXIT));
        }
        match outcome.map(|o| o.task_status()) {
            Err(TaskError::Store(e)) => return store_failed(renderer, &e),
            Err(e) => {
                renderer.event(&TaskEvent::Error {
                    kind: e.kind().to_owned(),
                    message: e.to_string(),
                    status: None,
                });
                return (TaskStatus::Failed, ExitCode::from(1));
            }
            Ok(TaskStatus::Cancelled) => {
                if signal == Some(Signal::StdoutClosed) {
                    renderer.mark_stdout_closed();
                }
                let code = signal.map_or(130, Signal::exit_code);
                return (TaskStatus::Cancelled, ExitCode::from(code));
            }
            Ok(TaskStatus::Failed) => return (TaskStatus::Failed, ExitCode::from(1)),
            Ok(TaskStatus::Completed) if !interactive => {
                return (TaskStatus::Completed, ExitCode::SUCCESS);
            }
            Ok(TaskStatus::Completed) => match follow_up.ask(&renderer.closed_signal()).await {
                Ok(Some(line)) => next = Some(line),
                Ok(None) => return (TaskStatus::Completed, ExitCode::SUCCESS),
                Err(signal) => {
                    return (TaskStatus::Completed, ExitCode::from(signal.exit_code()));
                }
            },
        }
    }
}

/// The exit code of a task stopped by a spend cap (SPEC R12.2).
pub const SPEND_CAP_EXIT: u8 = 3;

/// "spent $X of the $Y task cap · $Z of the $W daily cap", when the task has caps.
async fn spend_note(task: &Task, store: &dyn TaskStore) -> Option<String> {
    let caps = task.limits()?.caps();
    let mut parts = Vec::new();
    if let Some(cap) = caps.per_task {
        let spent = store.task(task.id()).await.ok()?.usage.cost_usd;
        parts.push(format!("task ${spent:.4} of ${cap:.2} cap"));
    }
    if let Some(cap) = caps.per_day {
        let day = switchyard_core::limits::utc_day_start_ms(task.limits()?.now_ms());
        let spent = store.spend_between(day, day + 86_400_000).await.ok()?;
        parts.push(format!("today ${spent:.4} of ${cap:.2} cap"));
    }
    (!parts.is_empty()).then(|| parts.join(" · "))
}

/// Cancels `cancel` on Ctrl-C, SIGTERM, SIGHUP (SPEC R9.5) or a closed stdout, and says which
/// in `which`; never returns (the turn it cancels ends instead).
async fn cancel_on_signal(
    cancel: &CancellationToken,
    which: &mut Option<Signal>,
    stdout_closed: Arc<tokio::sync::Notify>,
) -> Infallible {
    *which = Some(next_signal(&stdout_closed).await);
    cancel.cancel();
    std::future::pending().await
}

/// Reports a problem found before the task ran; exit code 2.
fn fail(renderer: &mut Renderer, refused: Refused, json: bool) -> ExitCode {
    renderer.event(&TaskEvent::Error {
        kind: refused.kind.to_owned(),
        message: refused.message,
        status: None,
    });
    if json {
        renderer.event(&TaskEvent::TaskFinished {
            status: TaskStatus::Failed,
            first_token_ms: None,
            duration_ms: 0,
        });
    }
    ExitCode::from(2)
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
