//! A stream that ends before any answer while the request is larger than the model's context
//! window. Some local servers refuse such a request by closing a 200 stream without a word,
//! llama-cpp-python's among them, and the end reads as a temporary network failure.
//! Spec: R7.2.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::TryStreamExt;
use serde_json::Value;

use crate::error::{ApiError, ErrorKind, INCOMPLETE_STREAM};
use crate::estimate::{IMAGE_TOKENS, estimate_tokens};
use crate::stream::ApiStream;

/// A string this long without a space is taken for base64 media, counted as an image.
const MEDIA_BYTES: usize = 4096;

/// `stream` with an end before any chunk read as an overflow when the request's `estimate` of
/// input tokens is over the model's `window`. A window of 0 is unknown and says nothing.
pub(crate) fn reading_a_silent_end(stream: ApiStream, estimate: u64, window: u64) -> ApiStream {
    if window == 0 || estimate <= window {
        return stream;
    }
    let answered = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&answered);
    let stream = stream.inspect_ok(move |_| seen.store(true, Ordering::Relaxed));
    Box::pin(stream.map_err(move |e| {
        let silent = !answered.load(Ordering::Relaxed);
        if silent && e.code.as_deref() == Some(INCOMPLETE_STREAM) {
            overflow(e, estimate, window)
        } else {
            e
        }
    }))
}

fn overflow(silent: ApiError, estimate: u64, window: u64) -> ApiError {
    let mut e = ApiError::new(
        ErrorKind::ContextWindowExceeded,
        format!(
            "the stream ended before any answer, and the request's estimated {estimate} input \
             tokens exceed the model's {window}-token context window: the server most likely \
             refused it for its size"
        ),
    );
    e.provider_id = silent.provider_id;
    e.model_id = silent.model_id;
    e.status = silent.status;
    e
}

/// The estimate of a client's own request body: the bytes of its strings, a long string without
/// a space taken for media.
pub(crate) fn estimate_body(body: &serde_json::Map<String, Value>) -> u64 {
    fn walk(v: &Value, bytes: &mut usize, images: &mut u64) {
        match v {
            Value::String(s) if s.len() >= MEDIA_BYTES && !s.contains(' ') => *images += 1,
            Value::String(s) => *bytes += s.len(),
            Value::Array(items) => items.iter().for_each(|i| walk(i, bytes, images)),
            Value::Object(map) => map.values().for_each(|i| walk(i, bytes, images)),
            _ => {}
        }
    }
    let (mut bytes, mut images) = (0, 0);
    body.values().for_each(|v| walk(v, &mut bytes, &mut images));
    estimate_tokens(bytes) + images * IMAGE_TOKENS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn silent() -> ApiStream {
        let mut e = ApiError::new(ErrorKind::Network, "sent an incomplete response");
        e.code = Some(INCOMPLETE_STREAM.to_owned());
        Box::pin(futures_util::stream::iter([Err(e)]))
    }

    async fn kind(stream: ApiStream) -> ErrorKind {
        use futures_util::StreamExt;
        let mut stream = stream;
        stream.next().await.unwrap().unwrap_err().kind
    }

    #[tokio::test]
    async fn only_a_known_window_turns_silence_into_an_overflow() {
        let over = reading_a_silent_end(silent(), 3_000, 2_048);
        assert_eq!(kind(over).await, ErrorKind::ContextWindowExceeded);
        let within = reading_a_silent_end(silent(), 1_000, 2_048);
        assert_eq!(kind(within).await, ErrorKind::Network);
        let unknown = reading_a_silent_end(silent(), 3_000, 0);
        assert_eq!(kind(unknown).await, ErrorKind::Network);
    }
}
