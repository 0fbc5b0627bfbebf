//! The dashboard's JSON endpoints under `/ui/api/`, each answered only in a session.
//! Spec: R14.11.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use serde_json::{Value, json};
use switchyard_core::limits::Clock;
use switchyard_core::store::Actor;

use super::board::Board;
use super::form::read_body;
use super::people::Role;
use super::session::{Session, Who};
use super::{audit, keys, own, people, providers, spend};
use crate::reply::{Body, ChannelBody, json as json_response, set_header, with_body};

/// How many live-page streams may be open at once; one more is a 429.
const STREAMS_MAX: usize = 32;

/// How often the live page's stream sends a snapshot.
const LIVE_EVERY: Duration = Duration::from_secs(1);

/// Open live-page streams.
static STREAMS: AtomicUsize = AtomicUsize::new(0);

/// `/ui/api/{path}` in `session`, changes made as `by`.
pub(super) async fn handle(
    board: &Arc<Board>,
    request: Request<Incoming>,
    path: String,
    (by, session): (&Actor, &Session),
) -> Response<Body> {
    let now = Clock::system().now_ms();
    let query = request.uri().query().unwrap_or("").to_owned();
    let mine = match &session.who {
        Who::User(p) if p.role != Role::Admin => Some(p),
        _ => None,
    };
    if request.method() == Method::POST {
        let Some(p) = mine else {
            return change(board, request, &path, (by, now)).await;
        };
        let body = match change_body(request).await {
            Ok(body) => body,
            Err(refused) => return refused,
        };
        return match own::change(&*board.store, &path, &body, (by, now), p).await {
            Ok(value) => json_response(200, &value),
            Err((status, sentence)) => problem(status, sentence),
        };
    }
    if request.method() != Method::GET {
        return problem(405, "Use GET or POST.".to_owned());
    }
    let store = &*board.store;
    if let Some(p) = mine {
        return match path.as_str() {
            "keys" => answer(own::keys(store, now, p).await.map_err(|e| e.to_string())),
            _ => problem(
                403,
                "Only an administrator sees this: your own keys are on /ui/keys.".to_owned(),
            ),
        };
    }
    match path.as_str() {
        "spend" => match spend::ask(&query, now) {
            Ok(ask) => answer(spend::figures(store, &ask).await),
            Err(p) => problem(400, p),
        },
        "spend.csv" => match spend::ask(&query, now) {
            Ok(ask) => match spend::csv(store, &ask).await {
                Ok(text) => csv(text),
                Err(p) => problem(503, p),
            },
            Err(p) => problem(400, p),
        },
        "keys" => answer(
            keys::list(store, now, None)
                .await
                .map_err(|e| e.to_string()),
        ),
        "users" => answer(people::list(store).await.map_err(|e| e.to_string())),
        "audit" => answer(audit::list(store).await.map_err(|e| e.to_string())),
        "providers" => {
            let listed = providers::list(store, &board.config(), now).await;
            let listed = listed.map(|mut list| {
                list["configuration"] = board.reloads.json();
                list
            });
            answer(listed.map_err(|e| e.to_string()))
        }
        "live.json" => json_response(200, &snapshot(board)),
        "live" => live_stream(board, request.headers().clone()),
        _ => problem(404, "There is no such dashboard endpoint.".to_owned()),
    }
}

/// A `POST`: create, update, revoke or rotate a key, or create or update a team, for `by`. It
/// needs the header `x-switchyard-ui: 1`, which a cross-site form cannot send.
async fn change(
    board: &Board,
    request: Request<Incoming>,
    path: &str,
    (by, now): (&Actor, i64),
) -> Response<Body> {
    let body = match change_body(request).await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let store = &*board.store;
    let parts: Vec<&str> = path.split('/').collect();
    let result = match parts.as_slice() {
        ["keys"] => match serde_json::from_slice(&body) {
            Ok(new) => keys::create(store, new, (by, now), None).await,
            Err(e) => Err(format!("The new key's fields could not be read: {e}.")),
        },
        ["teams"] => match serde_json::from_slice(&body) {
            Ok(new) => keys::create_team(store, new, (by, now)).await,
            Err(e) => Err(format!("The new team's fields could not be read: {e}.")),
        },
        ["keys", id, "update"] => match serde_json::from_slice(&body) {
            Ok(edit) => keys::update(store, id, edit, (by, now), None).await,
            Err(e) => Err(format!("The key's new fields could not be read: {e}.")),
        },
        ["teams", name, "update"] => match serde_json::from_slice(&body) {
            Ok(edit) => keys::update_team(store, name, edit, (by, now)).await,
            Err(e) => Err(format!("The team's new budget could not be read: {e}.")),
        },
        ["keys", id, "revoke"] => keys::revoke(store, id, (by, now)).await,
        ["keys", id, "rotate"] => keys::rotate(store, id, (by, now)).await,
        _ => return problem(404, "There is no such dashboard action.".to_owned()),
    };
    match result {
        Ok(value) => json_response(200, &value),
        Err(p) => problem(400, p),
    }
}

/// A change's body, once its request carries `x-switchyard-ui: 1`, which a cross-site form
/// cannot send; else the refusal to answer.
async fn change_body(request: Request<Incoming>) -> Result<Bytes, Response<Body>> {
    let asked = request
        .headers()
        .get("x-switchyard-ui")
        .and_then(|v| v.to_str().ok());
    if asked != Some("1") {
        return Err(problem(
            403,
            "A change needs the header `x-switchyard-ui: 1` (the dashboard's own pages send it)."
                .to_owned(),
        ));
    }
    read_body(request).await.map_err(|p| problem(400, p))
}

/// What is in flight and the last errors, now; elapsed times in ms.
fn snapshot(board: &Board) -> Value {
    let now = Clock::system().now_ms();
    let flights: Vec<Value> = (board.live.flights().into_iter())
        .map(|f| {
            let elapsed = (now - f.started_ms).max(0);
            let mut v = json!(f);
            v["elapsed_ms"] = json!(elapsed);
            v
        })
        .collect();
    json!({"now_ms": now, "flights": flights, "errors": board.live.errors()})
}

/// `GET /ui/api/live`: a snapshot each second as server-sent events, until the client goes
/// away, the session ends or `serve` starts shutting down.
fn live_stream(board: &Arc<Board>, headers: hyper::HeaderMap) -> Response<Body> {
    if STREAMS.fetch_add(1, Ordering::Relaxed) >= STREAMS_MAX {
        STREAMS.fetch_sub(1, Ordering::Relaxed);
        return problem(429, "Too many live pages are open: close one.".to_owned());
    }
    let (tx, body) = ChannelBody::channel(4);
    // Shutdown ends the body, so the drain does not wait for it to its deadline.
    let stopping = board.stopping.clone();
    let board = Arc::clone(board);
    tokio::spawn(async move {
        loop {
            if !board.still(&headers) {
                break;
            }
            let event = format!("event: snapshot\ndata: {}\n\n", snapshot(&board));
            let sent = tokio::select! {
                sent = tx.send(Bytes::from(event)) => sent.is_ok(),
                () = tx.closed() => false,
                () = stopping.cancelled() => false,
            };
            if !sent {
                break;
            }
            tokio::select! {
                () = tokio::time::sleep(LIVE_EVERY) => {}
                () = tx.closed() => break,
                () = stopping.cancelled() => break,
            }
        }
        STREAMS.fetch_sub(1, Ordering::Relaxed);
    });
    let mut r = with_body(200, "text/event-stream", body);
    set_header(&mut r, "cache-control", "no-store");
    r
}

/// A figure's JSON, or the store's failure as a 503.
fn answer(result: Result<Value, String>) -> Response<Body> {
    match result {
        Ok(value) => json_response(200, &value),
        Err(p) => problem(503, p),
    }
}

/// `{"error": SENTENCE}` with `status`.
fn problem(status: u16, sentence: String) -> Response<Body> {
    json_response(status, &json!({"error": sentence}))
}

fn csv(text: String) -> Response<Body> {
    let mut r = with_body(
        200,
        "text/csv; charset=utf-8",
        Full::new(Bytes::from(text)).boxed(),
    );
    set_header(
        &mut r,
        "content-disposition",
        "attachment; filename=\"switchyard-spend.csv\"",
    );
    r
}
