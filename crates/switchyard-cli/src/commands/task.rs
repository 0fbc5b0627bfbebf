//! `switchyard task PROMPT`: one request, streamed to the terminal or as JSON lines.

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use switchyard_api::{Message, Mode, build_api_handler};
use switchyard_core::task::{RequestStatus, TaskEvent, TaskStatus, run_request};

use crate::cli::TaskArgs;
use crate::render::Renderer;
use crate::settings;

/// The system prompt until the task layer builds one from a `SystemPromptContext`.
const DEFAULT_SYSTEM_PROMPT: &str = "You are a helpful assistant. Answer clearly and concisely.";

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

    let system = args.system.as_deref().unwrap_or(DEFAULT_SYSTEM_PROMPT);
    let messages = [Message::user_text(args.prompt.clone())];
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
            o = run_request(handler.as_ref(), system, &messages, &[], &mut on_event) => Some(o),
            _ = tokio::signal::ctrl_c() => None,
        }
    };
    let first_token_ms = outcome
        .as_ref()
        .and_then(|o| o.first_token)
        .or(first_content)
        .map(|d| d.as_millis() as u64);
    let (status, code) = match &outcome {
        None => {
            handler.abort();
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
