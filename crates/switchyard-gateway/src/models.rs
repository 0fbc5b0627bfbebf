//! `GET /v1/models` and one model by its id: the routes and, unless
//! `serve.list_catalogue = false`, the catalogue's `provider/model` ids, in OpenAI's list shape,
//! Anthropic's for a request carrying `anthropic-version`, or a dialect's own; only those the
//! client's key may use.
//! Spec: R14.1, R14.3, R14.12.

use std::collections::BTreeSet;

use hyper::Request;
use hyper::body::Incoming;
use serde_json::{Value, json};
use switchyard_api::providers::preset;

use crate::auth::{Client, allow_model};
use crate::ingress::{Dialect, ModelEntry, percent_decoded};
use crate::refusal::Refusal;
use crate::request::{RouteError, Router};

/// The shape a listing is written in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    dialect: Dialect,
    anthropic: bool,
}

impl Shape {
    /// The shape for `request` on a path of `dialect`: a client that names its dialect by its
    /// headers, as Google's do by their key, gets that dialect's on a path dialects share.
    pub(crate) fn of(dialect: Dialect, request: &Request<Incoming>) -> Self {
        let headers = request.headers();
        let claimed = Dialect::claiming(headers, request.uri().query());
        Self {
            dialect: claimed.unwrap_or(dialect),
            anthropic: headers.contains_key("anthropic-version"),
        }
    }
}

/// The model ids a client may send, with who owns each: route names, but not globs, which
/// name no one model, then the catalogue's ids of the providers the presets know.
fn model_ids(router: &Router) -> Vec<(String, String)> {
    let mut ids: Vec<(String, String)> = router
        .route_names()
        .filter(|name| !name.contains('*'))
        .map(|name| (name.to_owned(), "switchyard".to_owned()))
        .collect();
    let config = router.config();
    if config.serve.list_catalogue {
        let catalogue: BTreeSet<(String, String)> = (config.catalogue().tables())
            .filter(|table| preset(&table.provider).is_some())
            .flat_map(|table| {
                let provider = &table.provider;
                let ids = table.models.keys();
                ids.map(move |id| (format!("{provider}/{id}"), provider.clone()))
            })
            .collect();
        ids.extend(catalogue);
    }
    ids
}

/// The list's JSON in `shape`, every model on one page.
pub(crate) fn list(router: &Router, shape: Shape, client: Option<&Client>) -> Value {
    let mut ids = model_ids(router);
    // A key limited to some models is shown those alone: a client that picks from the list
    // must not pick one it will be refused.
    if let Some(client) = client {
        ids.retain(|(id, _)| allow_model(client, id).is_ok());
    }
    if let Some(list) = shape.dialect.rules().model_list(&ids) {
        return list;
    }
    if shape.anthropic {
        let data: Vec<Value> = (ids.iter())
            .map(|(id, _)| json!({"type": "model", "id": id, "display_name": id}))
            .collect();
        let first = ids.first().map(|(id, _)| id);
        let last = ids.last().map(|(id, _)| id);
        json!({"data": data, "has_more": false, "first_id": first, "last_id": last})
    } else {
        let data: Vec<Value> = (ids.iter())
            .map(|(id, owner)| json!({"id": id, "object": "model", "owned_by": owner}))
            .collect();
        json!({"object": "list", "data": data})
    }
}

/// The model that `path`'s last `models/` names, in `shape`: a name that routes nowhere is the
/// router's 404, one the key may not use its 403.
pub(crate) fn one(
    router: &Router,
    shape: Shape,
    path: &str,
    client: Option<&Client>,
) -> Result<Value, Refusal> {
    let named = path.split_once("/models/").map_or("", |(_, id)| id);
    let id = percent_decoded(named);
    if let Some(client) = client {
        allow_model(client, &id)?;
    }
    let chain = router.chain(&id).map_err(RouteError::refusal)?;
    let info = chain.first().map(|e| e.handler.get_model().info);
    let owner = (model_ids(router).into_iter())
        .find(|(listed, _)| *listed == id)
        .map_or_else(|| "switchyard".to_owned(), |(_, owner)| owner);
    let entry = ModelEntry {
        id: &id,
        owner: &owner,
        input_limit: info.as_ref().map_or(0, |i| i.context_window),
        output_limit: info.as_ref().map_or(0, |i| i.max_tokens),
    };
    if let Some(one) = shape.dialect.rules().model_entry(&entry) {
        return Ok(one);
    }
    Ok(if shape.anthropic {
        json!({"type": "model", "id": id, "display_name": id})
    } else {
        json!({"id": id, "object": "model", "owned_by": owner})
    })
}
