//! What the gateway's test files share: a gateway started in-process on 127.0.0.1:0 and a
//! route to a scripted upstream.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;

use switchyard_api::ApiConfiguration;
use switchyard_gateway::{Gateway, ServerLimits, serve};
use tokio_util::sync::CancellationToken;

/// The provider key every test configuration reads (never in an answer).
pub const KEY: &str = "sk-gateway-test-key-0123456789";

/// A gateway serving on 127.0.0.1:0 until dropped.
pub struct Running {
    pub base: String,
    pub shutdown: CancellationToken,
    pub served: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A gateway for the configuration `text` (its keys read as [`KEY`]).
pub async fn start(text: &str) -> Running {
    let config = ApiConfiguration::from_toml(text, "serve.toml", |_| Some(KEY.to_owned())).unwrap();
    let gateway = Gateway::new(config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let limits = ServerLimits::default();
    let served = tokio::spawn(serve(listener, Arc::new(gateway), limits, shutdown.clone()));
    Running {
        base,
        shutdown,
        served,
    }
}

/// A route `name` to `provider`'s `model` at `base_url`.
pub fn route(name: &str, provider: &str, model: &str, base_url: &str) -> String {
    format!(
        "[serve.routes.\"{name}\"]\nprovider = \"{provider}\"\nmodel = \"{model}\"\nbase_url = \"{base_url}\"\n"
    )
}
