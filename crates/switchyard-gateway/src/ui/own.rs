//! A member's or viewer's own page: their keys and budget. A member changes only their own
//! keys, in their team and within their models; a viewer none. Another's key does not exist.
//! Spec: R14.11b.

use serde_json::{Value, json};
use switchyard_core::store::{Actor, StoreError, TaskStore};

use super::people::Role;

use super::keys;
use super::people::Person;

/// `POST /ui/api/{path}` with `body` by the member or viewer `p`: the answer, or its status and
/// sentence.
pub(super) async fn change(
    store: &dyn TaskStore,
    path: &str,
    body: &[u8],
    (by, now): (&Actor, i64),
    p: &Person,
) -> Result<Value, (u16, String)> {
    if p.role == Role::Viewer {
        return Err((
            403,
            "A viewer changes nothing: ask an administrator for the member role.".to_owned(),
        ));
    }
    let parts: Vec<&str> = path.split('/').collect();
    let id = match parts.as_slice() {
        ["keys"] => {
            let new = serde_json::from_slice(body)
                .map_err(|e| (400, format!("The new key's fields could not be read: {e}.")))?;
            return keys::create(store, new, (by, now), Some(p))
                .await
                .map_err(|e| (400, e));
        }
        ["keys", id, "update" | "revoke" | "rotate"] => *id,
        _ => return Err((403, "A member changes only their own keys.".to_owned())),
    };
    let mine = keys::owned(store, id, p)
        .await
        .map_err(|e| (503, e.to_string()))?;
    if !mine {
        return Err((404, "You have no such key.".to_owned()));
    }
    let done = match parts[2] {
        "update" => match serde_json::from_slice(body) {
            Ok(edit) => keys::update(store, id, edit, (by, now), Some(p)).await,
            Err(e) => Err(format!("The key's new fields could not be read: {e}.")),
        },
        "revoke" => keys::revoke(store, id, (by, now)).await,
        _ => keys::rotate(store, id, (by, now)).await,
    };
    done.map_err(|e| (400, e))
}

/// `p`'s keys as the keys page lists them, and `you`: their id, name and budget as stored now.
pub(super) async fn keys(store: &dyn TaskStore, now: i64, p: &Person) -> Result<Value, StoreError> {
    let mut listed = keys::list(store, now, Some(p)).await?;
    let budget = match store.user(&p.id).await? {
        Some(u) => keys::user_budget_use(store, &u, now).await?,
        None => Value::Null,
    };
    listed["you"] = json!({"id": p.id, "display": p.display, "budget": budget});
    Ok(listed)
}
