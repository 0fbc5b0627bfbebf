//! Shared by the tests that run the `switchyard` binary.

// Each agent-client test uses part of the harness; the other test binaries none of it.
#[allow(dead_code)]
pub mod agents;
// The tests that start `switchyard serve` use it; the other test binaries do not.
#[allow(dead_code)]
pub mod serve;

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

/// Runs `cmd` to its end: (exit code, stdout, stderr). A process ended by a signal is -1.
#[allow(dead_code)]
pub fn output(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().expect("cannot run the switchyard binary");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    )
}

/// Each line of `text` parsed as JSON.
#[allow(dead_code)]
pub fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// The request log as `cmd requests --json` prints it, newest first; the command must succeed.
#[allow(dead_code)]
pub fn requests(mut cmd: Command) -> Vec<serde_json::Value> {
    let (code, out, err) = output(cmd.args(["requests", "--json"]));
    assert_eq!(code, 0, "{err}");
    json_lines(&out)
}

/// The first key's "used", as `cmd keys list --json` shows it.
#[allow(dead_code)]
pub fn used(mut cmd: Command) -> f64 {
    let (_, out, _) = output(cmd.args(["keys", "list", "--json"]));
    let first = out.lines().next().expect("a key listed");
    let v: serde_json::Value = serde_json::from_str(first).expect("a JSON line");
    v["used_usd"].as_f64().expect("used_usd is a number")
}

/// `cmd keys create --json ARGS`, which must succeed: the new key's record, its secret in
/// `key`.
#[allow(dead_code)]
pub fn create_key(mut cmd: Command, args: &[&str]) -> serde_json::Value {
    let (code, out, err) = output(cmd.args(["keys", "create", "--json"]).args(args));
    assert_eq!(code, 0, "{args:?}: {out}{err}");
    serde_json::from_str(out.trim()).expect("the new key as JSON")
}

/// The folder holding `playwright-core` (`SWITCHYARD_BROWSER_DIR`, else `.browser-test` at the
/// repository's root) once it and Debian's Chromium are installed, or why not.
#[allow(dead_code)]
pub fn playwright_dir() -> Result<std::path::PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::var_os("SWITCHYARD_BROWSER_DIR")
        .map_or_else(|| root.join(".browser-test"), std::path::PathBuf::from);
    if !Path::new("/usr/bin/chromium").exists() {
        return Err("Debian's chromium is not installed: run scripts/browser.sh".to_owned());
    }
    if !dir
        .join("node_modules/playwright-core/package.json")
        .exists()
    {
        return Err(format!(
            "playwright-core is not installed in {}: run scripts/browser.sh",
            dir.display()
        ));
    }
    Ok(dir)
}
