//! TEMPORARY: the users store API of USERS.md in memory, until the users branch is merged.
//! Never committed.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use switchyard_core::store::{Actor, Budget, StoreError, TaskStore};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Admin,
    Member,
    Viewer,
}

impl Role {
    pub fn parse(text: &str) -> Option<Self> {
        [Self::Admin, Self::Member, Self::Viewer]
            .into_iter()
            .find(|r| r.as_str().eq_ignore_ascii_case(text.trim()))
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Admin => "admin",
            Self::Member => "member",
            Self::Viewer => "viewer",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct User {
    pub id: String,
    pub issuer: String,
    pub subject: String,
    pub email: Option<String>,
    pub name: Option<String>,
    pub role: Role,
    pub team: Option<String>,
    pub models: Vec<String>,
    pub budget: Option<Budget>,
    pub created_ms: i64,
    pub signed_in_ms: i64,
    pub disabled_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SignIn {
    pub issuer: String,
    pub subject: String,
    pub email: Option<String>,
    pub name: Option<String>,
    pub role: Role,
    pub team: Option<String>,
    pub models: Vec<String>,
    pub budget: Option<Budget>,
    pub at_ms: i64,
}

pub fn user_id(issuer: &str, subject: &str) -> String {
    let mut h: u64 = 1469598103934665603;
    for b in format!("{issuer}\n{subject}").bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(1099511628211);
    }
    format!("usr_{h:016x}")
}

fn users_map() -> &'static Mutex<HashMap<String, User>> {
    static M: OnceLock<Mutex<HashMap<String, User>>> = OnceLock::new();
    M.get_or_init(Default::default)
}

fn owners() -> &'static Mutex<HashMap<String, String>> {
    static M: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    M.get_or_init(Default::default)
}

pub async fn sign_in_user(
    _store: &dyn TaskStore,
    s: &SignIn,
    _by: &Actor,
) -> Result<User, StoreError> {
    let id = user_id(&s.issuer, &s.subject);
    let mut m = users_map().lock().unwrap();
    let created = m.get(&id).map_or(s.at_ms, |u| u.created_ms);
    let u = User {
        id: id.clone(),
        issuer: s.issuer.clone(),
        subject: s.subject.clone(),
        email: s.email.clone(),
        name: s.name.clone(),
        role: s.role,
        team: s.team.clone(),
        models: s.models.clone(),
        budget: s.budget,
        created_ms: created,
        signed_in_ms: s.at_ms,
        disabled_ms: None,
    };
    m.insert(id, u.clone());
    Ok(u)
}

pub async fn disable_user(
    _store: &dyn TaskStore,
    id: &str,
    at: i64,
    _by: &Actor,
) -> Result<bool, StoreError> {
    let mut m = users_map().lock().unwrap();
    Ok(m.get_mut(id).map(|u| u.disabled_ms = Some(at)).is_some())
}

pub async fn users(_store: &dyn TaskStore) -> Result<Vec<User>, StoreError> {
    Ok(users_map().lock().unwrap().values().cloned().collect())
}

pub async fn user(_store: &dyn TaskStore, id: &str) -> Result<Option<User>, StoreError> {
    Ok(users_map().lock().unwrap().get(id).cloned())
}

pub fn owner_of(key_id: &str) -> Option<String> {
    owners().lock().unwrap().get(key_id).cloned()
}

pub fn set_owner(key_id: &str, owner: &str) {
    owners()
        .lock()
        .unwrap()
        .insert(key_id.to_owned(), owner.to_owned());
}
