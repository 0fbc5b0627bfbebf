//! A task's endpoint, recorded with the task so `resume` sends the conversation to the same
//! host: a conversation with a local model must not go to a cloud provider by surprise.
//!
//! The record is a task event of kind `endpoint`; the newest one is in effect, and moving a task
//! to another host takes `--allow-new-host`.

use switchyard_api::{ApiConfiguration, Mode, resolve_mode};
use switchyard_core::TaskStore;

pub const EVENT_KIND: &str = "endpoint";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub provider: String,
    /// The base URL in effect, such as `http://127.0.0.1:8089/v1`.
    pub base_url: String,
}

impl Endpoint {
    /// The endpoint `config` sends `mode`'s requests to; `None` when it does not resolve.
    pub fn of(config: &ApiConfiguration, mode: Mode) -> Option<Self> {
        let resolved = resolve_mode(config, mode).ok()?;
        Some(Self {
            provider: resolved.provider_id,
            base_url: resolved.base_url,
        })
    }

    /// The host and port of the base URL, such as `127.0.0.1:8089`.
    pub fn host(&self) -> String {
        host_of(&self.base_url)
    }
}

/// `host:port` of `url`, or the URL itself when it does not parse.
pub fn host_of(url: &str) -> String {
    switchyard_api::providers::url_host(url).unwrap_or_else(|| url.to_owned())
}

/// The endpoint recorded for task `id`; older tasks have none.
pub async fn recorded(store: &dyn TaskStore, id: &str) -> Option<Endpoint> {
    let seq = store.last_event_of_kind(id, EVENT_KIND).await.ok()??;
    let events = store.events_from(id, seq).await.ok()?;
    let event = events.into_iter().find(|e| e.seq == seq)?;
    Some(Endpoint {
        provider: event.event["provider"].as_str()?.to_owned(),
        base_url: event.event["base_url"].as_str()?.to_owned(),
    })
}

/// Records `endpoint` for task `id` without an fsync of its own: the full commit of
/// `api_req_started` comes before any request is sent.
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
