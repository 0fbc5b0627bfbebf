//! One HTTP request to the gateway (SPEC R14.1, R14.5, R14.9, R14.10): the endpoint chosen by
//! path, the body read under its size cap, parsed in the endpoint's dialect, routed and
//! relayed through Switchyard's layer (R14.4: the store's limits and request log; R14.1: a
//! Responses `previous_response_id` answered from the store);
//! `POST /v1/messages/count_tokens` (R14.1, `count.rs`); `/health`, and `/ready` (the store
//! reachable); `x-request-id` on every response.

use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use serde_json::json;
use switchyard_api::config::DEFAULT_REQUEST_DEADLINE_SECONDS;
use switchyard_api::{ApiConfiguration, ApiError, ErrorKind};
use switchyard_core::context::estimate_message_tokens;
use switchyard_core::store::{SqliteStore, StoreError, TaskStore};
use tokio::time::Instant;

use crate::auth::{Auth, Client, Denied, KeysRequired, Purpose, allow_model};
use crate::ingress::{
    Dialect, GatewayRequest, invalid_request_response, parse_count_tokens, parse_request,
};
use crate::layer::{Layer, Unanswerable};
use crate::metrics::{InFlight, Metrics, route_label};
use crate::relay::Relay;
use crate::reply::{Body, dialect_error, json as json_response, refusal, set_header};
use crate::route::{Chain, RouteError, Router};

/// The body size cap when none is given: 32 MiB (SPEC R14.10).
pub const DEFAULT_BODY_LIMIT: usize = 32 * 1024 * 1024;

/// The gateway's shared state: the routes, the limits, the layer (store, caps), the request
/// counter. One serves every connection.
pub struct Gateway {
    router: Router,
    layer: Layer,
    /// The client keys at the door (SPEC R14.6): off unless [`Gateway::with_client_keys`].
    auth: Auth,
    body_limit: usize,
    deadline: Duration,
    /// Distinguishes this process's request ids from another's (its start, in ns since the
    /// epoch, in hex).
    id_prefix: String,
    next_id: AtomicU64,
    /// The dashboard at `/ui` (SPEC R14.11) and the live registry it shows.
    ui: Arc<crate::ui::Ui>,
    live: Arc<crate::ui::Live>,
}

impl Gateway {
    /// A gateway over `config` (its `[serve]` routes and deadline, its keys as loaded), the
    /// body cap [`DEFAULT_BODY_LIMIT`], keeping its limits state and request log in a store
    /// of its own in memory (for its lifetime, shared with no other process):
    /// [`Gateway::with_store`] puts them in the store tasks use.
    ///
    /// # Errors
    ///
    /// The in-memory store cannot be opened (SQLite could not allocate it).
    pub fn new(config: ApiConfiguration) -> Result<Self, StoreError> {
        let store = SqliteStore::in_memory()?;
        Ok(Self::with_store(config, Arc::new(store)))
    }

    /// A gateway over `config` whose cooldowns, rate-limit windows, daily spend and request
    /// log are in `store` (SPEC R14.4, R13.2): the store `switchyard task` uses, so every
    /// task and gateway on it shares one view of each provider.
    pub fn with_store(config: ApiConfiguration, store: Arc<dyn TaskStore>) -> Self {
        // The dashboard (SPEC R14.11) and the live registry the relay feeds.
        let live = Arc::new(crate::ui::Live::default());
        let ui = crate::ui::Ui::new(Arc::clone(&store), config.clone(), Arc::clone(&live));
        let seconds = (config.serve.request_deadline).unwrap_or(DEFAULT_REQUEST_DEADLINE_SECONDS);
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Self {
            auth: Auth::new(Arc::clone(&store), KeysRequired::Never),
            layer: Layer::new(store, &config, DEFAULT_BODY_LIMIT),
            router: Router::new(config),
            body_limit: DEFAULT_BODY_LIMIT,
            deadline: Duration::from_secs(seconds),
            id_prefix: format!("{:x}", started & 0xffff_ffff_ffff),
            next_id: AtomicU64::new(1),
            ui: Arc::new(ui),
            live,
        }
    }

    /// This gateway requiring a client key (SPEC R14.6) on every request but `/health` and
    /// `/ready` when `required` (an admin key on `/metrics`), looked up in its store.
    pub fn with_client_keys(self, required: bool) -> Self {
        let when = if required {
            KeysRequired::Always
        } else {
            KeysRequired::Never
        };
        self.with_keys_required(when)
    }

    /// This gateway requiring client keys as `when` says ([`KeysRequired::OnceKeysExist`]:
    /// from the store's first key on, read at most once a second).
    pub fn with_keys_required(mut self, when: KeysRequired) -> Self {
        self.auth = Auth::new(self.layer.store(), when);
        self
    }

    /// Whether this gateway requires client keys.
    pub fn requires_client_keys(&self) -> bool {
        self.auth.required()
    }

    /// This gateway counting a budget hold nothing settled (its process died) for `lease`
    /// (default [`crate::DEFAULT_HOLD_LEASE`], SPEC R14.7).
    pub fn with_hold_lease(mut self, lease: Duration) -> Self {
        self.layer.hold_lease = lease;
        self
    }

    /// This gateway reserving `usd` for a request to a model whose prices are unknown
    /// (default [`crate::DEFAULT_RESERVE_USD`], SPEC R14.7).
    pub fn with_reserve_usd(mut self, usd: f64) -> Self {
        self.layer.reserve_usd = usd;
        self
    }

    /// This gateway with a body cap of `bytes` (SPEC R14.10; a larger body is a 413).
    pub fn with_body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self.layer = self.layer.with_response_cap(bytes);
        self
    }

    /// This gateway keeping at most `sets` distinct label sets in `/metrics` (default
    /// 1,000; the rest are counted under `other`, SPEC R14.9).
    pub fn with_metric_label_sets(mut self, sets: usize) -> Self {
        self.layer.metrics = Arc::new(Metrics::new(sets));
        self
    }

    /// The gateway's metrics, for the server's connection gauge.
    pub(crate) fn metrics(&self) -> &Arc<Metrics> {
        &self.layer.metrics
    }

    /// Prunes the request log past its retention now and every hour until `stop` (SPEC
    /// R14.8): the server runs it beside the connections.
    pub(crate) fn keep_request_log(
        &self,
        stop: tokio_util::sync::CancellationToken,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.layer.clone().keep_request_log(stop)
    }

    /// Waits for the request log's writes still running, at most `wait` (a stopping
    /// gateway: SPEC R14.9); those still running then are named in a warning.
    pub(crate) async fn settle_records(&self, wait: std::time::Duration) {
        let writes = &self.layer.writes;
        if !writes.settled(wait).await {
            let n = writes.running();
            tracing::warn!("{n} request records were still being written when the gateway stopped");
        }
    }

    /// Shutdown has started (`server.rs`): what would hold the drain with no end of its own
    /// ends now (the dashboard's live streams, SPEC R14.11).
    pub(crate) fn shutting_down(&self) {
        self.ui.stop();
    }

    /// Answers one request from a client connected from `peer` (never fails: every failure
    /// is a response in the client's dialect), with an `x-request-id`.
    pub(crate) async fn handle(
        self: Arc<Self>,
        request: Request<Incoming>,
        peer: IpAddr,
    ) -> Result<Response<Body>, Infallible> {
        // Hyper calls this once the request's headers are read (SPEC R14.9's overhead starts).
        let received = Instant::now();
        let id = format!(
            "req_{}{:06}",
            self.id_prefix,
            self.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let mut response = self.dispatch(request, &id, (received, peer)).await;
        set_header(&mut response, "x-request-id", &id);
        Ok(response)
    }

    async fn dispatch(
        &self,
        request: Request<Incoming>,
        id: &str,
        (received, peer): (Instant, IpAddr),
    ) -> Response<Body> {
        // The dashboard signs its users in itself (SPEC R14.11).
        if crate::ui::Ui::owns(request.uri().path()) {
            return self.ui.handle(request, peer).await;
        }
        let client = match self.door(&request).await {
            Ok(client) => client,
            Err(response) => return response,
        };
        let dialect = match (request.method(), request.uri().path()) {
            (&Method::POST, "/v1/chat/completions") => Dialect::ChatCompletions,
            (&Method::POST, "/v1/responses") => Dialect::Responses,
            (&Method::POST, "/v1/messages") => Dialect::AnthropicMessages,
            (&Method::POST, "/v1/messages/count_tokens") => {
                return self.count_tokens(request).await;
            }
            (&Method::GET, "/v1/models") => {
                let anthropic = request.headers().contains_key("anthropic-version");
                return json_response(200, &crate::models::list(&self.router, anthropic));
            }
            (&Method::GET, "/metrics") => return self.scrape().await,
            (&Method::GET, "/health") => return json_response(200, &json!({"status": "ok"})),
            (&Method::GET, "/ready") => {
                return match self.layer.ready().await {
                    Ok(()) => json_response(200, &json!({"status": "ready"})),
                    Err(why) => {
                        let body = json!({"status": "unavailable", "error": why});
                        json_response(503, &body)
                    }
                };
            }
            (method, path) => {
                let message = format!("There is no endpoint {method} {path} on this gateway.");
                return refusal(Dialect::ChatCompletions, 404, message);
            }
        };
        let flight = self.layer.metrics.in_flight();
        let forward_headers = forward_headers(dialect, request.headers());
        match self.read_body(request, dialect).await {
            Ok(body) => {
                let sent = Sent {
                    body,
                    forward_headers,
                    received,
                    flight,
                };
                self.answer(dialect, sent, id, client).await
            }
            Err(response) => {
                let kind = if response.status() == 413 {
                    "too_large"
                } else {
                    "invalid_request"
                };
                self.layer.metrics.refused(kind);
                response
            }
        }
    }

    /// `GET /metrics` (SPEC R14.9): Prometheus text exposition format 0.0.4 (`metrics.rs`),
    /// the store's cooldowns read now within a short timeout.
    async fn scrape(&self) -> Response<Body> {
        let cooling = self.layer.cooling().await;
        let text = self.layer.metrics.render(cooling);
        let body = http_body_util::Full::new(bytes::Bytes::from(text)).boxed();
        crate::reply::with_body(200, "text/plain; version=0.0.4; charset=utf-8", body)
    }

    /// The body, at most the cap: a larger one is a 413 before it is read past the cap.
    async fn read_body(
        &self,
        request: Request<Incoming>,
        dialect: Dialect,
    ) -> Result<bytes::Bytes, Response<Body>> {
        let too_large = || {
            let mib = self.body_limit as f64 / (1024.0 * 1024.0);
            let message = format!("The request body is larger than this gateway's {mib} MiB.");
            refusal(dialect, 413, message)
        };
        let declared = (request.headers().get(hyper::header::CONTENT_LENGTH))
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.body_limit as u64) {
            return Err(too_large());
        }
        match Limited::new(request.into_body(), self.body_limit)
            .collect()
            .await
        {
            Ok(collected) => Ok(collected.to_bytes()),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
            Err(e) => {
                let message = format!("The request body could not be read: {e}.");
                Err(refusal(dialect, 400, message))
            }
        }
    }

    /// Parses, routes and relays one request body.
    async fn answer(
        &self,
        dialect: Dialect,
        sent: Sent,
        id: &str,
        client: Option<Client>,
    ) -> Response<Body> {
        let mut request = match parse_request(dialect, &sent.body) {
            Ok(request) => request,
            Err(error) => {
                self.layer.metrics.refused("invalid_request");
                let (status, body) = invalid_request_response(dialect, &error);
                return json_response(status, &body);
            }
        };
        if let Err(unanswerable) = self.layer.resolve_previous(&mut request).await {
            self.layer.metrics.refused("invalid_request");
            return previous_refused(dialect, &unanswerable);
        }
        // The key's model globs before the route: a model the key may not use is its 403,
        // whatever this gateway's set-up for that route (SPEC R14.6).
        if let Some(client) = &client
            && let Err(d) = allow_model(client, &request.model)
        {
            self.refused_for(client, id, &request.model, ("auth", &d.message));
            return refusal(dialect, d.status, d.message);
        }
        let chain = match self.chain(dialect, &request.model) {
            Ok(chain) => chain,
            Err(response) => {
                let kind = if response.status() == 404 {
                    "not_found"
                } else {
                    "server"
                };
                self.layer.metrics.refused(kind);
                return *response;
            }
        };
        // The input estimate, once: the key's token window, its reservation, the routes'.
        let input = estimate_message_tokens(&request.system_prompt, &request.messages);
        if let Some(client) = &client
            && let Err(response) = self
                .admit(dialect, client, id, &chain, (&request, input))
                .await
        {
            return response;
        }
        let label = route_label(&request.model, self.router.glob_for(&request.model));
        let prefix = client.as_ref().map(|c| c.key.prefix.as_str());
        let live = self.live.start(id, &request.model, prefix);
        let relay = Relay {
            request,
            dialect,
            id: id.to_owned(),
            deadline: self.deadline,
            chain,
            layer: self.layer.for_request(client, input),
            label,
            received: sent.received,
            _flight: sent.flight,
            body: sent.body,
            forward_headers: sent.forward_headers,
            live,
        };
        relay.run().await
    }

    /// A keyed request's per-minute window and budget hold, before anything is sent
    /// (SPEC R14.6, R14.7); the request's record settles the hold. Else the 402 or 429.
    async fn admit(
        &self,
        dialect: Dialect,
        client: &Client,
        id: &str,
        chain: &Chain,
        (request, input): (&GatewayRequest, u64),
    ) -> Result<(), Response<Body>> {
        let reserve = self.router.reserve_usd(&request.model);
        let admitted = (self.layer).admit_client(client, (id, chain), (request, input), reserve);
        let Err(r) = admitted.await else {
            return Ok(());
        };
        let kind = match r.status {
            402 => "budget",
            429 => "rate_limited",
            // The store did not answer (503).
            _ => "server",
        };
        self.refused_for(client, id, &request.model, (kind, &r.message));
        let mut response = refusal(dialect, r.status, r.message);
        if let Some(wait) = r.retry_after {
            let ms = wait.as_millis().max(1);
            set_header(&mut response, "retry-after", &ms.div_ceil(1000).to_string());
            set_header(&mut response, "retry-after-ms", &ms.to_string());
        }
        Err(response)
    }

    /// Counts a keyed request's refusal (`/metrics`) and lists it on the live page
    /// (SPEC R14.11) under the same kind.
    fn refused_for(&self, client: &Client, id: &str, model: &str, why: (&'static str, &str)) {
        self.layer.metrics.refused(why.0);
        let prefix = Some(client.key.prefix.as_str());
        self.live.refused(id, model, prefix, why);
    }

    /// The failover chain `model` names; else the 404 (unknown) or 500 (not buildable) in
    /// `dialect`.
    fn chain(&self, dialect: Dialect, model: &str) -> Result<Chain, Box<Response<Body>>> {
        match self.router.chain(model) {
            Ok(chain) => Ok(chain),
            Err(RouteError::Unknown(message)) => Err(Box::new(refusal(dialect, 404, message))),
            // The gateway's own configuration (a provider key missing from its environment),
            // not the provider's fault: said as such, not as "the provider had a server error".
            Err(RouteError::Build(error)) => {
                let message = format!(
                    "This gateway is not set up for this route: {error} (in the gateway's environment or configuration file), then restart it."
                );
                Err(Box::new(refusal(dialect, 500, message)))
            }
        }
    }

    /// The client key check (SPEC R14.6) for every request but `/health` and `/ready`: the
    /// client (`None` when keys are off), else the 401, 403 or 503 in the dialect the path
    /// speaks.
    async fn door(&self, request: &Request<Incoming>) -> Result<Option<Client>, Response<Body>> {
        let path = request.uri().path();
        if matches!(path, "/health" | "/ready") {
            return Ok(None);
        }
        let purpose = if path == "/metrics" {
            Purpose::Admin
        } else {
            Purpose::Client
        };
        let denied = |d: Denied| {
            let dialect = if path.starts_with("/v1/messages") {
                Dialect::AnthropicMessages
            } else if path.starts_with("/v1/responses") {
                Dialect::Responses
            } else {
                Dialect::ChatCompletions
            };
            self.layer.metrics.refused("auth");
            refusal(dialect, d.status, d.message)
        };
        self.auth
            .check(request.headers(), purpose)
            .await
            .map_err(denied)
    }

    /// `POST /v1/messages/count_tokens` (SPEC R14.1): `{"input_tokens": N}`, Switchyard's
    /// estimate for the route's model (`count.rs`; `x-switchyard-usage: estimated`), no
    /// provider asked; errors (400 naming the field, 404 unknown model, 413) in Anthropic's
    /// shape.
    async fn count_tokens(&self, request: Request<Incoming>) -> Response<Body> {
        let dialect = Dialect::AnthropicMessages;
        let body = match self.read_body(request, dialect).await {
            Ok(body) => body,
            Err(response) => return response,
        };
        let request = match parse_count_tokens(&body) {
            Ok(request) => request,
            Err(error) => {
                let (status, body) = invalid_request_response(dialect, &error);
                return json_response(status, &body);
            }
        };
        let chain = match self.chain(dialect, &request.model) {
            Ok(chain) => chain,
            Err(response) => return *response,
        };
        let model = chain
            .first()
            .map_or(request.model.as_str(), |e| &e.model_id);
        let tokens = crate::count::input_tokens(&request, model);
        let mut response = json_response(200, &json!({"input_tokens": tokens}));
        set_header(&mut response, "x-switchyard-usage", "estimated");
        response
    }
}

/// The answer to a Responses request whose `previous_response_id` cannot be answered (SPEC
/// R14.1): unknown, a 404 in OpenAI's shape (`code: previous_response_not_found`, OpenAI's
/// message), never sent on without the conversation it stands for; the store failing, a 500.
fn previous_refused(dialect: Dialect, unanswerable: &Unanswerable) -> Response<Body> {
    match unanswerable {
        Unanswerable::NotFound(id) => {
            let body = json!({"error": {
                "message": format!("Previous response with id '{id}' not found."),
                "type": "invalid_request_error",
                "param": "previous_response_id",
                "code": "previous_response_not_found",
            }});
            json_response(404, &body)
        }
        Unanswerable::Store(e) => {
            let message = format!("The stored response could not be read: {e}.");
            dialect_error(
                dialect,
                &ApiError::new(ErrorKind::Server, message),
                Some(500),
            )
        }
    }
}

/// What the client sent with one request's body, kept for its relay.
struct Sent {
    body: bytes::Bytes,
    /// The client's headers a forwarded body takes along ([`forward_headers`]).
    forward_headers: Vec<(String, String)>,
    /// When its headers were read (SPEC R14.9's overhead starts there).
    received: Instant,
    flight: InFlight,
}

/// The client headers sent on with its body when the route's provider takes that body as it
/// is (SPEC R14.2): Anthropic's `anthropic-beta`, which the body's fields may need (Claude
/// Code's `context_management`, interleaved thinking); at most 4 KiB of it.
pub(crate) fn forward_headers(
    dialect: Dialect,
    headers: &hyper::HeaderMap,
) -> Vec<(String, String)> {
    if dialect != Dialect::AnthropicMessages {
        return Vec::new();
    }
    let beta = headers.get("anthropic-beta").and_then(|v| v.to_str().ok());
    beta.filter(|v| v.len() <= 4096)
        .map(|v| vec![("anthropic-beta".to_owned(), v.to_owned())])
        .unwrap_or_default()
}
