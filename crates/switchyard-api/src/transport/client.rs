//! The HTTP clients built from providers' connection settings, one per set of equal settings.
//! Spec: R12.4, R3.5.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError, Weak};

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

use super::streaming::{self, Streaming};
use crate::config::{HttpSettings, Proxy};
use crate::error::body::innermost;

/// What makes two clients interchangeable: the settings, and whether TLS is set up at all.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ClientKey {
    settings: HttpSettings,
    /// False for `http://` base URLs: no certificate is ever loaded for them.
    tls: bool,
}

/// The clients alive in this process; providers with equal settings share one connection pool.
static CLIENTS: LazyLock<Mutex<HashMap<ClientKey, Weak<HttpClient>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The HTTP clients for one set of settings, the streaming one and reqwest's, each built on first
/// use so that building a handler makes no request and loads no certificate.
pub(crate) struct HttpClient {
    key: ClientKey,
    /// Extra roots from the `ca_bundle` file, read when the handler was built.
    extra_roots: Vec<CertificateDer<'static>>,
    client: OnceLock<Result<reqwest::Client, String>>,
    streaming: OnceLock<Result<Streaming, String>>,
    /// Built with the first client, so the platform's roots are read once.
    tls: OnceLock<Result<rustls::ClientConfig, String>>,
}

impl HttpClient {
    /// The client for `settings` and `base_url`: the one alive for equal settings, or a new one.
    /// The CA bundle is read now, so a bad file is a configuration error before any request.
    pub(crate) fn shared(settings: &HttpSettings, base_url: &str) -> Result<Arc<Self>, String> {
        // TLS is needed for an https:// base URL, and for an https:// proxy whatever the URL.
        let https_proxy =
            matches!(&settings.proxy, Proxy::Url(url) if url.expose().starts_with("https://"));
        let key = ClientKey {
            settings: settings.clone(),
            tls: !base_url.starts_with("http://") || https_proxy,
        };
        let mut clients = CLIENTS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = clients.get(&key).and_then(Weak::upgrade) {
            return Ok(client);
        }
        let extra_roots = match (&key.settings.ca_bundle, key.tls) {
            (Some(path), true) => read_ca_bundle(path)?,
            _ => Vec::new(),
        };
        let client = Arc::new(Self {
            key: key.clone(),
            extra_roots,
            client: OnceLock::new(),
            streaming: OnceLock::new(),
            tls: OnceLock::new(),
        });
        clients.retain(|_, c| c.strong_count() > 0);
        clients.insert(key, Arc::downgrade(&client));
        Ok(client)
    }

    pub(crate) fn get(&self) -> Result<&reqwest::Client, String> {
        self.client
            .get_or_init(|| self.build())
            .as_ref()
            .map_err(Clone::clone)
    }

    pub(super) fn streaming(&self) -> Result<&Streaming, String> {
        self.streaming
            .get_or_init(|| Streaming::new(&self.key.settings, || self.tls_config()))
            .as_ref()
            .map_err(Clone::clone)
    }

    fn tls_config(&self) -> Result<rustls::ClientConfig, String> {
        self.tls
            .get_or_init(|| streaming::tls_config(self.key.tls, &self.extra_roots))
            .clone()
    }

    fn build(&self) -> Result<reqwest::Client, String> {
        let settings = &self.key.settings;
        let mut builder = reqwest::Client::builder()
            .tcp_nodelay(true)
            .user_agent(streaming::USER_AGENT);
        if let Some(timeout) = settings.connect_timeout {
            builder = builder.connect_timeout(timeout);
        }
        builder = match &settings.proxy {
            // reqwest reads HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY by default.
            Proxy::Environment => builder,
            Proxy::Off => builder.no_proxy(),
            Proxy::Url(url) => {
                let proxy = reqwest::Proxy::all(url.expose())
                    .map_err(|_| format!("the proxy {url} is not a usable proxy URL"))?
                    .no_proxy(reqwest::NoProxy::from_env());
                builder.proxy(proxy)
            }
        };
        builder = builder.tls_backend_preconfigured(self.tls_config()?);
        builder.build().map_err(|e| {
            format!(
                "could not set up the HTTP client ({}); check the proxy and ca_bundle settings and that the system has CA certificates",
                innermost(&e)
            )
        })
    }
}

/// The certificates of a PEM file of one or more `CERTIFICATE` blocks.
fn read_ca_bundle(path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = std::fs::read(path)
        .map_err(|e| format!("cannot read the CA bundle {}: {e}", path.display()))?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            format!(
                "the CA bundle {} is not a PEM file of certificates ({e})",
                path.display(),
            )
        })?;
    if certs.is_empty() {
        return Err(format!(
            "the CA bundle {} holds no PEM certificate",
            path.display()
        ));
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn clients_are_shared_by_equal_settings_and_scheme() {
        let settings = HttpSettings::default();
        let a = HttpClient::shared(&settings, "https://api.example.com/v1").unwrap();
        let b = HttpClient::shared(&settings, "https://other.example.com").unwrap();
        assert!(Arc::ptr_eq(&a, &b), "equal settings share one client");
        let plain = HttpClient::shared(&settings, "http://127.0.0.1:8089/v1").unwrap();
        assert!(
            !Arc::ptr_eq(&a, &plain),
            "http:// gets its own client, without TLS roots"
        );
        assert!(!plain.key.tls);
        let via_https_proxy = HttpSettings {
            proxy: Proxy::Url(crate::config::ProxyUrl::new("https://proxy.corp:3128").unwrap()),
            ..HttpSettings::default()
        };
        let proxied = HttpClient::shared(&via_https_proxy, "http://127.0.0.1:8089/v1").unwrap();
        assert!(proxied.key.tls, "an https:// proxy needs the roots");
        let other = HttpSettings {
            connect_timeout: Some(Duration::from_secs(1)),
            ..HttpSettings::default()
        };
        let c = HttpClient::shared(&other, "https://api.example.com/v1").unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        // A client lives while a handler holds it; then the next one is built afresh.
        drop((a, b));
        let d = HttpClient::shared(&settings, "https://api.example.com/v1").unwrap();
        assert!(
            d.client.get().is_none() && d.streaming.get().is_none(),
            "nothing built before the first request"
        );
    }
}
