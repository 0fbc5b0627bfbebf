//! Server behaviour on a real clock: sequences, keep-alive, recording, faults, shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: failing loudly is the point

mod common;

use std::time::Duration;

use common::{connect, get_raw, read_exact, read_to_end, read_until_close, send};
use switchyard_testkit::{AfterBody, Gate, HttpResponse, MockServer, Reply, Route, Split};
use tokio::io::AsyncWriteExt;

fn wire(response: &HttpResponse) -> Vec<u8> {
    [response.head.clone(), response.body.clone()].concat()
}

fn body_of(raw: &[u8]) -> Vec<u8> {
    HttpResponse::parse(raw).body
}

/// Waits (at most 10 s) until the server has closed its one connection: its FIN or reset has
/// been sent, and over loopback has reached the client.
async fn closed(server: &MockServer) {
    tokio::time::timeout(Duration::from_secs(10), server.wait_for_closed(1))
        .await
        .expect("the server did not close the connection within 10 s");
}

#[tokio::test]
async fn sequence_repeats_the_last_reply() {
    let server = MockServer::start(vec![
        HttpResponse::json(500, "first").into(),
        HttpResponse::json(429, "second").into(),
        HttpResponse::json(200, "last").into(),
    ])
    .await;
    let mut bodies = Vec::new();
    for _ in 0..5 {
        bodies.push(String::from_utf8(body_of(&get_raw(&server, "/").await)).unwrap());
    }
    assert_eq!(bodies, ["first", "second", "last", "last", "last"]);
    assert_eq!(server.request_count(), 5);
}

#[tokio::test]
async fn keep_alive_serves_two_requests_on_one_connection() {
    let first = HttpResponse::fixture("anthropic_429");
    let second = HttpResponse::fixture("anthropic_text");
    let server = MockServer::start(vec![first.clone().into(), second.clone().into()]).await;
    let mut stream = connect(&server).await;
    send(&mut stream, "POST", "/v1/messages", &[], b"{\"n\":1}").await;
    assert_eq!(
        read_exact(&mut stream, wire(&first).len()).await,
        wire(&first)
    );
    send(&mut stream, "POST", "/v1/messages", &[], b"{\"n\":2}").await;
    assert_eq!(
        read_exact(&mut stream, wire(&second).len()).await,
        wire(&second)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].json()["n"], 1);
    assert_eq!(requests[1].json()["n"], 2);
    // The connection is still usable: a third request gets the repeated last reply.
    send(
        &mut stream,
        "GET",
        "/again",
        &[("connection", "close")],
        b"",
    )
    .await;
    assert_eq!(read_to_end(&mut stream).await, wire(&second));
}

#[tokio::test]
async fn complete_chunked_response_keeps_the_connection_alive() {
    let complete = HttpResponse::case("C34b");
    let server = MockServer::start(vec![complete.clone().into()]).await;
    let mut stream = connect(&server).await;
    for _ in 0..2 {
        send(&mut stream, "GET", "/", &[], b"").await;
        assert_eq!(
            read_exact(&mut stream, wire(&complete).len()).await,
            wire(&complete)
        );
    }
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn eof_framed_and_truncated_responses_close_the_connection() {
    for case in ["C01", "C31", "C33b"] {
        let response = HttpResponse::case(case);
        let server = MockServer::start(vec![response.clone().into()]).await;
        let mut stream = connect(&server).await;
        // No `connection: close` from the client: the server must still close.
        send(&mut stream, "GET", "/", &[], b"").await;
        assert_eq!(read_to_end(&mut stream).await, wire(&response), "{case}");
    }
}

#[tokio::test]
async fn client_connection_close_is_honoured() {
    let response = HttpResponse::json(200, "{}");
    let server = MockServer::start(vec![response.clone().into()]).await;
    let mut stream = connect(&server).await;
    send(&mut stream, "GET", "/", &[("Connection", "close")], b"").await;
    assert_eq!(read_to_end(&mut stream).await, wire(&response));
}

/// Under the paused clock the 600 s delay costs no real time, and no reply byte can be written
/// before the test has looked: virtual time only moves while the test waits.
#[tokio::test(start_paused = true)]
async fn requests_are_recorded_before_the_reply() {
    let server = MockServer::start(vec![
        Reply::new(HttpResponse::json(200, "{}")).delay_before(Duration::from_secs(600)),
    ])
    .await;
    let mut stream = connect(&server).await;
    let body = br#"{"model":"claude-x","messages":[{"role":"user","content":"h\u00e9"}]}"#;
    send(
        &mut stream,
        "POST",
        "/v1/messages?beta=true",
        &[
            ("X-Api-Key", "sk-test"),
            ("Content-Type", "application/json"),
            ("anthropic-version", "2023-06-01"),
        ],
        body,
    )
    .await;
    // The reply is delayed, but the request is already visible.
    tokio::time::timeout(Duration::from_secs(5), server.wait_for_requests(1))
        .await
        .expect("the request was not recorded");
    assert_eq!(server.request_count(), 1);
    let mut nothing = [0u8; 1];
    assert_eq!(
        stream.try_read(&mut nothing).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::WouldBlock),
        "a reply byte arrived before the delay"
    );
    let request = &server.requests()[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/messages?beta=true");
    assert_eq!(request.header("x-api-key"), Some("sk-test"));
    assert_eq!(request.header("CONTENT-TYPE"), Some("application/json"));
    assert!(
        request
            .headers
            .iter()
            .all(|(n, _)| *n == n.to_ascii_lowercase())
    );
    assert_eq!(
        request
            .headers
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>(),
        [
            "host",
            "x-api-key",
            "content-type",
            "anthropic-version",
            "content-length"
        ]
    );
    assert_eq!(request.body, body);
    let json = request.json();
    assert_eq!(json["model"], "claude-x");
    assert_eq!(json["messages"][0]["content"], "hé");
    let _ = read_exact(&mut stream, 10).await;
}

#[tokio::test]
#[should_panic(expected = "body of GET /x is not JSON")]
async fn json_on_a_non_json_body_panics_clearly() {
    let server = MockServer::start(vec![HttpResponse::json(200, "{}").into()]).await;
    let mut stream = connect(&server).await;
    send(
        &mut stream,
        "GET",
        "/x",
        &[("connection", "close")],
        b"not json",
    )
    .await;
    read_to_end(&mut stream).await;
    server.requests()[0].json();
}

#[tokio::test]
async fn chunked_request_bodies_are_decoded() {
    let response = HttpResponse::json(200, "{}");
    let server = MockServer::start(vec![response.clone().into()]).await;
    let mut stream = connect(&server).await;
    stream
        .write_all(
            b"POST /chunked HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n\
              5;ext\r\n{\"a\":\r\n3\r\n 1}\r\n0\r\ntrailer: t\r\n\r\n",
        )
        .await
        .unwrap();
    assert_eq!(
        read_exact(&mut stream, wire(&response).len()).await,
        wire(&response)
    );
    let request = &server.requests()[0];
    assert_eq!(request.body, b"{\"a\": 1}");
    assert_eq!(request.json()["a"], 1);
    // Keep-alive still works after a chunked request.
    send(&mut stream, "GET", "/next", &[("connection", "close")], b"").await;
    assert_eq!(read_to_end(&mut stream).await, wire(&response));
    assert_eq!(server.requests()[1].path, "/next");
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let server = MockServer::start(vec![
        HttpResponse::json(200, "one").into(),
        HttpResponse::json(200, "two").into(),
    ])
    .await;
    let mut stream = connect(&server).await;
    stream
        .write_all(b"GET /1 HTTP/1.1\r\nhost: x\r\n\r\nGET /2 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let got = read_to_end(&mut stream).await;
    let want = [
        wire(&HttpResponse::json(200, "one")),
        wire(&HttpResponse::json(200, "two")),
    ]
    .concat();
    assert_eq!(got, want);
    let paths: Vec<_> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/1", "/2"]);
}

#[tokio::test]
async fn expect_100_continue_gets_an_interim_response() {
    let response = HttpResponse::json(201, "{}");
    let server = MockServer::start(vec![response.clone().into()]).await;
    let mut stream = connect(&server).await;
    stream
        .write_all(b"POST / HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: 2\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let interim = b"HTTP/1.1 100 Continue\r\n\r\n";
    assert_eq!(read_exact(&mut stream, interim.len()).await, interim);
    stream.write_all(b"{}").await.unwrap();
    assert_eq!(read_to_end(&mut stream).await, wire(&response));
    assert_eq!(server.requests()[0].body, b"{}");
}

#[tokio::test]
async fn drop_at_closes_after_that_many_body_bytes() {
    let response = HttpResponse::fixture("anthropic_text");
    for split in [Split::Whole, Split::Every(7)] {
        let server =
            MockServer::start(vec![Reply::new(response.clone()).split(split).drop_at(100)]).await;
        let mut stream = connect(&server).await;
        // A keep-alive request: the close comes from drop_at, not from the client.
        send(&mut stream, "GET", "/", &[], b"").await;
        let (got, error) = read_until_close(&mut stream).await;
        assert!(error.is_none(), "expected a clean FIN, got {error:?}");
        assert_eq!(got, [&response.head[..], &response.body[..100]].concat());
    }
}

#[tokio::test]
async fn drop_at_zero_sends_only_the_head() {
    let response = HttpResponse::fixture("openai_chat_text");
    let server = MockServer::start(vec![Reply::new(response.clone()).drop_at(0)]).await;
    let mut stream = connect(&server).await;
    send(&mut stream, "GET", "/", &[], b"").await;
    assert_eq!(read_to_end(&mut stream).await, response.head);
}

#[tokio::test]
async fn drop_at_with_reset_aborts_the_connection() {
    let response = HttpResponse::fixture("anthropic_text");
    let server = MockServer::start(vec![
        Reply::new(response.clone())
            .drop_at(64)
            .after_body(AfterBody::Reset),
    ])
    .await;
    let mut stream = connect(&server).await;
    send(&mut stream, "GET", "/", &[], b"").await;
    // Read only once the RST was sent: the bytes sent before it are still readable.
    closed(&server).await;
    let (got, error) = read_until_close(&mut stream).await;
    assert_eq!(got, [&response.head[..], &response.body[..64]].concat());
    assert_eq!(
        error.map(|e| e.kind()),
        Some(std::io::ErrorKind::ConnectionReset)
    );
}

#[tokio::test]
async fn reset_after_body_delivers_every_byte_then_a_reset() {
    // C31: chunk-framed, no terminating chunk, then a TCP reset.
    let response = HttpResponse::case("C31");
    for split in [Split::Whole, Split::Every(5)] {
        let server = MockServer::start(vec![
            Reply::new(response.clone())
                .split(split)
                .after_body(AfterBody::Reset),
        ])
        .await;
        let mut stream = connect(&server).await;
        send(&mut stream, "GET", "/", &[], b"").await;
        closed(&server).await;
        let (got, error) = read_until_close(&mut stream).await;
        assert_eq!(got, wire(&response));
        assert_eq!(
            error.map(|e| e.kind()),
            Some(std::io::ErrorKind::ConnectionReset)
        );
    }
}

#[tokio::test]
async fn hold_open_keeps_the_socket_silent_then_closes() {
    let response = HttpResponse::case("C33");
    let hold = Duration::from_secs(1);
    let server = MockServer::start(vec![
        Reply::new(response.clone()).after_body(AfterBody::HoldOpen(hold)),
    ])
    .await;
    let mut stream = connect(&server).await;
    let start = std::time::Instant::now();
    send(&mut stream, "GET", "/", &[], b"").await;
    assert_eq!(
        read_exact(&mut stream, wire(&response).len()).await,
        wire(&response)
    );
    // Silent: nothing more arrives for a while.
    let mut one = [0u8; 1];
    let quiet = tokio::time::timeout(
        Duration::from_millis(200),
        tokio::io::AsyncReadExt::read(&mut stream, &mut one),
    )
    .await;
    assert!(quiet.is_err(), "expected silence, got {quiet:?}");
    // Then a clean close once the hold is over.
    let (rest, error) = read_until_close(&mut stream).await;
    assert!(rest.is_empty() && error.is_none());
    assert!(start.elapsed() >= hold);
}

#[tokio::test]
async fn concurrent_connections_each_get_one_reply() {
    let n = 16;
    let server = MockServer::start(
        (0..n)
            .map(|i| Reply::new(HttpResponse::json(200, &i.to_string())).split(Split::Every(1)))
            .collect(),
    )
    .await;
    let mut tasks = Vec::new();
    for _ in 0..n {
        let mut stream = connect(&server).await;
        tasks.push(tokio::spawn(async move {
            send(&mut stream, "GET", "/", &[("connection", "close")], b"").await;
            let raw = read_to_end(&mut stream).await;
            String::from_utf8(body_of(&raw))
                .unwrap()
                .parse::<usize>()
                .unwrap()
        }));
    }
    let mut got = Vec::new();
    for task in tasks {
        got.push(task.await.unwrap());
    }
    got.sort_unstable();
    assert_eq!(got, (0..n).collect::<Vec<_>>());
    assert_eq!(server.request_count(), n);
}

#[tokio::test]
async fn a_gate_holds_every_reply_mid_body_until_it_opens() {
    let response = HttpResponse::fixture("openai_chat_text");
    let gate = Gate::new();
    let server = MockServer::start(vec![
        Reply::new(response.clone())
            .split(Split::Every(7))
            .gate_at(20, &gate),
    ])
    .await;
    let mut streams = Vec::new();
    for _ in 0..3 {
        let mut stream = connect(&server).await;
        send(&mut stream, "GET", "/", &[("connection", "close")], b"").await;
        streams.push(stream);
    }
    tokio::time::timeout(Duration::from_secs(10), gate.wait_until_reached(3))
        .await
        .expect("three replies did not reach the gate");
    assert_eq!(gate.reached(), 3);
    assert_eq!(server.request_count(), 3);
    let upto = response.head.len() + 20;
    for stream in &mut streams {
        // Everything before the gate has arrived, and nothing after it.
        assert_eq!(read_exact(stream, upto).await, wire(&response)[..upto]);
        let mut more = [0u8; 1];
        assert_eq!(
            stream.try_read(&mut more).map_err(|e| e.kind()),
            Err(std::io::ErrorKind::WouldBlock)
        );
    }
    gate.open();
    for stream in &mut streams {
        assert_eq!(read_to_end(stream).await, wire(&response)[upto..]);
    }
    tokio::time::timeout(Duration::from_secs(10), server.wait_for_closed(3))
        .await
        .expect("the server did not close its three connections");
    // An open gate stays open.
    assert_eq!(get_raw(&server, "/").await, wire(&response));
    assert_eq!(gate.reached(), 4);
}

#[tokio::test]
async fn dropping_the_server_stops_it() {
    let server = MockServer::start(vec![
        Reply::new(HttpResponse::case("C33"))
            .after_body(AfterBody::HoldOpen(Duration::from_secs(600))),
    ])
    .await;
    let url = server.url();
    let mut held = connect(&server).await;
    send(&mut held, "GET", "/", &[], b"").await;
    let head_len = HttpResponse::case("C33").head.len();
    let _ = read_exact(&mut held, head_len).await;
    drop(server);
    // The held connection is closed by the abort, long before 600 s.
    let closed = tokio::time::timeout(Duration::from_secs(5), read_until_close(&mut held)).await;
    assert!(closed.is_ok(), "held connection not closed after drop");
    // And the listener is gone. The abort takes effect when the runtime next polls the
    // accept task, and a dropped server has no signal left to give: poll, within a deadline.
    let addr = url.strip_prefix("http://").unwrap().to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(&addr).await.is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "listener still accepting 10 s after drop"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn url_and_debug() {
    let server = MockServer::start(vec![HttpResponse::json(200, "{}").into()]).await;
    let url = server.url();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert!(!url.ends_with('/'));
    assert!(format!("{server:?}").contains(&url));
}

#[tokio::test]
#[should_panic(expected = "at least one reply")]
async fn start_without_replies_panics() {
    MockServer::start(Vec::new()).await;
}

/// On a multi-thread runtime the client reads on another worker while the server writes tiny
/// pieces; the reset must still come after every byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_after_tiny_pieces_loses_nothing_multi_thread() {
    for (case, split) in [("C34", Split::Every(1)), ("C31", Split::Every(5))] {
        let response = HttpResponse::case(case);
        for _ in 0..5 {
            let server = MockServer::start(vec![
                Reply::new(response.clone())
                    .split(split.clone())
                    .after_body(AfterBody::Reset),
            ])
            .await;
            let mut stream = connect(&server).await;
            send(&mut stream, "GET", "/", &[], b"").await;
            let (got, error) = read_until_close(&mut stream).await;
            assert_eq!(got, wire(&response), "{case}");
            assert_eq!(
                error.map(|e| e.kind()),
                Some(std::io::ErrorKind::ConnectionReset)
            );
        }
    }
}

#[tokio::test]
async fn a_route_answers_its_path_every_time_outside_the_ordered_replies() {
    let models = HttpResponse::json(200, r#"{"data":[{"id":"only"}]}"#);
    let server = MockServer::start_routed(
        vec![
            HttpResponse::json(200, "first").into(),
            HttpResponse::json(200, "second").into(),
        ],
        vec![Route::get("/v1/models", models.clone().into())],
    )
    .await;
    let listed = body_of(&get_raw(&server, "/v1/models?x=1").await);
    assert_eq!(listed, models.body);
    assert_eq!(body_of(&get_raw(&server, "/v1/chat").await), b"first");
    assert_eq!(body_of(&get_raw(&server, "/v1/models").await), models.body);
    assert_eq!(body_of(&get_raw(&server, "/v1/chat").await), b"second");
    // The route matches its method: a POST to the same path takes the next ordered reply.
    let mut stream = connect(&server).await;
    send(
        &mut stream,
        "POST",
        "/v1/models",
        &[("connection", "close")],
        b"",
    )
    .await;
    assert_eq!(body_of(&read_to_end(&mut stream).await), b"second");
    assert_eq!(server.request_count(), 3);
    let routed = server.routed_requests();
    assert_eq!(routed.len(), 2);
    assert_eq!(routed[0].path, "/v1/models?x=1");
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.path != "/v1/models" || r.method == "POST")
    );
}
