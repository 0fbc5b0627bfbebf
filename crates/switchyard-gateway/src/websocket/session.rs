//! One socket's life: its messages read one at a time, each `response.create` run as a turn
//! while the socket is still watched, so a client that goes away cancels the upstream.
//! Spec: R14.1b.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::{SinkExt, StreamExt};
use http_body_util::BodyExt;
use hyper::Response;
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::time::{Instant, timeout};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error, Message};
use tokio_util::sync::CancellationToken;

use super::chain::{Chain, Read};
use super::events::{Split, answer_event, dropped_event, error_event};
use crate::parsing::ParseBudget;
use crate::reply::Body;

/// How long a socket may wait for its next message between turns.
const IDLE: Duration = Duration::from_secs(300);

/// How long one socket may live, OpenAI's own limit: Codex then opens a new one.
const LIFETIME: Duration = Duration::from_secs(60 * 60);

/// How many turns one socket may run.
const TURNS_MAX: usize = 1_000;

/// How long one message may take to go out before the client counts as gone.
const SEND: Duration = Duration::from_secs(60);

/// The events that end a turn's answer.
const TERMINAL: [&str; 4] = [
    "response.completed",
    "response.failed",
    "response.incomplete",
    "error",
];

/// The code OpenAI's endpoint and Codex name a socket past its limit by.
const LIMIT_CODE: &str = "websocket_connection_limit_reached";

/// One turn: a Responses request body in, the answer the HTTP path would give out.
pub(crate) type Turn = Arc<dyn Fn(Bytes) -> BoxFuture<'static, Response<Body>> + Send + Sync>;

type Socket = WebSocketStream<TokioIo<Upgraded>>;

/// What a message read during a turn means for it.
enum During {
    Keep,
    Gone,
}

/// One socket, its conversation and its bounds.
pub(super) struct Session {
    socket: Socket,
    turn: Turn,
    chain: Chain,
    body_limit: usize,
    /// The memory shared by the parses in flight, HTTP requests' too.
    parsing: ParseBudget,
    opened: Instant,
    turns: usize,
    /// A `response.create` that came after the running turn's last event but before its
    /// stream ended: Codex sends the next one as soon as it reads `response.completed`.
    queued: Option<Bytes>,
    /// Whether the running turn's last event has gone out.
    answered: bool,
}

impl Session {
    pub(super) fn new(
        socket: Socket,
        turn: Turn,
        (body_limit, parsing): (usize, ParseBudget),
    ) -> Self {
        Self {
            socket,
            turn,
            chain: Chain::new(body_limit),
            body_limit,
            parsing,
            opened: Instant::now(),
            turns: 0,
            queued: None,
            answered: false,
        }
    }

    /// Reads and answers messages until the client closes, idles out or breaks a bound, or the
    /// gateway stops: a turn running then is answered first.
    pub(super) async fn run(mut self, stopping: CancellationToken) {
        loop {
            if let Some(text) = self.queued.take() {
                if self.create(&text).await.is_break() {
                    return;
                }
                continue;
            }
            let next = tokio::select! {
                biased;
                () = stopping.cancelled() => {
                    let reason = "The gateway is shutting down: open a new socket.";
                    return self.close(CloseCode::Away, reason).await;
                }
                next = timeout(IDLE, self.socket.next()) => next,
            };
            let message = match next {
                Err(_) => {
                    let reason = format!(
                        "No message for {} s: this socket is closed.",
                        IDLE.as_secs()
                    );
                    return self.close(CloseCode::Away, &reason).await;
                }
                Ok(None) => return,
                Ok(Some(Err(e))) => return self.broken(e).await,
                Ok(Some(Ok(message))) => message,
            };
            let flow = match message {
                Message::Text(text) => self.create(text.as_bytes()).await,
                Message::Binary(_) => {
                    let message = "This socket takes JSON text messages, not binary ones.";
                    self.send(&error_event(400, "invalid_request_error", None, message))
                        .await
                }
                Message::Close(_) => {
                    // tungstenite has queued the close's answer: sending it ends the socket.
                    let _ = self.socket.flush().await;
                    return;
                }
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {
                    ControlFlow::Continue(())
                }
            };
            if flow.is_break() {
                return;
            }
        }
    }

    /// Answers one client message.
    async fn create(&mut self, text: &[u8]) -> ControlFlow<()> {
        if self.turns >= TURNS_MAX || self.opened.elapsed() >= LIFETIME {
            let message = format!(
                "This socket has run its {TURNS_MAX} turns or {} minutes: open a new one to continue.",
                LIFETIME.as_secs() / 60
            );
            let _ = self
                .send(&error_event(
                    400,
                    "invalid_request_error",
                    Some(LIMIT_CODE),
                    &message,
                ))
                .await;
            self.close(CloseCode::Normal, "connection limit reached")
                .await;
            return ControlFlow::Break(());
        }
        // A message is shaped and its parse reserved as an HTTP body is, before any tree of it.
        let shape = match crate::ingress::shape(text) {
            Ok(shape) => shape,
            Err(e) => {
                return self
                    .send(&error_event(
                        400,
                        "invalid_request_error",
                        None,
                        &e.to_string(),
                    ))
                    .await;
            }
        };
        let room = self.parsing.reserve(ParseBudget::cost(text.len(), &shape));
        let _room = match room.await {
            Ok(room) => room,
            Err(refusal) => {
                return self
                    .send(&error_event(503, "server_error", None, &refusal.sentence()))
                    .await;
            }
        };
        match self.chain.read(text) {
            Read::Nothing => ControlFlow::Continue(()),
            Read::Refuse(event) => self.send(&event).await,
            Read::Answer(events) => {
                for event in &events {
                    self.send(event).await?;
                }
                ControlFlow::Continue(())
            }
            Read::Run(body) => {
                self.turns += 1;
                self.run_turn(body).await
            }
        }
    }

    /// Runs one turn and sends its events; the client going meanwhile drops the turn, which
    /// cancels its upstream request.
    async fn run_turn(&mut self, body: Vec<u8>) -> ControlFlow<()> {
        self.answered = false;
        let answering = (self.turn)(body.into());
        tokio::pin!(answering);
        let response = loop {
            tokio::select! {
                response = &mut answering => break response,
                message = self.socket.next() => {
                    if let During::Gone = self.during(message).await {
                        return ControlFlow::Break(());
                    }
                }
            }
        };
        if response.status() != hyper::StatusCode::OK {
            return self.send(&answer_event(response).await).await;
        }
        // A socket has no headers per turn: what the gateway could not carry is named in an
        // event of its own before the stream, which clients skip as an unknown type.
        if let Some(dropped) = dropped_event(response.headers()) {
            self.send(&dropped).await?;
        }
        let mut body = response.into_body();
        let mut split = Split::default();
        loop {
            tokio::select! {
                frame = body.frame() => {
                    let Some(Ok(frame)) = frame else { return ControlFlow::Continue(()) };
                    let Ok(data) = frame.into_data() else { continue };
                    for event in split.push(&data) {
                        if let Ok(value) = serde_json::from_str::<Value>(&event) {
                            self.chain.saw(&value);
                            self.answered |= TERMINAL.contains(&value["type"].as_str().unwrap_or_default());
                        }
                        self.send_text(event).await?;
                    }
                }
                message = self.socket.next() => {
                    if let During::Gone = self.during(message).await {
                        return ControlFlow::Break(());
                    }
                }
            }
        }
    }

    /// What a message read while a turn runs means: one turn at a time, so another
    /// `response.create` is refused, or kept for later once the turn's last event is out; a
    /// close or a broken socket ends the turn.
    async fn during(&mut self, message: Option<Result<Message, Error>>) -> During {
        match message {
            None | Some(Ok(Message::Close(_))) => During::Gone,
            Some(Err(e)) => {
                self.broken(e).await;
                During::Gone
            }
            Some(Ok(Message::Text(text))) if self.answered && self.queued.is_none() => {
                self.queued = Some(text.into());
                During::Keep
            }
            Some(Ok(Message::Text(_) | Message::Binary(_))) => {
                let message = "A response is already being answered on this socket: send the next `response.create` after its `response.completed`.";
                let event = error_event(
                    409,
                    "invalid_request_error",
                    Some("response_already_in_flight"),
                    message,
                );
                match self.send(&event).await {
                    ControlFlow::Continue(()) => During::Keep,
                    ControlFlow::Break(()) => During::Gone,
                }
            }
            Some(Ok(_)) => During::Keep,
        }
    }

    /// Ends the socket after a read error, saying why when the client can still hear it: a
    /// message past the cap gets the sentence the HTTP path's 413 has.
    async fn broken(&mut self, error: Error) {
        let Error::Capacity(_) = error else {
            return tracing::debug!("a Responses WebSocket ended: {error}");
        };
        let mib = self.body_limit as f64 / (1024.0 * 1024.0);
        let message = format!("The message is larger than this gateway's {mib} MiB.");
        let _ = self
            .send(&error_event(413, "invalid_request_error", None, &message))
            .await;
        self.close(CloseCode::Size, &message).await;
    }

    async fn send(&mut self, event: &Value) -> ControlFlow<()> {
        self.send_text(event.to_string()).await
    }

    async fn send_text(&mut self, text: String) -> ControlFlow<()> {
        match timeout(SEND, self.socket.send(Message::text(text))).await {
            Ok(Ok(())) => ControlFlow::Continue(()),
            _ => ControlFlow::Break(()),
        }
    }

    async fn close(&mut self, code: CloseCode, reason: &str) {
        // A close reason has room for 123 bytes.
        let mut end = reason.len().min(123);
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        let frame = CloseFrame {
            code,
            reason: reason[..end].into(),
        };
        let _ = timeout(SEND, self.socket.close(Some(frame))).await;
    }
}
