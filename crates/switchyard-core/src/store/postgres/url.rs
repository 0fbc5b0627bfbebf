//! Store URLs shown without their secrets, and the client's errors in one line.
//! Spec: R10.5.

use std::str::FromStr;

use crate::store::StoreError;

/// Whether `s` names a PostgreSQL store (`postgres://…` or `postgresql://…`).
pub fn is_postgres_url(s: &str) -> bool {
    let lower = s.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// `url` without its password or query string, for messages.
pub fn redact_url(url: &str) -> String {
    let Ok(config) = tokio_postgres::Config::from_str(url) else {
        // Not parseable: keep the scheme only, anything after it may hold a secret.
        return url.split("://").next().unwrap_or("postgres").to_owned() + "://…";
    };
    location_of(&config)
}

/// The server, port, user and database of `config`, never its password.
pub(super) fn location_of(config: &tokio_postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(h) => h.clone(),
            #[cfg(unix)]
            tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or("");
    format!("postgres://{user}{host}:{port}/{db}")
}

/// `e` and its causes in one line, since the client's `Display` says only "db error".
pub(super) fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(e);
    while let Some(err) = next {
        let text = err.to_string().replace('\n', "; ");
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = err.source();
    }
    parts.join(": ")
}

/// `e` as a [`StoreError`] of the store at `location`, a full disk as SQLite's.
pub(super) fn store_error(location: &str, e: tokio_postgres::Error) -> StoreError {
    if e.code() == Some(&tokio_postgres::error::SqlState::DISK_FULL) {
        return StoreError::DiskFull {
            location: location.to_owned(),
        };
    }
    StoreError::Backend {
        location: location.to_owned(),
        source: describe(&e).into(),
    }
}
