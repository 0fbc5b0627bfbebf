//! The scripted HTTP/1.1 server.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use crate::response::{Chunked, find, has_token, parse_chunked};
use crate::{AfterBody, Reply};

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// The request method, e.g. `POST`.
    pub method: String,
    /// The request target as sent, including the query string (e.g. `/v1/x?alt=sse`).
    pub path: String,
    /// The headers in order, names lowercased, values trimmed (non-UTF-8 bytes replaced).
    pub headers: Vec<(String, String)>,
    /// The body (decoded if it was sent with `transfer-encoding: chunked`).
    pub body: Vec<u8>,
    /// When the whole request had been read (virtual time under a paused tokio clock).
    pub at: Instant,
}

impl RecordedRequest {
    /// The value of the first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON.
    ///
    /// # Panics
    ///
    /// If the body is not valid JSON (the message shows the request line and the body).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body of {} {} is not JSON ({e}): {:?}",
                self.method,
                self.path,
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// A reply kept for one method and path ([`MockServer::start_routed`]): every request to it
/// gets it, outside the ordered replies.
#[derive(Clone, Debug)]
pub struct Route {
    /// The method, e.g. `GET` (compared case-sensitively, as HTTP does).
    pub method: String,
    /// The path without its query string, e.g. `/v1/models`.
    pub path: String,
    /// What every matching request gets.
    pub reply: Reply,
}

impl Route {
    /// `GET path` answered with `reply`.
    pub fn get(path: &str, reply: Reply) -> Self {
        Self {
            method: "GET".to_owned(),
            path: path.to_owned(),
            reply,
        }
    }

    fn matches(&self, method: &str, target: &str) -> bool {
        let path = target.split_once('?').map_or(target, |(path, _)| path);
        self.method == method && self.path == path
    }
}

/// State shared by the accept loop, the connection tasks and the [`MockServer`] handle.
struct State {
    replies: Vec<Reply>,
    routes: Vec<Route>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// The requests a [`Route`] answered, in arrival order.
    routed: Mutex<Vec<RecordedRequest>>,
    /// How many requests have been recorded, for [`MockServer::wait_for_requests`].
    recorded: watch::Sender<usize>,
    /// How many connections the server has closed, for [`MockServer::wait_for_closed`].
    closed: watch::Sender<usize>,
}

impl State {
    /// Records `request` and returns the reply it gets. Recording and taking the index happen
    /// under one lock, so `requests()[i]` is always the request that got reply `i`.
    fn record(&self, request: RecordedRequest) -> &Reply {
        if let Some(route) = self
            .routes
            .iter()
            .find(|r| r.matches(&request.method, &request.path))
        {
            let mut routed = self.routed.lock().unwrap_or_else(PoisonError::into_inner);
            routed.push(request);
            return &route.reply;
        }
        let mut requests = self.requests.lock().unwrap_or_else(PoisonError::into_inner);
        let index = requests.len();
        requests.push(request);
        self.recorded.send_replace(index + 1);
        &self.replies[index.min(self.replies.len() - 1)]
    }
}

/// A scripted HTTP/1.1 server on `127.0.0.1`. Request `n` (counted across all connections, in
/// arrival order) gets reply `n`; the last reply repeats. A request matching one of the
/// [`Route`]s given to [`MockServer::start_routed`] gets that route's reply instead, and is
/// not counted.
///
/// Dropping it stops the server: the accept loop and every connection task are aborted and their
/// sockets closed.
pub struct MockServer {
    addr: SocketAddr,
    state: Arc<State>,
    accept_task: JoinHandle<()>,
}

impl MockServer {
    /// Binds `127.0.0.1:0` and spawns the accept loop on the current tokio runtime.
    ///
    /// # Panics
    ///
    /// If `replies` is empty, if binding fails, or if called outside a tokio runtime.
    pub async fn start(replies: Vec<Reply>) -> Self {
        Self::start_routed(replies, Vec::new()).await
    }

    /// [`MockServer::start`], with `routes` answering their method and path whenever asked
    /// (a `GET /v1/models` beside the scripted POSTs). A routed request takes no ordered reply
    /// and is not in [`MockServer::requests`]; [`MockServer::routed_requests`] has it.
    ///
    /// # Panics
    ///
    /// As [`MockServer::start`].
    pub async fn start_routed(replies: Vec<Reply>, routes: Vec<Route>) -> Self {
        assert!(
            !replies.is_empty(),
            "MockServer::start needs at least one reply"
        );
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("MockServer: cannot bind 127.0.0.1:0");
        let addr = listener
            .local_addr()
            .expect("MockServer: cannot read the bound address");
        let state = Arc::new(State {
            replies,
            routes,
            requests: Mutex::new(Vec::new()),
            routed: Mutex::new(Vec::new()),
            recorded: watch::Sender::new(0),
            closed: watch::Sender::new(0),
        });
        let accept_task = tokio::spawn(accept_loop(listener, Arc::clone(&state)));
        Self {
            addr,
            state,
            accept_task,
        }
    }

    /// The base URL, `http://127.0.0.1:PORT` (no trailing slash).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Every request a [`Route`] answered, in arrival order.
    pub fn routed_requests(&self) -> Vec<RecordedRequest> {
        self.state
            .routed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many requests have been received so far (not counting the routed ones).
    pub fn request_count(&self) -> usize {
        self.state
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Resolves once `n` requests have been received and recorded (at once, if they have).
    /// Put a timeout around it: it waits as long as the clients take.
    pub async fn wait_for_requests(&self, n: usize) {
        let mut rx = self.state.recorded.subscribe();
        // The sender lives in `self.state`, so the channel cannot close while we wait.
        let _ = rx.wait_for(|&count| count >= n).await;
    }

    /// Resolves once the server has closed `n` connections after their replies (at once, if it
    /// has): their last byte and their FIN or reset have been handed to the kernel. A client on loopback then
    /// has them, so a test can read a connection that is already closed (or reset).
    pub async fn wait_for_closed(&self, n: usize) {
        let mut rx = self.state.closed.subscribe();
        let _ = rx.wait_for(|&count| count >= n).await;
    }
}

impl fmt::Debug for MockServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockServer")
            .field("url", &self.url())
            .field("replies", &self.state.replies.len())
            .field("requests", &self.request_count())
            .finish()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        // The accept task owns the JoinSet of connection tasks; dropping it aborts them all.
        self.accept_task.abort();
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_connection(stream, Arc::clone(&state)));
                }
                // E.g. EMFILE: let other tasks run (and free descriptors), then try again.
                Err(_) => tokio::task::yield_now().await,
            },
            // Reap finished connection tasks so the set does not grow without bound.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// A request as parsed off the wire, before it is recorded.
struct ParsedRequest {
    method: String,
    path: String,
    version: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl ParsedRequest {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the client allows another request on this connection.
    fn wants_keep_alive(&self) -> bool {
        let connection = self
            .headers
            .iter()
            .filter(|(n, _)| n == "connection")
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
            .join(",");
        if self.version == "HTTP/1.0" {
            has_token(&connection, "keep-alive")
        } else {
            !has_token(&connection, "close")
        }
    }
}

async fn serve_connection(mut stream: TcpStream, state: Arc<State>) {
    // Small pieces must leave as separate segments; failure only costs that property.
    let _ = stream.set_nodelay(true);
    let mut buf = Vec::new();
    loop {
        let request = match read_request(&mut stream, &mut buf).await {
            Ok(Some(request)) => request,
            // Clean EOF, a malformed request or a socket error: nothing more to do.
            Ok(None) | Err(_) => return,
        };
        let keep_alive = request.wants_keep_alive();
        let reply = state.record(RecordedRequest {
            method: request.method,
            path: request.path,
            headers: request.headers,
            body: request.body,
            at: Instant::now(),
        });
        let dropped = match write_reply(&mut stream, reply).await {
            Ok(dropped) => dropped,
            Err(_) => return,
        };
        if dropped {
            finish(stream, reply.after_body == AfterBody::Reset, &state).await;
            return;
        }
        match &reply.after_body {
            AfterBody::Close => {
                if keep_alive && reply.drop_at.is_none() && reply.response.is_self_delimiting() {
                    continue;
                }
                finish(stream, false, &state).await;
                return;
            }
            AfterBody::HoldOpen(duration) => {
                hold_open(&mut stream, *duration).await;
                finish(stream, false, &state).await;
                return;
            }
            AfterBody::Reset => {
                finish(stream, true, &state).await;
                return;
            }
        }
    }
}

/// Closes the connection: abortively (RST) or with a FIN; then counts it as closed.
async fn finish(mut stream: TcpStream, reset: bool, state: &State) {
    if reset {
        // An abortive close discards every byte the peer has not acknowledged yet, and tiny
        // pieces fill a slow reader's receive window quickly (see `wait_until_acked`).
        wait_until_acked(&stream).await;
        let _ = stream.set_zero_linger();
    } else {
        let _ = stream.shutdown().await;
    }
    drop(stream);
    state.closed.send_modify(|n| *n += 1);
}

/// Upper bound on how long [`wait_until_acked`] waits: this many rounds of a yield plus a 1 ms
/// `tokio::time::sleep` (so at most about 0.25 s, real or virtual).
const ACK_WAIT_ROUNDS: u32 = 250;

/// Waits until the kernel reports no unacknowledged bytes on this connection, so that a reset
/// sent next cannot discard body bytes still queued for a client whose receive window is full.
///
/// Linux only (reads `tx_queue` from `/proc/net/tcp`); elsewhere, or if the socket is not found,
/// it only yields once. Bounded by [`ACK_WAIT_ROUNDS`]: a client that stops reading still gets
/// its reset, possibly without the tail of the body.
async fn wait_until_acked(stream: &TcpStream) {
    tokio::task::yield_now().await;
    let (Ok(local), Ok(peer)) = (stream.local_addr(), stream.peer_addr()) else {
        return;
    };
    for _ in 0..ACK_WAIT_ROUNDS {
        match unacked_bytes(local, peer) {
            Some(0) | None => return,
            Some(_) => {}
        }
        tokio::task::yield_now().await;
        if unacked_bytes(local, peer).is_none_or(|n| n == 0) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// `tx_queue` (bytes written but not yet acknowledged by the peer) of the IPv4 TCP socket
/// `local` → `peer`, from `/proc/net/tcp`.
fn unacked_bytes(local: SocketAddr, peer: SocketAddr) -> Option<u64> {
    fn proc_addr(addr: SocketAddr) -> Option<String> {
        match addr {
            // The kernel prints the raw network-order address as a native-endian u32.
            SocketAddr::V4(v4) => Some(format!(
                "{:08X}:{:04X}",
                u32::from_ne_bytes(v4.ip().octets()),
                v4.port()
            )),
            SocketAddr::V6(_) => None,
        }
    }
    let (local, peer) = (proc_addr(local)?, proc_addr(peer)?);
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.get(1) != Some(&local.as_str()) || fields.get(2) != Some(&peer.as_str()) {
            return None;
        }
        let (tx, _rx) = fields.get(4)?.split_once(':')?;
        u64::from_str_radix(tx, 16).ok()
    })
}

/// Keeps the socket open and silent for `duration`, discarding anything the client sends, and
/// returns early if the client closes its side.
async fn hold_open(stream: &mut TcpStream, duration: Duration) {
    let deadline = tokio::time::sleep(duration);
    tokio::pin!(deadline);
    let mut sink = [0u8; 1024];
    loop {
        tokio::select! {
            _ = &mut deadline => return,
            read = stream.read(&mut sink) => match read {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
        }
    }
}

/// Writes the reply; returns `true` if the script dropped the connection mid-body.
async fn write_reply(stream: &mut TcpStream, reply: &Reply) -> io::Result<bool> {
    if !reply.delay_before.is_zero() {
        tokio::time::sleep(reply.delay_before).await;
    }
    write_piece(stream, &reply.response.head).await?;
    if checkpoint(reply, 0).await {
        return Ok(true);
    }
    let body = &reply.response.body;
    let mut written = 0;
    for end in reply.write_ends() {
        if written > 0 {
            tokio::task::yield_now().await;
            if !reply.write_gap.is_zero() {
                tokio::time::sleep(reply.write_gap).await;
            }
        }
        write_piece(stream, &body[written..end]).await?;
        written = end;
        if checkpoint(reply, written).await {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Applies the stall, the gate and the drop scripted at `written` body bytes; `true` means drop
/// now.
async fn checkpoint(reply: &Reply, written: usize) -> bool {
    if let Some((at, pause)) = reply.stall_at {
        if at == written {
            tokio::time::sleep(pause).await;
        }
    }
    if let Some((at, gate)) = &reply.gate_at {
        if *at == written {
            gate.pass().await;
        }
    }
    reply.drop_at == Some(written)
}

async fn write_piece(stream: &mut TcpStream, bytes: &[u8]) -> io::Result<()> {
    stream.write_all(bytes).await?;
    stream.flush().await
}

/// Reads more bytes into `buf`; `false` on EOF.
async fn fill(stream: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<bool> {
    let mut chunk = [0u8; 8192];
    let n = stream.read(&mut chunk).await?;
    buf.extend_from_slice(&chunk[..n]);
    Ok(n > 0)
}

/// Reads one request from `stream`, using and leaving leftover bytes in `buf`. `None` on EOF
/// (before or during a request) or a malformed request.
async fn read_request(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> io::Result<Option<ParsedRequest>> {
    let head_end = loop {
        if let Some(pos) = find(buf, b"\r\n\r\n") {
            break pos + 4;
        }
        if !fill(stream, buf).await? {
            return Ok(None);
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end - 4]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let (Some(method), Some(path), Some(version)) = (
        request_line.next(),
        request_line.next(),
        request_line.next(),
    ) else {
        return Ok(None);
    };
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut request = ParsedRequest {
        method: method.to_string(),
        path: path.to_string(),
        version: version.to_string(),
        headers,
        body: Vec::new(),
    };
    buf.drain(..head_end);

    let chunked = request
        .header("transfer-encoding")
        .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
    let content_length = match request.header("content-length") {
        Some(value) => match value.parse::<usize>() {
            Ok(n) => n,
            Err(_) => return Ok(None),
        },
        None => 0,
    };
    let expects_continue = request
        .header("expect")
        .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"));
    let body_pending = if chunked {
        parse_chunked(buf) == Chunked::Incomplete
    } else {
        buf.len() < content_length
    };
    if expects_continue && body_pending {
        write_piece(stream, b"HTTP/1.1 100 Continue\r\n\r\n").await?;
    }

    if chunked {
        loop {
            match parse_chunked(buf) {
                Chunked::Complete { data, consumed } => {
                    request.body = data;
                    buf.drain(..consumed);
                    break;
                }
                Chunked::Invalid => return Ok(None),
                Chunked::Incomplete => {
                    if !fill(stream, buf).await? {
                        return Ok(None);
                    }
                }
            }
        }
    } else {
        while buf.len() < content_length {
            if !fill(stream, buf).await? {
                return Ok(None);
            }
        }
        request.body = buf.drain(..content_length).collect();
    }
    Ok(Some(request))
}
