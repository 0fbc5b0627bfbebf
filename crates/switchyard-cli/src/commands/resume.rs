//! `switchyard resume TASK_ID [PROMPT]`: continue a saved task (SPEC R10.2, R10.3).

use std::path::Path;
use std::process::ExitCode;

use crate::cli::ResumeArgs;
use crate::commands::task::{Start, session};

/// Resumes the task; exit codes as `switchyard task`.
pub async fn run(
    config_path: Option<&Path>,
    place: crate::settings::StorePlace<'_>,
    args: ResumeArgs,
) -> ExitCode {
    let (task_id, args) = args.into_task_args();
    session(config_path, place, args, Start::Resume(task_id)).await
}
