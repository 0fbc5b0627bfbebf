//! The streaming client, hyper's with a capped HTTP/1 read buffer, and either client's responses.
//! Spec: R12.4.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use reqwest::header::HeaderMap;
use rustls_pki_types::CertificateDer;

use crate::config::{HttpSettings, Proxy};
use crate::error::body::innermost;

/// The largest HTTP/1 read buffer of one streaming connection, in bytes. hyper's doubles up to
/// about 408 KiB when the server writes ahead, and reqwest exposes neither cap nor connection; the
/// cap took 1,000 concurrent streams from 528 kB each to 37 kB, see bench/README.md.
pub(crate) const HTTP1_MAX_BUF_SIZE: usize = 16 * 1024;

/// hyper-util's pooled client with rustls for `https://` and plain TCP for `http://`.
pub(crate) type HyperClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// The `User-Agent` of every request, as the reqwest client sends it.
pub(crate) const USER_AGENT: &str = concat!("switchyard/", env!("CARGO_PKG_VERSION"));

/// Which client a provider's streams go through; hyper's cannot go through a proxy.
pub(crate) enum Streaming {
    /// The capped hyper client, boxed since the other variant is empty.
    Hyper(Box<Direct>),
    /// The reqwest client for every stream: a proxy URL is configured.
    Reqwest,
}

/// The hyper client and the proxies that keep a request off it.
pub(crate) struct Direct {
    client: HyperClient,
    /// Under [`Proxy::Environment`], the proxies reqwest would use, read from the environment and
    /// system settings as reqwest reads them; `None` under [`Proxy::Off`].
    proxies: Option<Matcher>,
}

impl Streaming {
    /// The streaming client for `settings`; `tls` is called only when the hyper client is built.
    pub(crate) fn new(
        settings: &HttpSettings,
        tls: impl FnOnce() -> Result<rustls::ClientConfig, String>,
    ) -> Result<Self, String> {
        let proxies = match &settings.proxy {
            Proxy::Url(_) => return Ok(Self::Reqwest),
            Proxy::Off => None,
            Proxy::Environment => Some(Matcher::from_system()),
        };
        Ok(Self::Hyper(Box::new(Direct {
            client: build_hyper(settings, tls()?),
            proxies,
        })))
    }

    /// The hyper client when it can send a request to `uri`: none when a proxy applies to it.
    pub(crate) fn direct(&self, uri: &hyper::Uri) -> Option<&HyperClient> {
        match self {
            Self::Hyper(direct) => match &direct.proxies {
                Some(m) if m.intercept(uri).is_some() => None,
                _ => Some(&direct.client),
            },
            Self::Reqwest => None,
        }
    }
}

/// The TLS configuration both clients share, so the platform's roots are read once: the platform
/// verifier plus `extra_roots` with `tls`, else no root at all, for `http://` only.
pub(crate) fn tls_config(
    tls: bool,
    extra_roots: &[CertificateDer<'static>],
) -> Result<rustls::ClientConfig, String> {
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("could not set up TLS ({e})"))?;
    let mut config = if tls {
        let verifier = if extra_roots.is_empty() {
            rustls_platform_verifier::Verifier::new(provider)
        } else {
            rustls_platform_verifier::Verifier::new_with_extra_roots(
                extra_roots.iter().cloned(),
                provider,
            )
        }
        .map_err(|e| {
            format!(
                "could not set up the HTTP client ({e}); check the ca_bundle setting and that the system has CA certificates"
            )
        })?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth()
    } else {
        builder
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth()
    };
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// The hyper client for `settings`: connect timeout, `TCP_NODELAY`, HTTP/2 when offered over TLS,
/// else HTTP/1 with the read buffer capped.
pub(crate) fn build_hyper(
    settings: &HttpSettings,
    mut tls_config: rustls::ClientConfig,
) -> HyperClient {
    // hyper-rustls sets ALPN itself from the protocols enabled below.
    tls_config.alpn_protocols.clear();
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(settings.connect_timeout);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config)
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(http);
    Client::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .pool_timer(TokioTimer::new())
        .http1_max_buf_size(HTTP1_MAX_BUF_SIZE)
        .build(https)
}

/// The hyper POST of `body` to `url`, with reqwest's default `User-Agent` and `Accept: */*`.
pub(crate) fn hyper_request(
    url: &str,
    mut headers: HeaderMap,
    body: &str,
) -> Result<hyper::Request<Full<Bytes>>, SendError> {
    let uri: hyper::Uri = url
        .parse()
        .map_err(|e| SendError::Invalid(format!("the URL {url} is not valid ({e})")))?;
    if !headers.contains_key(reqwest::header::USER_AGENT) {
        headers.insert(
            reqwest::header::USER_AGENT,
            reqwest::header::HeaderValue::from_static(USER_AGENT),
        );
    }
    if !headers.contains_key(reqwest::header::ACCEPT) {
        headers.insert(
            reqwest::header::ACCEPT,
            reqwest::header::HeaderValue::from_static("*/*"),
        );
    }
    let mut request = hyper::Request::new(Full::new(Bytes::from(body.to_owned())));
    *request.method_mut() = hyper::Method::POST;
    *request.uri_mut() = uri;
    *request.headers_mut() = headers;
    Ok(request)
}

/// A response whose head has arrived, from either client.
pub(crate) enum Response {
    Reqwest(reqwest::Response),
    Hyper {
        response: hyper::Response<Incoming>,
        /// The URL asked, for error messages.
        url: String,
    },
}

impl Response {
    pub(crate) fn status(&self) -> u16 {
        match self {
            Self::Reqwest(r) => r.status().as_u16(),
            Self::Hyper { response, .. } => response.status().as_u16(),
        }
    }

    pub(crate) fn headers(&self) -> &HeaderMap {
        match self {
            Self::Reqwest(r) => r.headers(),
            Self::Hyper { response, .. } => response.headers(),
        }
    }

    /// The URL the response came from, after reqwest's redirects.
    pub(crate) fn url(&self) -> &str {
        match self {
            Self::Reqwest(r) => r.url().as_str(),
            Self::Hyper { url, .. } => url,
        }
    }

    pub(crate) fn into_body(self) -> Body {
        match self {
            Self::Reqwest(r) => Body::Reqwest(r.into()),
            Self::Hyper { response, .. } => Body::Hyper(response),
        }
    }
}

/// A response body being read, from either client.
pub(crate) enum Body {
    Reqwest(reqwest::Body),
    /// The whole response, not only its body: while the head's header values, slices of hyper's
    /// read buffer, live, hyper cannot grow that buffer in place. Checked by
    /// `a_server_writing_ahead_never_grows_a_streams_read_buffer_past_the_cap`.
    Hyper(hyper::Response<Incoming>),
}

impl Body {
    /// The next piece of the body: `None` at its end, or the innermost cause of the failure.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, String> {
        std::future::poll_fn(|cx| self.poll_chunk(cx)).await
    }

    /// Polls for the next piece of the body, skipping HTTP/2 trailers and empty data frames.
    pub(crate) fn poll_chunk(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<Option<Bytes>, String>> {
        use hyper::body::Body as _;
        use std::pin::Pin;
        use std::task::{Poll, ready};
        loop {
            let frame = match self {
                Self::Reqwest(b) => {
                    ready!(Pin::new(b).poll_frame(cx)).map(|f| f.map_err(|e| innermost(&e)))
                }
                Self::Hyper(b) => {
                    ready!(Pin::new(b).poll_frame(cx)).map(|f| f.map_err(|e| innermost(&e)))
                }
            };
            match frame {
                None => return Poll::Ready(Ok(None)),
                Some(Err(e)) => return Poll::Ready(Err(e)),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data()
                        && !data.is_empty()
                    {
                        return Poll::Ready(Ok(Some(data)));
                    }
                }
            }
        }
    }
}

/// A send that failed before a response head arrived, from either client.
#[derive(Debug)]
pub(crate) enum SendError {
    Reqwest(reqwest::Error),
    Hyper(hyper_util::client::legacy::Error),
    /// The request could not be built from a URL or header that is not valid HTTP.
    Invalid(String),
}

impl SendError {
    /// Whether the connection was closed or reset under the request before the response head
    /// arrived. A failure to connect, a timeout, a redirect problem or a bad request is not.
    pub(crate) fn died_before_response(&self) -> bool {
        match self {
            Self::Reqwest(e) => {
                e.is_request()
                    && !e.is_connect()
                    && !e.is_timeout()
                    && !e.is_redirect()
                    && !e.is_builder()
            }
            Self::Hyper(e) => !e.is_connect() && !self.is_timeout(),
            Self::Invalid(_) => false,
        }
    }

    /// A timeout: reqwest's, or the connect timeout of hyper's connector.
    pub(crate) fn is_timeout(&self) -> bool {
        match self {
            Self::Reqwest(e) => e.is_timeout(),
            Self::Hyper(e) => {
                let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
                while let Some(s) = source {
                    if s.downcast_ref::<std::io::Error>()
                        .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
                    {
                        return true;
                    }
                    source = s.source();
                }
                false
            }
            Self::Invalid(_) => false,
        }
    }

    /// Too many redirects or a redirect loop under reqwest's policy.
    pub(crate) fn is_redirect(&self) -> bool {
        matches!(self, Self::Reqwest(e) if e.is_redirect())
    }

    pub(crate) fn cause(&self) -> String {
        match self {
            Self::Reqwest(e) => innermost(e),
            Self::Hyper(e) => innermost(e),
            Self::Invalid(message) => message.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::oneshot;

    /// Reads one request (head and content-length body).
    async fn read_request(socket: &mut TcpStream) {
        let mut data = Vec::new();
        let mut piece = [0u8; 4096];
        loop {
            let n = socket.read(&mut piece).await.unwrap();
            assert!(n > 0, "the client closed before sending its request");
            data.extend_from_slice(&piece[..n]);
            let text = String::from_utf8_lossy(&data).to_ascii_lowercase();
            if let Some(end) = text.find("\r\n\r\n") {
                let length: usize = text
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap());
                if data.len() >= end + 4 + length {
                    return;
                }
            }
        }
    }

    /// A server that answers one request with `len` body bytes, writing ahead of the client:
    /// it fills the socket's kernel buffers before `full` fires, then writes the rest.
    async fn server_writing_ahead(len: usize) -> (String, oneshot::Receiver<usize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1/stream", listener.local_addr().unwrap());
        let (full, filled) = oneshot::channel();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            read_request(&mut socket).await;
            let mut response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {len}\r\n\r\n"
            )
            .into_bytes();
            response.resize(response.len() + len, b'x');
            let mut sent = 0;
            while sent < response.len() {
                match socket.try_write(&response[sent..]) {
                    Ok(n) => sent += n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => panic!("write failed: {e}"),
                }
            }
            full.send(sent).unwrap();
            socket.write_all(&response[sent..]).await.unwrap();
        });
        (url, filled)
    }

    /// Reads `response` to its end once the server has written ahead: the largest piece and
    /// the bytes read.
    async fn largest_piece(response: Response, filled: oneshot::Receiver<usize>) -> (usize, usize) {
        let ahead = filled.await.unwrap();
        assert!(
            ahead > 4 * HTTP1_MAX_BUF_SIZE,
            "the server wrote only {ahead} bytes ahead"
        );
        let (mut largest, mut total) = (0, 0);
        let mut body = response.into_body();
        while let Some(piece) = body.chunk().await.unwrap() {
            largest = largest.max(piece.len());
            total += piece.len();
        }
        (largest, total)
    }

    const BODY_BYTES: usize = 2 * 1024 * 1024;

    #[tokio::test]
    async fn a_server_writing_ahead_never_grows_a_streams_read_buffer_past_the_cap() {
        let (url, filled) = server_writing_ahead(BODY_BYTES).await;
        let client = build_hyper(&HttpSettings::default(), tls_config(false, &[]).unwrap());
        let request = hyper_request(&url, HeaderMap::new(), "{}").unwrap();
        let response = Response::Hyper {
            response: client.request(request).await.unwrap(),
            url,
        };
        let (largest, total) = largest_piece(response, filled).await;
        assert_eq!(total, BODY_BYTES);
        assert!(
            largest <= HTTP1_MAX_BUF_SIZE,
            "a piece of {largest} bytes: the read buffer grew past {HTTP1_MAX_BUF_SIZE}"
        );
    }

    /// The control: through reqwest (hyper's default cap, ~408 KiB) the same server makes the
    /// read buffer grow, so the test above measures the cap and not the server.
    #[tokio::test]
    async fn through_reqwest_the_same_server_grows_the_read_buffer() {
        let (url, filled) = server_writing_ahead(BODY_BYTES).await;
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let response = Response::Reqwest(client.post(&url).body("{}").send().await.unwrap());
        let (largest, total) = largest_piece(response, filled).await;
        assert_eq!(total, BODY_BYTES);
        assert!(
            largest > HTTP1_MAX_BUF_SIZE,
            "reqwest's largest piece was {largest} bytes"
        );
    }

    #[tokio::test]
    async fn streams_a_proxy_applies_to_stay_on_reqwest() {
        let uri: hyper::Uri = "http://llm.example.com/v1".parse().unwrap();
        let settings = |proxy| HttpSettings {
            proxy,
            ..HttpSettings::default()
        };
        let off = Streaming::new(&settings(Proxy::Off), || tls_config(false, &[])).unwrap();
        assert!(off.direct(&uri).is_some());
        let url = crate::config::ProxyUrl::new("http://proxy.corp:3128").unwrap();
        let configured =
            Streaming::new(&settings(Proxy::Url(url)), || tls_config(false, &[])).unwrap();
        assert!(configured.direct(&uri).is_none());
        // The environment's proxies, as reqwest reads them (a matcher built from given
        // values: the test must not change the process's environment).
        let client = build_hyper(&HttpSettings::default(), tls_config(false, &[]).unwrap());
        let from_env = Streaming::Hyper(Box::new(Direct {
            client,
            proxies: Some(
                Matcher::builder()
                    .http("http://proxy.corp:3128")
                    .no("internal.example.com")
                    .build(),
            ),
        }));
        assert!(from_env.direct(&uri).is_none(), "HTTP_PROXY applies");
        let internal: hyper::Uri = "http://internal.example.com/v1".parse().unwrap();
        assert!(from_env.direct(&internal).is_some(), "NO_PROXY exempts");
        let https: hyper::Uri = "https://llm.example.com/v1".parse().unwrap();
        assert!(from_env.direct(&https).is_some(), "no HTTPS_PROXY set");
    }

    #[test]
    fn requests_carry_reqwests_default_headers_unless_set() {
        let request = hyper_request("http://127.0.0.1:1/v1", HeaderMap::new(), "{}").unwrap();
        assert_eq!(request.headers()["user-agent"], USER_AGENT);
        assert_eq!(request.headers()["accept"], "*/*");
        let mut own = HeaderMap::new();
        own.insert("accept", "text/event-stream".parse().unwrap());
        let request = hyper_request("http://127.0.0.1:1/v1", own, "{}").unwrap();
        assert_eq!(request.headers()["accept"], "text/event-stream");
        assert!(matches!(
            hyper_request("not a url", HeaderMap::new(), ""),
            Err(SendError::Invalid(_))
        ));
    }
}
