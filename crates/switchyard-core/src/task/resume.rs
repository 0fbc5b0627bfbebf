//! Reopening a task whose last turn a crash or kill cut short.
//! Spec: R9.3, R10.3, R10.4.

use switchyard_api::{ContentBlock, Message, Role};

use super::events::{CancelReason, TaskEvent};
use super::state::{ResumeReport, TaskState};
use super::turn::INTERRUPTED_MARKER;
use crate::store::{StoreError, TaskStore};

/// The `streaming_failed_message` recorded on resume for a request whose process ended.
pub const PROCESS_ENDED_MESSAGE: &str =
    "switchyard stopped while the response was streaming (the process was killed or crashed)";

enum LastRequest {
    /// Nothing to repair: no request, or it has a cost or a cancel reason.
    Settled,
    /// It produced nothing, and its `api_req_started` event `seq` is dropped.
    Empty { seq: i64 },
    /// It streamed content, and the process ended before it finished.
    Interrupted { request_index: u32, text: String },
}

async fn last_request(store: &dyn TaskStore, id: &str) -> Result<LastRequest, StoreError> {
    let Some(seq) = store.last_event_of_kind(id, "api_req_started").await? else {
        return Ok(LastRequest::Settled);
    };
    let events = store.events_from(id, seq).await?;
    let Some((started, rest)) = events.split_first() else {
        return Ok(LastRequest::Settled);
    };
    let has_cost = rest.iter().any(|e| e.kind == "usage");
    let has_cancel = rest
        .iter()
        .any(|e| e.kind == "api_req_finished" && !e.event["cancel_reason"].is_null());
    if has_cost || has_cancel {
        return Ok(LastRequest::Settled);
    }
    let content_seen = rest
        .iter()
        .any(|e| matches!(e.kind.as_str(), "text" | "reasoning" | "tool_call"));
    if !content_seen {
        return Ok(LastRequest::Empty { seq: started.seq });
    }
    let text: String = rest
        .iter()
        .filter(|e| e.kind == "text")
        .filter_map(|e| e.event["text"].as_str())
        .collect();
    Ok(LastRequest::Interrupted {
        request_index: started.event["request_index"].as_u64().unwrap_or(0) as u32,
        text,
    })
}

/// The assistant message `resume` will recover, without changing the store; `export` shows it.
pub async fn recoverable_partial(
    store: &dyn TaskStore,
    id: &str,
    history: &[Message],
) -> Result<Option<Message>, StoreError> {
    let last_is_user = history.last().map(|m| m.role) == Some(Role::User);
    match last_request(store, id).await? {
        LastRequest::Interrupted { text, .. } if !text.is_empty() && last_is_user => {
            Ok(Some(interrupted_answer(text)))
        }
        _ => Ok(None),
    }
}

fn interrupted_answer(text: String) -> Message {
    Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::Text { text },
            ContentBlock::Text {
                text: INTERRUPTED_MARKER.to_owned(),
            },
        ],
    }
}

/// Repairs the end of a reopened task whose last request a crash cut short.
pub(super) async fn repair_interrupted_turn(t: &mut TaskState) -> Result<ResumeReport, StoreError> {
    let mut report = ResumeReport::default();
    let id = t.record.id.clone();
    let (request_index, text) = match last_request(t.store.as_ref(), &id).await? {
        LastRequest::Settled => return Ok(report),
        LastRequest::Empty { seq } => {
            t.store.delete_event(&id, seq).await?;
            report.dropped_request = true;
            return Ok(report);
        }
        LastRequest::Interrupted {
            request_index,
            text,
        } => (request_index, text),
    };
    if !text.is_empty() && t.last_role() == Some(Role::User) {
        report.recovered_partial_bytes = text.len();
        t.append_message(interrupted_answer(text)).await?;
    }
    report.interrupted_request = Some(request_index);
    t.record_event(&TaskEvent::ApiReqFinished {
        request_index,
        cancel_reason: Some(CancelReason::StreamingFailed),
        streaming_failed_message: Some(PROCESS_ENDED_MESSAGE.to_owned()),
    })
    .await?;
    Ok(report)
}
