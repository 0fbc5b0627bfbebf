//! The accept loop: hyper's HTTP/1.1 server, `TCP_NODELAY` on every socket, the connection
//! slots, a 408 for a head cut off, and a graceful shutdown that lets responses in flight
//! finish up to a deadline.
//! Spec: R14.8, R14.9, R14.10.

use std::convert::Infallible;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use switchyard_api::config::{
    DEFAULT_IDLE_TIMEOUT_SECONDS, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
    ServeSettings,
};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::cutoff::request_timeout;
use crate::idle::{Expired, State, Tracked, Watch};
use crate::service::Gateway;
use crate::slots::{Full, Slot, Slots};

#[derive(Debug, Clone, Copy)]
pub struct ServerLimits {
    /// The longest a client may take to send a request's head, from its first byte. Default 30 s.
    pub header_read_timeout: Duration,
    /// How long a keep-alive connection may sit with no request in flight. Default 60 s.
    pub idle_timeout: Duration,
    /// How many client connections may be open at once. Default 1024.
    pub max_connections: usize,
    /// How many of them one client address may hold. Default 256.
    pub max_connections_per_address: usize,
    /// After shutdown is asked for, how long responses in flight may go on. Default 30 s.
    pub drain: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self::from_settings(&ServeSettings::default())
    }
}

impl ServerLimits {
    /// The limits `[serve]` sets, and the defaults for what it leaves out.
    pub fn from_settings(settings: &ServeSettings) -> Self {
        let idle = settings
            .idle_timeout
            .unwrap_or(DEFAULT_IDLE_TIMEOUT_SECONDS);
        Self {
            header_read_timeout: Duration::from_secs(settings.header_timeout.unwrap_or(30)),
            idle_timeout: Duration::from_secs(idle),
            max_connections: settings.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS),
            max_connections_per_address: (settings.max_connections_per_address)
                .unwrap_or(DEFAULT_MAX_CONNECTIONS_PER_ADDRESS),
            drain: Duration::from_secs(30),
        }
    }
}

/// Serves `gateway` on `listener` until `shutdown`; then stops accepting, lets each
/// connection finish its response, and after `limits.drain` closes what is left.
pub async fn serve(
    listener: TcpListener,
    gateway: Arc<Gateway>,
    limits: ServerLimits,
    shutdown: CancellationToken,
) {
    let mut connections = JoinSet::new();
    let slots = Arc::new(Slots::new(
        limits.max_connections,
        limits.max_connections_per_address,
    ));
    let mut full = None;
    // The request log's retention, now and every hour while serving.
    let pruner = tokio::spawn(gateway.keep_request_log(shutdown.child_token()));
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = accept(&listener) => match accepted {
                Ok((stream, peer)) => {
                    let watch = Watch::new();
                    let Some(slot) = admit(&slots, (peer, &watch), &mut full, limits) else { continue };
                    let open = Open { stream, peer, watch, slot };
                    let connection = connection(open, Arc::clone(&gateway), limits, shutdown.clone());
                    connections.spawn(connection);
                }
                Err(e) => {
                    // EMFILE and the like: other tasks run, and may free descriptors.
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
    // The records of the requests answered, with their spend and budget holds, are written
    // before the process goes, within what is left of the deadline and at least a second.
    let left = until.saturating_duration_since(tokio::time::Instant::now());
    gateway
        .settle_records(left.max(Duration::from_secs(1)))
        .await;
}

/// A slot for a connection just accepted, or `None` when every slot its address may hold, or
/// the gateway's, is serving a request. Accepting and closing, rather than no longer accepting,
/// keeps the kernel's backlog from filling with clients that wait for a slot: a refused client
/// sees its connection closed and can retry, as the SDKs do.
fn admit(
    slots: &Arc<Slots>,
    (peer, watch): (IpAddr, &Watch),
    full: &mut Option<Full>,
    limits: ServerLimits,
) -> Option<Slot> {
    match slots.admit(peer, watch) {
        Ok(slot) => {
            *full = None;
            Some(slot)
        }
        Err(why) => {
            if *full != Some(why) {
                match why {
                    Full::Total => tracing::warn!(
                        "{} client connections are serving requests (serve.max_connections): new ones are closed until one ends",
                        limits.max_connections
                    ),
                    Full::Address => tracing::warn!(
                        "{peer} holds {} connections serving requests (serve.max_connections_per_address): its new ones are closed until one ends",
                        limits.max_connections_per_address
                    ),
                }
            }
            *full = Some(why);
            None
        }
    }
}

/// The next connection and its client's address, with `TCP_NODELAY` set: without it a
/// stream's small first chunk waits ~40 ms for the client's delayed ACK.
pub(crate) async fn accept(listener: &TcpListener) -> io::Result<(TcpStream, IpAddr)> {
    let (stream, peer) = listener.accept().await?;
    if let Err(e) = stream.set_nodelay(true) {
        tracing::warn!("TCP_NODELAY could not be set on an accepted connection: {e}");
    }
    Ok((stream, peer.ip()))
}

/// A connection accepted with its slot.
struct Open {
    stream: TcpStream,
    peer: IpAddr,
    watch: Watch,
    slot: Slot,
}

/// Why a connection ends before hyper ends it.
enum Cut {
    Clock(Expired),
    /// Its slot went to a newer connection.
    Evicted,
}

/// Serves one connection with keep-alive until `idle.rs`'s header or idle clock runs out or
/// its slot goes to a newer connection; hyper's own header timer is off, since it also runs
/// while a connection idles.
async fn connection(
    Open {
        stream,
        peer,
        watch,
        slot,
    }: Open,
    gateway: Arc<Gateway>,
    limits: ServerLimits,
    shutdown: CancellationToken,
) {
    let _open = gateway.metrics().connection();
    let io = TokioIo::new(watch.wrap(stream));
    let requests = watch.clone();
    let stopping = shutdown.clone();
    let service = service_fn(move |mut request: hyper::Request<Incoming>| {
        let busy = requests.busy();
        request.extensions_mut().insert(requests.reading());
        // A WebSocket's session keeps the connection busy while it lives, until shutdown.
        request.extensions_mut().insert(requests.clone());
        request.extensions_mut().insert(stopping.clone());
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
    // Upgrades on: a Responses WebSocket takes its connection over after its `101`.
    let mut connection = builder.serve_connection(io, service).with_upgrades();
    let expired = watch.expired(limits.idle_timeout, limits.header_read_timeout);
    tokio::pin!(expired);
    let evicted = slot.evicted.clone();
    let cut = tokio::select! {
        result = &mut connection => {
            ended(result);
            // A WebSocket took the socket over: its slot is held until the session ends. The
            // connection goes first, since it holds the busy response of a client that left.
            drop(connection);
            return watch.quiet().await;
        }
        why = expired.as_mut() => Cut::Clock(why),
        () = evicted.cancelled() => Cut::Evicted,
        () = shutdown.cancelled() => {
            Pin::new(&mut connection).graceful_shutdown();
            tokio::select! {
                result = &mut connection => return ended(result),
                why = expired.as_mut() => Cut::Clock(why),
            }
        }
    };
    let state = watch.state();
    if matches!(cut, Cut::Evicted) && state == State::Serving {
        // Its request began as its slot was taken: it is answered, and the connection closes.
        Pin::new(&mut connection).graceful_shutdown();
        ended(connection.await);
        return;
    }
    drop(slot);
    closed(&cut, state);
    if state == State::Head
        && let Some(parts) = connection.into_parts()
    {
        let message = match cut {
            Cut::Clock(_) => format!(
                "The request's headers did not arrive within this gateway's {} s: send the request again.",
                limits.header_read_timeout.as_secs()
            ),
            Cut::Evicted => "This connection was closed for a newer one: its request's headers had not all arrived while this client address held the most connections this gateway allows. Send the request again.".to_owned(),
        };
        request_timeout(
            parts.io.into_inner().into_inner(),
            &parts.read_buf,
            &message,
        )
        .await;
    }
}

fn ended(result: hyper::Result<()>) {
    if let Err(e) = result {
        tracing::debug!("a client connection ended with an error: {e}");
    }
}

/// Logs why a connection is being closed.
fn closed(cut: &Cut, state: State) {
    match cut {
        Cut::Clock(Expired::Idle) => {
            tracing::debug!("a keep-alive connection idled out and is closed");
        }
        Cut::Clock(Expired::Head) => tracing::warn!(
            "a client did not finish a request's headers in time; its connection is closed with a 408"
        ),
        Cut::Evicted => tracing::debug!(
            "a connection not serving a request ({state:?}) is closed for a newer one"
        ),
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
