//! A request-aware scripted model server for the agent-client tests (issue 23): it answers each
//! POST by asking a test-supplied closure what the model says, in the upstream dialect it was
//! started as (OpenAI Chat Completions, Anthropic Messages or OpenAI Responses), streamed or not.
//!
//! [`MockServer`](crate::MockServer) replays fixed bytes; a real agent (Claude Code, Codex CLI,
//! Cline, aider) makes several requests whose answers depend on what it asked (a title request,
//! the turn that should call a tool, the turn after the tool result). [`AgentUpstream`] parses
//! each request into an [`AgentTurnRequest`] (the tools offered, whether the conversation ends
//! in a tool result, the last user text, `stream`, the raw JSON), calls the closure, and writes
//! the closure's [`AgentTurn`] in the shapes the real providers send (copied from
//! `tests/fixtures`: `openai_chat_tool_calls`, `anthropic_tool_use`, `openai_responses`):
//!
//! * [`UpstreamDialect::ChatCompletions`] — `POST …/chat/completions`: SSE `data:` chunks, a
//!   last chunk with `finish_reason` (`stop` or `tool_calls`), a usage chunk (`choices: []`)
//!   when the request asked for it with `stream_options.include_usage`, then `data: [DONE]`;
//!   or one `chat.completion` JSON object when `stream` is not true.
//! * [`UpstreamDialect::Messages`] — `POST …/messages` (any query string): `event:` + `data:`
//!   lines `message_start` (input usage), per block `content_block_start`, deltas
//!   (`text_delta`, `input_json_delta`), `content_block_stop`, then `message_delta`
//!   (`stop_reason` `end_turn` or `tool_use`, output usage) and `message_stop`; or one
//!   `message` JSON object.
//! * [`UpstreamDialect::Responses`] — `POST …/responses`: `response.created`,
//!   `response.in_progress`, per output item `response.output_item.added`, its deltas and
//!   `…done` events, `response.output_item.done`, then `response.completed` with the whole
//!   response and usage; or the response JSON object.
//! * [`UpstreamDialect::Gemini`] — `POST …/models/MODEL:streamGenerateContent` (and
//!   `:generateContent`): `data:` events of `GenerateContentResponse`s, text in two parts, a
//!   call as one whole `functionCall` part with an id and a thought signature, the last with
//!   `finishReason: STOP` and `usageMetadata`; or one such response.
//!
//! Streams go out with `transfer-encoding: chunked`, one event per write, as the providers do;
//! JSON answers with `content-length`. Connections are kept alive. Usage is a deterministic
//! estimate (request body bytes / 4 in, answer bytes / 4 + 1 out), so a test can follow it
//! through the gateway.
//!
//! Any other method or path gets a 404 JSON error; a body that is not JSON a 400; a body over
//! [`BODY_LIMIT`] a 413. A request head must arrive within 10 s and its body within 30 s; an
//! idle kept-alive connection is closed after 60 s. A closure that panics gets the request a
//! 500 whose body names the panic, and the panic is kept in the record, so the test can show it.
//!
//! Every request is recorded with what was answered ([`AgentExchange`]); [`AgentUpstream::summary`]
//! gives the count and sizes for a test's output (the figures of issue 23's note).

mod cache;
mod encode;
mod request;

use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout};

pub use request::AgentTurnRequest;

use crate::RecordedRequest;
use crate::response::find;

/// The largest request body the server reads, in bytes (16 MiB: agents send long system
/// prompts and tool lists, Claude Code about 100 KB).
pub const BODY_LIMIT: usize = 16 * 1024 * 1024;

const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
const BODY_TIMEOUT: Duration = Duration::from_secs(30);
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The upstream dialect an [`AgentUpstream`] speaks: which path it answers and in which shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpstreamDialect {
    /// OpenAI Chat Completions: `POST …/chat/completions`. A switchyard provider `openai`
    /// reaches it with `base_url = "<url>/v1"` ([`AgentUpstream::base_url`]).
    ChatCompletions,
    /// Anthropic Messages: `POST …/messages`. Provider `anthropic`, `base_url = "<url>"`.
    Messages,
    /// OpenAI Responses: `POST …/responses`. Provider `openai` with a model that uses the
    /// Responses API, `base_url = "<url>/v1"`.
    Responses,
    /// Google's Gemini API: `POST …/models/MODEL:streamGenerateContent` or `:generateContent`.
    /// Provider `gemini`, `base_url = "<url>"`.
    Gemini,
}

impl UpstreamDialect {
    /// The last path segment this dialect answers (`chat/completions`, `messages`,
    /// `responses`); any prefix is accepted (`/v1/…`, `/…`).
    pub fn path_suffix(self) -> &'static str {
        match self {
            UpstreamDialect::ChatCompletions => "/chat/completions",
            UpstreamDialect::Messages => "/messages",
            UpstreamDialect::Responses => "/responses",
            UpstreamDialect::Gemini => ":streamGenerateContent",
        }
    }

    /// Whether this dialect answers `path` (its query left out).
    fn answers(self, path: &str) -> bool {
        path.ends_with(self.path_suffix())
            || (self == UpstreamDialect::Gemini && path.ends_with(":generateContent"))
    }
}

/// What the model says in one turn, as the test's closure decides it.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentTurn {
    /// Only text; the turn ends (`stop` / `end_turn` / a completed message).
    Text(String),
    /// One tool call and nothing else; the turn ends asking for the tool (`tool_calls` /
    /// `tool_use`). `arguments` is the tool input as JSON (an object).
    ToolCall {
        /// The tool's name, as the client offered it.
        name: String,
        /// The tool's input.
        arguments: serde_json::Value,
    },
    /// Text first, then one tool call, in one turn.
    TextAndToolCall {
        /// The text said before the call.
        text: String,
        /// The tool's name, as the client offered it.
        name: String,
        /// The tool's input.
        arguments: serde_json::Value,
    },
}

impl AgentTurn {
    /// A text-only turn.
    pub fn text(text: impl Into<String>) -> Self {
        AgentTurn::Text(text.into())
    }

    /// A turn that only calls `name` with `arguments`.
    pub fn tool_call(name: impl Into<String>, arguments: serde_json::Value) -> Self {
        AgentTurn::ToolCall {
            name: name.into(),
            arguments,
        }
    }

    /// The text of the turn, if any.
    pub fn said(&self) -> Option<&str> {
        match self {
            AgentTurn::Text(text) | AgentTurn::TextAndToolCall { text, .. } => Some(text),
            AgentTurn::ToolCall { .. } => None,
        }
    }

    /// The tool call of the turn, if any: name and arguments.
    pub fn call(&self) -> Option<(&str, &serde_json::Value)> {
        match self {
            AgentTurn::Text(_) => None,
            AgentTurn::ToolCall { name, arguments }
            | AgentTurn::TextAndToolCall {
                name, arguments, ..
            } => Some((name, arguments)),
        }
    }
}

/// One request the server received and what it answered.
#[derive(Clone, Debug)]
pub struct AgentExchange {
    /// The request as received.
    pub request: RecordedRequest,
    /// The response status sent.
    pub status: u16,
    /// Whether the answer was streamed (SSE).
    pub streamed: bool,
    /// The bytes of the response body sent (after chunked framing is removed).
    pub response_bytes: usize,
    /// What the closure said, when it was asked (not for a 404, 400, 413 or a panic).
    pub turn: Option<AgentTurn>,
    /// The closure's panic message, when it panicked.
    pub panic: Option<String>,
}

type Respond = dyn Fn(&AgentTurnRequest) -> AgentTurn + Send + Sync;

struct State {
    dialect: UpstreamDialect,
    respond: Box<Respond>,
    exchanges: Mutex<Vec<AgentExchange>>,
    /// The provider's prompt cache when played; without it nothing is ever cached.
    cache: Option<Mutex<cache::PromptCache>>,
}

/// The running server; dropping it stops it (and its runtime, for
/// [`AgentUpstream::start_blocking`]).
pub struct AgentUpstream {
    addr: std::net::SocketAddr,
    state: Arc<State>,
    accept: JoinHandle<()>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl AgentUpstream {
    /// Starts the server on `127.0.0.1:0` on the current tokio runtime, speaking `dialect`,
    /// answering each request with what `respond` says.
    ///
    /// # Panics
    ///
    /// When no loopback port can be bound.
    pub async fn start(
        dialect: UpstreamDialect,
        respond: impl Fn(&AgentTurnRequest) -> AgentTurn + Send + Sync + 'static,
    ) -> Self {
        Self::start_with(dialect, Box::new(respond), None).await
    }

    async fn start_with(
        dialect: UpstreamDialect,
        respond: Box<Respond>,
        cache: Option<Mutex<cache::PromptCache>>,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("cannot bind 127.0.0.1:0 for the agent upstream");
        let addr = listener
            .local_addr()
            .expect("a bound listener has an address");
        let state = Arc::new(State {
            dialect,
            respond,
            exchanges: Mutex::new(Vec::new()),
            cache,
        });
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&state)));
        AgentUpstream {
            addr,
            state,
            accept,
            runtime: None,
        }
    }

    /// [`AgentUpstream::start`] with the provider's prompt cache played: usage reports cache
    /// reads and writes only for the hints that arrive, as the `cache` module describes.
    ///
    /// # Panics
    ///
    /// When no loopback port can be bound.
    pub async fn start_caching(
        dialect: UpstreamDialect,
        respond: impl Fn(&AgentTurnRequest) -> AgentTurn + Send + Sync + 'static,
    ) -> Self {
        let cache = Some(Mutex::new(cache::PromptCache::default()));
        Self::start_with(dialect, Box::new(respond), cache).await
    }

    /// [`AgentUpstream::start`] for a test without a tokio runtime (a `#[test]` that runs a
    /// client program): the server runs on a runtime of its own, on one background thread.
    ///
    /// # Panics
    ///
    /// When the runtime cannot be built or no loopback port can be bound.
    pub fn start_blocking(
        dialect: UpstreamDialect,
        respond: impl Fn(&AgentTurnRequest) -> AgentTurn + Send + Sync + 'static,
    ) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("cannot build the agent upstream's runtime");
        let mut upstream = runtime.block_on(Self::start(dialect, respond));
        upstream.runtime = Some(runtime);
        upstream
    }

    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The `base_url` a switchyard provider of this dialect is given: [`AgentUpstream::url`]
    /// plus `/v1` for the OpenAI dialects (whose handlers append `/chat/completions` or
    /// `/responses`), the bare URL for Messages (whose handler appends `/v1/messages`).
    pub fn base_url(&self) -> String {
        match self.state.dialect {
            UpstreamDialect::Messages | UpstreamDialect::Gemini => self.url(),
            _ => format!("{}/v1", self.url()),
        }
    }

    /// The dialect this server speaks.
    pub fn dialect(&self) -> UpstreamDialect {
        self.state.dialect
    }

    /// Every exchange so far, in the order the requests were read.
    pub fn exchanges(&self) -> Vec<AgentExchange> {
        lock(&self.state.exchanges).clone()
    }

    /// How many requests have been received.
    pub fn request_count(&self) -> usize {
        lock(&self.state.exchanges).len()
    }

    /// One line per exchange for a test's output: index, method, path, request body bytes,
    /// streamed or not, status, response body bytes, what was answered; first a line with the
    /// count and totals.
    pub fn summary(&self) -> String {
        let exchanges = self.exchanges();
        let sent: usize = exchanges.iter().map(|e| e.request.body.len()).sum();
        let got: usize = exchanges.iter().map(|e| e.response_bytes).sum();
        let mut out = format!(
            "agent upstream ({:?}): {} request(s), {sent} request body bytes, {got} response body bytes\n",
            self.state.dialect,
            exchanges.len()
        );
        for (i, e) in exchanges.iter().enumerate() {
            let answered = match (&e.turn, &e.panic) {
                (_, Some(p)) => format!("closure panicked: {p}"),
                (Some(turn), None) => describe(turn),
                (None, None) => "-".to_owned(),
            };
            out.push_str(&format!(
                "  #{} {} {} in={}B {} -> {} out={}B {answered}\n",
                i + 1,
                e.request.method,
                e.request.path,
                e.request.body.len(),
                if e.streamed { "stream" } else { "json" },
                e.status,
                e.response_bytes,
            ));
        }
        out
    }
}

impl Drop for AgentUpstream {
    fn drop(&mut self) {
        self.accept.abort();
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn describe(turn: &AgentTurn) -> String {
    let mut parts = Vec::new();
    if let Some(text) = turn.said() {
        parts.push(format!(
            "text {:?}",
            text.chars().take(60).collect::<String>()
        ));
    }
    if let Some((name, _)) = turn.call() {
        parts.push(format!("tool call {name}"));
    }
    parts.join(" + ")
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                connections.spawn(serve_connection(stream, Arc::clone(&state)));
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn serve_connection(mut stream: TcpStream, state: Arc<State>) {
    let mut buf = Vec::new();
    loop {
        let read = read_request(&mut stream, &mut buf).await;
        let (request, problem) = match read {
            Ok(Read::Request(r)) => (r, None),
            Ok(Read::TooLarge(r)) => (r, Some(413)),
            Ok(Read::Closed) | Err(_) => return,
        };
        let close = request
            .header("connection")
            .is_some_and(|c| c.eq_ignore_ascii_case("close"))
            || problem.is_some();
        let (pieces, exchange) = answer(&state, request, problem);
        lock(&state.exchanges).push(exchange);
        for piece in pieces {
            if stream.write_all(&piece).await.is_err() || stream.flush().await.is_err() {
                return;
            }
        }
        if close {
            return;
        }
    }
}

/// Answers one request: the bytes to write (head and framed body) and the record.
fn answer(
    state: &State,
    request: RecordedRequest,
    problem: Option<u16>,
) -> (Vec<Vec<u8>>, AgentExchange) {
    let mut exchange = AgentExchange {
        request,
        status: 200,
        streamed: false,
        response_bytes: 0,
        turn: None,
        panic: None,
    };
    let reply = match problem {
        Some(status) => encode::error(status, "request_too_large", "the request body is too large"),
        None => respond(state, &mut exchange),
    };
    exchange.status = reply.status;
    exchange.streamed = reply.events.is_some();
    exchange.response_bytes = reply.body_len();
    (reply.to_wire(), exchange)
}

/// Routes, parses and asks the closure; fills in the exchange's turn or panic.
fn respond(state: &State, exchange: &mut AgentExchange) -> encode::Reply {
    let r = &exchange.request;
    let path = r.path.split('?').next().unwrap_or_default();
    if r.method != "POST" || !state.dialect.answers(path) {
        let message = format!(
            "this {:?} agent upstream answers POST …{}, not {} {}",
            state.dialect,
            state.dialect.path_suffix(),
            r.method,
            r.path
        );
        return encode::error(404, "not_found_error", &message);
    }
    let parsed = match AgentTurnRequest::parse(state.dialect, r) {
        Ok(parsed) => parsed,
        Err(e) => return encode::error(400, "invalid_request_error", &e),
    };
    let turn = match catch_unwind(AssertUnwindSafe(|| (state.respond)(&parsed))) {
        Ok(turn) => turn,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "(no message)".to_owned());
            exchange.panic = Some(message.clone());
            return encode::error(
                500,
                "api_error",
                &format!("the test's closure panicked: {message}"),
            );
        }
    };
    let cached = state.cache.as_ref().map_or((0, 0), |c| {
        let mut c = c.lock().unwrap_or_else(PoisonError::into_inner);
        c.account(state.dialect, &parsed.body)
    });
    let reply = encode::turn(state.dialect, &parsed, &turn, r.body.len(), cached);
    exchange.turn = Some(turn);
    reply
}

enum Read {
    Request(RecordedRequest),
    /// The head was read but the body is over [`BODY_LIMIT`] (not read).
    TooLarge(RecordedRequest),
    Closed,
}

/// Reads one request (head within [`HEAD_TIMEOUT`], or [`IDLE_TIMEOUT`] before its first byte;
/// body within [`BODY_TIMEOUT`]), leaving extra bytes in `buf`. Only `content-length` bodies:
/// the clients under test and the gateway do not chunk requests (a chunked one is refused).
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<Read> {
    let head_end = loop {
        if let Some(pos) = find(buf, b"\r\n\r\n") {
            break pos + 4;
        }
        let limit = if buf.is_empty() {
            IDLE_TIMEOUT
        } else {
            HEAD_TIMEOUT
        };
        if buf.len() > 64 * 1024 || !fill(stream, buf, limit).await? {
            return Ok(Read::Closed);
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end - 4]).into_owned();
    buf.drain(..head_end);
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let (Some(method), Some(path)) = (request_line.next(), request_line.next()) else {
        return Ok(Read::Closed);
    };
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut request = RecordedRequest {
        method: method.to_owned(),
        path: path.to_owned(),
        headers,
        body: Vec::new(),
        at: Instant::now(),
    };
    if request.header("transfer-encoding").is_some() {
        return Ok(Read::Closed);
    }
    let length: usize = match request.header("content-length").map(str::parse) {
        Some(Ok(n)) => n,
        Some(Err(_)) => return Ok(Read::Closed),
        None => 0,
    };
    if length > BODY_LIMIT {
        return Ok(Read::TooLarge(request));
    }
    if request
        .header("expect")
        .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
        && buf.len() < length
    {
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
    }
    let deadline = Instant::now() + BODY_TIMEOUT;
    while buf.len() < length {
        let left = deadline.saturating_duration_since(Instant::now());
        if !fill(stream, buf, left).await? {
            return Ok(Read::Closed);
        }
    }
    request.body = buf.drain(..length).collect();
    request.at = Instant::now();
    Ok(Read::Request(request))
}

/// Reads more bytes into `buf` within `limit`; `false` on EOF or timeout.
async fn fill(stream: &mut TcpStream, buf: &mut Vec<u8>, limit: Duration) -> io::Result<bool> {
    let mut chunk = [0u8; 16 * 1024];
    match timeout(limit, stream.read(&mut chunk)).await {
        Ok(read) => {
            let n = read?;
            buf.extend_from_slice(&chunk[..n]);
            Ok(n > 0)
        }
        Err(_) => Ok(false),
    }
}
