//! A reload through the library (SPEC R14.3a): the dashboard's providers page and `/metrics`
//! say what was put in effect and what was refused, and why. The real binary's reloads under
//! load are crates/switchyard-cli/tests/serve_reload.rs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use serde_json::Value;
use switchyard_api::ApiConfiguration;
use switchyard_core::store::{NewKeyRequest, SqliteStore, TaskStore, create_client_key};
use switchyard_gateway::{Gateway, ServerLimits, serve};
use tokio_util::sync::CancellationToken;

mod common;

fn config(text: &str) -> ApiConfiguration {
    ApiConfiguration::from_toml(text, "serve.toml", |_| Some(common::KEY.to_owned())).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_and_metrics_say_what_a_reload_did() {
    let first = common::route(
        "sonnet",
        "anthropic",
        "claude-sonnet-4-5",
        "http://127.0.0.1:9",
    );
    let store: Arc<dyn TaskStore> = Arc::new(SqliteStore::in_memory().unwrap());
    let new = NewKeyRequest {
        name: "ops".into(),
        admin: true,
        ..NewKeyRequest::default()
    };
    let admin = create_client_key(&*store, &new, 0)
        .await
        .unwrap()
        .secret
        .key;
    let gateway = Gateway::with_store(config(&first), Arc::clone(&store)).with_client_keys(true);
    let gateway = Arc::new(gateway);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let limits = ServerLimits::default();
    tokio::spawn(serve(
        listener,
        Arc::clone(&gateway),
        limits,
        shutdown.clone(),
    ));
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let signed = (client.post(format!("{base}/ui/signin")))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("key={admin}"))
        .send()
        .await
        .unwrap();
    let cookie = signed.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let providers = || async {
        let r = (client.get(format!("{base}/ui/api/providers")))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        r.json::<Value>().await.unwrap()
    };
    let metrics = || async {
        let r = (client.get(format!("{base}/metrics")))
            .bearer_auth(&admin)
            .send()
            .await
            .unwrap();
        r.text().await.unwrap()
    };
    let at_start = providers().await;
    assert_eq!(at_start["configuration"]["loaded_ms"], 0);
    assert!(at_start["configuration"]["refused"].is_null());

    gateway.reload_refused("[serve.routes.x]: no key");
    let refused = providers().await;
    assert_eq!(
        refused["configuration"]["refused"]["reason"],
        "[serve.routes.x]: no key"
    );
    assert!(
        metrics()
            .await
            .contains("switchyard_config_reloads_total{result=\"rejected\"} 1")
    );

    let second = first.clone()
        + &common::route(
            "haiku",
            "anthropic",
            "claude-haiku-4-5",
            "http://127.0.0.1:9",
        );
    let second = "[serve]\nlisten = \"127.0.0.1:1\"\n".to_owned() + &second;
    let unapplied = gateway.reload(config(&second), gateway.telemetry());
    assert_eq!(unapplied, ["[serve] listen"]);
    let reloaded = providers().await;
    assert!(reloaded["configuration"]["refused"].is_null());
    assert!(reloaded["configuration"]["loaded_ms"].as_i64().unwrap() > 0);
    let routes: Vec<&str> = (reloaded["routes"].as_array().unwrap().iter())
        .map(|r| r["route"].as_str().unwrap())
        .collect();
    assert_eq!(routes, ["haiku", "sonnet"]);
    let text = metrics().await;
    assert!(
        text.contains("switchyard_config_reloads_total{result=\"ok\"} 1"),
        "{text}"
    );
    assert_eq!(gateway.configuration().serve.listen, None);
    shutdown.cancel();
}
