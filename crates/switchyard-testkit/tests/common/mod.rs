//! A minimal raw-TCP HTTP/1.1 client for exercising the mock server.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use switchyard_testkit::{MockServer, test_data_dir};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Opens a TCP connection to the server.
pub async fn connect(server: &MockServer) -> TcpStream {
    let addr = server.url().strip_prefix("http://").unwrap().to_string();
    TcpStream::connect(addr).await.unwrap()
}

/// Writes a request; adds `content-length` when `body` is not empty.
pub async fn send(
    stream: &mut TcpStream,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) {
    let mut raw = format!("{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n");
    for (n, v) in headers {
        raw.push_str(&format!("{n}: {v}\r\n"));
    }
    if !body.is_empty() {
        raw.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    raw.push_str("\r\n");
    let mut bytes = raw.into_bytes();
    bytes.extend_from_slice(body);
    stream.write_all(&bytes).await.unwrap();
}

/// Reads until EOF; panics on a socket error.
pub async fn read_to_end(stream: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    stream.read_to_end(&mut out).await.unwrap();
    out
}

/// Reads until EOF or error; returns the bytes and the error, if any.
pub async fn read_until_close(stream: &mut TcpStream) -> (Vec<u8>, Option<std::io::Error>) {
    let mut out = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) => return (out, None),
            Ok(n) => out.extend_from_slice(&chunk[..n]),
            Err(e) => return (out, Some(e)),
        }
    }
}

/// Reads exactly `n` bytes.
pub async fn read_exact(stream: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    stream.read_exact(&mut out).await.unwrap();
    out
}

/// One-shot: connects, sends `GET path` with `connection: close`, reads to EOF.
pub async fn get_raw(server: &MockServer, path: &str) -> Vec<u8> {
    let mut stream = connect(server).await;
    send(&mut stream, "GET", path, &[("connection", "close")], b"").await;
    read_to_end(&mut stream).await
}

/// Every `*.http` file in tests/fixtures and tests/cases, sorted.
pub fn all_http_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["fixtures", "cases"] {
        for entry in std::fs::read_dir(test_data_dir().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "http") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(
        files.len() >= 60,
        "expected the fixtures and cases in tests/, found {}",
        files.len()
    );
    files
}
