//! The accept loop and its limits (SPEC R14.9, R14.10): hyper's HTTP/1.1 server on a
//! `TcpListener`, `TCP_NODELAY` on every accepted socket, a connection cap, a header read
//! timeout and an idle keep-alive timeout (kept by `idle.rs`), and a graceful shutdown: stop
//! accepting, let responses in flight finish up to a deadline.

use std::convert::Infallible;
use std::io;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use switchyard_api::config::{
    DEFAULT_IDLE_TIMEOUT_SECONDS, DEFAULT_MAX_CONNECTIONS, ServeSettings,
};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::idle::{Expired, Tracked, Watch};
use crate::service::Gateway;

/// The server's timeouts and connection cap (SPEC R14.9, R14.10).
#[derive(Debug, Clone, Copy)]
pub struct ServerLimits {
    /// The longest a client may take to send a request's head, from its first byte; past it
    /// the connection is closed. Default 30 s.
    pub header_read_timeout: Duration,
    /// How long a keep-alive connection may sit with no request in flight (from its start or
    /// the end of its last response) before it is closed. Default 60 s (`serve.idle_timeout`).
    pub idle_timeout: Duration,
    /// How many client connections may be open at once (at least 1); one more is accepted and
    /// closed at once, without touching those open. Default 1024 (`serve.max_connections`).
    pub max_connections: usize,
    /// After shutdown is asked for, how long responses in flight (streams) may go on before
    /// their connections are closed. Default 30 s.
    pub drain: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self::from_settings(&ServeSettings::default())
    }
}

impl ServerLimits {
    /// The limits `[serve]` sets (`idle_timeout`, `header_timeout`, `max_connections`), the defaults for the
    /// rest and for what it leaves out.
    pub fn from_settings(settings: &ServeSettings) -> Self {
        let idle = settings
            .idle_timeout
            .unwrap_or(DEFAULT_IDLE_TIMEOUT_SECONDS);
        Self {
            header_read_timeout: Duration::from_secs(settings.header_timeout.unwrap_or(30)),
            idle_timeout: Duration::from_secs(idle),
            max_connections: settings.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS),
            drain: Duration::from_secs(30),
        }
    }
}

/// Serves `gateway` on `listener` until `shutdown` is cancelled; then stops accepting, lets
/// each connection finish the response it is sending (keep-alive connections close after
/// it), and after `limits.drain` closes what is left (an upstream request still streaming
/// is cancelled as its client's body goes). Returns once every connection is closed.
pub async fn serve(
    listener: TcpListener,
    gateway: Arc<Gateway>,
    limits: ServerLimits,
    shutdown: CancellationToken,
) {
    let mut connections = JoinSet::new();
    let slots = Arc::new(Semaphore::new(
        limits.max_connections.clamp(1, Semaphore::MAX_PERMITS),
    ));
    let mut full = false;
    // The request log's retention (SPEC R14.8), now and every hour while serving.
    let pruner = tokio::spawn(gateway.keep_request_log(shutdown.child_token()));
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = accept(&listener) => match accepted {
                Ok((stream, peer)) => {
                    let Some(slot) = admit(&slots, &mut full, limits) else { continue };
                    let connection = connection((stream, peer), Arc::clone(&gateway), limits, shutdown.clone());
                    connections.spawn(async move {
                        connection.await;
                        drop(slot);
                    });
                }
                Err(e) => {
                    // EMFILE and the like: let other tasks run (and free descriptors).
                    tracing::warn!("a connection could not be accepted: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    pruner.abort();
    // A dashboard's live stream has no end of its own: it ends now, not at the deadline.
    gateway.shutting_down();
    let until = tokio::time::Instant::now() + limits.drain;
    let drained = tokio::time::timeout_at(until, async {
        while connections.join_next().await.is_some() {}
    });
    if drained.await.is_err() {
        tracing::warn!(
            "{} connections were still busy after the drain deadline and are closed",
            connections.len()
        );
        connections.shutdown().await;
    }
    // The records of the requests answered (their spend and budget holds) are written before
    // the process goes, within what is left of the deadline (at least a second).
    let left = until.saturating_duration_since(tokio::time::Instant::now());
    gateway
        .settle_records(left.max(Duration::from_secs(1)))
        .await;
}

/// A slot for a connection just accepted, or `None` when `limits.max_connections` are open:
/// the caller drops the connection at once (SPEC R14.10). Accepting and closing, rather than
/// no longer accepting, keeps the kernel's backlog from filling with connections whose
/// clients wait, request sent, until a slot frees (a keep-alive pool may hold one for the
/// whole idle timeout): each refused client sees its connection closed at once and can retry
/// (the SDKs retry a closed connection), and those open are served as before, each on its own
/// task. One warning each time the cap is reached, not one per refused connection.
fn admit(
    slots: &Arc<Semaphore>,
    full: &mut bool,
    limits: ServerLimits,
) -> Option<OwnedSemaphorePermit> {
    match Arc::clone(slots).try_acquire_owned() {
        Ok(slot) => {
            *full = false;
            Some(slot)
        }
        Err(_) => {
            if !*full {
                tracing::warn!(
                    "{} client connections are open (serve.max_connections): new ones are closed until one ends",
                    limits.max_connections
                );
            }
            *full = true;
            None
        }
    }
}

/// The next connection and its client's address, with `TCP_NODELAY` set (SPEC R14.10:
/// without it a stream's small first chunk waits ~40 ms for the client's delayed ACK).
pub(crate) async fn accept(listener: &TcpListener) -> io::Result<(TcpStream, IpAddr)> {
    let (stream, peer) = listener.accept().await?;
    if let Err(e) = stream.set_nodelay(true) {
        tracing::warn!("TCP_NODELAY could not be set on an accepted connection: {e}");
    }
    Ok((stream, peer.ip()))
}

/// Serves one connection: HTTP/1.1 with keep-alive, closed when the header read timeout or
/// the idle timeout runs out (`idle.rs`; hyper's own header timer, which also runs while a
/// connection idles, is off); on `shutdown`, finishes the response in flight and closes.
async fn connection(
    (stream, peer): (TcpStream, IpAddr),
    gateway: Arc<Gateway>,
    limits: ServerLimits,
    shutdown: CancellationToken,
) {
    let _open = gateway.metrics().connection();
    let watch = Watch::new();
    let io = TokioIo::new(watch.wrap(stream));
    let requests = watch.clone();
    let service = service_fn(move |request| {
        let busy = requests.busy();
        let gateway = Arc::clone(&gateway);
        async move {
            let response = gateway.handle(request, peer).await?;
            Ok::<_, Infallible>(response.map(|body| Tracked::new(body, busy)))
        }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(None)
        .keep_alive(true);
    let connection = builder.serve_connection(io, service);
    tokio::pin!(connection);
    let expired = watch.expired(limits.idle_timeout, limits.header_read_timeout);
    tokio::pin!(expired);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        why = expired.as_mut() => return closed(why),
        () = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            tokio::select! {
                result = connection.as_mut() => result,
                why = expired.as_mut() => return closed(why),
            }
        }
    };
    if let Err(e) = result {
        tracing::debug!("a client connection ended with an error: {e}");
    }
}

/// Logs why a connection is being closed (dropping it closes the socket).
fn closed(why: Expired) {
    match why {
        Expired::Idle => tracing::debug!("a keep-alive connection idled out and is closed"),
        Expired::Head => {
            tracing::warn!(
                "a client did not finish a request's headers in time; its connection is closed"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_accepted_socket_has_tcp_nodelay() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(TcpStream::connect(addr));
        let (accepted, _) = accept(&listener).await.unwrap();
        assert!(accepted.nodelay().unwrap());
        drop(client.await.unwrap().unwrap());
    }
}
