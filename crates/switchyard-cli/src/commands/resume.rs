//! `switchyard resume`: continue a saved task.
//! Spec: R10.2, R10.3.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::{ResumeArgs, TaskArgs};
use crate::commands::task::{Start, session};
use crate::settings;

/// Resumes the task; exit codes as `switchyard task`'s.
pub async fn run(
    config_path: Option<&Path>,
    place: crate::settings::StorePlace<'_>,
    args: ResumeArgs,
) -> ExitCode {
    let ResumeArgs {
        task_id,
        prompt,
        last,
        options,
    } = args;
    let (task_id, prompt) = if last {
        if prompt.is_some() {
            eprintln!(
                "error: --last takes the place of the task id; pass the next message alone: switchyard resume --last \"PROMPT\""
            );
            return ExitCode::from(2);
        }
        match latest(place).await {
            Ok(id) => (id, task_id),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        match task_id {
            Some(id) => (id, prompt),
            None => {
                eprintln!(
                    "error: name the task to continue: switchyard resume TASK_ID (see `switchyard tasks`), or switchyard resume --last"
                );
                return ExitCode::from(2);
            }
        }
    };
    let args = TaskArgs { prompt, options };
    session(config_path, place, args, Start::Resume(task_id)).await
}

/// The id of the task changed most recently, for `--last`.
async fn latest(place: settings::StorePlace<'_>) -> Result<String, String> {
    let store = settings::open_store(place).await?;
    let tasks = store.list_tasks().await.map_err(|e| e.to_string())?;
    tasks
        .into_iter()
        .max_by(|a, b| (a.updated_ms, &a.id).cmp(&(b.updated_ms, &b.id)))
        .map(|t| t.id)
        .ok_or_else(|| {
            "there is no saved task to continue yet; `switchyard task \"PROMPT\"` starts one"
                .to_owned()
        })
}
