//! What travels with one request (SPEC R2.1 **Improve**, R1.4, R5.3, R6.4): one handler carries
//! many concurrent requests, each with its own cancellation, retry observer, extra headers and
//! deadlines, against the testkit server (paused clock for every wait).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::join_all;
use switchyard_api::{
    ApiConfiguration, ApiError, ApiHandler, ApiStreamChunk, CancellationToken, Deadlines,
    ErrorKind, Message, Mode, RequestOptions, RequestOverrides, RetryStatus, build_api_handler,
};
use switchyard_testkit::{AfterBody, HttpResponse, MockServer, Reply, Split};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

const KEY: &str = "sk-requests-test-key-0123456789";
const TAG: &str = "x-request-tag";

/// An OpenAI-compatible handler for `base_url` (`…/v1`), with `extra` TOML lines under its
/// `[providers.openai]` section.
fn handler(base_url: &str, extra: &str) -> Box<dyn ApiHandler> {
    let text = format!(
        "[act]\nprovider = \"openai\"\nmodel = \"gpt-4o\"\n[providers.openai]\nbase_url = \"{base_url}\"\n{extra}\n"
    );
    let config = ApiConfiguration::from_toml(&text, "test.toml", |_| Some(KEY.to_owned())).unwrap();
    build_api_handler(&config, Mode::Act).unwrap()
}

/// A Chat Completions stream whose text is `text`, one word per event, then usage and `[DONE]`.
fn chat_stream(text: &str) -> String {
    let mut body = String::new();
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    for word in &words {
        let delta = serde_json::json!({"choices":[{"index":0,"delta":{"content":word}}]});
        body.push_str(&format!("data: {delta}\n\n"));
    }
    body.push_str(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    );
    body.push_str(
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\n",
    );
    body.push_str("data: [DONE]\n\n");
    body
}

/// The text of reply `i` of the concurrency test: names the reply, so a mixed-up stream shows.
fn reply_text(i: usize) -> String {
    format!("reply {i} says: alpha beta gamma delta epsilon {i}")
}

/// A 429 that asks for a one-second wait, naming the reply in its message.
fn rate_limited(i: usize) -> HttpResponse {
    HttpResponse::new(
        429,
        &[("content-type", "application/json"), ("retry-after", "1")],
        format!(
            "{{\"error\":{{\"message\":\"slow down (reply {i})\",\"type\":\"rate_limit_error\"}}}}"
        ),
    )
}

/// Every item of one request (`x`) with `options`.
async fn collect(
    h: &dyn ApiHandler,
    options: RequestOptions,
) -> Vec<Result<ApiStreamChunk, ApiError>> {
    h.create_message("s", &[Message::user_text("x")], &[], options)
        .collect()
        .await
}

fn text_of(items: &[Result<ApiStreamChunk, ApiError>]) -> String {
    items
        .iter()
        .filter_map(|i| match i {
            Ok(ApiStreamChunk::Text { text, .. }) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// What one of the concurrent requests saw.
struct Seen {
    items: Vec<Result<ApiStreamChunk, ApiError>>,
    retries: Vec<RetryStatus>,
}

#[tokio::test(start_paused = true)]
async fn one_handler_carries_100_concurrent_requests_each_with_its_own_options() {
    const REQUESTS: usize = 100;
    const LIMITED: usize = 10;
    // Arrivals 0..10 are rate limited (retry-after 1 s); every other arrival streams its own
    // text in 7-byte writes 5 ms apart, so the streams interleave.
    let replies: Vec<Reply> = (0..REQUESTS + LIMITED + 1)
        .map(|i| {
            if i < LIMITED {
                Reply::new(rate_limited(i))
            } else {
                Reply::new(HttpResponse::sse(&chat_stream(&reply_text(i))))
                    .split(Split::Every(7))
                    .write_gap(Duration::from_millis(5))
            }
        })
        .collect();
    let server = MockServer::start(replies).await;
    let h = handler(&format!("{}/v1", server.url()), "");
    let h: &dyn ApiHandler = h.as_ref();
    // Request 0 is cancelled once its first text arrives.
    const CANCELLED: usize = 0;

    let runs = (0..REQUESTS).map(|k| async move {
        let retries = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&retries);
        let cancel = CancellationToken::new();
        let options = RequestOptions {
            cancel: cancel.clone(),
            on_retry: Some(Arc::new(move |s: RetryStatus| sink.lock().unwrap().push(s))),
            headers: vec![(TAG.to_owned(), k.to_string())],
            deadlines: Deadlines::default(),
            fail_fast: false,
            on_response: None,
            overrides: RequestOverrides::default(),
            bounds: Default::default(),
        };
        let mut stream = h.create_message("s", &[Message::user_text("hi")], &[], options);
        let mut items = Vec::new();
        while let Some(item) = stream.next().await {
            let text = matches!(item, Ok(ApiStreamChunk::Text { .. }));
            items.push(item);
            if k == CANCELLED && text && !cancel.is_cancelled() {
                cancel.cancel();
            }
        }
        let retries = retries.lock().unwrap().clone();
        Seen { items, retries }
    });
    let seen: Vec<Seen> = join_all(runs).await;

    // Which arrivals each request made, from the tag header the server recorded.
    let requests = server.requests();
    let arrivals = |k: usize| -> Vec<usize> {
        (0..requests.len())
            .filter(|&i| requests[i].header(TAG) == Some(&k.to_string()))
            .collect()
    };
    let mut reports = 0;
    for (k, s) in seen.iter().enumerate() {
        let mine = arrivals(k);
        // Every retry report reached the request that was retried, and only it: one report per
        // 429 this request received, naming that reply.
        let limited: Vec<usize> = mine.iter().copied().filter(|&i| i < LIMITED).collect();
        assert_eq!(s.retries.len(), limited.len(), "request {k}: {mine:?}");
        for (report, i) in s.retries.iter().zip(&limited) {
            assert_eq!(report.error.kind, ErrorKind::RateLimited);
            assert!(
                report.error.message.contains(&format!("(reply {i})")),
                "request {k} got the report of another request: {}",
                report.error
            );
            assert_eq!((report.attempt, report.max_attempts), (1, 3));
            assert!(report.delay >= Duration::from_secs(1), "{:?}", report.delay);
        }
        reports += s.retries.len();
        if k == CANCELLED {
            continue;
        }
        // Exactly the text of the reply this request received, complete, then usage.
        let last = *mine.last().expect("every request reached the server");
        assert!(
            s.items.iter().all(Result::is_ok),
            "request {k}: {:?}",
            s.items
        );
        assert_eq!(text_of(&s.items), reply_text(last), "request {k}");
        assert!(matches!(
            s.items.last(),
            Some(Ok(ApiStreamChunk::Usage(u))) if u.input_tokens == 7 && u.output_tokens == 3
        ));
    }
    assert_eq!(reports, LIMITED, "every 429 was reported once");

    // The cancelled request: some text, then one Cancelled error, nothing after it.
    let cancelled = &seen[CANCELLED].items;
    let (last, before) = cancelled.split_last().unwrap();
    assert!(
        matches!(last, Err(e) if e.kind == ErrorKind::Cancelled),
        "{cancelled:?}"
    );
    assert!(before.iter().all(Result::is_ok), "{cancelled:?}");
    let arrived = arrivals(CANCELLED);
    assert!(
        reply_text(*arrived.last().unwrap()).starts_with(&text_of(before)),
        "{cancelled:?}"
    );
    assert!(text_of(before).len() < reply_text(*arrived.last().unwrap()).len());
    assert_eq!(requests.len(), REQUESTS + LIMITED);
}

#[tokio::test(start_paused = true)]
async fn cancelling_during_a_retry_wait_ends_the_request_without_sending_again() {
    let server = MockServer::start(vec![Reply::new(rate_limited(0))]).await;
    let h = handler(&format!("{}/v1", server.url()), "");
    let cancel = CancellationToken::new();
    let reported = Arc::new(Mutex::new(0));
    let sink = Arc::clone(&reported);
    let options = RequestOptions {
        cancel: cancel.clone(),
        on_retry: Some(Arc::new(move |_| *sink.lock().unwrap() += 1)),
        ..RequestOptions::default()
    };
    let started = Instant::now();
    let collect = h
        .create_message("s", &[Message::user_text("x")], &[], options)
        .collect::<Vec<_>>();
    let cancel_later = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        cancel.cancel();
    };
    let (items, ()) = tokio::join!(collect, cancel_later);
    assert!(
        matches!(items.as_slice(), [Err(e)] if e.kind == ErrorKind::Cancelled),
        "{items:?}"
    );
    assert_eq!(started.elapsed(), Duration::from_millis(500));
    assert_eq!(*reported.lock().unwrap(), 1);
    assert_eq!(
        server.request_count(),
        1,
        "no request after the cancellation"
    );
}

#[tokio::test(start_paused = true)]
async fn fail_fast_skips_the_provider_level_retry_and_every_response_is_heard() {
    // SPEC R12.1: with somewhere else to go, a 429 comes back at once, after one request.
    let server = MockServer::start(vec![Reply::new(rate_limited(3))]).await;
    let h = handler(&format!("{}/v1", server.url()), "");
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&heard);
    let options = RequestOptions {
        fail_fast: true,
        on_response: Some(Arc::new(move |status, headers| {
            let retry_after = headers
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            sink.lock().unwrap().push((status, retry_after));
        })),
        ..RequestOptions::default()
    };
    let started = Instant::now();
    let items: Vec<_> = h
        .create_message("s", &[Message::user_text("x")], &[], options)
        .collect()
        .await;
    assert!(
        matches!(items.as_slice(), [Err(e)] if e.kind == ErrorKind::RateLimited),
        "{items:?}"
    );
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!(server.request_count(), 1);
    assert_eq!(*heard.lock().unwrap(), [(429, Some("1".to_owned()))]);

    // Without it the same 429 is retried at the provider level, and each response is heard.
    let server = MockServer::start(vec![
        Reply::new(rate_limited(1)),
        Reply::new(HttpResponse::sse(&chat_stream("ok"))),
    ])
    .await;
    let h = handler(&format!("{}/v1", server.url()), "");
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&heard);
    let options = RequestOptions {
        on_response: Some(Arc::new(move |status, _| sink.lock().unwrap().push(status))),
        ..RequestOptions::default()
    };
    let items: Vec<_> = h
        .create_message("s", &[Message::user_text("x")], &[], options)
        .collect()
        .await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    assert_eq!(server.request_count(), 2);
    assert_eq!(*heard.lock().unwrap(), [429, 200]);
}

/// A server that answers each connection with an SSE head and one event, then: on the first
/// connection waits for the client to close it and reports when; on the second sends the rest
/// of a complete Chat Completions stream.
async fn two_connection_server() -> (String, tokio::task::JoinHandle<Instant>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let first_event = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
    let task = tokio::spawn(async move {
        let mut conns = Vec::new();
        for _ in 0..2 {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            let mut piece = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = sock.read(&mut piece).await.unwrap();
                head.extend_from_slice(&piece[..n]);
            }
            sock.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
            )
            .await
            .unwrap();
            sock.write_all(first_event.as_bytes()).await.unwrap();
            conns.push(sock);
        }
        let mut second = conns.pop().unwrap();
        let mut first = conns.pop().unwrap();
        let mut piece = [0u8; 64];
        let closed = loop {
            match first.read(&mut piece).await {
                Ok(0) | Err(_) => break Instant::now(),
                Ok(_) => {}
            }
        };
        let rest = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
        second.write_all(rest.as_bytes()).await.unwrap();
        second.shutdown().await.unwrap();
        closed
    });
    (url, task)
}

#[tokio::test]
async fn dropping_one_stream_closes_its_connection_and_leaves_the_others() {
    let (url, server) = two_connection_server().await;
    let h = handler(&url, "");
    let mut first = h.create_message(
        "s",
        &[Message::user_text("a")],
        &[],
        RequestOptions::default(),
    );
    assert_eq!(
        first.next().await.unwrap().unwrap(),
        ApiStreamChunk::text("Hel")
    );
    let mut second = h.create_message(
        "s",
        &[Message::user_text("b")],
        &[],
        RequestOptions::default(),
    );
    assert_eq!(
        second.next().await.unwrap().unwrap(),
        ApiStreamChunk::text("Hel")
    );
    let dropped = Instant::now();
    drop(first);
    let rest: Vec<_> = second.collect().await;
    let closed = tokio::time::timeout(Duration::from_millis(100), server)
        .await
        .expect("the dropped stream's connection was still open after 100 ms")
        .unwrap();
    assert!(closed - dropped <= Duration::from_millis(100));
    assert_eq!(text_of(&rest), "lo", "{rest:?}");
    assert!(rest.iter().all(Result::is_ok), "{rest:?}");
}

#[tokio::test(start_paused = true)]
async fn extra_headers_go_with_their_request_only_and_replace_configured_ones() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::sse(&chat_stream("ok")))]).await;
    let h = handler(
        &format!("{}/v1", server.url()),
        "headers = { \"X-Team\" = \"infra\", \"X-Mode\" = \"configured\" }",
    );
    let options = RequestOptions {
        headers: vec![
            ("X-Mode".to_owned(), "per-request".to_owned()),
            ("X-Trace".to_owned(), "t-1".to_owned()),
        ],
        ..RequestOptions::default()
    };
    let items = collect(h.as_ref(), options).await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let items = collect(h.as_ref(), RequestOptions::default()).await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let reqs = server.requests();
    let values = |i: usize, name: &str| -> Vec<&str> {
        reqs[i]
            .headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    assert_eq!(values(0, "x-mode"), ["per-request"]);
    assert_eq!(values(0, "x-trace"), ["t-1"]);
    assert_eq!(values(0, "x-team"), ["infra"]);
    assert_eq!(values(1, "x-mode"), ["configured"]);
    assert!(values(1, "x-trace").is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_invalid_extra_header_fails_before_sending_and_never_shows_its_value() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::sse(&chat_stream("ok")))]).await;
    let h = handler(&format!("{}/v1", server.url()), "");
    let secret = "Bearer sk-secret\nvalue";
    let options = RequestOptions {
        headers: vec![("authorization".to_owned(), secret.to_owned())],
        ..RequestOptions::default()
    };
    let shown = format!("{options:?}");
    assert!(!shown.contains("sk-secret"), "{shown}");
    let items = collect(h.as_ref(), options).await;
    let [Err(e)] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert_eq!(e.kind, ErrorKind::InvalidRequest);
    assert!(e.to_string().contains("`authorization`"), "{e}");
    assert!(!e.to_string().contains("sk-secret"), "{e}");
    assert_eq!(server.request_count(), 0);
}

/// A reply that sends the SSE head and `body`, then stays silent for ten minutes.
fn then_silent(body: &str) -> Reply {
    Reply::new(HttpResponse::new(
        200,
        &[
            ("content-type", "text/event-stream"),
            ("transfer-encoding", "chunked"),
        ],
        chunked(body),
    ))
    .after_body(AfterBody::HoldOpen(Duration::from_secs(600)))
}

/// `body` as one HTTP chunk (an unterminated chunked body: more may follow).
fn chunked(body: &str) -> String {
    if body.is_empty() {
        String::new()
    } else {
        format!("{:x}\r\n{body}\r\n", body.len())
    }
}

#[tokio::test(start_paused = true)]
async fn the_first_content_deadline_comes_from_the_request_the_provider_or_the_default() {
    // Headers, then silence: the request's own deadline (5 s) ends it.
    let server = MockServer::start(vec![then_silent("")]).await;
    let h = handler(&format!("{}/v1", server.url()), "");
    let started = Instant::now();
    let options = RequestOptions {
        deadlines: Deadlines {
            first_content: Some(Duration::from_secs(5)),
            idle: None,
        },
        ..RequestOptions::default()
    };
    let items = collect(h.as_ref(), options).await;
    assert!(
        matches!(items.as_slice(), [Err(e)] if e.kind == ErrorKind::Timeout
            && e.message == "no content arrived within 5 s of the request"),
        "{items:?}"
    );
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    // The provider's setting when the request sets none; the request's wins over it.
    let server = MockServer::start(vec![then_silent("")]).await;
    let h = handler(
        &format!("{}/v1", server.url()),
        "first_content_timeout_seconds = 9",
    );
    for (options, secs) in [
        (RequestOptions::default(), 9),
        (
            RequestOptions {
                deadlines: Deadlines {
                    first_content: Some(Duration::from_secs(4)),
                    idle: None,
                },
                ..RequestOptions::default()
            },
            4,
        ),
    ] {
        let started = Instant::now();
        let items = collect(h.as_ref(), options).await;
        assert!(
            matches!(items.as_slice(), [Err(e)] if e.message == format!("no content arrived within {secs} s of the request")),
            "{items:?}"
        );
        assert_eq!(started.elapsed(), Duration::from_secs(secs));
    }
    // Without one, the default 120 s; usage before content does not count as content.
    let usage =
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":0}}\n\n";
    let server = MockServer::start(vec![then_silent(usage)]).await;
    let h = handler(&format!("{}/v1", server.url()), "");
    let started = Instant::now();
    let items = collect(h.as_ref(), RequestOptions::default()).await;
    assert!(
        matches!(&items[..], [Ok(ApiStreamChunk::Usage(_)), Err(e)] if e.kind == ErrorKind::Timeout),
        "{items:?}"
    );
    assert_eq!(started.elapsed(), Duration::from_secs(120));
}

#[tokio::test(start_paused = true)]
async fn the_idle_deadline_ends_a_stream_that_stalls_after_content() {
    let first = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
    let server = MockServer::start(vec![then_silent(first)]).await;
    let h = handler(&format!("{}/v1", server.url()), "");
    let options = RequestOptions {
        deadlines: Deadlines {
            first_content: None,
            idle: Some(Duration::from_secs(7)),
        },
        ..RequestOptions::default()
    };
    let mut stream = h.create_message("s", &[Message::user_text("x")], &[], options);
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        ApiStreamChunk::text("Hel")
    );
    // A slow consumer does not trip the deadline: it runs while the stream is polled.
    tokio::time::sleep(Duration::from_secs(30)).await;
    let waiting = Instant::now();
    let next = stream.next().await;
    assert!(
        matches!(&next, Some(Err(e)) if e.kind == ErrorKind::Timeout
            && e.message == "the stream stalled: nothing arrived for 7 s"),
        "{next:?}"
    );
    assert_eq!(waiting.elapsed(), Duration::from_secs(7));
    assert!(stream.next().await.is_none());
}

#[tokio::test(start_paused = true)]
async fn retry_waits_do_not_count_against_the_first_content_deadline() {
    // Two 1 s retry waits under a 1.5 s first-content deadline: the request still succeeds.
    let server = MockServer::start(vec![
        Reply::new(rate_limited(0)),
        Reply::new(rate_limited(1)),
        Reply::new(HttpResponse::sse(&chat_stream("made it"))),
    ])
    .await;
    let h = handler(&format!("{}/v1", server.url()), "");
    let options = RequestOptions {
        deadlines: Deadlines {
            first_content: Some(Duration::from_millis(1500)),
            idle: None,
        },
        ..RequestOptions::default()
    };
    let items = collect(h.as_ref(), options).await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    assert_eq!(text_of(&items), "made it");
    assert_eq!(server.request_count(), 3);
}

#[tokio::test(start_paused = true)]
async fn duration_max_means_no_deadline() {
    let server = MockServer::start(vec![then_silent("")]).await;
    let h = handler(&format!("{}/v1", server.url()), "");
    let options = RequestOptions {
        deadlines: Deadlines {
            first_content: Some(Duration::MAX),
            idle: Some(Duration::MAX),
        },
        ..RequestOptions::default()
    };
    let started = Instant::now();
    let items = collect(h.as_ref(), options).await;
    // The server gives up after its 600 s hold; no deadline fired before.
    assert!(
        matches!(items.as_slice(), [Err(e)] if e.kind == ErrorKind::Network),
        "{items:?}"
    );
    assert_eq!(started.elapsed(), Duration::from_secs(600));
}
