//! The `[serve]` section: what `switchyard serve` listens on, its routes and its limits.
//! Spec: R14.3, R14.4, R14.9, R14.10, R14.11.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::ConfigError;
use super::mode::FallbackSettings;
use super::oidc::OidcSettings;

/// The per-request deadline when `serve.request_deadline` is not set, because clients time out.
pub const DEFAULT_REQUEST_DEADLINE_SECONDS: u64 = 120;

pub const DEFAULT_IDLE_TIMEOUT_SECONDS: u64 = 60;

pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

pub const DEFAULT_REQUEST_LOG_DAYS: u64 = 90;

/// Days of the audit log kept when `serve.audit_log_days` is not set: a year and a month, so a
/// yearly review finds the whole year.
pub const DEFAULT_AUDIT_LOG_DAYS: u64 = 400;

/// Seconds a request's body may take to arrive, from the end of its head.
pub const DEFAULT_BODY_TIMEOUT_SECONDS: u64 = 30;

/// Seconds an upstream answer may go without a chunk once its content started: under the
/// 300 s after which Claude Code and Codex give up on a silent stream themselves.
pub const DEFAULT_CHUNK_TIMEOUT_SECONDS: u64 = 120;

pub const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS: usize = 256;

/// MiB of memory the requests being parsed at once may take together.
pub const DEFAULT_PARSE_MEMORY_MIB: u64 = 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServeSettings {
    /// The address to listen on, `HOST:PORT`; the command line's `--listen` wins.
    pub listen: Option<String>,
    /// The longest wait in seconds for a request's first content, across retries and fallbacks.
    pub request_deadline: Option<u64>,
    pub idle_timeout: Option<u64>,
    /// Seconds a client may take to send a request's head from its first byte; default 30.
    pub header_timeout: Option<u64>,
    /// How many client connections may be open at once; one more is closed when accepted.
    pub max_connections: Option<usize>,
    /// How many of them one client address may hold.
    pub max_connections_per_address: Option<usize>,
    /// Seconds a request's body may take to arrive; default 30.
    pub body_timeout: Option<u64>,
    /// Seconds an upstream answer may go silent once its content started; default 120.
    pub chunk_timeout: Option<u64>,
    /// MiB the requests being parsed at once may take together; default 1024.
    pub parse_memory_mib: Option<u64>,
    /// Days of the request log to keep, pruned at start and hourly.
    pub request_log_days: Option<u64>,
    /// Days of the audit log to keep, pruned at start and hourly.
    pub audit_log_days: Option<u64>,
    /// Whether `GET /v1/models` lists every catalogue `provider/model` besides the routes.
    pub list_catalogue: bool,
    /// Whether to trust the forwarding headers a proxy in front sets: only when every client comes
    /// through it, since a direct client could write them itself.
    pub trust_forwarded_headers: bool,
    /// Whether the dashboard's session cookie is always `Secure`, behind an HTTPS proxy.
    pub secure_cookie: bool,
    /// How keyed requests are admitted.
    pub admission: AdmissionMode,
    /// `[serve.routes.NAME]`: a model name or `*` glob that clients send.
    pub routes: BTreeMap<String, RouteSettings>,
    /// `[serve.oidc]`: single sign-on to the dashboard.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oidc: Option<OidcSettings>,
}

/// How `serve` admits a keyed request against its budgets and per-minute limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdmissionMode {
    /// Against slices of each budget this process leases from the store, in memory.
    #[default]
    Leased,
    /// One hold in the store per request: exact to the cent across processes, one store
    /// write on each request's path.
    PerRequest,
}

impl Default for ServeSettings {
    fn default() -> Self {
        Self {
            listen: None,
            request_deadline: None,
            idle_timeout: None,
            header_timeout: None,
            max_connections: None,
            max_connections_per_address: None,
            body_timeout: None,
            chunk_timeout: None,
            parse_memory_mib: None,
            request_log_days: None,
            audit_log_days: None,
            list_catalogue: true,
            trust_forwarded_headers: false,
            secure_cookie: false,
            admission: AdmissionMode::default(),
            routes: BTreeMap::new(),
            oidc: None,
        }
    }
}

impl ServeSettings {
    /// [`ConfigError::Limit`] for a setting of 0 that would stop the server working.
    pub(super) fn check(&self, file: &str) -> Result<(), ConfigError> {
        for (name, value) in [
            ("idle_timeout", self.idle_timeout),
            ("header_timeout", self.header_timeout),
            ("max_connections", self.max_connections.map(|n| n as u64)),
            (
                "max_connections_per_address",
                self.max_connections_per_address.map(|n| n as u64),
            ),
            ("body_timeout", self.body_timeout),
            ("chunk_timeout", self.chunk_timeout),
            ("parse_memory_mib", self.parse_memory_mib),
            ("request_log_days", self.request_log_days),
            ("audit_log_days", self.audit_log_days),
        ] {
            if value == Some(0) {
                return Err(ConfigError::Limit {
                    file: file.to_owned(),
                    setting: format!("[serve] {name}"),
                    value: "0".to_owned(),
                    what: "write at least 1, or leave it out for the default".to_owned(),
                });
            }
        }
        if let Some(oidc) = &self.oidc {
            oidc.check(file)?;
        }
        for (name, route) in &self.routes {
            if let Some(usd) = route.reserve_usd.filter(|u| !u.is_finite() || *u < 0.0) {
                return Err(ConfigError::Limit {
                    file: file.to_owned(),
                    setting: format!("[serve.routes.{name}] reserve_usd"),
                    value: usd.to_string(),
                    what: "write an amount in USD of 0 or more".to_owned(),
                });
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RouteSettings {
    pub provider: String,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// The route's reasoning effort when the client sets none.
    pub reasoning_effort: Option<String>,
    pub thinking_budget_tokens: u64,
    /// What a keyed request reserves against its budgets in USD where prices are unknown; else
    /// `serve --reserve-usd`, else $0.05.
    pub reserve_usd: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<FallbackSettings>,
}

#[cfg(test)]
mod tests {
    use crate::ApiConfiguration;

    #[test]
    fn the_serve_section_is_read_and_a_misspelt_field_is_refused() {
        let text = "[serve]\nlisten = \"127.0.0.1:9000\"\nrequest_deadline = 30\n\
                    list_catalogue = false\n[serve.routes.\"claude-*\"]\nprovider = \"openai\"\n\
                    model = \"gpt-4o\"\n[[serve.routes.\"claude-*\".fallbacks]]\nprovider = \"deepseek\"\n";
        let config = ApiConfiguration::from_toml(text, "c.toml", |_| None).unwrap();
        let serve = &config.serve;
        assert_eq!(serve.listen.as_deref(), Some("127.0.0.1:9000"));
        assert_eq!(
            (serve.request_deadline, serve.list_catalogue),
            (Some(30), false)
        );
        let route = &serve.routes["claude-*"];
        assert_eq!(
            (route.provider.as_str(), route.model.as_deref()),
            ("openai", Some("gpt-4o"))
        );
        assert_eq!(route.fallbacks[0].provider.as_deref(), Some("deepseek"));
        assert!(
            ApiConfiguration::from_toml("", "c.toml", |_| None)
                .unwrap()
                .serve
                .list_catalogue
        );
        let wrong = "[serve.routes.x]\nprovider = \"openai\"\nmodle = \"gpt-4o\"\n";
        let e = ApiConfiguration::from_toml(wrong, "c.toml", |_| None).unwrap_err();
        assert!(e.to_string().contains("modle"), "{e}");
    }

    #[test]
    fn the_connection_limits_are_read_and_zero_is_refused() {
        let text = "[serve]\nidle_timeout = 5\nmax_connections = 16\n";
        let config = ApiConfiguration::from_toml(text, "c.toml", |_| None).unwrap();
        assert_eq!(
            (config.serve.idle_timeout, config.serve.max_connections),
            (Some(5), Some(16))
        );
        let unset = ApiConfiguration::from_toml("", "c.toml", |_| None).unwrap();
        assert_eq!(
            (unset.serve.idle_timeout, unset.serve.max_connections),
            (None, None)
        );
        let text = "[serve]\nrequest_log_days = 7\n[serve.routes.x]\nprovider = \"openai\"\nreserve_usd = 0.2\n";
        let config = ApiConfiguration::from_toml(text, "c.toml", |_| None).unwrap();
        assert_eq!(config.serve.request_log_days, Some(7));
        assert_eq!(config.serve.routes["x"].reserve_usd, Some(0.2));
        let negative = "[serve.routes.x]\nprovider = \"openai\"\nreserve_usd = -1.0\n";
        let e = ApiConfiguration::from_toml(negative, "c.toml", |_| None).unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("[serve.routes.x] reserve_usd = -1") && e.contains("0 or more"),
            "{e}"
        );
        for (text, named) in [
            (
                "[serve]\nrequest_log_days = 0\n",
                "[serve] request_log_days = 0",
            ),
            (
                "[serve]\naudit_log_days = 0\n",
                "[serve] audit_log_days = 0",
            ),
            (
                "[serve]\nheader_timeout = 0\n",
                "[serve] header_timeout = 0",
            ),
            ("[serve]\nidle_timeout = 0\n", "[serve] idle_timeout = 0"),
            (
                "[serve]\nmax_connections = 0\n",
                "[serve] max_connections = 0",
            ),
            ("[serve]\nbody_timeout = 0\n", "[serve] body_timeout = 0"),
            ("[serve]\nchunk_timeout = 0\n", "[serve] chunk_timeout = 0"),
            (
                "[serve]\nmax_connections_per_address = 0\n",
                "[serve] max_connections_per_address = 0",
            ),
        ] {
            let e = ApiConfiguration::from_toml(text, "c.toml", |_| None).unwrap_err();
            let e = e.to_string();
            assert!(e.contains(named) && e.contains("at least 1"), "{e}");
        }
        let negative = "[serve]\nmax_connections = -1\n";
        assert!(ApiConfiguration::from_toml(negative, "c.toml", |_| None).is_err());
    }

    #[test]
    fn the_key_variable_a_routes_fallback_names_is_read_with_the_file() {
        let text = "[serve.routes.fast]\nprovider = \"openai\"\n\
                    [[serve.routes.fast.fallbacks]]\nprovider = \"deepseek\"\n\
                    api_key_env = \"MY_DEEPSEEK_KEY\"\n";
        let env = |k: &str| (k == "MY_DEEPSEEK_KEY").then(|| "sk-route-fallback".to_owned());
        let config = ApiConfiguration::from_toml(text, "c.toml", env).unwrap();
        let key = &config.providers.api_keys["MY_DEEPSEEK_KEY"];
        assert_eq!(key.expose(), "sk-route-fallback");
    }
}
