//! The store's users as the dashboard meets them: a verified sign-in made a user with what their
//! groups grant, a sign-in that maps to no group disabling them, and the users page's rows.
//! Spec: R14.11b.

use serde_json::{Value, json};
use switchyard_core::store::{
    Actor, Budget, ClientKey, StoreError, TaskStore, read_budget, utc_text,
};

use crate::oidc::{Grant, Identity};
pub(crate) use switchyard_core::store::Role;
use switchyard_core::store::{SignIn, User, user_id};

/// A signed-in person as their groups mapped them at sign-in.
#[derive(Debug, Clone)]
pub(crate) struct Person {
    /// The store's user id.
    pub(crate) id: String,
    /// Email, else name, else subject.
    pub(crate) display: String,
    pub(crate) role: Role,
    pub(crate) team: Option<String>,
    /// Model globs their keys must stay within; empty: every model.
    pub(crate) models: Vec<String>,
}

/// Records the sign-in of `who` with what `grant` gives at `now_ms`: the user as stored.
pub(super) async fn sign_in(
    store: &dyn TaskStore,
    who: &Identity,
    grant: &Grant,
    (by, now_ms): (&Actor, i64),
) -> Result<Person, String> {
    // The budgets were read when the configuration was, so this cannot fail on a good one.
    let budget: Option<Budget> = match &grant.budget {
        Some(text) => Some(read_budget(text)?),
        None => None,
    };
    let signed = SignIn {
        issuer: who.issuer.clone(),
        subject: who.subject.clone(),
        email: who.email.clone(),
        name: who.name.clone(),
        role: grant.role,
        team: grant.team.clone(),
        models: grant.models.clone(),
        budget,
        at_ms: now_ms,
    };
    let user = (store.sign_in_user(&signed, by).await).map_err(|e| e.to_string())?;
    Ok(person(&user, who.display()))
}

/// Disables the user `who` names, if they signed in before: their keys stop working.
pub(super) async fn disable(
    store: &dyn TaskStore,
    who: &Identity,
    (by, now_ms): (&Actor, i64),
) -> Result<(), StoreError> {
    store
        .disable_user(&user_id(&who.issuer, &who.subject), now_ms, by)
        .await?;
    Ok(())
}

/// The session's view of `user`: what they may do now.
fn person(user: &User, display: String) -> Person {
    Person {
        id: user.id.clone(),
        display,
        role: user.role,
        team: user.team.clone(),
        models: user.models.clone(),
    }
}

/// Whether the user with `id` may still use the dashboard: they exist and are not disabled.
pub(super) async fn enabled(store: &dyn TaskStore, id: &str) -> bool {
    matches!(store.user(id).await, Ok(Some(u)) if u.disabled_ms.is_none())
}

/// The user id owning key `k`, if a person made it.
pub(super) fn owner(k: &ClientKey) -> Option<String> {
    k.owner.clone()
}

/// Every user for the users page, newest sign-in first.
pub(super) async fn list(store: &dyn TaskStore) -> Result<Value, StoreError> {
    let mut users = store.users().await?;
    users.sort_by_key(|u| std::cmp::Reverse(u.signed_in_ms));
    let shown: Vec<Value> = (users.iter())
        .map(|u| {
            json!({
                "id": u.id,
                "email": u.email,
                "name": u.name,
                "subject": u.subject,
                "role": u.role.as_str(),
                "team": u.team,
                "models": u.models,
                "budget": u.budget.map(|b| b.to_string()),
                "signed_in": utc_text(u.signed_in_ms),
                "disabled": u.disabled_ms.map(utc_text),
            })
        })
        .collect();
    Ok(json!({"users": shown}))
}
