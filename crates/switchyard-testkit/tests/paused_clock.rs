//! The server under `#[tokio::test(start_paused = true)]`: scripted waits cost no real time, and
//! a client's own timeouts race them in virtual time.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: failing loudly is the point

mod common;

use std::time::Duration;

use common::{connect, read_exact, read_until_close, send};
use switchyard_testkit::{AfterBody, HttpResponse, MockServer, Reply, Split, case_replies};
use tokio::io::AsyncReadExt;
use tokio::time::{Instant, timeout};

fn wire(response: &HttpResponse) -> Vec<u8> {
    [response.head.clone(), response.body.clone()].concat()
}

fn real_elapsed_is_small(start: std::time::Instant) {
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?} of real time",
        start.elapsed()
    );
}

/// C33: the body arrives, then silence. A 2 s client idle timeout fires at exactly t+2 s of
/// virtual time; the server closes at t+600 s; none of it takes real time.
#[tokio::test(start_paused = true)]
async fn hold_open_races_a_client_idle_timeout() {
    let real = std::time::Instant::now();
    let replies = case_replies("C33");
    let stalled = replies[0].response.clone();
    let server = MockServer::start(replies).await;
    let mut stream = connect(&server).await;
    let t0 = Instant::now();
    send(&mut stream, "POST", "/v1/chat/completions", &[], b"{}").await;
    let got = timeout(
        Duration::from_secs(30),
        read_exact(&mut stream, wire(&stalled).len()),
    )
    .await;
    assert_eq!(got.unwrap(), wire(&stalled));
    assert_eq!(
        t0.elapsed(),
        Duration::ZERO,
        "no virtual time may pass before the bytes arrive"
    );

    let mut one = [0u8; 1];
    let idle = timeout(Duration::from_secs(2), stream.read(&mut one)).await;
    assert!(idle.is_err(), "expected the idle timeout, got {idle:?}");
    assert_eq!(t0.elapsed(), Duration::from_secs(2));

    let (rest, error) = read_until_close(&mut stream).await;
    assert!(rest.is_empty() && error.is_none());
    assert_eq!(t0.elapsed(), Duration::from_secs(600));

    // The retry gets C02c, which is EOF-framed.
    let retry = HttpResponse::case("C02c");
    let mut stream = connect(&server).await;
    send(&mut stream, "POST", "/v1/chat/completions", &[], b"{}").await;
    assert_eq!(read_until_close(&mut stream).await.0, wire(&retry));
    real_elapsed_is_small(real);
}

/// C33b: headers only, then 600 s of silence.
#[tokio::test(start_paused = true)]
async fn headers_only_hold() {
    let real = std::time::Instant::now();
    let server = MockServer::start(case_replies("C33b")).await;
    let mut stream = connect(&server).await;
    let t0 = Instant::now();
    send(&mut stream, "GET", "/", &[], b"").await;
    let head = HttpResponse::case("C33b").head;
    assert_eq!(read_exact(&mut stream, head.len()).await, head);
    let (rest, error) = read_until_close(&mut stream).await;
    assert!(rest.is_empty() && error.is_none());
    assert_eq!(t0.elapsed(), Duration::from_secs(600));
    real_elapsed_is_small(real);
}

/// Each piece arrives on its own after its gap; the head is separate from the first piece.
#[tokio::test(start_paused = true)]
async fn write_gaps_separate_the_pieces() {
    let body = "data: 0123456789abcdefghij\n\n"; // 28 bytes
    for (split, sizes) in [
        (Split::Every(7), vec![7, 7, 7, 7]),
        (Split::Every(5), vec![5, 5, 5, 5, 5, 3]),
        (Split::At(vec![3, 10, 10, 0, 99]), vec![3, 7, 18]),
    ] {
        let response = HttpResponse::sse(body);
        let server = MockServer::start(vec![
            Reply::new(response.clone())
                .split(split.clone())
                .write_gap(Duration::from_secs(1)),
        ])
        .await;
        let mut stream = connect(&server).await;
        let t0 = Instant::now();
        send(&mut stream, "GET", "/", &[("connection", "close")], b"").await;
        assert_eq!(
            read_exact(&mut stream, response.head.len()).await,
            response.head
        );
        let mut reads = Vec::new();
        let mut body_bytes = Vec::new();
        let mut buf = [0u8; 1024];
        loop {
            let n = stream.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            reads.push((n, t0.elapsed()));
            body_bytes.extend_from_slice(&buf[..n]);
        }
        assert_eq!(body_bytes, body.as_bytes());
        let want: Vec<(usize, Duration)> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| (n, Duration::from_secs(i as u64)))
            .collect();
        assert_eq!(reads, want, "{split:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn stall_and_delay_happen_in_virtual_time() {
    let response = HttpResponse::fixture("anthropic_text");
    let server = MockServer::start(vec![
        Reply::new(response.clone())
            .delay_before(Duration::from_secs(3))
            .stall_at(100, Duration::from_secs(45)),
    ])
    .await;
    let mut stream = connect(&server).await;
    let t0 = Instant::now();
    send(&mut stream, "GET", "/", &[], b"").await;
    let head = read_exact(&mut stream, response.head.len()).await;
    assert_eq!(head, response.head);
    assert_eq!(t0.elapsed(), Duration::from_secs(3));
    // The request was recorded before the delay.
    assert_eq!(server.requests()[0].at, t0);
    assert_eq!(read_exact(&mut stream, 100).await, response.body[..100]);
    assert_eq!(t0.elapsed(), Duration::from_secs(3));
    let rest = read_exact(&mut stream, response.body.len() - 100).await;
    assert_eq!(rest, response.body[100..]);
    assert_eq!(t0.elapsed(), Duration::from_secs(48));
}

/// Hundreds of round trips under a 30 s client timeout: no virtual time passes, so the runtime
/// never advances the clock while a reply is in flight over loopback.
#[tokio::test(start_paused = true)]
async fn round_trips_take_no_virtual_time() {
    let response = HttpResponse::fixture("openai_chat_text");
    let server =
        MockServer::start(vec![Reply::new(response.clone()).split(Split::Every(64))]).await;
    let t0 = Instant::now();
    let mut keep_alive = connect(&server).await;
    for i in 0..200 {
        let fresh = i % 2 == 0;
        let exchange = async {
            if fresh {
                let mut stream = connect(&server).await;
                send(&mut stream, "GET", "/", &[("connection", "close")], b"").await;
                read_until_close(&mut stream).await.0
            } else {
                send(&mut keep_alive, "GET", "/", &[], b"").await;
                read_exact(&mut keep_alive, wire(&response).len()).await
            }
        };
        let got = timeout(Duration::from_secs(30), exchange)
            .await
            .expect("spurious timeout");
        assert_eq!(got, wire(&response));
    }
    assert_eq!(t0.elapsed(), Duration::ZERO);
    assert_eq!(server.request_count(), 200);
}

/// Retry-style timing: the recorded arrival times are exact in virtual time.
#[tokio::test(start_paused = true)]
async fn recorded_arrival_times_show_backoff_exactly() {
    let server = MockServer::start(case_replies("C04")).await;
    let mut statuses = Vec::new();
    for wait in [0, 2, 4] {
        tokio::time::sleep(Duration::from_secs(wait)).await;
        let mut stream = connect(&server).await;
        send(
            &mut stream,
            "POST",
            "/v1/messages",
            &[("connection", "close")],
            b"{}",
        )
        .await;
        let raw = read_until_close(&mut stream).await.0;
        statuses.push(HttpResponse::parse(&raw).status());
    }
    assert_eq!(statuses, [529, 529, 200]);
    let at: Vec<Instant> = server.requests().iter().map(|r| r.at).collect();
    assert_eq!(at[1] - at[0], Duration::from_secs(2));
    assert_eq!(at[2] - at[1], Duration::from_secs(4));
}

/// C34: attempt 1 is reset after its (incomplete) chunked body; attempt 2 is complete and the
/// connection stays usable.
#[tokio::test(start_paused = true)]
async fn reset_then_complete_retry() {
    let replies = case_replies("C34");
    let (first, second) = (replies[0].response.clone(), replies[1].response.clone());
    let server = MockServer::start(
        replies
            .into_iter()
            .map(|r| r.split(Split::Every(1)))
            .collect(),
    )
    .await;
    let mut stream = connect(&server).await;
    send(&mut stream, "POST", "/v1/messages", &[], b"{}").await;
    let (got, error) = read_until_close(&mut stream).await;
    assert_eq!(got, wire(&first));
    assert_eq!(
        error.map(|e| e.kind()),
        Some(std::io::ErrorKind::ConnectionReset)
    );

    let mut stream = connect(&server).await;
    send(&mut stream, "POST", "/v1/messages", &[], b"{}").await;
    assert_eq!(
        read_exact(&mut stream, wire(&second).len()).await,
        wire(&second)
    );
    send(
        &mut stream,
        "POST",
        "/v1/messages",
        &[("connection", "close")],
        b"{}",
    )
    .await;
    assert_eq!(read_until_close(&mut stream).await.0, wire(&second));
    assert_eq!(server.request_count(), 3);
}

/// A client that does not read while tiny pieces are sent still gets every byte before the
/// reset: the server waits (1 ms virtual steps) until the bytes are acknowledged.
#[tokio::test(start_paused = true)]
async fn reset_waits_for_a_slow_reader() {
    let response = HttpResponse::fixture("openai_responses");
    let server = MockServer::start(vec![
        Reply::new(response.clone())
            .split(Split::Every(5))
            .after_body(AfterBody::Reset),
    ])
    .await;
    let mut stream = connect(&server).await;
    send(&mut stream, "GET", "/", &[], b"").await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (got, error) = read_until_close(&mut stream).await;
    assert_eq!(got.len(), wire(&response).len());
    assert_eq!(got, wire(&response));
    assert_eq!(
        error.map(|e| e.kind()),
        Some(std::io::ErrorKind::ConnectionReset)
    );
}
