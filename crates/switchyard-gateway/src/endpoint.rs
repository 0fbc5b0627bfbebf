//! The gateway's endpoints: every (method, path) it answers, and the dialect a path speaks.
//! This file holds only the routing table.
//! Spec: R14.1, R14.1b, R14.6, R14.9, R14.11.

use hyper::Method;

use crate::auth::Purpose;
use crate::ingress::Dialect;

/// What answers a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Completion(Dialect),
    CountTokens(Dialect),
    Models,
    /// One model, named in the path.
    Model,
    Metrics,
    Health,
    Ready,
    Dashboard,
    /// A Responses WebSocket: `GET` with `Upgrade: websocket` on the Responses path.
    ResponsesSocket,
    /// A path the gateway does not serve: the client's dialect's 404.
    Unknown,
}

/// Where a table path names the model, which runs to the text after it.
const MODEL: &str = "{model}";

/// The endpoints. A path under a completion's path speaks its dialect.
const TABLE: [(Method, &str, Endpoint); 21] = [
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
    (Method::GET, "/v1/responses", Endpoint::ResponsesSocket),
    (
        Method::POST,
        "/v1/messages",
        Endpoint::Completion(Dialect::AnthropicMessages),
    ),
    (
        Method::POST,
        "/v1/messages/count_tokens",
        Endpoint::CountTokens(Dialect::AnthropicMessages),
    ),
    (Method::GET, "/v1/models", Endpoint::Models),
    (Method::GET, "/metrics", Endpoint::Metrics),
    (Method::GET, "/health", Endpoint::Health),
    (Method::HEAD, "/health", Endpoint::Health),
    // Claude Code probes its base URL with this before its first request, as Anthropic's
    // API answers it; a 404 there fills a gateway's log with noise.
    (Method::HEAD, "/api/hello", Endpoint::Health),
    (Method::GET, "/api/hello", Endpoint::Health),
    (Method::GET, "/ready", Endpoint::Ready),
    (
        Method::POST,
        "/v1beta/models/{model}:generateContent",
        Endpoint::Completion(Dialect::Gemini),
    ),
    (
        Method::POST,
        "/v1beta/models/{model}:streamGenerateContent",
        Endpoint::Completion(Dialect::Gemini),
    ),
    (
        Method::POST,
        "/v1beta/models/{model}:countTokens",
        Endpoint::CountTokens(Dialect::Gemini),
    ),
    (Method::GET, "/v1beta/models", Endpoint::Models),
    (Method::GET, "/v1beta/models/{model}", Endpoint::Model),
    (
        Method::POST,
        "/v1/models/{model}:generateContent",
        Endpoint::Completion(Dialect::Gemini),
    ),
    (
        Method::POST,
        "/v1/models/{model}:streamGenerateContent",
        Endpoint::Completion(Dialect::Gemini),
    ),
    (
        Method::POST,
        "/v1/models/{model}:countTokens",
        Endpoint::CountTokens(Dialect::Gemini),
    ),
    (Method::GET, "/v1/models/{model}", Endpoint::Model),
];

/// Path prefixes that speak one dialect whatever follows: all of Google's `v1beta`, also under
/// the `/v1` a Gemini client was wrongly given as its base URL.
const PREFIXES: [(&str, Dialect); 2] = [
    ("/v1beta/", Dialect::Gemini),
    ("/v1/v1beta/", Dialect::Gemini),
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
        let found = TABLE
            .iter()
            .find(|(m, p, _)| m == method && matches(p, path));
        found.map_or(Endpoint::Unknown, |(_, _, endpoint)| *endpoint)
    };
    let door = match path {
        _ if dashboard => None,
        "/health" | "/ready" | "/api/hello" => None,
        "/metrics" => Some(Purpose::Admin),
        _ => Some(Purpose::Client),
    };
    Target {
        endpoint,
        dialect: dialect_of(path),
        door,
    }
}

/// Whether `path` is the table's `pattern`: the same text, a model of one or more characters
/// standing for `{model}`.
fn matches(pattern: &str, path: &str) -> bool {
    match pattern.split_once(MODEL) {
        None => pattern == path,
        Some((head, tail)) => path
            .strip_prefix(head)
            .and_then(|rest| rest.strip_suffix(tail))
            .is_some_and(|model| !model.is_empty()),
    }
}

/// The dialect of the completion path `path` is under, or matches when the path names a model;
/// else Chat Completions.
fn dialect_of(path: &str) -> Dialect {
    let under = TABLE.iter().filter_map(|(_, p, endpoint)| match endpoint {
        Endpoint::Completion(dialect) | Endpoint::CountTokens(dialect) => {
            let under = if p.contains(MODEL) {
                matches(p, path)
            } else {
                path.starts_with(p)
            };
            under.then_some((p.len(), *dialect))
        }
        _ => None,
    });
    let prefixed = (PREFIXES.iter())
        .filter(|(prefix, _)| path.starts_with(prefix))
        .map(|(prefix, dialect)| (prefix.len(), *dialect));
    under
        .chain(prefixed)
        .max_by_key(|(len, _)| *len)
        .map_or(Dialect::ChatCompletions, |(_, d)| d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_in_the_path_matches_its_pattern_and_speaks_gemini() {
        let post = |path| find(&Method::POST, path);
        let target = post("/v1beta/models/gemini-2.5-pro:streamGenerateContent");
        assert_eq!(target.endpoint, Endpoint::Completion(Dialect::Gemini));
        let target = post("/v1/models/anthropic/claude-sonnet-4-5:generateContent");
        assert_eq!(target.endpoint, Endpoint::Completion(Dialect::Gemini));
        let target = post("/v1beta/models/m:countTokens");
        assert_eq!(target.endpoint, Endpoint::CountTokens(Dialect::Gemini));
        let empty = post("/v1beta/models/:generateContent");
        assert_eq!(
            (empty.endpoint, empty.dialect),
            (Endpoint::Unknown, Dialect::Gemini)
        );
        let get = find(&Method::GET, "/v1beta/models/gemini-2.5-pro");
        assert_eq!(
            (get.endpoint, get.dialect),
            (Endpoint::Model, Dialect::Gemini)
        );
        // OpenAI's own paths keep their dialect.
        let models = find(&Method::GET, "/v1/models/gpt-4o");
        assert_eq!(
            (models.endpoint, models.dialect),
            (Endpoint::Model, Dialect::ChatCompletions)
        );
        let count = post("/v1/messages/count_tokens");
        assert_eq!(
            count.endpoint,
            Endpoint::CountTokens(Dialect::AnthropicMessages)
        );
        assert_eq!(
            post("/v1/chat/completions/x").dialect,
            Dialect::ChatCompletions
        );
    }
}
