//! The endpoint table: a path the gateway does not serve is the client's dialect's 404, named
//! as such and never an unknown model, and `/metrics` does not count it.
#![allow(clippy::unwrap_used)]

mod common;

use common::{route, start};
use serde_json::Value;

async fn send(base: &str, method: reqwest::Method, path: &str) -> (u16, Value) {
    let client = reqwest::Client::new();
    let response = client
        .request(method, format!("{base}{path}"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (
        status,
        serde_json::from_str(&response.text().await.unwrap()).unwrap(),
    )
}

#[tokio::test]
async fn an_unknown_path_is_the_404_of_the_dialect_its_prefix_names() {
    let gateway = start(&route("fast", "openai", "gpt-4o", "http://127.0.0.1:9/v1")).await;
    let base = &gateway.base;

    let (status, v) = send(base, reqwest::Method::POST, "/v1/messages/batches").await;
    assert_eq!(status, 404, "{v}");
    assert_eq!(
        (&v["type"], &v["error"]["type"]),
        (&"error".into(), &"not_found_error".into())
    );
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("POST /v1/messages/batches"), "{v}");

    for (method, path) in [
        (reqwest::Method::GET, "/v1/responses/resp_123"),
        (reqwest::Method::GET, "/v1/chat/completions"),
        (reqwest::Method::POST, "/v2/nothing"),
    ] {
        let (status, v) = send(base, method.clone(), path).await;
        assert_eq!(status, 404, "{path}: {v}");
        assert_eq!(v["error"]["type"], "invalid_request_error", "{path}: {v}");
        assert_eq!(v["error"]["code"], "unknown_url", "{path}: {v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("{method} {path}")), "{v}");
    }

    let metrics = reqwest::get(format!("{base}/metrics")).await.unwrap();
    let text = metrics.text().await.unwrap();
    assert!(!text.contains("error_type=\"not_found\""), "{text}");
}
