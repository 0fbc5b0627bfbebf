//! Import of a task directory the reference (Cline) wrote as one stored task: its conversation,
//! UI messages, context history and metadata. Blocks we do not model become a text note, UI
//! rows and context edits are kept whole, and totals come from the `api_req_started` rows.
//! Spec: R10.1, R10.3, R8.4.

use std::path::{Path, PathBuf};

use serde_json::Value;
use switchyard_api::message::ImageSource;
use switchyard_api::{ContentBlock, Message, Role};

use super::error::StoreError;
use super::records::{ImportedEdit, ImportedEvent, TaskRecord, TaskUsage, now_ms};
use super::task_store::TaskStore;

/// Why a directory could not be imported. `Display` is one sentence saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A file of the directory could not be read.
    #[error(
        "cannot read {path}: {source}; pass a Cline task directory (it holds api_conversation_history.json)"
    )]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not what the reference writes.
    #[error("{path} is not valid JSON of the reference's shape: {detail}")]
    Shape {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// The task could not be stored.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn read_json(path: &Path, required: bool) -> Result<Option<Value>, ImportError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| ImportError::Shape {
                path: path.to_owned(),
                detail: e.to_string(),
            }),
        Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ImportError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Text of a tool result's content: a string, or blocks whose text is joined.
fn tool_result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().unwrap_or_default().to_owned(),
                Some(other) => format!("[{other} omitted on import]"),
                None => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// One Anthropic content block in our shape.
fn block(b: &Value) -> ContentBlock {
    let s = |k: &str| b[k].as_str().unwrap_or_default().to_owned();
    match b["type"].as_str() {
        Some("text") => ContentBlock::Text { text: s("text") },
        Some("image") if b["source"]["type"] == "base64" => ContentBlock::Image {
            source: ImageSource {
                kind: "base64".into(),
                media_type: b["source"]["media_type"]
                    .as_str()
                    .unwrap_or("image/png")
                    .into(),
                data: b["source"]["data"].as_str().unwrap_or_default().into(),
            },
        },
        Some("tool_use") => ContentBlock::ToolUse {
            id: s("id"),
            name: s("name"),
            input: b
                .get("input")
                .cloned()
                .unwrap_or(Value::Object(Default::default())),
            signature: None,
        },
        Some("tool_result") => ContentBlock::ToolResult {
            tool_use_id: s("tool_use_id"),
            content: tool_result_text(&b["content"]),
            is_error: b["is_error"].as_bool().unwrap_or(false),
        },
        Some("thinking") => ContentBlock::Thinking {
            thinking: s("thinking"),
            signature: s("signature"),
        },
        Some("redacted_thinking") => ContentBlock::RedactedThinking { data: s("data") },
        other => ContentBlock::Text {
            text: format!("[{} block omitted on import]", other.unwrap_or("unknown")),
        },
    }
}

/// The model an imported task records when its directory names none; a resume then runs with
/// the configuration's model.
pub const UNKNOWN_MODEL: &str = "unknown";

/// The reference's `api_conversation_history.json` as our messages.
fn messages_from_reference(history: &Value, path: &Path) -> Result<Vec<Message>, ImportError> {
    let shape = |detail: String| ImportError::Shape {
        path: path.to_owned(),
        detail,
    };
    let items = history
        .as_array()
        .ok_or_else(|| shape("expected an array of messages".into()))?;
    items
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let role = match m["role"].as_str() {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                other => return Err(shape(format!("message {i} has role {other:?}"))),
            };
            let content = match &m["content"] {
                Value::String(text) => vec![ContentBlock::Text { text: text.clone() }],
                Value::Array(blocks) => blocks.iter().map(block).collect(),
                _ => return Err(shape(format!("message {i} has no content"))),
            };
            Ok(Message { role, content })
        })
        .collect()
}

/// Imports the reference task directory `dir` into `store` as a new task in one transaction,
/// keeping the directory's name as its id when that is free.
pub async fn import_reference_dir(
    store: &dyn TaskStore,
    dir: &Path,
) -> Result<TaskRecord, ImportError> {
    let owned = dir.to_owned();
    let read = tokio::task::spawn_blocking(move || read_reference_dir(&owned))
        .await
        .map_err(|e| ImportError::Shape {
            path: dir.to_owned(),
            detail: format!("the import stopped: {e}"),
        })??;
    let mut record = read.record;
    record.id = match read.dir_id {
        Some(id) if store.task(&id).await.is_err() => id,
        _ => {
            let mut candidate = now_ms();
            while store.task(&candidate.to_string()).await.is_ok() {
                candidate += 1;
            }
            candidate.to_string()
        }
    };
    Ok(store
        .import_task(&record, &read.messages, &read.events, &read.edits)
        .await?)
}

/// The number of messages, events and edits [`import_reference_dir`] would import from `dir`,
/// for the fuzz target `task_import`; not API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub fn fuzz_read_reference_dir(dir: &Path) -> Result<(usize, usize, usize), ImportError> {
    let read = read_reference_dir(dir)?;
    Ok((read.messages.len(), read.events.len(), read.edits.len()))
}

/// A reference task directory as read, its id still to choose.
struct ReferenceTask {
    record: TaskRecord,
    dir_id: Option<String>,
    messages: Vec<Message>,
    events: Vec<ImportedEvent>,
    edits: Vec<ImportedEdit>,
}

/// Reads and converts the files of `dir`, blocking.
fn read_reference_dir(dir: &Path) -> Result<ReferenceTask, ImportError> {
    let history_path = dir.join("api_conversation_history.json");
    let history = read_json(&history_path, true)?.unwrap_or(Value::Null);
    let messages = messages_from_reference(&history, &history_path)?;
    let ui_path = dir.join("ui_messages.json");
    let mut ui: Vec<Value> = match read_json(&ui_path, false)? {
        Some(Value::Array(rows)) => rows,
        Some(_) => {
            return Err(ImportError::Shape {
                path: ui_path,
                detail: "expected an array of messages".into(),
            });
        }
        None => Vec::new(),
    };
    let context = match read_json(&dir.join("context_history.json"), false)? {
        Some(Value::Array(entries)) => entries,
        _ => Vec::new(),
    };
    let metadata = read_json(&dir.join("task_metadata.json"), false)?.unwrap_or(Value::Null);
    drop_trailing_request(&mut ui);
    let record = task_record(dir, &ui, &messages, &metadata);
    Ok(ReferenceTask {
        dir_id: dir_id(dir),
        events: events_from_ui(ui, record.created_ms),
        edits: context
            .into_iter()
            .map(|e| ("reference_context_history".to_owned(), e))
            .collect(),
        record,
        messages,
    })
}

/// The JSON object an `api_req_started` row carries in its `text`.
fn request_info(m: &Value) -> Value {
    serde_json::from_str(m["text"].as_str().unwrap_or("{}")).unwrap_or(Value::Null)
}

/// Whether a UI row is an `api_req_started`.
fn is_request(m: &Value) -> bool {
    m["type"] == "say" && m["say"] == "api_req_started"
}

/// Drops a trailing `api_req_started` with neither cost nor cancel reason.
fn drop_trailing_request(ui: &mut Vec<Value>) {
    if let Some(last) = ui.iter().rposition(is_request) {
        let i = request_info(&ui[last]);
        if i.get("cost").is_none_or(Value::is_null)
            && i.get("cancelReason").is_none_or(Value::is_null)
        {
            ui.remove(last);
        }
    }
}

/// The task's totals from its `api_req_started` rows, and the last request's total tokens.
fn usage_from_ui(ui: &[Value]) -> (TaskUsage, u64) {
    let mut usage = TaskUsage::default();
    let mut last_request_tokens = 0;
    for m in ui.iter().filter(|m| is_request(m)) {
        let i = request_info(m);
        let n = |k: &str| i[k].as_u64().unwrap_or(0);
        usage.tokens_in += n("tokensIn");
        usage.tokens_out += n("tokensOut");
        usage.cache_writes += n("cacheWrites");
        usage.cache_reads += n("cacheReads");
        usage.cost_usd += i["cost"].as_f64().unwrap_or(0.0);
        last_request_tokens = n("tokensIn") + n("tokensOut") + n("cacheWrites") + n("cacheReads");
    }
    (usage, last_request_tokens)
}

/// The task row of a reference directory, its id still to choose.
fn task_record(dir: &Path, ui: &[Value], messages: &[Message], metadata: &Value) -> TaskRecord {
    let (usage, last_request_tokens) = usage_from_ui(ui);
    let range = ui
        .iter()
        .rev()
        .find_map(|m| m["conversationHistoryDeletedRange"].as_array().cloned())
        .and_then(|r| Some((r.first()?.as_u64()? as usize, r.get(1)?.as_u64()? as usize)));
    let model_info = model_info(ui, metadata);
    let text = |v: &Value, default: &str| v.as_str().unwrap_or(default).to_owned();
    let created_ms = ui
        .first()
        .and_then(|m| m["ts"].as_i64())
        .or_else(|| dir.file_name()?.to_str()?.parse().ok())
        .unwrap_or_else(now_ms);
    TaskRecord {
        id: String::new(),
        created_ms,
        updated_ms: ui
            .last()
            .and_then(|m| m["ts"].as_i64())
            .unwrap_or(created_ms),
        cwd: String::new(),
        mode: text(&model_info["mode"], "act"),
        provider: text(&model_info["providerId"], "anthropic"),
        model: text(&model_info["modelId"], UNKNOWN_MODEL),
        first_prompt: first_prompt(ui, messages),
        usage,
        last_request_tokens,
        conversation_history_deleted_range: range,
        message_count: messages.len(),
    }
}

/// The task's first prompt: its `task` row, else the first user message's text.
fn first_prompt(ui: &[Value], messages: &[Message]) -> String {
    ui.iter()
        .find(|m| m["say"] == "task")
        .and_then(|m| m["text"].as_str().map(str::to_owned))
        .or_else(|| {
            messages
                .iter()
                .find(|m| m.role == Role::User)
                .and_then(|m| {
                    m.content.iter().find_map(|b| match b {
                        ContentBlock::Text { text } => Some(text.clone()),
                        _ => None,
                    })
                })
        })
        .unwrap_or_default()
}

/// The provider, model and mode the task last ran with, from the last row's `modelInfo` or the
/// metadata's last `model_usage`.
fn model_info(ui: &[Value], metadata: &Value) -> Value {
    ui.iter()
        .rev()
        .find_map(|m| m.get("modelInfo").filter(|v| v.is_object()).cloned())
        .or_else(|| {
            metadata["model_usage"]
                .as_array()
                .and_then(|u| u.last())
                .map(|u| {
                    serde_json::json!({
                        "providerId": u["model_provider_id"],
                        "modelId": u["model_id"],
                        "mode": u["mode"],
                    })
                })
        })
        .unwrap_or(Value::Null)
}

/// The directory's name when it is a reference task id, all digits.
fn dir_id(dir: &Path) -> Option<String> {
    dir.file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_owned)
}

/// Each UI row kept whole as a `reference_say_*` / `reference_ask_*` event.
fn events_from_ui(ui: Vec<Value>, created_ms: i64) -> Vec<ImportedEvent> {
    ui.into_iter()
        .map(|m| {
            let kind = match (m["type"].as_str(), m["say"].as_str(), m["ask"].as_str()) {
                (Some("say"), Some(say), _) => format!("reference_say_{say}"),
                (Some("ask"), _, Some(ask)) => format!("reference_ask_{ask}"),
                _ => "reference_message".to_owned(),
            };
            (m["ts"].as_i64().unwrap_or(created_ms), kind, m)
        })
        .collect()
}
