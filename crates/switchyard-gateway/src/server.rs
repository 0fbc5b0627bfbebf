//! The accept loop and its limits (SPEC R14.9, R14.10): hyper's HTTP/1.1 server on a
//! `TcpListener`, `TCP_NODELAY` on every accepted socket, a header read timeout, and a
//! graceful shutdown: stop accepting, let responses in flight finish up to a deadline.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::service::Gateway;

/// The server's timeouts (SPEC R14.9, R14.10).
#[derive(Debug, Clone, Copy)]
pub struct ServerLimits {
    /// The longest a client may take to send a request's head (hyper's
    /// `header_read_timeout`); past it the connection is closed. Default 30 s.
    pub header_read_timeout: Duration,
    /// After shutdown is asked for, how long responses in flight (streams) may go on before
    /// their connections are closed. Default 30 s.
    pub drain: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(30),
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
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = accept(&listener) => match accepted {
                Ok(stream) => {
                    let connection = connection(stream, Arc::clone(&gateway), limits, shutdown.clone());
                    connections.spawn(connection);
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
    let drained = tokio::time::timeout(limits.drain, async {
        while connections.join_next().await.is_some() {}
    });
    if drained.await.is_err() {
        tracing::warn!(
            "{} connections were still busy after the drain deadline and are closed",
            connections.len()
        );
        connections.shutdown().await;
    }
}

/// The next connection, with `TCP_NODELAY` set (SPEC R14.10: without it a stream's small
/// first chunk waits ~40 ms for the client's delayed ACK).
pub(crate) async fn accept(listener: &TcpListener) -> io::Result<TcpStream> {
    let (stream, _) = listener.accept().await?;
    if let Err(e) = stream.set_nodelay(true) {
        tracing::warn!("TCP_NODELAY could not be set on an accepted connection: {e}");
    }
    Ok(stream)
}

/// Serves one connection: HTTP/1.1 with keep-alive and the header read timeout; on
/// `shutdown`, finishes the response in flight and closes.
async fn connection(
    stream: TcpStream,
    gateway: Arc<Gateway>,
    limits: ServerLimits,
    shutdown: CancellationToken,
) {
    let service = service_fn(move |request| Arc::clone(&gateway).handle(request));
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let finished = tokio::select! {
        result = connection.as_mut() => Some(result),
        () = shutdown.cancelled() => None,
    };
    let result = match finished {
        Some(result) => result,
        None => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(e) = result {
        tracing::debug!("a client connection ended with an error: {e}");
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
        let accepted = accept(&listener).await.unwrap();
        assert!(accepted.nodelay().unwrap());
        drop(client.await.unwrap().unwrap());
    }
}
