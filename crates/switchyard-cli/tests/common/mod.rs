//! Shared by the tests that run the `switchyard` binary.

// Each agent-client test uses part of the harness; the other test binaries none of it.
#[allow(dead_code)]
pub mod agents;

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
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

/// The binary with a clean environment: only `PATH`, `SWITCHYARD_HOME` = `home`,
/// `SWITCHYARD_STORE` = `store` and `ANTHROPIC_API_KEY` = `provider_key`; stdin closed. The
/// `serve` tests' command (keys, dashboard, hardening).
#[allow(dead_code)]
pub fn switchyard_on(home: &Path, store: &str, provider_key: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home)
        .env("ANTHROPIC_API_KEY", provider_key)
        .env("SWITCHYARD_STORE", store)
        .stdin(Stdio::null());
    cmd
}

/// Reads `serve`'s first stderr line and the address it announces: (address, the line). When
/// it announces none, the test fails with the line and the rest of stderr.
#[allow(dead_code)]
pub fn announced_address(stderr: &mut impl BufRead) -> (String, String) {
    let mut line = String::new();
    stderr
        .read_line(&mut line)
        .expect("cannot read serve's stderr");
    match line
        .trim()
        .strip_prefix("switchyard serve: listening on http://")
    {
        Some(addr) => (addr.to_owned(), line),
        None => {
            let mut rest = String::new();
            let _ = stderr.read_to_string(&mut rest);
            panic!("no address announced: {line:?}{rest}")
        }
    }
}
