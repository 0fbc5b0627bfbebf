//! The gateway's endpoints: every (method, path) it answers, and the dialect a path speaks.
//! This file holds only the routing table.
//! Spec: R14.1, R14.6, R14.9, R14.11.

use hyper::Method;

use crate::auth::Purpose;
use crate::ingress::Dialect;

/// What answers a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Completion(Dialect),
    CountTokens,
    Models,
    Metrics,
    Health,
    Ready,
    Dashboard,
    /// A path the gateway does not serve: the client's dialect's 404.
    Unknown,
}

/// The endpoints. A path under a completion's path speaks its dialect.
const TABLE: [(Method, &str, Endpoint); 8] = [
    (
        Method::POST,
        "/v1/chat/completions",
        Endpoint::Completion(Dialect::ChatCompletions),
    ),
    (
        Method::POST,
        "/v1/responses",
        Endpoint::Completion(Dialect::Responses),
    ),
    (
        Method::POST,
        "/v1/messages",
        Endpoint::Completion(Dialect::AnthropicMessages),
    ),
    (
        Method::POST,
        "/v1/messages/count_tokens",
        Endpoint::CountTokens,
    ),
    (Method::GET, "/v1/models", Endpoint::Models),
    (Method::GET, "/metrics", Endpoint::Metrics),
    (Method::GET, "/health", Endpoint::Health),
    (Method::GET, "/ready", Endpoint::Ready),
];

/// The dashboard's paths, whatever the method: it signs its users in itself.
const DASHBOARD: &str = "/ui";

/// Where a request goes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target {
    pub(crate) endpoint: Endpoint,
    /// The dialect the client speaks, by path: its refusals are written in it.
    pub(crate) dialect: Dialect,
    /// The key the door asks for, if any.
    pub(crate) door: Option<Purpose>,
}

/// Where `method` and `path` go. The door goes by path whatever the method, so a wrong method
/// on `/metrics` still needs an admin key.
pub(crate) fn find(method: &Method, path: &str) -> Target {
    let dashboard = path == DASHBOARD
        || path
            .strip_prefix(DASHBOARD)
            .is_some_and(|p| p.starts_with('/'));
    let endpoint = if dashboard {
        Endpoint::Dashboard
    } else {
        let found = TABLE.iter().find(|(m, p, _)| m == method && *p == path);
        found.map_or(Endpoint::Unknown, |(_, _, endpoint)| *endpoint)
    };
    let door = match path {
        _ if dashboard => None,
        "/health" | "/ready" => None,
        "/metrics" => Some(Purpose::Admin),
        _ => Some(Purpose::Client),
    };
    Target {
        endpoint,
        dialect: dialect_of(path),
        door,
    }
}

/// The dialect of the completion path `path` is under, else Chat Completions.
fn dialect_of(path: &str) -> Dialect {
    let under = TABLE.iter().filter_map(|(_, p, endpoint)| match endpoint {
        Endpoint::Completion(dialect) if path.starts_with(p) => Some((p.len(), *dialect)),
        _ => None,
    });
    under
        .max_by_key(|(len, _)| *len)
        .map_or(Dialect::ChatCompletions, |(_, d)| d)
}
