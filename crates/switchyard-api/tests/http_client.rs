//! The HTTP client is configuration (SPEC R12.4): per provider a connect timeout, deadlines, a
//! proxy and a CA bundle, from `[providers.ID]`. Tested against a real TLS server signed by a
//! private CA (`tests/fixtures/tls`) and the testkit server acting as a forward proxy.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use switchyard_api::{
    ApiConfiguration, ApiError, ApiHandler, ApiStreamChunk, ConfigError, ErrorKind, Message, Mode,
    Proxy, RequestOptions, build_api_handler, resolve_mode,
};
use switchyard_testkit::{HttpResponse, MockServer, Reply, test_data_dir};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const KEY: &str = "sk-http-client-test-key-0123456789";

fn config(extra: &str) -> ApiConfiguration {
    let text = format!("[act]\nprovider = \"openai\"\nmodel = \"gpt-4o\"\n{extra}\n");
    ApiConfiguration::from_toml(&text, "test.toml", |_| Some(KEY.to_owned())).unwrap()
}

fn handler(extra: &str) -> Result<Box<dyn ApiHandler>, ConfigError> {
    build_api_handler(&config(extra), Mode::Act)
}

const SSE: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"over TLS\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

async fn collect(h: &dyn ApiHandler) -> Vec<Result<ApiStreamChunk, ApiError>> {
    h.create_message(
        "s",
        &[Message::user_text("x")],
        &[],
        RequestOptions::default(),
    )
    .collect()
    .await
}

fn tls_file(name: &str) -> std::path::PathBuf {
    test_data_dir().join("fixtures/tls").join(name)
}

/// A TLS server on 127.0.0.1 with the private CA's server certificate that answers every
/// request with a complete Chat Completions stream.
async fn tls_server() -> String {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(tls_file("server.pem"))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(tls_file("server.key")).unwrap();
    let config = tokio_rustls::rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "https://127.0.0.1:{}/v1",
        listener.local_addr().unwrap().port()
    );
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // A client that does not trust the CA aborts the handshake: nothing to serve.
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut head = Vec::new();
                let mut piece = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut piece).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&piece[..n]),
                    }
                }
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{SSE}",
                    SSE.len()
                );
                let _ = tls.write_all(response.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    url
}

#[tokio::test]
async fn a_ca_bundle_lets_a_private_ca_through() {
    let url = tls_server().await;
    let ca = tls_file("ca.pem");
    let h = handler(&format!(
        "[providers.openai]\nbase_url = \"{url}\"\nca_bundle = \"{}\"",
        ca.display()
    ))
    .unwrap();
    let items = collect(h.as_ref()).await;
    assert_eq!(items, [Ok(ApiStreamChunk::text("over TLS"))]);

    // Without it the system's roots do not know the private CA: a certificate error that says
    // so, never a silent success.
    let h = handler(&format!("[providers.openai]\nbase_url = \"{url}\"")).unwrap();
    let items = collect(h.as_ref()).await;
    let [Err(e)] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert_eq!(e.kind, ErrorKind::Network, "{e}");
    assert!(e.message.to_lowercase().contains("certificate"), "{e}");
}

#[tokio::test]
async fn a_ca_bundle_path_is_relative_to_the_configuration_file() {
    let url = tls_server().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(tls_file("ca.pem"), dir.path().join("corp-ca.pem")).unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(
        &file,
        format!(
            "[act]\nprovider = \"openai\"\nmodel = \"gpt-4o\"\n[providers.openai]\nbase_url = \"{url}\"\nca_bundle = \"corp-ca.pem\"\n"
        ),
    )
    .unwrap();
    let config = ApiConfiguration::load(&file, |_| Some(KEY.to_owned())).unwrap();
    let h = build_api_handler(&config, Mode::Act).unwrap();
    assert_eq!(
        collect(h.as_ref()).await,
        [Ok(ApiStreamChunk::text("over TLS"))]
    );
}

#[tokio::test]
async fn an_unusable_ca_bundle_is_a_configuration_error_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pem");
    let e = handler(&format!(
        "[providers.openai]\nbase_url = \"https://llm.example.com/v1\"\nca_bundle = \"{}\"",
        missing.display()
    ))
    .err()
    .unwrap();
    assert!(matches!(e, ConfigError::Http { .. }), "{e:?}");
    assert!(
        e.to_string().contains("cannot read the CA bundle")
            && e.to_string().contains("missing.pem"),
        "{e}"
    );
    let not_pem = dir.path().join("not.pem");
    std::fs::write(&not_pem, "hello").unwrap();
    let e = handler(&format!(
        "[providers.openai]\nbase_url = \"https://llm.example.com/v1\"\nca_bundle = \"{}\"",
        not_pem.display()
    ))
    .err()
    .unwrap();
    assert!(e.to_string().contains("holds no PEM certificate"), "{e}");
    // An http:// base URL never reads it (no TLS, no certificates).
    assert!(
        handler(&format!(
            "[providers.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nca_bundle = \"{}\"",
            missing.display()
        ))
        .is_ok()
    );
}

#[tokio::test(start_paused = true)]
async fn requests_go_through_the_configured_proxy_with_its_credentials() {
    // The testkit server plays a forward proxy: an http:// request reaches it in absolute form.
    let proxy = MockServer::start(vec![Reply::new(HttpResponse::sse(SSE))]).await;
    let proxy_url = proxy.url().replace("http://", "http://alice:s3cret@");
    let h = handler(&format!(
        "[providers.openai]\nbase_url = \"http://llm.example.invalid/v1\"\nproxy = \"{proxy_url}\""
    ))
    .unwrap();
    assert_eq!(
        collect(h.as_ref()).await,
        [Ok(ApiStreamChunk::text("over TLS"))]
    );
    let reqs = proxy.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(
        reqs[0].path,
        "http://llm.example.invalid/v1/chat/completions"
    );
    // Basic alice:s3cret
    assert_eq!(
        reqs[0].header("proxy-authorization"),
        Some("Basic YWxpY2U6czNjcmV0")
    );
    assert_eq!(
        reqs[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[test]
fn proxy_settings_parse_and_never_show_a_password() {
    let c = config(
        "[providers.openai]\nproxy = \"http://alice:s3cret@proxy.corp:3128\"\n[providers.groq]\nproxy = \"none\"",
    );
    let shown = format!("{c:?}");
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(shown.contains("http://alice:…@proxy.corp:3128"), "{shown}");
    let r = resolve_mode(&c, Mode::Act).unwrap();
    assert!(!format!("{r:?}").contains("s3cret"));
    assert_eq!(r.http.proxy.to_string(), "http://alice:…@proxy.corp:3128");
    assert_eq!(c.providers.endpoints["groq"].proxy, Some(Proxy::Off));
    // Not set: the environment's proxy variables.
    assert_eq!(
        config("")
            .providers
            .endpoints
            .get("openai")
            .map(|e| e.proxy.clone()),
        None
    );
    assert_eq!(
        resolve_mode(&config(""), Mode::Act).unwrap().http.proxy,
        Proxy::Environment
    );
    // A proxy this build cannot use is a parse error naming the line, without the password.
    let text = "[act]\nprovider = \"openai\"\n[providers.openai]\nproxy = \"socks5://bob:pw123@proxy.corp:1080\"\n";
    let e = ApiConfiguration::from_toml(text, "c.toml", |_| None)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("c.toml:4:"), "{e}");
    assert!(e.contains("http:// or https://"), "{e}");
    assert!(!e.contains("pw123"), "{e}");
}

#[test]
fn timeouts_are_per_provider_settings() {
    let c = config(
        "[providers.openai]\nconnect_timeout_seconds = 5\nfirst_content_timeout_seconds = 45\nidle_timeout_seconds = 0",
    );
    let r = resolve_mode(&c, Mode::Act).unwrap();
    assert_eq!(r.http.connect_timeout, Some(Duration::from_secs(5)));
    assert_eq!(r.deadlines.first_content, Some(Duration::from_secs(45)));
    assert_eq!(r.deadlines.idle, Some(Duration::MAX), "0 turns it off");
    let r = resolve_mode(&config(""), Mode::Act).unwrap();
    assert_eq!(r.http.connect_timeout, Some(Duration::from_secs(30)));
    assert_eq!((r.deadlines.first_content, r.deadlines.idle), (None, None));
    let r = resolve_mode(
        &config("[providers.openai]\nconnect_timeout_seconds = 0"),
        Mode::Act,
    )
    .unwrap();
    assert_eq!(r.http.connect_timeout, None);
}

/// A streaming request the server redirects (a moved endpoint, `307`/`308` keeping the
/// method and body) is followed as reqwest follows redirects, with the same body and key;
/// a redirect loop is the permanent error of SPEC R7.4.
#[tokio::test(start_paused = true)]
async fn a_redirected_stream_is_followed_and_a_redirect_loop_is_named() {
    let target = MockServer::start(vec![Reply::new(HttpResponse::sse(SSE))]).await;
    let location = format!("{}/v2/chat/completions", target.url());
    let moved = MockServer::start(vec![Reply::new(HttpResponse::new(
        307,
        &[("location", location.as_str())],
        "",
    ))])
    .await;
    let h = handler(&format!(
        "[providers.openai]\nbase_url = \"{}/v1\"",
        moved.url()
    ))
    .unwrap();
    assert_eq!(
        collect(h.as_ref()).await,
        [Ok(ApiStreamChunk::text("over TLS"))]
    );
    let reqs = target.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].path, "/v2/chat/completions");
    assert_eq!(reqs[0].json()["model"], "gpt-4o");

    let looping = MockServer::start(vec![Reply::new(HttpResponse::new(
        308,
        &[("location", "/v1/chat/completions")],
        "",
    ))])
    .await;
    let h = handler(&format!(
        "[providers.openai]\nbase_url = \"{}/v1\"",
        looping.url()
    ))
    .unwrap();
    let got = collect(h.as_ref()).await;
    assert_eq!(got.len(), 1, "{got:?}");
    let err = got[0].as_ref().unwrap_err();
    assert!(
        err.to_string()
            .contains("redirected the request too many times"),
        "{err}"
    );
}
