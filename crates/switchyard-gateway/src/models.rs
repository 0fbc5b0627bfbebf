//! `GET /v1/models`: the routes and, unless `serve.list_catalogue = false`, the catalogue's
//! `provider/model` ids, in OpenAI's list shape or, for a request carrying
//! `anthropic-version`, Anthropic's.
//! Spec: R14.1, R14.3.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use switchyard_api::providers::preset;

use crate::request::Router;

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

/// The list's JSON in OpenAI's shape, or with `anthropic` in Anthropic's, every model on one
/// page.
pub(crate) fn list(router: &Router, anthropic: bool) -> Value {
    let ids = model_ids(router);
    if anthropic {
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
