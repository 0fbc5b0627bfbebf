//! The files of deploy/ as docs/deploying.md uses them (issue 45, item 3 "Deploy").
//!
//! The image scripts/image.sh builds `FROM scratch` (from this test's own `switchyard`) runs
//! under podman as uid 65532 with `/data` a named volume and `config.toml` mounted: a client
//! key made with the image itself, a route whose upstream is found by name through DNS (the
//! test's resolver on 127.53.53.53), `/health` and `/ready`, a streamed Chat answer, then
//! `podman stop` (SIGTERM) while a second stream is held mid-answer: the gateway stops
//! accepting, the stream ends whole, the container exits 0 within the drain, and the volume
//! holds both requests' log rows. The Kubernetes manifests render with kustomize and validate
//! against kubernetes-validate's schemas; the systemd unit passes `systemd-analyze`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use switchyard_testkit::{
    Gate, HttpResponse, MockServer, Reply, fixture_text, require_program, skip_or_fail,
};

/// How this machine lets podman run a container: crun cannot on its cgroup v1 host in hybrid
/// mode, and raising a limit above the container's own is not permitted, so lower them.
const RUN_FLAGS: &[&str] = &[
    "--runtime",
    "runc",
    "--ulimit",
    "nofile=1024:1024",
    "--ulimit",
    "nproc=4096:4096",
];
const PROVIDER_KEY: &str = "sk-ant-deploy-test-0123456789abcdef";
const UPSTREAM_HOST: &str = "upstream.switchyard.test";
/// A loopback address of its own, so the resolver never meets another server on port 53.
const RESOLVER_IP: &str = "127.53.53.53";
/// `serve`'s drain (30 s) plus the time it gives the records (1 s).
const DRAIN_SECONDS: u64 = 31;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn podman(args: &[&str]) -> Output {
    Command::new("podman")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("cannot run podman")
}

/// `podman ARGS`, which must succeed: its stdout.
fn podman_ok(args: &[&str]) -> String {
    let out = podman(args);
    assert!(
        out.status.success(),
        "podman {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The container, volume and image a run made, removed when the test ends however it ends.
struct Made {
    container: String,
    volume: String,
    image: String,
}

impl Made {
    fn new() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let id = format!("{}-{nanos}", std::process::id());
        Self {
            container: format!("switchyard-deploy-test-{id}"),
            volume: format!("switchyard-deploy-test-{id}"),
            image: format!("localhost/switchyard-deploy-test:{id}"),
        }
    }
}

impl Drop for Made {
    fn drop(&mut self) {
        podman(&["rm", "--force", "--time", "0", &self.container]);
        podman(&["volume", "rm", "--force", &self.volume]);
        podman(&["rmi", "--force", &self.image]);
    }
}

/// A DNS server for the container: every A question is answered 127.0.0.1, every other one
/// with no answer, and each name asked is kept.
struct Resolver {
    asked: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl Resolver {
    /// Binds RESOLVER_IP:53, which takes root, as podman run here does; `None` after
    /// skip_or_fail when it cannot.
    fn start() -> Option<Self> {
        let socket = match UdpSocket::bind((RESOLVER_IP, 53)) {
            Ok(socket) => socket,
            Err(e) => {
                skip_or_fail(&format!(
                    "cannot bind {RESOLVER_IP}:53 for the image's DNS check ({e}): run the test as root, as CI does"
                ));
                return None;
            }
        };
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (names, done) = (Arc::clone(&asked), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            while !done.load(Ordering::Relaxed) {
                let Ok((n, from)) = socket.recv_from(&mut buf) else {
                    continue;
                };
                if let Some((name, answer)) = dns_answer(&buf[..n]) {
                    names.lock().unwrap().push(name);
                    let _ = socket.send_to(&answer, from);
                }
            }
        });
        Some(Self { asked, stop })
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

impl Drop for Resolver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The name a one-question DNS query asks for and the answer: A 127.0.0.1 (TTL 5 s) for an A
/// question, no record for any other type.
fn dns_answer(query: &[u8]) -> Option<(String, Vec<u8>)> {
    let mut at = 12;
    let mut labels = Vec::new();
    while *query.get(at)? != 0 {
        let len = usize::from(query[at]);
        labels.push(String::from_utf8_lossy(query.get(at + 1..at + 1 + len)?).into_owned());
        at += 1 + len;
    }
    let question = query.get(12..at + 5)?;
    let is_a = query.get(at + 1..at + 3)? == [0, 1];
    let mut answer = query[..2].to_vec();
    // A response, recursion desired and available, no error; one question, one answer or none.
    answer.extend([0x81, 0x80, 0, 1, 0, u8::from(is_a), 0, 0, 0, 0]);
    answer.extend(question);
    if is_a {
        // A pointer to the question's name, type A, class IN, TTL 5, 4 bytes of address.
        answer.extend([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 5, 0, 4, 127, 0, 0, 1]);
    }
    Some((labels.join("."), answer))
}

/// A port free on this machine now, for the gateway to listen on with the host's network.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// One request on a fresh connection with `connection: close`: the raw response.
fn send(addr: &str, head: &str, body: &str) -> std::io::Result<TcpStream> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let head = format!(
        "{head}\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    Ok(stream)
}

/// The status and the de-chunked body of a whole response.
fn split_response(raw: &[u8]) -> (u16, String) {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    let status = head[9..12].parse().expect("an HTTP status line");
    let body = &raw[end + 4..];
    let body = if head.contains("transfer-encoding: chunked") {
        dechunk(body)
    } else {
        body.to_vec()
    };
    (status, String::from_utf8(body).expect("a UTF-8 body"))
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line) = body.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&body[..line]).expect("a chunk size");
        let size = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
        if size == 0 {
            break;
        }
        let data = line + 2;
        out.extend(&body[data..data + size]);
        body = &body[data + size + 2..];
    }
    out
}

fn get(addr: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut raw = Vec::new();
    send(addr, &format!("GET {path} HTTP/1.1"), "")?.read_to_end(&mut raw)?;
    Ok(split_response(&raw))
}

/// The text of a Chat completions stream and whether it ended with `data: [DONE]`.
fn chat_stream_text(body: &str) -> (String, bool) {
    let mut text = String::new();
    let mut done = false;
    for data in body.lines().filter_map(|l| l.strip_prefix("data: ")) {
        if data == "[DONE]" {
            done = true;
            continue;
        }
        let event: Value = serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"));
        if let Some(piece) = event["choices"][0]["delta"]["content"].as_str() {
            text.push_str(piece);
        }
    }
    (text, done)
}

const CHAT: &str = r#"{"model": "sonnet", "stream": true, "messages": [{"role": "user", "content": "Capital of France?"}]}"#;

fn chat_head(key: &str) -> String {
    format!("POST /v1/chat/completions HTTP/1.1\r\nauthorization: Bearer {key}")
}

/// `scripts/image.sh build` from this test's `switchyard`: how long it took.
fn build_image(image: &str) -> Duration {
    let started = Instant::now();
    let out = Command::new(workspace().join("scripts/image.sh"))
        .args(["build", "--binary", env!("CARGO_BIN_EXE_switchyard")])
        .args(["--tag", image])
        .stdin(Stdio::null())
        .output()
        .expect("cannot run scripts/image.sh");
    assert!(
        out.status.success(),
        "scripts/image.sh build failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{}", String::from_utf8_lossy(&out.stdout).trim());
    started.elapsed()
}

/// `switchyard ARGS` in the image on the volume, as docs/deploying.md runs `keys create`.
fn in_image(made: &Made, args: &[&str]) -> String {
    let volume = format!("{}:/data", made.volume);
    let mut all = vec!["run", "--rm"];
    all.extend(RUN_FLAGS);
    all.extend(["-v", &volume, "--entrypoint", "/usr/local/bin/switchyard"]);
    all.push(&made.image);
    all.extend(args);
    podman_ok(&all)
}

/// Starts the gateway's container as deploy/kubernetes runs it (a read-only root, no
/// capability, no privilege escalation) with the config folder mounted read-only, the host's
/// network (the upstream is on 127.0.0.1) and the test's resolver, listening on `port`.
fn start_gateway(made: &Made, config: &Path, port: u16) {
    let volume = format!("{}:/data", made.volume);
    let config = format!("{}:/etc/switchyard:ro", config.display());
    let key = format!("ANTHROPIC_API_KEY={PROVIDER_KEY}");
    let listen = format!("0.0.0.0:{port}");
    let mut args = vec!["run", "--detach", "--name", &made.container];
    args.extend(RUN_FLAGS);
    args.extend(["--read-only", "--cap-drop", "all"]);
    args.extend(["--security-opt", "no-new-privileges"]);
    args.extend(["--network", "host", "--dns", RESOLVER_IP]);
    args.extend(["-v", &volume, "-v", &config, "-e", &key, &made.image]);
    args.extend(["--listen", &listen]);
    podman_ok(&args);
}

fn logs(made: &Made) -> String {
    let out = podman(&["logs", &made.container]);
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Waits (<= 30 s) for `/health`; fails at once with the logs when the container exits.
fn wait_for_health(made: &Made, addr: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok((200, body)) = get(addr, "/health") {
            assert!(body.contains("ok"), "{body}");
            return;
        }
        let state = podman_ok(&["inspect", "--format", "{{.State.Running}}", &made.container]);
        assert!(
            state.trim() == "true",
            "the gateway's container exited: {}",
            logs(made)
        );
        assert!(
            Instant::now() < deadline,
            "no /health in 30 s: {}",
            logs(made)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits (<= `limit`) until `check` holds, polling every 50 ms; fails naming `what`.
fn wait_until(limit: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The config folder the container mounts at /etc/switchyard: readable by uid 65532.
fn config_folder(upstream_port: &str) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[serve.routes.sonnet]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"http://{UPSTREAM_HOST}:{upstream_port}\"\n"
    );
    let file = dir.path().join("config.toml");
    std::fs::write(&file, text).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    dir
}

#[tokio::test]
async fn image_serves_a_stream_through_sigterm_and_keeps_its_request_log_in_the_volume() {
    let debian = "install it (Debian: apt-get install podman runc; scripts/image.sh tools)";
    if !require_program("podman", debian) || !require_program("runc", debian) {
        return;
    }
    let Some(resolver) = Resolver::start() else {
        return;
    };
    let fixture = HttpResponse::fixture("anthropic_text");
    // The second answer waits upstream after its first text delta until the test opens the
    // gate, so SIGTERM comes with a stream in flight.
    let text = String::from_utf8_lossy(&fixture.body).into_owned();
    let second_delta = text.match_indices("event: content_block_delta").nth(1);
    let held_at = second_delta.expect("two text deltas in the fixture").0;
    let gate = Gate::new();
    let upstream = MockServer::start(vec![
        Reply::new(fixture.clone()),
        Reply::new(fixture).gate_at(held_at, &gate),
    ])
    .await;
    let upstream_port = upstream.url().rsplit(':').next().unwrap().to_owned();
    let config = config_folder(&upstream_port);
    let config_path = config.path().to_owned();
    tokio::task::spawn_blocking(move || run_image(&config_path, &gate, &resolver))
        .await
        .unwrap();
    assert_eq!(upstream.requests().len(), 2);
    for request in upstream.requests() {
        assert_eq!(request.header("x-api-key"), Some(PROVIDER_KEY));
    }
}

fn run_image(config: &Path, gate: &Gate, resolver: &Resolver) {
    let made = Made::new();
    let built = build_image(&made.image);
    podman_ok(&["volume", "create", &made.volume]);
    let made_key: Value = serde_json::from_str(&in_image(
        &made,
        &["keys", "create", "--name", "deploy-test", "--json"],
    ))
    .unwrap();
    let key = made_key["key"].as_str().unwrap().to_owned();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let started = Instant::now();
    start_gateway(&made, config, port);
    wait_for_health(&made, &addr);
    let healthy = started.elapsed();
    assert_eq!(get(&addr, "/ready").unwrap().0, 200);
    // On 0.0.0.0 only because keys are required: a request without one is refused.
    let mut raw = Vec::new();
    let head = "POST /v1/chat/completions HTTP/1.1";
    send(&addr, head, CHAT)
        .unwrap()
        .read_to_end(&mut raw)
        .unwrap();
    assert_eq!(split_response(&raw).0, 401);
    let mut raw = Vec::new();
    let mut first = send(&addr, &chat_head(&key), CHAT).unwrap();
    first.read_to_end(&mut raw).unwrap();
    let (status, body) = split_response(&raw);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        chat_stream_text(&body),
        (fixture_text("anthropic_text"), true)
    );
    let stopped = stop_mid_stream(&made, &addr, &key, gate);
    check_volume(&made, &key);
    let log = logs(&made);
    assert!(!log.contains(PROVIDER_KEY) && !log.contains(&key), "{log}");
    assert!(resolver.asked().iter().any(|n| n == UPSTREAM_HOST));
    println!(
        "image built in {built:.1?}; /health {healthy:.1?} after podman run; stopped in {stopped:.1?}"
    );
}

/// Sends SIGTERM (`podman stop -t 40`) while a stream is held upstream: the gateway stops
/// accepting, the stream then ends whole, the container exits 0 within the drain. How long
/// `podman stop` took.
fn stop_mid_stream(made: &Made, addr: &str, key: &str, gate: &Gate) -> Duration {
    let mut stream = send(addr, &chat_head(key), CHAT).unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&raw).contains("The capital of France i") {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended before its first text");
        raw.extend(&buf[..n]);
    }
    let name = made.container.clone();
    let stopper = std::thread::spawn(move || {
        let started = Instant::now();
        (podman(&["stop", "--time", "40", &name]), started.elapsed())
    });
    wait_until(Duration::from_secs(20), "the gateway logs SIGTERM", || {
        logs(made).contains("switchyard serve: stopping; streams in flight may finish")
    });
    wait_until(Duration::from_secs(10), "new connections refused", || {
        TcpStream::connect(addr).is_err()
    });
    gate.open();
    stream.read_to_end(&mut raw).unwrap();
    let (status, body) = split_response(&raw);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        chat_stream_text(&body),
        (fixture_text("anthropic_text"), true)
    );
    let (out, took) = stopper.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(took < Duration::from_secs(DRAIN_SECONDS), "{took:?}");
    let code = podman_ok(&[
        "inspect",
        "--format",
        "{{.State.ExitCode}}",
        &made.container,
    ]);
    assert_eq!(code.trim(), "0", "{}", logs(made));
    took
}

/// The volume holds the SQLite store, owned by the image's user, with both requests logged and
/// neither key in it.
fn check_volume(made: &Made, key: &str) {
    use std::os::unix::fs::MetadataExt;
    let mountpoint = podman_ok(&[
        "volume",
        "inspect",
        "--format",
        "{{.Mountpoint}}",
        &made.volume,
    ]);
    let db = Path::new(mountpoint.trim()).join("switchyard.db");
    assert_eq!(std::fs::metadata(&db).unwrap().uid(), 65532);
    let bytes = std::fs::read(&db).unwrap();
    for secret in [PROVIDER_KEY, key] {
        let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
        assert!(!found, "a key is stored in {}", db.display());
    }
    let rows = in_image(made, &["requests", "--json"]);
    let rows: Vec<Value> = rows
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for row in &rows {
        assert_eq!(row["route"], "sonnet", "{row}");
        assert_eq!(row["status"], "ok", "{row}");
        assert_eq!(row["stream"], true, "{row}");
        assert_eq!(row["output_tokens"], 27, "{row}");
    }
}

/// kubernetes-validate in the venv scripts/image.sh tools makes; `None` after skip_or_fail
/// when it is not there.
fn kubernetes_validate() -> Option<PathBuf> {
    let clients = std::env::var_os("SWITCHYARD_AGENT_CLIENTS_DIR")
        .map_or_else(|| workspace().join(".agent-clients"), PathBuf::from);
    let program = clients.join("deploy-venv/bin/kubernetes-validate");
    if program.is_file() {
        return Some(program);
    }
    skip_or_fail(&format!(
        "{} is missing: run scripts/image.sh tools (scripts/test.sh does)",
        program.display()
    ));
    None
}

/// `kubectl kustomize DIR`: the manifests as they would be applied.
fn kustomize(dir: &str) -> String {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(workspace().join(dir))
        .stdin(Stdio::null())
        .output()
        .expect("cannot run kubectl");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kubectl kustomize {dir}: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// `kubernetes-validate --strict` of `manifests` against Kubernetes `version`: it must pass
/// every resource, and name each one it passed.
fn validate(program: &Path, manifests: &str, version: &str, kinds: &[&str]) {
    let mut child = Command::new(program)
        .args(["--strict", "--kubernetes-version", version, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot run kubernetes-validate");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(manifests.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "Kubernetes {version}: {said}");
    for kind in kinds {
        let passed = format!("passed for resource {kind}/");
        assert!(said.contains(&passed), "no {kind} validated: {said}");
    }
}

/// Every value of `key: N` in YAML text.
fn yaml_numbers(text: &str, key: &str) -> Vec<u64> {
    let prefix = format!("{key}: ");
    let values = text
        .lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix(&prefix));
    values
        .map(|v| v.trim_matches('"').parse().unwrap())
        .collect()
}

#[test]
fn kubernetes_manifests_render_with_kustomize_and_validate_offline() {
    let kubectl = "install kubectl (Kubernetes' own packages; Debian's kubernetes-client 1.20 has too old a kustomize)";
    if !require_program("kubectl", kubectl) {
        return;
    }
    let Some(program) = kubernetes_validate() else {
        return;
    };
    let base = kustomize("deploy/kubernetes");
    let sqlite = kustomize("deploy/kubernetes-sqlite");
    let kinds = ["configmap", "service", "deployment", "poddisruptionbudget"];
    // 1.30 is the first with the preStop sleep action on by default; 1.37 the newest bundled.
    for version in ["1.30.0", "1.37.0"] {
        validate(&program, &base, version, &kinds);
        validate(
            &program,
            &sqlite,
            version,
            &[&kinds[..], &["persistentvolumeclaim"]].concat(),
        );
        let secret =
            std::fs::read_to_string(workspace().join("deploy/kubernetes/secret.example.yaml"))
                .unwrap();
        validate(&program, &secret, version, &["secret"]);
    }
    for (manifests, replicas) in [(&base, 2), (&sqlite, 1)] {
        assert_eq!(yaml_numbers(manifests, "replicas"), [replicas]);
        assert!(manifests.contains("path: /health") && manifests.contains("path: /ready"));
        assert!(manifests.contains("readOnlyRootFilesystem: true"));
        assert!(manifests.contains("runAsNonRoot: true"));
        // The pod is sent SIGTERM after the preStop sleep, and killed at the grace period's end.
        let grace = yaml_numbers(manifests, "terminationGracePeriodSeconds");
        let sleep = yaml_numbers(manifests, "seconds");
        assert!(grace.len() == 1 && sleep.len() == 1, "{grace:?} {sleep:?}");
        assert!(grace[0] > sleep[0] + DRAIN_SECONDS, "{grace:?} {sleep:?}");
    }
    assert!(sqlite.contains("type: Recreate") && sqlite.contains("claimName: switchyard-data"));
    // The shipped config.toml is one `serve` accepts.
    let home = tempfile::tempdir().unwrap();
    let check = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .env_clear()
        .env("SWITCHYARD_HOME", home.path())
        .env("ANTHROPIC_API_KEY", PROVIDER_KEY)
        .env("OPENAI_API_KEY", "sk-deploy-test-0123456789")
        .arg("--config")
        .arg(workspace().join("deploy/kubernetes/config.toml"))
        .args(["config", "check"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{said}");
}

#[test]
fn systemd_unit_passes_systemd_analyze() {
    if !require_program(
        "systemd-analyze",
        "install it (Debian: apt-get install systemd)",
    ) {
        return;
    }
    let unit =
        std::fs::read_to_string(workspace().join("deploy/systemd/switchyard.service")).unwrap();
    let stop = yaml_numbers(&unit.replace('=', ": "), "TimeoutStopSec");
    assert!(stop.len() == 1 && stop[0] > DRAIN_SECONDS, "{stop:?}");
    // `verify` checks that ExecStart's program exists: this test's binary stands in for
    // /usr/local/bin/switchyard.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("switchyard.service");
    let binary = env!("CARGO_BIN_EXE_switchyard");
    std::fs::write(&copy, unit.replace("/usr/local/bin/switchyard", binary)).unwrap();
    let verify = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&copy)
        .output()
        .unwrap();
    // It warns of an unknown key or a bad value on stderr and still exits 0.
    let said = String::from_utf8_lossy(&verify.stderr);
    assert!(verify.status.success() && said.trim().is_empty(), "{said}");
    let security = Command::new("systemd-analyze")
        .args(["security", "--offline=yes", "--threshold=20", "--no-pager"])
        .arg(&copy)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&security.stdout);
    assert!(security.status.success(), "exposure above 2.0: {said}");
    println!("{}", said.lines().last().unwrap_or_default());
}
