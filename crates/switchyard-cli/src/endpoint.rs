//! A task's endpoint (the base URL its requests went to) is recorded with the task, so that
//! `resume` sends the conversation to the same host: a conversation held with a local model
//! must not go to a cloud provider because `--base-url` was not typed again (issue 14). Moving
//! a task to another host takes `--allow-new-host` (no SPEC rule: the command line's guard).
//!
//! The record is a task event of kind `endpoint` (`{"provider", "base_url"}`), written when a
//! task is created and whenever a resumed one moves; the newest one is in effect.

use switchyard_api::{ApiConfiguration, Mode, resolve_mode};
use switchyard_core::TaskStore;

/// The event kind the endpoint is stored under.
pub const EVENT_KIND: &str = "endpoint";

/// Where a task's requests go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The provider id.
    pub provider: String,
    /// The base URL in effect, e.g. `http://127.0.0.1:8089/v1`.
    pub base_url: String,
}

impl Endpoint {
    /// The endpoint `config` sends `mode`'s requests to; `None` when it does not resolve (the
    /// task reports that itself).
    pub fn of(config: &ApiConfiguration, mode: Mode) -> Option<Self> {
        let resolved = resolve_mode(config, mode).ok()?;
        Some(Self {
            provider: resolved.provider_id,
            base_url: resolved.base_url,
        })
    }

    /// The host (and port) of the base URL, as parsed: `127.0.0.1:8089`.
    pub fn host(&self) -> String {
        host_of(&self.base_url)
    }
}

/// `host:port` of `url` (see [`switchyard_api::providers::url_host`]); the URL itself when it
/// does not parse.
pub fn host_of(url: &str) -> String {
    switchyard_api::providers::url_host(url).unwrap_or_else(|| url.to_owned())
}

/// The endpoint recorded for task `id`, if any (tasks from before this record have none).
pub async fn recorded(store: &dyn TaskStore, id: &str) -> Option<Endpoint> {
    let seq = store.last_event_of_kind(id, EVENT_KIND).await.ok()??;
    let events = store.events_from(id, seq).await.ok()?;
    let event = events.into_iter().find(|e| e.seq == seq)?;
    Some(Endpoint {
        provider: event.event["provider"].as_str()?.to_owned(),
        base_url: event.event["base_url"].as_str()?.to_owned(),
    })
}

/// Records `endpoint` for task `id`: it survives the process being killed at once, and reaches
/// the disk with the `api_req_started` event's full commit, which comes before any request is
/// sent (an `fsync` fewer on the way to the first request, issue 17).
pub async fn record(store: &dyn TaskStore, id: &str, endpoint: &Endpoint) -> Result<(), String> {
    let value = serde_json::json!({
        "type": EVENT_KIND,
        "provider": endpoint.provider,
        "base_url": switchyard_api::secrets::scrub(&endpoint.base_url),
    });
    store
        .append_event(id, EVENT_KIND, &value, false)
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}
