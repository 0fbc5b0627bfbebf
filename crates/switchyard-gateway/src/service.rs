//! The gateway: its builder, and one request wired from the endpoint table through the door
//! to what answers it.
//! Spec: R14.1, R14.6, R14.8, R14.9, R14.10.

use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::json;
use switchyard_api::ApiConfiguration;
use switchyard_core::context::estimate_message_tokens;
use switchyard_core::store::{SqliteStore, StoreError, TaskStore};
use tokio::time::Instant;

use crate::auth::{Auth, Client, KeysRequired, Purpose, allow_model};
use crate::body::Sent;
use crate::endpoint::{Endpoint, Target, find};
use crate::ingress::Dialect;
use crate::metrics::{InFlight, Metrics, route_label};
use crate::models::Shape;
use crate::parsing::ParseBudget;
use crate::refusal::Refusal;
use crate::relay::Relay;
use crate::reload::{Current, Snapshot};
use crate::reply::{Body, json, set_header, with_body};
use crate::request::{RequestContext, RouteError, Router, resolve_previous};
use crate::shared::Shared;
use crate::telemetry::{PendingTrace, Telemetry};
use crate::ui::{Live, Ui};

/// The body size cap when none is given: 32 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 32 * 1024 * 1024;

pub struct Gateway {
    /// The routes and shared state of the configuration in effect.
    current: Current,
    auth: Auth,
    /// Tells this process's request ids from another's: its start in hex nanoseconds.
    id_prefix: String,
    next_id: AtomicU64,
    ui: Arc<Ui>,
}

impl Gateway {
    /// A gateway over `config` with a store of its own in memory, for its lifetime.
    ///
    /// # Errors
    ///
    /// SQLite could not allocate the in-memory store.
    pub fn new(config: ApiConfiguration) -> Result<Self, StoreError> {
        let store = SqliteStore::in_memory()?;
        Ok(Self::with_store(config, Arc::new(store)))
    }

    /// A gateway whose limits state and request log are in `store`, the one tasks use, so they
    /// all share one view of each provider.
    /// Spec: R14.4, R13.2.
    pub fn with_store(config: ApiConfiguration, store: Arc<dyn TaskStore>) -> Self {
        let live = Arc::new(Live::default());
        let router = Router::new(config.clone());
        let current = Current::new(
            router,
            Shared::new(store.clone(), &config, live.clone(), DEFAULT_BODY_LIMIT),
        );
        let reloads = Arc::clone(&current.reloads);
        let ui = Ui::new(Arc::clone(&store), config, live, reloads);
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Self {
            auth: Auth::new(store, KeysRequired::Never),
            current,
            id_prefix: format!("{:x}", started & 0xffff_ffff_ffff),
            next_id: AtomicU64::new(1),
            ui: Arc::new(ui),
        }
    }

    /// This gateway requiring a client key on every request but `/health` and `/ready`.
    pub fn with_client_keys(self, required: bool) -> Self {
        let when = if required {
            KeysRequired::Always
        } else {
            KeysRequired::Never
        };
        self.with_keys_required(when)
    }

    pub fn with_keys_required(mut self, when: KeysRequired) -> Self {
        self.auth = Auth::new(self.current.load().shared.store.clone(), when);
        self
    }

    pub fn requires_client_keys(&self) -> bool {
        self.auth.required()
    }

    /// This gateway refusing a key whose owner last signed in longer than `bound` ago; `None`
    /// (without single sign-on) bounds nothing.
    pub fn with_membership(mut self, bound: Option<Duration>) -> Self {
        self.current.shared_mut().membership = bound;
        self
    }

    /// This gateway counting a budget hold nothing settled for `lease`.
    pub fn with_hold_lease(mut self, lease: Duration) -> Self {
        self.current.shared_mut().admission.set_hold_lease(lease);
        self
    }

    /// This gateway reserving `usd` for a request to a model whose prices are unknown.
    pub fn with_reserve_usd(mut self, usd: f64) -> Self {
        self.current.shared_mut().admission.reserve_usd = usd;
        self
    }

    /// This gateway with a body cap of `bytes`.
    pub fn with_body_limit(mut self, bytes: usize) -> Self {
        self.current.shared_mut().body_limit = bytes;
        self
    }

    /// This gateway keeping at most `sets` label sets in `/metrics`.
    pub fn with_metric_label_sets(mut self, sets: usize) -> Self {
        let shared = self.current.shared_mut();
        shared.metrics = Arc::new(Metrics::new(sets));
        shared.telemetry.watch(&shared.metrics);
        self
    }

    /// This gateway exporting its spans and metrics through `telemetry`.
    /// Spec: R14.13.
    pub fn with_telemetry(mut self, telemetry: Arc<Telemetry>) -> Self {
        let shared = self.current.shared_mut();
        telemetry.watch(&shared.metrics);
        shared.telemetry = telemetry;
        self
    }

    pub(crate) fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.current.load().shared.metrics)
    }

    pub(crate) fn keep_request_log(
        &self,
        stop: tokio_util::sync::CancellationToken,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.current.load().shared.retention.clone().keep(stop)
    }

    /// Waits at most `wait` for the request log's writes still running.
    pub(crate) async fn settle_records(&self, wait: Duration) {
        let now = self.current.load();
        let writes = &now.shared.writes;
        if !writes.settled(wait).await {
            let n = writes.running();
            tracing::warn!("{n} request records were still being written when the gateway stopped");
        }
        now.shared.admission.shutdown().await;
    }

    /// Puts `config` in effect with `telemetry` for every request that starts from now on;
    /// requests in flight finish on the configuration they started with. Returns the changed
    /// settings that only a restart applies: they keep their running values.
    /// Spec: R14.3a.
    pub fn reload(&self, config: ApiConfiguration, telemetry: Arc<Telemetry>) -> Vec<&'static str> {
        let (unapplied, in_effect) = self.current.reload(config, telemetry);
        self.ui.reload(in_effect);
        unapplied
    }

    /// Counts a configuration refused, `reason` being why, for `/metrics` and the dashboard:
    /// the one in effect stays.
    pub fn reload_refused(&self, reason: &str) {
        self.current.refuse(reason);
    }

    /// The configuration in effect.
    pub fn configuration(&self) -> ApiConfiguration {
        self.current.load().router.config().clone()
    }

    /// The telemetry new requests export through.
    pub fn telemetry(&self) -> Arc<Telemetry> {
        Arc::clone(&self.current.load().shared.telemetry)
    }

    /// Shutdown has started: the dashboard's live streams, which have no end, end now.
    pub(crate) fn shutting_down(&self) {
        self.ui.stop();
    }

    /// Answers one request; every failure is a response in the client's dialect.
    pub(crate) async fn handle(
        self: Arc<Self>,
        request: Request<Incoming>,
        peer: IpAddr,
    ) -> Result<Response<Body>, Infallible> {
        // Hyper calls this once the headers are read: the gateway's overhead starts here.
        let received = Instant::now();
        let id = self.next_request_id();
        let target = find(request.method(), request.uri().path());
        // The configuration in effect now serves this request to its end, whatever a reload
        // puts in effect meanwhile.
        let now = self.current.load();
        let shared = &now.shared;
        let mut response = match self
            .answer(&now, target, request, (&id, received, peer))
            .await
        {
            Ok(response) => response,
            Err(refusal) => refusal.answer(target.dialect, &id, &shared.metrics, &shared.live),
        };
        set_header(&mut response, "x-request-id", &id);
        Ok(response)
    }

    fn next_request_id(&self) -> String {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        format!("req_{}{n:06}", self.id_prefix)
    }

    async fn answer(
        self: &Arc<Self>,
        now: &Snapshot,
        target: Target,
        request: Request<Incoming>,
        (id, received, peer): (&str, Instant, IpAddr),
    ) -> Result<Response<Body>, Refusal> {
        let client = match target.door {
            Some(purpose) => {
                let query = request.uri().query();
                let membership = now.shared.membership;
                (self
                    .auth
                    .check(request.headers(), query, purpose, membership))
                .await?
            }
            None => None,
        };
        let shared = &now.shared;
        match target.endpoint {
            Endpoint::Completion(dialect) => {
                let sent = (request, id, received);
                self.complete(now, dialect, sent, client).await
            }
            Endpoint::CountTokens(dialect) => {
                let counted =
                    crate::count::answer(&now.router, dialect, request, shared.body_limits());
                counted.await.map_err(Refusal::uncounted)
            }
            Endpoint::Models => {
                let shape = Shape::of(target.dialect, &request);
                let listed = crate::models::list(&now.router, shape, client.as_ref());
                Ok(json(200, &listed))
            }
            Endpoint::Model => {
                let shape = Shape::of(target.dialect, &request);
                let path = request.uri().path();
                let one = crate::models::one(&now.router, shape, path, client.as_ref());
                one.map(|body| json(200, &body)).map_err(Refusal::uncounted)
            }
            Endpoint::Metrics => {
                let text = shared.metrics.render(shared.cooling().await);
                let body = http_body_util::Full::new(bytes::Bytes::from(text)).boxed();
                Ok(with_body(
                    200,
                    "text/plain; version=0.0.4; charset=utf-8",
                    body,
                ))
            }
            Endpoint::Health => Ok(json(200, &json!({"status": "ok"}))),
            Endpoint::Ready => Ok(match shared.ready().await {
                Ok(()) => json(200, &json!({"status": "ready"})),
                Err(why) => json(503, &json!({"status": "unavailable", "error": why})),
            }),
            Endpoint::Dashboard => Ok(self.ui.handle(request, peer).await),
            Endpoint::ResponsesSocket => self.socket(request),
            Endpoint::Unknown => Err(Refusal::no_endpoint(request.method(), request.uri().path())),
        }
    }

    /// One model request, traced: a refusal before the relay ends its span at once.
    async fn complete(
        &self,
        now: &Snapshot,
        dialect: Dialect,
        (request, id, received): (Request<Incoming>, &str, Instant),
        client: Option<Client>,
    ) -> Result<Response<Body>, Refusal> {
        let mut trace = Some(now.shared.telemetry.pending(request.headers(), received));
        let sent = (request, id, received);
        let answered = self.relay(now, dialect, sent, client, &mut trace).await;
        if let (Err(refusal), Some(trace)) = (&answered, trace) {
            trace.refused(refusal.kind());
        }
        answered
    }

    /// One model request: body, parse, previous answer, the key's models, route, admission,
    /// then the relay.
    async fn relay(
        &self,
        now: &Snapshot,
        dialect: Dialect,
        (request, id, received): (Request<Incoming>, &str, Instant),
        client: Option<Client>,
        trace: &mut Option<PendingTrace>,
    ) -> Result<Response<Body>, Refusal> {
        let shared = &now.shared;
        let in_flight = shared.metrics.in_flight();
        let forward_headers = dialect.rules().forward_headers(request.headers());
        let target = crate::body::target(&request);
        let bytes = crate::body::read(request, shared.body_limits()).await?;
        let sent = Sent {
            bytes,
            forward_headers,
        };
        let call = (dialect, target.as_str(), id, received);
        self.relay_body(now, call, sent, client, trace, in_flight)
            .await
    }

    /// One model request whose body is in: parse, previous answer, the key's models, route,
    /// admission, then the relay.
    async fn relay_body(
        &self,
        now: &Snapshot,
        (dialect, target, id, received): (Dialect, &str, &str, Instant),
        Sent {
            bytes,
            forward_headers,
        }: Sent,
        client: Option<Client>,
        trace: &mut Option<PendingTrace>,
        in_flight: InFlight,
    ) -> Result<Response<Body>, Refusal> {
        let shared = &now.shared;
        let rules = dialect.rules();
        // Counted before it is parsed: a body past a cap costs no tree, and one that fits
        // reserves what its tree may cost.
        let shape = crate::ingress::shape(&bytes).map_err(Refusal::invalid)?;
        let parsing = (shared.parsing).reserve(ParseBudget::cost(bytes.len(), &shape));
        let reserved = parsing.await?;
        let mut parsed = rules.parse_call(target, &bytes).map_err(Refusal::invalid)?;
        drop(reserved);
        resolve_previous(
            shared.responses.as_ref(),
            shared.clock.now_ms(),
            &mut parsed,
        )
        .await?;
        let model = parsed.model.clone();
        let listed = |refusal: Refusal, client: &Client| refusal.listed(&model, &client.key.prefix);
        // The key's model globs before the route: a model the key may not use is its 403,
        // whatever the route.
        if let Some(client) = &client {
            allow_model(client, &model).map_err(|r| listed(r, client))?;
        }
        let chain = now.router.chain(&model).map_err(RouteError::refusal)?;
        // The input estimate, once: the key's token window, its reservation, the routes'.
        let input = estimate_message_tokens(&parsed.system_prompt, &parsed.messages);
        let (mut hold, mut lowered) = (None, None);
        if let Some(client) = &client {
            let reserve = now.router.reserve_usd(&model);
            let admitted = shared.admission.admit(
                client,
                (id, dialect.rules().record_name(), &chain),
                (&parsed, input),
                reserve,
            );
            let admitted = admitted.await.map_err(|r| listed(r, client))?;
            hold = admitted.hold;
            lowered = admitted
                .lowered
                .map(|max| (parsed.overrides.max_tokens, max));
            if let Some((_, max)) = lowered {
                parsed.overrides.max_tokens = Some(max);
            }
        }
        let prefix = client.as_ref().map(|c| c.key.prefix.as_str());
        let label = route_label(&model, now.router.glob_for(&model));
        let trace = (trace.take()).map(|t| t.start(&model, traced(id, &label, &client, dialect)));
        let context = RequestContext {
            id: id.to_owned(),
            dialect,
            received,
            input_tokens: input,
            label,
            live: shared.live.start(id, &model, prefix),
            trace: trace.unwrap_or_default(),
            client,
            _in_flight: in_flight,
            hold,
        };
        let sent = Sent {
            bytes,
            forward_headers,
        };
        let relay = Relay::new(Arc::clone(shared), context, (parsed, sent), chain);
        let mut response = relay.run().await;
        if let Some((asked, max)) = lowered {
            name_lowered_output(&mut response, asked, max);
        }
        Ok(response)
    }
}

/// Names, in `x-switchyard-max-tokens`, the output limit a request was sent with because its
/// budget could not pay the one it `asked` for.
fn name_lowered_output(response: &mut Response<Body>, asked: Option<u64>, max: u64) {
    let asked = asked.map_or_else(|| "the model's".to_owned(), |a| a.to_string());
    let value = format!("{max}; lowered from {asked} to fit the budget left");
    if let Ok(value) = hyper::header::HeaderValue::from_str(&value) {
        response
            .headers_mut()
            .insert("x-switchyard-max-tokens", value);
    }
}

impl Gateway {
    /// Hands `request`, its key checked at the door, to a Responses WebSocket whose turns run
    /// as `POST /v1/responses` requests with the upgrade's headers would.
    /// Spec: R14.1b.
    fn socket(self: &Arc<Self>, request: Request<Incoming>) -> Result<Response<Body>, Refusal> {
        let gateway = Arc::clone(self);
        let headers = request.headers().clone();
        let query = request.uri().query().map(str::to_owned);
        let turn: crate::websocket::Turn = Arc::new(move |bytes| {
            let (gateway, headers, query) = (Arc::clone(&gateway), headers.clone(), query.clone());
            Box::pin(async move { gateway.turn(bytes, &headers, query.as_deref()).await })
        });
        let shared = &self.current.load().shared;
        let open = shared.metrics.websocket();
        let bounds = (shared.body_limit, shared.parsing.clone());
        crate::websocket::upgrade(request, turn, bounds, open)
    }

    /// One socket turn: `bytes` answered as the same body posted to `/v1/responses` would be,
    /// a refusal included.
    async fn turn(
        &self,
        bytes: bytes::Bytes,
        headers: &hyper::HeaderMap,
        query: Option<&str>,
    ) -> Response<Body> {
        let received = Instant::now();
        let id = self.next_request_id();
        // Each turn runs on the configuration in effect when it arrives, as a request does.
        let now = self.current.load();
        let (dialect, shared) = (Dialect::Responses, &now.shared);
        // The key again each turn: one revoked or expired while its socket is open stops there.
        let checked = self
            .auth
            .check(headers, query, Purpose::Client, shared.membership);
        let client = match checked.await {
            Ok(client) => client,
            Err(refusal) => return refusal.answer(dialect, &id, &shared.metrics, &shared.live),
        };
        let mut trace = Some(shared.telemetry.pending(headers, received));
        let forward_headers = dialect.rules().forward_headers(headers);
        let sent = Sent {
            bytes,
            forward_headers,
        };
        let call = (dialect, "/v1/responses", id.as_str(), received);
        let in_flight = shared.metrics.in_flight();
        let answered = self.relay_body(&now, call, sent, client, &mut trace, in_flight);
        let mut response = match answered.await {
            Ok(response) => response,
            Err(refusal) => {
                if let Some(trace) = trace {
                    trace.refused(refusal.kind());
                }
                refusal.answer(dialect, &id, &shared.metrics, &shared.live)
            }
        };
        set_header(&mut response, "x-request-id", &id);
        response
    }
}

/// A request span's first attributes: Switchyard's own, never the key but its prefix.
fn traced(
    id: &str,
    label: &str,
    client: &Option<Client>,
    dialect: Dialect,
) -> Vec<opentelemetry::KeyValue> {
    use opentelemetry::KeyValue;
    let mut attributes = vec![
        KeyValue::new("switchyard.request_id", id.to_owned()),
        KeyValue::new("switchyard.route", label.to_owned()),
        KeyValue::new("switchyard.dialect", dialect.rules().record_name()),
    ];
    if let Some(key) = client.as_ref().map(|c| &c.key) {
        attributes.push(KeyValue::new("switchyard.key_prefix", key.prefix.clone()));
        if let Some(team) = &key.team {
            attributes.push(KeyValue::new("switchyard.team", team.clone()));
        }
    }
    attributes
}
