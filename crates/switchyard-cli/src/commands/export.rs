//! `switchyard export TASK_ID`: the task's API conversation history as JSON, an array of
//! Anthropic `MessageParam`s (`{"role", "content": [blocks]}`) like the reference's
//! `api_conversation_history.json`.

use std::path::Path;
use std::process::ExitCode;

use crate::settings;

/// Prints the conversation; 2 when the database cannot be opened or the task is unknown.
pub fn run(data_dir: Option<&Path>, task_id: &str) -> ExitCode {
    let messages = settings::open_store(data_dir)
        .and_then(|s| s.messages_of_task(task_id).map_err(|e| e.to_string()));
    match messages.and_then(|m| serde_json::to_string_pretty(&m).map_err(|e| e.to_string())) {
        Ok(json) => {
            say!("{json}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
