//! A request that cannot fit its route's context window is not sent: the entries whose window
//! its input estimate fits answer it, and with none, the dialect's own context-length error.
//! The estimate is R8.2's, approximate, so only an input above the window is refused.
//! Spec: R8.2, R14.4, R14.5.

use switchyard_api::{ApiError, ChainEntry, ErrorKind, NOT_SENT};

use super::answer::estimate_input;
use crate::ingress::{Dialect, GatewayRequest};
use crate::request::Chain;

/// `chain` less the entries whose known window the request's input cannot fit, or the
/// dialect's context-length error when no entry is left.
pub(super) fn fitting(
    chain: Chain,
    request: &GatewayRequest,
    dialect: Dialect,
) -> Result<Chain, Box<ApiError>> {
    // At 4 bytes per token, times 4: the input's bytes. A token is at least a byte, so an input
    // no larger in bytes than a window fits it whatever the tokenizer says.
    let bytes =
        estimate_input(&request.system_prompt, &request.messages, &request.tools).saturating_mul(4);
    let mut over = None;
    let mut fits = |entry: &ChainEntry| {
        let window = entry.handler.get_model().info.context_window;
        if window == 0 || bytes <= window {
            return true;
        }
        let tokens = crate::count::input_tokens(request, &entry.model_id);
        if tokens > window {
            over.get_or_insert((tokens, window));
        }
        tokens <= window
    };
    let kept: Vec<ChainEntry> = chain.iter().filter(|e| fits(e)).cloned().collect();
    if kept.len() == chain.len() {
        return Ok(chain);
    }
    if !kept.is_empty() {
        return Ok(kept.into());
    }
    let (tokens, window) = over.unwrap_or_default();
    let sentence = dialect.rules().context_overflow(tokens, window);
    let mut error = ApiError::new(ErrorKind::ContextWindowExceeded, sentence);
    error.status = Some(400);
    error.code = Some(NOT_SENT.to_owned());
    Err(Box::new(error))
}
