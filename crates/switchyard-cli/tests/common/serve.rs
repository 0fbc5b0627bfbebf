//! A running `switchyard serve`: starting it, reading the address it announces, and the HTTP
//! requests the `serve` tests send it.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

/// A running `switchyard serve` and the address it announced; dropped, it is killed.
pub struct Serve {
    pub child: Child,
    pub addr: String,
    stderr: Option<JoinHandle<String>>,
}

impl Serve {
    /// Spawns `cmd` (the binary with its environment) as `--config CONFIG serve --listen
    /// 127.0.0.1:0 EXTRA` and reads the address it announces.
    pub fn start(cmd: Command, config: &Path, extra: &[&str]) -> Self {
        Self::spawn(cmd, config, extra, None)
    }

    /// [`Serve::start`], and the thread reading stderr asserts `secret` is not in it.
    pub fn start_hiding(cmd: Command, config: &Path, extra: &[&str], secret: &'static str) -> Self {
        Self::spawn(cmd, config, extra, Some(secret))
    }

    fn spawn(
        mut cmd: Command,
        config: &Path,
        extra: &[&str],
        secret: Option<&'static str>,
    ) -> Self {
        cmd.arg("--config")
            .arg(config)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("cannot start switchyard serve");
        let mut stderr = BufReader::new(child.stderr.take().expect("serve's stderr is piped"));
        let (addr, line) = announced_address(&mut stderr);
        // Keep draining stderr so the server never blocks on a full pipe.
        let stderr = std::thread::spawn(move || {
            let mut all = line;
            let _ = stderr.read_to_string(&mut all);
            if let Some(secret) = secret {
                // The panic fails the test where the thread is joined: `stderr` or the drop.
                assert!(!all.contains(secret), "serve printed the secret");
            }
            all
        });
        Self {
            child,
            addr,
            stderr: Some(stderr),
        }
    }

    /// All that `serve` wrote on stderr, the announcement first; waits until it closes stderr.
    pub fn stderr(&mut self) -> String {
        let drain = self.stderr.take().expect("serve's stderr is read once");
        drain.join().expect("cannot read serve's stderr")
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A killed serve closes its stderr, so the thread reading it ends and says what it found.
        if let Some(drain) = self.stderr.take() {
            let read = drain.join();
            assert!(
                read.is_ok() || std::thread::panicking(),
                "serve's stderr held the secret or could not be read"
            );
        }
    }
}

/// The route table `[serve.routes.NAME]`: `provider`'s `model` at `base_url`.
pub fn route(name: &str, provider: &str, model: &str, base_url: &str) -> String {
    format!(
        "[serve.routes.{name}]\nprovider = \"{provider}\"\nmodel = \"{model}\"\nbase_url = \"{base_url}\"\n"
    )
}

/// The route `sonnet`: Anthropic's `claude-sonnet-4-5` at `base_url`.
pub fn sonnet(base_url: &str) -> String {
    route("sonnet", "anthropic", "claude-sonnet-4-5", base_url)
}

/// Writes the configuration `text` to `serve.toml` in `home`: its path.
pub fn write_config(home: &Path, text: &str) -> PathBuf {
    let config = home.join("serve.toml");
    std::fs::write(&config, text).expect("cannot write serve.toml");
    config
}

/// One HTTP/1.1 request to `addr` on a fresh connection: the status and the body.
pub fn request(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let (status, _, body) = send(addr, method, path, &[], body, None);
    (status, body)
}

/// One HTTP/1.1 request to `addr` on a fresh connection with `headers`, a GET when `body` is
/// empty and a JSON POST otherwise, waiting at most `wait` for each read: (status, response
/// head in lower case, body).
pub fn call(
    addr: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    wait: Duration,
) -> (u16, String, String) {
    let method = if body.is_empty() { "GET" } else { "POST" };
    send(addr, method, path, headers, body, Some(wait))
}

/// One HTTP/1.1 request to `addr` on a fresh connection with `headers` and a JSON `body`,
/// each read waiting at most `wait` (`None`, for ever): (status, response head in lower case,
/// body).
pub fn send(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    wait: Option<Duration>,
) -> (u16, String, String) {
    let mut stream = std::net::TcpStream::connect(addr).expect("cannot connect to the gateway");
    stream
        .set_read_timeout(wait)
        .expect("cannot set a read timeout");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
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
    let (head, body) = response.split_once("\r\n\r\n").expect("a response head");
    (status, head.to_ascii_lowercase(), body.to_owned())
}

/// Reads `serve`'s first stderr line and the address it announces: (address, the line). When
/// it announces none, the test fails with the line and the rest of stderr.
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
