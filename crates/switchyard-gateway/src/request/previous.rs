//! A Responses request's `previous_response_id`: the stored conversation put before its own.
//! Spec: R14.1.

use switchyard_api::{ApiError, ErrorKind};
use switchyard_core::store::ResponseStore;

use crate::ingress::GatewayRequest;
use crate::refusal::{Kind, Refusal};

/// Puts the conversation and answer `request.previous_response_id` names before its own
/// messages. The stored system prompt is not carried over, as OpenAI does not carry over the
/// instructions. A response stored under another route is continued all the same.
pub(crate) async fn resolve(
    store: &dyn ResponseStore,
    now_ms: i64,
    request: &mut GatewayRequest,
) -> Result<(), Refusal> {
    let Some(previous) = request.previous_response_id.as_deref() else {
        return Ok(());
    };
    let stored = match store.stored_response(previous, now_ms).await {
        Ok(Some(stored)) => stored,
        Ok(None) => return Err(Refusal::previous_not_found(previous.to_owned())),
        Err(e) => {
            let message = format!("The stored response could not be read: {e}.");
            let error = ApiError::new(ErrorKind::Server, message);
            return Err(Refusal::failed(500, Kind::InvalidRequest, error));
        }
    };
    let mut messages = stored.messages;
    if !stored.answer.content.is_empty() {
        messages.push(stored.answer);
    }
    messages.append(&mut request.messages);
    request.messages = messages;
    Ok(())
}
