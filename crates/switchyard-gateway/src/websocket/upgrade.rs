//! The handshake: a `GET` that asks for a WebSocket gets its `101`, and the socket a session.
//! Spec: R14.1b.

use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper::header::{CONNECTION, HeaderMap, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_util::sync::CancellationToken;

use super::session::{Session, Turn};
use crate::idle::Watch;
use crate::metrics::OpenSocket;
use crate::parsing::ParseBudget;
use crate::refusal::{Kind, Refusal};
use crate::reply::Body;

/// The `101` that turns `request`'s connection into a Responses WebSocket whose turns run
/// through `turn`, counted open by `open` until it closes; a request that is no WebSocket
/// handshake is refused. Frames and messages are capped at `body_limit`, the HTTP body cap, and
/// parsed within `parsing`, the HTTP requests' memory.
pub(crate) fn upgrade(
    mut request: Request<Incoming>,
    turn: Turn,
    (body_limit, parsing): (usize, ParseBudget),
    open: OpenSocket,
) -> Result<Response<Body>, Refusal> {
    let accept = accept_key(request.headers())?;
    let upgrading = hyper::upgrade::on(&mut request);
    // The connection's slot stays taken while the session lives.
    let busy = request.extensions().get::<Watch>().map(Watch::busy);
    let stopping = request.extensions().get::<CancellationToken>().cloned();
    tokio::spawn(async move {
        let (_busy, _open) = (busy, open);
        let upgraded = match upgrading.await {
            Ok(upgraded) => upgraded,
            Err(e) => return tracing::debug!("a WebSocket upgrade did not complete: {e}"),
        };
        let config = WebSocketConfig::default()
            .max_message_size(Some(body_limit))
            .max_frame_size(Some(body_limit));
        let io = TokioIo::new(upgraded);
        let socket = WebSocketStream::from_raw_socket(io, Role::Server, Some(config)).await;
        let stopping = stopping.unwrap_or_default();
        Session::new(socket, turn, (body_limit, parsing))
            .run(stopping)
            .await;
    });
    let mut response = Response::new(Empty::new().boxed());
    *response.status_mut() = hyper::StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(
        UPGRADE,
        hyper::header::HeaderValue::from_static("websocket"),
    );
    headers.insert(
        CONNECTION,
        hyper::header::HeaderValue::from_static("Upgrade"),
    );
    if let Ok(value) = accept.parse() {
        headers.insert(SEC_WEBSOCKET_ACCEPT, value);
    }
    Ok(response)
}

/// The `Sec-WebSocket-Accept` answering `headers`' handshake, or why they are none.
fn accept_key(headers: &HeaderMap) -> Result<String, Refusal> {
    let has = |name, token: &str| {
        (headers.get_all(name).iter())
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|v| v.trim().eq_ignore_ascii_case(token))
    };
    if !has(UPGRADE, "websocket") || !has(CONNECTION, "upgrade") {
        let message = "GET /v1/responses is the Responses WebSocket and needs `Upgrade: websocket`; over HTTP, POST /v1/responses.";
        return Err(Refusal::new(426, Kind::InvalidRequest, message.to_owned()));
    }
    let version = headers.get(hyper::header::SEC_WEBSOCKET_VERSION);
    let key = headers.get(SEC_WEBSOCKET_KEY);
    match (version.and_then(|v| v.to_str().ok()), key) {
        (Some("13"), Some(key)) => Ok(derive_accept_key(key.as_bytes())),
        _ => {
            let message = "A WebSocket handshake needs `Sec-WebSocket-Version: 13` and a `Sec-WebSocket-Key`.";
            Err(Refusal::new(400, Kind::InvalidRequest, message.to_owned()))
        }
    }
}
