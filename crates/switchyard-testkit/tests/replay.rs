//! Byte-exact replay of every fixture and case in tests/, in several write splits.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: failing loudly is the point

mod common;

use common::{all_http_files, connect, get_raw, read_exact, send};
use switchyard_testkit::{HttpResponse, MockServer, Reply, Split};

async fn replay_all(split: Split) {
    let files = all_http_files();
    for path in &files {
        let raw = std::fs::read(path).unwrap();
        let response = HttpResponse::load(path);
        assert_eq!([response.head.clone(), response.body.clone()].concat(), raw);
        let server = MockServer::start(vec![Reply::new(response).split(split.clone())]).await;
        let got = get_raw(&server, "/replay").await;
        assert!(
            got == raw,
            "{} ({split:?}): got {} bytes, want {}",
            path.display(),
            got.len(),
            raw.len()
        );
        assert_eq!(server.request_count(), 1);
    }
}

#[tokio::test]
async fn replay_whole() {
    replay_all(Split::Whole).await;
}

#[tokio::test]
async fn replay_every_1() {
    replay_all(Split::Every(1)).await;
}

#[tokio::test]
async fn replay_every_5() {
    replay_all(Split::Every(5)).await;
}

#[tokio::test]
async fn replay_every_7() {
    replay_all(Split::Every(7)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_every_7_multi_thread_runtime() {
    replay_all(Split::Every(7)).await;
}

/// Self-delimiting responses are read by length, without waiting for EOF, on a keep-alive
/// connection: one connection replays every content-length fixture in turn.
#[tokio::test]
async fn replay_by_length_on_one_connection() {
    let responses: Vec<(std::path::PathBuf, HttpResponse)> = all_http_files()
        .into_iter()
        .map(|p| (p.clone(), HttpResponse::load(&p)))
        // A recorded `connection: close` (C92b's server sends one with its length) ends the
        // connection by design, so it cannot be followed on the same one.
        .filter(|(_, r)| {
            let closes = (r.header("connection")).is_some_and(|v| v.eq_ignore_ascii_case("close"));
            r.header("content-length").is_some() && !closes
        })
        .collect();
    assert!(responses.len() >= 40);
    let server = MockServer::start(
        responses
            .iter()
            .map(|(_, r)| Reply::new(r.clone()).split(Split::Every(5)))
            .collect(),
    )
    .await;
    let mut stream = connect(&server).await;
    for (i, (path, response)) in responses.iter().enumerate() {
        send(&mut stream, "GET", &format!("/{i}"), &[], b"").await;
        let want = [response.head.clone(), response.body.clone()].concat();
        let got = read_exact(&mut stream, want.len()).await;
        assert!(got == want, "{}: bytes differ", path.display());
    }
    assert_eq!(server.request_count(), responses.len());
}
