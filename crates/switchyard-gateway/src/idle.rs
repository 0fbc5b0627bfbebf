//! One connection's clocks: the idle keep-alive timeout, from the end of the last response
//! while no request is in flight, and the header read timeout, from a head's first byte.
//! hyper's own header timeout also runs while a connection idles, so it cannot tell them apart.
//! Spec: R14.10.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expired {
    /// No request in flight and no byte received for the idle timeout.
    Idle,
    /// A request's head started and did not end within the header read timeout.
    Head,
}

/// What a connection is doing, for choosing one to close when the slots are full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// No request in flight and no byte of one received.
    Idle,
    /// A request's head is arriving.
    Head,
    /// A request's head is read and its body is not yet.
    Reading,
    /// A request is being answered.
    Serving,
}

/// One connection's activity, shared by its socket, its requests and its watchdog.
#[derive(Clone)]
pub(crate) struct Watch {
    shared: Arc<Shared>,
}

struct Shared {
    activity: Mutex<Activity>,
    changed: Notify,
}

struct Activity {
    /// Requests whose head was read and whose response body is not finished.
    busy: usize,
    /// Those of them whose body is still being read.
    reading: usize,
    /// When the connection last had no request in flight: its start, or a response's end.
    idle_since: Instant,
    /// The first byte received since then: a request's head has started.
    head_since: Option<Instant>,
}

impl Watch {
    pub(crate) fn new() -> Self {
        let activity = Activity {
            busy: 0,
            reading: 0,
            idle_since: Instant::now(),
            head_since: None,
        };
        Self {
            shared: Arc::new(Shared {
                activity: Mutex::new(activity),
                changed: Notify::new(),
            }),
        }
    }

    /// `io`, reporting every read that brings bytes to this watch.
    pub(crate) fn wrap<T>(&self, io: T) -> Watched<T> {
        Watched {
            inner: io,
            shared: Arc::clone(&self.shared),
        }
    }

    /// A request is in flight, its head read, until the returned guard is dropped.
    pub(crate) fn busy(&self) -> Busy {
        let mut activity = self.shared.lock();
        activity.busy += 1;
        activity.head_since = None;
        drop(activity);
        self.shared.changed.notify_one();
        Busy {
            shared: Arc::clone(&self.shared),
        }
    }

    /// A request's body is being read until the returned guard is dropped.
    pub(crate) fn reading(&self) -> Reading {
        self.shared.lock().reading += 1;
        let guard = ReadingGuard {
            shared: Arc::clone(&self.shared),
        };
        Reading {
            _guard: Arc::new(guard),
        }
    }

    /// Resolves once no request is in flight: a connection an upgrade took over holds its slot
    /// until then.
    pub(crate) async fn quiet(&self) {
        loop {
            let changed = self.shared.changed.notified();
            if self.shared.lock().busy == 0 {
                return;
            }
            changed.await;
        }
    }

    pub(crate) fn state(&self) -> State {
        let activity = self.shared.lock();
        match (activity.busy, activity.head_since) {
            (0, None) => State::Idle,
            (0, Some(_)) => State::Head,
            (busy, _) if activity.reading >= busy => State::Reading,
            _ => State::Serving,
        }
    }

    /// Resolves when one of the clocks runs out, never while a request is in flight.
    pub(crate) async fn expired(&self, idle: Duration, head: Duration) -> Expired {
        loop {
            let changed = self.shared.changed.notified();
            let deadline = {
                let activity = self.shared.lock();
                (activity.busy == 0).then(|| match activity.head_since {
                    Some(since) => (since + head, Expired::Head),
                    None => (activity.idle_since + idle, Expired::Idle),
                })
            };
            match deadline {
                Some((at, why)) if at <= Instant::now() => return why,
                Some((at, _)) => {
                    tokio::select! {
                        biased;
                        () = changed => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
                None => changed.await,
            }
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Activity> {
        self.activity.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes arrived: with no request in flight, a head has started.
    fn received(&self) {
        let mut activity = self.lock();
        if activity.busy == 0 && activity.head_since.is_none() {
            activity.head_since = Some(Instant::now());
            drop(activity);
            self.changed.notify_one();
        }
    }

    /// Bytes went out. With no request in flight, this is the tail of a finished response still
    /// flushed to a slow reader, and the idle clock starts again.
    fn sent(&self) {
        let mut activity = self.lock();
        if activity.busy == 0 {
            activity.idle_since = Instant::now();
        }
    }
}

/// A request in flight; dropping it ends it.
pub(crate) struct Busy {
    shared: Arc<Shared>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut activity = self.shared.lock();
        activity.busy = activity.busy.saturating_sub(1);
        if activity.busy == 0 {
            activity.idle_since = Instant::now();
            activity.head_since = None;
        }
        drop(activity);
        self.shared.changed.notify_one();
    }
}

/// A request whose body is still being read; dropping it ends that. It travels in the request's
/// extensions to the body reader, which requires it to be `Clone`: its clones end it together.
#[derive(Clone)]
pub(crate) struct Reading {
    _guard: Arc<ReadingGuard>,
}

struct ReadingGuard {
    shared: Arc<Shared>,
}

impl Drop for ReadingGuard {
    fn drop(&mut self) {
        let mut activity = self.shared.lock();
        activity.reading = activity.reading.saturating_sub(1);
    }
}

/// A response body that keeps its request [`Busy`] until hyper has written it all or the
/// client went away: hyper drops the body then.
pub(crate) struct Tracked<B> {
    inner: B,
    _busy: Busy,
}

impl<B> Tracked<B> {
    pub(crate) fn new(inner: B, busy: Busy) -> Self {
        Self { inner, _busy: busy }
    }
}

impl<B: Body + Unpin> Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

pub(crate) struct Watched<T> {
    inner: T,
    shared: Arc<Shared>,
}

impl<T> Watched<T> {
    pub(crate) fn into_inner(self) -> T {
        self.inner
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.shared.received();
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.shared.sent();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.shared.sent();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_idle_clock_stops_while_a_request_is_in_flight_and_restarts_after_it() {
        let watch = Watch::new();
        let (idle, head) = (Duration::from_secs(60), Duration::from_secs(30));
        let busy = watch.busy();
        let waited = tokio::time::timeout(Duration::from_secs(600), watch.expired(idle, head));
        assert!(waited.await.is_err(), "busy for 10 minutes, never idle");
        let ended = Instant::now();
        drop(busy);
        assert_eq!(watch.expired(idle, head).await, Expired::Idle);
        assert_eq!(Instant::now() - ended, idle);
    }

    #[tokio::test(start_paused = true)]
    async fn bytes_still_going_out_after_the_body_ended_restart_the_idle_clock() {
        let watch = Watch::new();
        drop(watch.busy());
        tokio::time::sleep(Duration::from_secs(40)).await;
        let flushed = Instant::now();
        watch.shared.sent();
        let why = watch.expired(Duration::from_secs(60), Duration::from_secs(30));
        assert_eq!(why.await, Expired::Idle);
        assert_eq!(Instant::now() - flushed, Duration::from_secs(60));
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_that_started_runs_on_the_header_clock() {
        let watch = Watch::new();
        tokio::time::sleep(Duration::from_secs(50)).await;
        let started = Instant::now();
        watch.shared.received();
        let why = watch.expired(Duration::from_secs(60), Duration::from_secs(30));
        assert_eq!(why.await, Expired::Head);
        assert_eq!(Instant::now() - started, Duration::from_secs(30));
    }
}
