//! The proxy a provider's requests go through, never shown with its password.
//! Spec: R12.4.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub enum Proxy {
    /// The proxy environment variables, as curl reads them.
    #[default]
    Environment,
    /// No proxy, whatever the environment says.
    Off,
    /// This proxy; `NO_PROXY` still exempts hosts.
    Url(ProxyUrl),
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Environment => f.write_str("Environment"),
            Self::Off => f.write_str("Off"),
            Self::Url(url) => write!(f, "Url({url})"),
        }
    }
}

impl fmt::Display for Proxy {
    /// `environment`, `none`, or the URL with any password hidden.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Environment => f.write_str("environment"),
            Self::Off => f.write_str("none"),
            Self::Url(url) => url.fmt(f),
        }
    }
}

impl<'de> Deserialize<'de> for Proxy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        let raw = raw.trim();
        if raw.eq_ignore_ascii_case("none") {
            return Ok(Self::Off);
        }
        ProxyUrl::new(raw).map(Self::Url).ok_or_else(|| {
            serde::de::Error::custom(
                "`proxy` must be an http:// or https:// URL (http://host:port), or \"none\"",
            )
        })
    }
}

impl Serialize for Proxy {
    /// As `Display` writes it, so that a password is never serialized.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A proxy URL whose `Debug` and `Display` replace a password with `…`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ProxyUrl(Arc<str>);

impl ProxyUrl {
    pub fn new(url: &str) -> Option<Self> {
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))?;
        let authority = rest.split('/').next().unwrap_or("");
        let host = authority.rsplit('@').next().unwrap_or("");
        (!host.is_empty() && !url.contains(char::is_whitespace)).then(|| Self(Arc::from(url)))
    }

    /// The URL itself, credentials included, for the HTTP client only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ProxyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (scheme, rest) = self.0.split_once("://").unwrap_or(("", &self.0));
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        match authority.rsplit_once('@') {
            Some((user, host)) => {
                let user = user.split(':').next().unwrap_or("");
                write!(f, "{scheme}://{user}:…@{host}{path}")
            }
            None => f.write_str(&self.0),
        }
    }
}

impl fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProxyUrl({self})")
    }
}
