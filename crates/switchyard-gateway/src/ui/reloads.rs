//! What the providers page says of the configuration: when the one in effect was loaded, and
//! the file a reload refused since, with why.
//! Spec: R14.11, R14.3a.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, PoisonError};

/// When the configuration in effect was loaded, and the last reload refused since, for the
/// dashboard.
#[derive(Default)]
pub(crate) struct Reloads {
    loaded_ms: AtomicI64,
    refused: Mutex<Option<(i64, String)>>,
}

impl Reloads {
    pub(crate) fn loaded(&self, now_ms: i64) {
        self.loaded_ms.store(now_ms, Ordering::Relaxed);
        *self.refused.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    pub(crate) fn refused(&self, now_ms: i64, reason: &str) {
        let mut refused = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        *refused = Some((now_ms, reason.to_owned()));
    }

    /// The dashboard's view: when the configuration in effect was loaded (0: at start), and
    /// the file refused after it, with why.
    pub(crate) fn json(&self) -> serde_json::Value {
        let refused = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        serde_json::json!({
            "loaded_ms": self.loaded_ms.load(Ordering::Relaxed),
            "refused": refused.as_ref().map(|(at, why)| serde_json::json!({"at_ms": at, "reason": why})),
        })
    }
}
