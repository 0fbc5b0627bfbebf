//! The session of `switchyard task` and `switchyard resume`: the prompt read, the task opened,
//! its turns run and its end recorded.
//! Spec: R12.2.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use switchyard_core::Task;
use switchyard_core::mcp::McpServerHub;
use switchyard_core::store::TaskStore;
use switchyard_core::task::TaskStatus;

use super::converse::converse;
use super::open::{Start, open};
use super::refused::{Refused, fail, store_failed};
use crate::cli::TaskArgs;
use crate::endpoint::Endpoint;
use crate::render::Renderer;
use crate::settings;

/// Runs a new task: 0 completed, 1 failed, 3 stopped by a spend cap, 130 cancelled, 2 for a
/// configuration, input or task-database problem.
pub async fn run(
    config_path: Option<&Path>,
    place: settings::StorePlace<'_>,
    args: TaskArgs,
) -> ExitCode {
    session(config_path, place, args, Start::New).await
}

/// Runs a new or resumed task, with the exit codes of `run`.
pub async fn session(
    config_path: Option<&Path>,
    place: settings::StorePlace<'_>,
    args: TaskArgs,
    start: Start,
) -> ExitCode {
    let TaskArgs {
        prompt,
        mut options,
    } = args;
    let mut renderer = Renderer::new(options.json, options.quiet);
    let prompt = match crate::prompt_input::read_prompt(prompt.as_deref(), options.file.as_deref())
    {
        Ok(Some(prompt)) => {
            options.title = prompt.typed;
            prompt.text
        }
        Ok(None) => String::new(),
        Err(message) => return fail(&mut renderer, Refused::config(message), options.json),
    };
    let opened = open(config_path, place, &prompt, &options, &start).await;
    let (mut task, hub, store, endpoint, auth_hint, telemetry) = match opened {
        Ok(opened) => opened,
        Err(refused) => return fail(&mut renderer, refused, options.json),
    };
    if telemetry.is_on() {
        renderer.trace(telemetry.task_spans());
    }
    let interactive = !options.json && std::io::stdin().is_terminal();
    // A new task was created with its prompt; a resumed one may have a next message.
    let first = Some(prompt).filter(|p| matches!(start, Start::Resume(_)) && !p.trim().is_empty());
    let begun = begin(
        &mut task,
        &mut renderer,
        store.as_ref(),
        endpoint,
        auth_hint,
        first.is_some() || interactive,
    )
    .await;
    if let Err(refused) = begun {
        hub.shutdown().await;
        return fail(&mut renderer, refused, options.json);
    }
    announce(&task, &mut renderer);
    let history = settings::data_dir(place.data_dir)
        .ok()
        .map(|d| d.join(crate::follow_up::HISTORY_FILE));
    let mut follow_up = crate::follow_up::FollowUp::new(history);
    let (status, code) =
        converse(&mut task, first, interactive, &mut renderer, &mut follow_up).await;
    let code = end(&mut task, &hub, store.as_ref(), &mut renderer, status, code).await;
    // The last spans end with the renderer's, then go out within a bounded wait.
    drop(renderer);
    telemetry.shutdown(crate::telemetry::FLUSH_WAIT).await;
    code
}

/// Records the run's start; a run with nothing to send is refused before it is recorded.
async fn begin(
    task: &mut Task,
    renderer: &mut Renderer,
    store: &dyn TaskStore,
    endpoint: Option<Endpoint>,
    auth_hint: Option<String>,
    asks: bool,
) -> Result<(), Refused> {
    if !asks && !task.has_pending_turn() {
        let id = task.id();
        return Err(Refused::config(format!(
            "task {id} has been answered; pass the next message: switchyard resume {id} \"PROMPT\""
        )));
    }
    task.start(&mut |e| renderer.event(&e))
        .await
        .map_err(Refused::store)?;
    if let Some(hint) = auth_hint {
        renderer.set_auth_hint(hint);
    }
    if let Some(endpoint) = endpoint {
        crate::endpoint::record(store, task.id(), &endpoint)
            .await
            .map_err(Refused::store)?;
    }
    Ok(())
}

/// The task's id and, for a resumed task whose answer was cut off, what was kept of it.
fn announce(task: &Task, renderer: &mut Renderer) {
    let id = task.id();
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
}

/// Records the task's end and shows its last line; `code`, or 141 when stdout's reader went.
async fn end(
    task: &mut Task,
    hub: &McpServerHub,
    store: &dyn TaskStore,
    renderer: &mut Renderer,
    status: TaskStatus,
    code: ExitCode,
) -> ExitCode {
    if renderer.stdout_closed() {
        // The reader went away: end quietly with the code of a process SIGPIPE ended.
        let _ = task.finish(status, &mut |_| {}).await;
        hub.shutdown().await;
        return ExitCode::from(141);
    }
    hub.shutdown().await;
    if let Some(note) = spend_note(task, store).await {
        renderer.spend_note(note);
    }
    let mut finished = None;
    if let Err(e) = task.finish(status, &mut |e| finished = Some(e)).await {
        store_failed(renderer, &e);
    }
    if let Some(event) = finished {
        renderer.event(&event);
    }
    code
}

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
