//! The loopback stream server.
//!
//! Every `DIR/NAME.sse` file is read once at start and pre-encoded as an HTTP/1.1 chunked body
//! of 16 KiB chunks, so answering a request is one `write_all` of shared bytes: the server
//! does no per-request work beyond reading the request head and body. A request for
//! `/s/NAME/anything` gets `NAME.sse`; anything else gets a 404 with a JSON error body.
//! Connections are kept alive (HTTP/1.1) until the client closes them. `/p/SPEC/...` gets a
//! paced answer in the dialect of its path (`paced.rs`: the gateway benchmark's upstream) and
//! `GET /stats` the server's own CPU time (`{"cpu_ms": N}`). Every accepted socket has
//! `TCP_NODELAY`, so a small write is never held for the client's delayed ACK.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::paced;

/// HTTP chunk size of the body, in bytes (what network reads typically deliver).
const CHUNK_BYTES: usize = 16 * 1024;
/// Largest request head accepted, in bytes.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Pre-encoded responses by stream name.
type Streams = Arc<HashMap<String, Bytes>>;

/// Loads `dir/*.sse`, listens on 127.0.0.1:`port` and serves until killed.
pub fn serve(dir: &Path, port: u16) -> Result<(), String> {
    let streams = Arc::new(load(dir)?);
    if streams.is_empty() {
        return Err(format!(
            "no .sse files in {}: run bench/gen_streams.py first",
            dir.display()
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("no local address: {e}"))?;
        println!("listening http://{addr}");
        std::io::stdout()
            .flush()
            .map_err(|e| format!("cannot write to stdout: {e}"))?;
        loop {
            match listener.accept().await {
                Ok((socket, _)) => {
                    let streams = Arc::clone(&streams);
                    tokio::spawn(async move {
                        // A client that goes away mid-stream is normal (cancellation).
                        let _ = handle(socket, streams).await;
                    });
                }
                Err(e) => eprintln!("switchyard-bench serve: accept failed: {e}"),
            }
        }
    })
}

/// Reads every `*.sse` file of `dir` and encodes it as a complete HTTP response.
fn load(dir: &Path) -> Result<HashMap<String, Bytes>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut streams = HashMap::new();
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
            .path();
        if path.extension().and_then(|e| e.to_str()) != Some("sse") {
            continue;
        }
        let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let body =
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        streams.insert(name.to_owned(), Bytes::from(encode_response(&body)));
    }
    Ok(streams)
}

/// A 200 `text/event-stream` response with `body` in chunked transfer encoding.
fn encode_response(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + body.len() / CHUNK_BYTES * 10 + 256);
    out.extend_from_slice(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n\
          cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n",
    );
    for piece in body.chunks(CHUNK_BYTES) {
        out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        out.extend_from_slice(piece);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// Serves requests on one connection until the client closes it.
async fn handle(mut socket: TcpStream, streams: Streams) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    loop {
        // Read the request head.
        let head_end = loop {
            if let Some(i) = find(&buf, b"\r\n\r\n") {
                break i + 4;
            }
            if buf.len() > MAX_HEAD_BYTES {
                return Ok(());
            }
            let mut tmp = [0u8; 8192];
            let n = socket.read(&mut tmp).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&tmp[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let content_length = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        // Read (and drop) the request body.
        while buf.len() < head_end + content_length {
            let mut tmp = [0u8; 65536];
            let n = socket.read(&mut tmp).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&tmp[..n]);
        }
        let request_body = buf[head_end..head_end + content_length].to_vec();
        buf.drain(..head_end + content_length);

        let path = head.split_whitespace().nth(1).unwrap_or("/");
        if let Some(rest) = path.strip_prefix("/p/") {
            let (spec, _) = rest.split_once('/').unwrap_or((rest, ""));
            match (paced::Spec::parse(spec), paced::Dialect::from_path(path)) {
                (Ok(spec), Some(dialect)) => {
                    let stream = paced::wants_stream(&request_body);
                    paced::answer(&mut socket, &spec, dialect, stream).await?;
                    if spec.cut.is_some_and(|cut| cut < spec.n) && stream {
                        return Ok(());
                    }
                }
                (Err(e), _) => not_found(&mut socket, &e).await?,
                (_, None) => not_found(&mut socket, &format!("no dialect ends {path}")).await?,
            }
            continue;
        }
        if path == "/stats" {
            let body = format!("{{\"cpu_ms\":{}}}", own_cpu_ms());
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(response.as_bytes()).await?;
            continue;
        }
        let name = path
            .strip_prefix("/s/")
            .and_then(|rest| rest.split(['/', '?']).next())
            .unwrap_or("");
        match streams.get(name) {
            Some(response) => socket.write_all(response).await?,
            None => {
                let body = format!(
                    "{{\"error\":{{\"type\":\"not_found_error\",\"message\":\"no stream named `{name}` (path {path})\"}}}}"
                );
                let response = format!(
                    "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                socket.write_all(response.as_bytes()).await?;
            }
        }
    }
}

/// A 404 with `message` in a JSON error body.
async fn not_found(socket: &mut TcpStream, message: &str) -> std::io::Result<()> {
    let body =
        serde_json::json!({"error": {"type": "not_found_error", "message": message}}).to_string();
    let response = format!(
        "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(response.as_bytes()).await
}

/// This process's CPU time (user + system, all threads), milliseconds, from `/proc/self/stat`
/// (in clock ticks of 10 ms, Linux's `USER_HZ`); 0 where there is no `/proc`.
pub fn own_cpu_ms() -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0;
    };
    // The fields after the command name's closing parenthesis; utime and stime are the
    // 14th and 15th of the whole line, so the 12th and 13th after it.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(11) + ticks(12)) * 10
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// Decodes a chunked body back into its bytes, checking every chunk's framing.
    fn dechunk(mut rest: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        loop {
            let line_end = find(rest, b"\r\n").expect("chunk size line");
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[..line_end]).unwrap(), 16).unwrap();
            rest = &rest[line_end + 2..];
            if size == 0 {
                assert_eq!(rest, b"\r\n", "the last chunk ends the body");
                return body;
            }
            assert!(size <= CHUNK_BYTES);
            body.extend_from_slice(&rest[..size]);
            assert_eq!(&rest[size..size + 2], b"\r\n");
            rest = &rest[size + 2..];
        }
    }

    #[test]
    fn responses_are_chunked_event_streams_holding_the_whole_file() {
        for len in [0, 1, CHUNK_BYTES - 1, CHUNK_BYTES, CHUNK_BYTES * 3 + 7] {
            let body: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let response = encode_response(&body);
            let head_end = find(&response, b"\r\n\r\n").unwrap() + 4;
            let head = std::str::from_utf8(&response[..head_end]).unwrap();
            assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
            assert!(head.contains("content-type: text/event-stream"), "{head}");
            assert!(head.contains("transfer-encoding: chunked"), "{head}");
            assert_eq!(dechunk(&response[head_end..]), body, "length {len}");
        }
    }

    #[tokio::test]
    async fn serves_the_named_stream_and_404s_others_on_one_connection() {
        let streams: Streams = Arc::new(HashMap::from([(
            "demo".to_owned(),
            Bytes::from(encode_response(b"data: hi\n\n")),
        )]));
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (socket, _) = listener.accept().await.unwrap();
            let _ = handle(socket, streams).await;
        });
        let mut client = TcpStream::connect(addr).await.unwrap();
        let body = "{\"stream\":true}";
        let request = |path: &str| {
            format!(
                "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            )
        };
        client
            .write_all(request("/s/demo/v1/chat/completions").as_bytes())
            .await
            .unwrap();
        client
            .write_all(request("/s/other/v1/messages").as_bytes())
            .await
            .unwrap();
        client.shutdown().await.unwrap();
        let mut got = Vec::new();
        client.read_to_end(&mut got).await.unwrap();
        let text = String::from_utf8(got).unwrap();
        let (first, second) = text.split_once("0\r\n\r\n").unwrap();
        assert!(first.starts_with("HTTP/1.1 200 OK"), "{first}");
        assert!(first.ends_with("a\r\ndata: hi\n\n\r\n"), "{first}");
        assert!(second.starts_with("HTTP/1.1 404 Not Found"), "{second}");
        assert!(second.contains("no stream named `other`"), "{second}");
    }
}
