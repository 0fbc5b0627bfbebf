//! `switchyard import DIR`: bring a task written by Cline into the task store.
//! Spec: R10.1, R13.1.

use std::path::Path;
use std::process::ExitCode;

use crate::settings;

pub async fn run(place: settings::StorePlace<'_>, dir: &Path) -> ExitCode {
    let store = match settings::open_store(place).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match switchyard_core::store::import_reference_dir(&*store, dir).await {
        Ok(task) => {
            say!("{}", task.id);
            eprintln!(
                "imported {} messages as task {} (continue it with: switchyard resume {} \"PROMPT\")",
                task.message_count, task.id, task.id
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
