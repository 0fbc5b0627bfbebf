//! What the gateway is doing now, for the dashboard's live page: the requests in flight and
//! the last errors. A request takes one short lock when it starts and one when it ends; each
//! chunk only adds to its own atomics.
//! Spec: R14.11, R10.5.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use switchyard_api::{ApiError, ApiStreamChunk};
use switchyard_core::limits::Clock;

/// How many errors [`Live::errors`] keeps.
const ERRORS_KEPT: usize = 50;

/// The longest error sentence kept, in bytes.
const SENTENCE_MAX: usize = 400;

/// One request in flight as the live page shows it; never the key, its display prefix.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct FlightView {
    pub(crate) id: String,
    pub(crate) key_prefix: Option<String>,
    /// The model name the client sent.
    pub(crate) route: String,
    /// `provider:model` answering, once one started.
    pub(crate) model: Option<String>,
    pub(crate) started_ms: i64,
    /// Output tokens so far: reported or estimated, whichever is more, since a provider reports
    /// most of its usage at the end.
    pub(crate) output_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct ErrorView {
    pub(crate) id: String,
    pub(crate) at_ms: i64,
    pub(crate) key_prefix: Option<String>,
    pub(crate) route: String,
    pub(crate) kind: String,
    /// Switchyard's one sentence, scrubbed of every registered secret.
    pub(crate) sentence: String,
}

/// What a flight shares with the registry: fixed at its start, then counters.
struct Shared {
    id: String,
    key_prefix: Option<String>,
    route: String,
    started_ms: i64,
    model: Mutex<Option<String>>,
    bytes: AtomicU64,
    reported: AtomicU64,
}

pub(crate) struct Live {
    clock: Clock,
    flights: Mutex<HashMap<u64, Arc<Shared>>>,
    next: AtomicU64,
    errors: Mutex<VecDeque<ErrorView>>,
}

impl Default for Live {
    fn default() -> Self {
        Self {
            clock: Clock::system(),
            flights: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            errors: Mutex::new(VecDeque::new()),
        }
    }
}

impl Live {
    /// Registers request `id` as in flight until the [`Flight`] is dropped.
    pub(crate) fn start(
        self: &Arc<Self>,
        id: &str,
        route: &str,
        key_prefix: Option<&str>,
    ) -> Flight {
        let shared = Arc::new(Shared {
            id: id.to_owned(),
            key_prefix: key_prefix.map(str::to_owned),
            route: route.to_owned(),
            started_ms: self.clock.now_ms(),
            model: Mutex::new(None),
            bytes: AtomicU64::new(0),
            reported: AtomicU64::new(0),
        });
        let slot = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.flights).insert(slot, Arc::clone(&shared));
        Flight {
            live: Arc::clone(self),
            slot,
            shared,
        }
    }

    /// The requests in flight now, oldest first.
    pub(crate) fn flights(&self) -> Vec<FlightView> {
        let shared: Vec<Arc<Shared>> = lock(&self.flights).values().cloned().collect();
        let mut views: Vec<FlightView> = shared.iter().map(|s| view(s)).collect();
        views.sort_by(|a, b| (a.started_ms, &a.id).cmp(&(b.started_ms, &b.id)));
        views
    }

    /// The last errors, newest first.
    pub(crate) fn errors(&self) -> Vec<ErrorView> {
        lock(&self.errors).iter().cloned().collect()
    }

    /// Request `id` was refused before anything was sent: listed among the last errors.
    /// Spec: R14.6, R14.7.
    pub(crate) fn refused(
        &self,
        id: &str,
        route: &str,
        key_prefix: Option<&str>,
        (kind, sentence): (&str, &str),
    ) {
        self.record(ErrorView {
            id: id.to_owned(),
            at_ms: self.clock.now_ms(),
            key_prefix: key_prefix.map(str::to_owned),
            route: route.to_owned(),
            kind: kind.to_owned(),
            sentence: one_line(&switchyard_api::secrets::scrub(sentence)),
        });
    }

    fn record(&self, entry: ErrorView) {
        let mut errors = lock(&self.errors);
        errors.push_front(entry);
        errors.truncate(ERRORS_KEPT);
    }
}

/// One request's entry in the registry, removed when dropped.
pub(crate) struct Flight {
    live: Arc<Live>,
    slot: u64,
    shared: Arc<Shared>,
}

impl Flight {
    pub(crate) fn answered(&self, provider: &str, model: &str) {
        *lock(&self.shared.model) = Some(format!("{provider}:{model}"));
    }

    /// One chunk the upstream sent: its output counted without a lock.
    pub(crate) fn saw(&self, chunk: &ApiStreamChunk) {
        let bytes = match chunk {
            ApiStreamChunk::Text { text, .. } => text.len(),
            ApiStreamChunk::Reasoning { reasoning, .. } => reasoning.len(),
            ApiStreamChunk::ToolCalls {
                name,
                arguments_delta,
                ..
            } => name.len() + arguments_delta.len(),
            ApiStreamChunk::Usage(u) => {
                self.shared
                    .reported
                    .fetch_add(u.output_tokens, Ordering::Relaxed);
                0
            }
            _ => 0,
        };
        let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
        self.shared.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The request failed: listed among the last errors, unless it was cancelled.
    pub(crate) fn failed(&self, error: &ApiError) {
        if error.kind == switchyard_api::ErrorKind::Cancelled {
            return;
        }
        let s = &self.shared;
        let entry = ErrorView {
            id: s.id.clone(),
            at_ms: self.live.clock.now_ms(),
            key_prefix: s.key_prefix.clone(),
            route: s.route.clone(),
            kind: error.kind.as_str().to_owned(),
            sentence: one_line(&switchyard_api::secrets::scrub(&error.to_string())),
        };
        self.live.record(entry);
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        lock(&self.live.flights).remove(&self.slot);
    }
}

fn view(s: &Shared) -> FlightView {
    let reported = s.reported.load(Ordering::Relaxed);
    let bytes = usize::try_from(s.bytes.load(Ordering::Relaxed)).unwrap_or(usize::MAX);
    FlightView {
        id: s.id.clone(),
        key_prefix: s.key_prefix.clone(),
        route: s.route.clone(),
        model: lock(&s.model).clone(),
        started_ms: s.started_ms,
        output_tokens: reported.max(switchyard_core::context::estimate_tokens(bytes)),
    }
}

fn one_line(text: &str) -> String {
    let mut line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if line.len() > SENTENCE_MAX {
        let mut end = SENTENCE_MAX;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
        line.push('…');
    }
    line
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flight_is_listed_until_dropped_and_counts_its_output() {
        let live = Arc::new(Live::default());
        let flight = live.start("req_1", "fast", Some("sk-sy-abcdef"));
        flight.answered("openai", "gpt-5");
        flight.saw(&ApiStreamChunk::text("12345678"));
        let shown = live.flights();
        assert_eq!(shown.len(), 1);
        assert_eq!(shown[0].model.as_deref(), Some("openai:gpt-5"));
        assert_eq!(shown[0].output_tokens, 2);
        let error = ApiError::new(switchyard_api::ErrorKind::Server, "it broke\nbadly");
        flight.failed(&error);
        drop(flight);
        assert!(live.flights().is_empty());
        let errors = live.errors();
        assert_eq!(errors[0].kind, "server");
        assert!(!errors[0].sentence.contains('\n'));
    }

    #[test]
    fn a_refusal_at_admission_is_listed_scrubbed_and_the_list_stays_bounded() {
        let live = Arc::new(Live::default());
        let secret = "sk-sy-live-refusal-secret-0123456789abcdef";
        switchyard_api::secrets::register(secret);
        let said = format!("The budget of key {secret} is spent:\nnothing left.");
        live.refused("req_9", "fast", Some("sk-sy-abcdef"), ("budget", &said));
        let errors = live.errors();
        assert_eq!(
            (errors[0].id.as_str(), errors[0].kind.as_str()),
            ("req_9", "budget")
        );
        assert_eq!(errors[0].key_prefix.as_deref(), Some("sk-sy-abcdef"));
        assert!(
            !errors[0].sentence.contains(secret),
            "{}",
            errors[0].sentence
        );
        assert!(!errors[0].sentence.contains('\n'));
        for i in 0..(ERRORS_KEPT + 5) {
            live.refused(
                &format!("req_{i}"),
                "fast",
                None,
                ("rate_limited", "Slow down."),
            );
        }
        assert_eq!(live.errors().len(), ERRORS_KEPT);
        assert_eq!(live.errors()[0].id, format!("req_{}", ERRORS_KEPT + 4));
    }
}
