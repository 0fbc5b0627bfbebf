//! `switchyard export TASK_ID`: the task's API conversation history as JSON, an array of
//! Anthropic `MessageParam`s (`{"role", "content": [blocks]}`) like the reference's
//! `api_conversation_history.json`.

use std::process::ExitCode;

use crate::settings;

/// Prints the conversation; 2 when the database cannot be opened or the task is unknown.
pub async fn run(place: settings::StorePlace<'_>, task_id: &str) -> ExitCode {
    let messages = match settings::open_store(place).await {
        Ok(store) => store
            .messages_of_task(task_id)
            .await
            .map_err(|e| e.to_string()),
        Err(e) => Err(e),
    };
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
