//! Single sign-on's edges without a browser or a provider (SPEC R14.11b): the sign-in page offers
//! it only when `[serve.oidc]` is set; a provider that cannot be reached is a 503 with one
//! sentence, not a hang; a callback this browser never started is refused and audited; the
//! start bounds its cookie to `/ui/oidc`. The whole flow through a real provider and Chromium is
//! crates/switchyard-cli/tests/ui_sso.rs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use switchyard_api::ApiConfiguration;
use switchyard_core::store::{SqliteStore, TaskStore};
use switchyard_gateway::{Gateway, ServerLimits, serve};
use tokio_util::sync::CancellationToken;

/// A gateway on `text`'s configuration: its base URL and store.
async fn start(text: &str) -> (String, Arc<dyn TaskStore>) {
    let env = |k: &str| (k == "SSO_SECRET").then(|| "a-client-secret".to_owned());
    let config = ApiConfiguration::from_toml(text, "serve.toml", env).unwrap();
    let store: Arc<dyn TaskStore> = Arc::new(SqliteStore::in_memory().unwrap());
    let gateway = Gateway::with_store(config, Arc::clone(&store)).with_client_keys(true);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let limits = ServerLimits::default();
    tokio::spawn(serve(
        listener,
        Arc::new(gateway),
        limits,
        CancellationToken::new(),
    ));
    (base, store)
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A port nothing listens on: bound, then closed.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_reachable_provider_sign_in_fails_in_one_sentence_and_is_audited() {
    let (plain, _) = start("").await;
    let page = client()
        .get(format!("{plain}/ui/signin"))
        .send()
        .await
        .unwrap();
    assert!(!page.text().await.unwrap().contains("/ui/oidc/start"));
    let r = client()
        .get(format!("{plain}/ui/oidc/start"))
        .send()
        .await
        .unwrap();
    assert_ne!(r.status(), 200, "no single sign-on without [serve.oidc]");

    let text = format!(
        "[serve.oidc]\nissuer = \"http://127.0.0.1:{}\"\nclient_id = \"switchyard\"\n\
         client_secret_env = \"SSO_SECRET\"\nredirect_base = \"http://127.0.0.1:1\"\n\
         [serve.oidc.groups.eng]\nrole = \"member\"\n",
        closed_port()
    );
    let (base, store) = start(&text).await;
    let page = client()
        .get(format!("{base}/ui/signin"))
        .send()
        .await
        .unwrap();
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("href=\"/ui/oidc/start\"")
    );
    let began = std::time::Instant::now();
    let r = client()
        .get(format!("{base}/ui/oidc/start"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    let body = r.text().await.unwrap();
    assert!(
        body.contains("Single sign-on is not available now"),
        "{body}"
    );
    assert!(
        began.elapsed().as_secs() < 11,
        "bounded by the provider timeout"
    );

    // A callback no browser started here: refused, audited, and no session.
    let r = client()
        .get(format!("{base}/ui/oidc/callback?code=abc&state=forged"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.headers().get("set-cookie").is_none());
    assert!(
        r.text()
            .await
            .unwrap()
            .contains("not started in this browser")
    );
    let oversized = format!("{base}/ui/oidc/callback?code={}&state=s", "a".repeat(5000));
    let r = client().get(oversized).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let audit = store.audit_log(i64::MIN, 10).await.unwrap();
    let failed: Vec<_> = audit
        .iter()
        .filter(|e| e.action == "signin.failed")
        .collect();
    assert_eq!(failed.len(), 2, "{audit:?}");
    assert!(failed.iter().all(|e| e.actor == "single sign-on"));
    assert!(!format!("{audit:?}").contains("a-client-secret"));
}
