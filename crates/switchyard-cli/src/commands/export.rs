//! `switchyard export TASK_ID`: the task's conversation as JSON in Anthropic's message shape.
//! Spec: R10.4.

use std::process::ExitCode;

use switchyard_api::Message;
use switchyard_core::TaskStore;

use crate::settings;

/// Prints the conversation; 2 when the store cannot be opened or the task is unknown.
pub async fn run(place: settings::StorePlace<'_>, task_id: &str) -> ExitCode {
    // A read-only store is exported as it is; a store not made yet is not made to say so.
    let messages = match settings::open_existing_store(place).await {
        Ok(Some(store)) => with_partial(store.as_ref(), task_id).await,
        Ok(None) => Err(switchyard_core::store::StoreError::TaskNotFound {
            id: task_id.to_owned(),
        }
        .to_string()),
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

/// The stored history plus the answer a killed process left streaming, which `resume` continues.
async fn with_partial(store: &dyn TaskStore, task_id: &str) -> Result<Vec<Message>, String> {
    let mut messages = store
        .messages_of_task(task_id)
        .await
        .map_err(|e| e.to_string())?;
    let partial = switchyard_core::task::recoverable_partial(store, task_id, &messages)
        .await
        .map_err(|e| e.to_string())?;
    messages.extend(partial);
    Ok(messages)
}
