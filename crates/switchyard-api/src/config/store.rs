//! Settings the file carries for the task layer: the task store's URL and the `[limits]`.
//! Spec: R13.1, R12.2, R10.5.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// The `store` setting, whose `Debug` and `Display` hide a database password.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct StoreUrl(Arc<str>);

impl StoreUrl {
    pub fn new(url: impl Into<String>) -> Self {
        Self(Arc::from(url.into()))
    }

    /// The setting itself, credentials included, for the database client only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some((scheme, rest)) = self.0.split_once("://") else {
            return f.write_str(&self.0);
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        // A query string can hold `password=…` too: left out.
        let path = path.split('?').next().unwrap_or("");
        match authority.rsplit_once('@') {
            Some((user, host)) => {
                let user = user.split(':').next().unwrap_or("");
                write!(f, "{scheme}://{user}:…@{host}{path}")
            }
            None => write!(f, "{scheme}://{authority}{path}"),
        }
    }
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreUrl({self})")
    }
}

impl<'de> Deserialize<'de> for StoreUrl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        if raw.trim().is_empty() {
            return Err(serde::de::Error::custom(
                "`store` is empty: write \"postgres://user@host:5432/db\" or \"sqlite:/path/to/switchyard.db\", or leave it out for the data directory's SQLite file",
            ));
        }
        Ok(Self::new(raw))
    }
}

/// The `[limits]` section: spend caps in USD and the size bounds of one streamed answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsSettings {
    /// What one task may spend; the `--max-cost` flag overrides it.
    pub max_cost_usd: Option<f64>,
    /// What all tasks on the task store together may spend in one UTC day.
    pub max_cost_usd_per_day: Option<f64>,
    pub max_tool_arguments_bytes: Option<u64>,
    pub max_answer_bytes: Option<u64>,
    /// The most bytes of one line, event or frame of a streamed response.
    pub max_line_bytes: Option<u64>,
}

impl LimitsSettings {
    pub fn stream_bounds(&self) -> crate::stream_guard::StreamBounds {
        let defaults = crate::stream_guard::StreamBounds::default();
        let bytes = |set: Option<u64>, default: usize| {
            set.map_or(default, |b| usize::try_from(b).unwrap_or(usize::MAX))
        };
        crate::stream_guard::StreamBounds {
            max_tool_arguments_bytes: bytes(
                self.max_tool_arguments_bytes,
                defaults.max_tool_arguments_bytes,
            ),
            max_answer_bytes: bytes(self.max_answer_bytes, defaults.max_answer_bytes),
            max_line_bytes: bytes(self.max_line_bytes, defaults.max_line_bytes),
        }
    }
}
