//! Shared by the tests that run the `switchyard` binary.

// Each agent-client test uses part of the harness; the other test binaries none of it.
#[allow(dead_code)]
pub mod agents;

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// Waits for `child` to exit, polling every 10 ms; after `limit` it is killed and the test
/// fails, naming `what` was run.
// The agent-client tests use `agents`' own process-group wait instead.
#[allow(dead_code)]
pub fn wait_or_kill(child: &mut Child, limit: Duration, what: &dyn std::fmt::Debug) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child
            .try_wait()
            .expect("cannot wait for the switchyard binary")
        {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("switchyard did not finish within {limit:?}: {what:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// One HTTP/1.1 request to `addr` on a fresh connection: the status and the body.
// Used by the `serve` tests only.
#[allow(dead_code)]
pub fn request(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("cannot connect to the gateway");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream
        .write_all(head.as_bytes())
        .expect("cannot send the request");
    stream
        .write_all(body.as_bytes())
        .expect("cannot send the request");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("cannot read the response");
    let status = response[9..12].parse().expect("an HTTP status line");
    let (_, body) = response.split_once("\r\n\r\n").expect("a response head");
    (status, body.to_owned())
}
