//! What a test needs from outside the repository (a program, the npm MCP servers, a local model
//! server), and what happens when it is missing: in CI the test fails with the reason; elsewhere
//! the test is skipped where a person sees it (issue 18).
//!
//! * In CI — the environment variable `CI` set to anything but empty, `0` or `false`, as CI
//!   services and `.ci/run` set it — [`skip_or_fail`] panics with the reason: no test may skip.
//! * Elsewhere it writes one line, `SKIPPED <test binary> <test>: <reason>`, straight to the
//!   process's standard error (past the test harness's output capture, so a plain `cargo test`
//!   shows it), and appends the same line to the file named by [`SKIPS_FILE_ENV`] when that is
//!   set. `scripts/test.sh` sets it and counts those lines in its closing
//!   `N passed, N failed, N skipped`.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The environment variable naming the file that [`skip_or_fail`] appends its line to (one line
/// per skipped test; `scripts/test.sh` sets it to `target/test-skips.txt`).
pub const SKIPS_FILE_ENV: &str = "SWITCHYARD_TEST_SKIPS";

/// Whether this is a CI run: `CI` is set to anything but empty, `0` or `false` (case-insensitive).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| {
        let v = v.trim();
        !(v.is_empty() || v == "0" || v.eq_ignore_ascii_case("false"))
    })
}

/// The calling test cannot do its work here because of `reason` (one sentence: what is missing
/// and how to get it). The test must return right after this call, so that it counts as
/// skipped, not passed.
///
/// # Panics
///
/// In CI ([`in_ci`]), always, with the reason. Elsewhere, when [`SKIPS_FILE_ENV`] is set but its
/// file cannot be appended to (an unrecorded skip would be a hidden one).
#[track_caller]
pub fn skip_or_fail(reason: &str) {
    let test = current_test();
    if in_ci() {
        panic!("{test}: {reason} (CI is set: no test may skip)");
    }
    let line = format!("SKIPPED {test}: {reason}\n");
    // `eprintln!` would be captured by the test harness and shown only on failure.
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(path) = std::env::var_os(SKIPS_FILE_ENV) {
        // One `write` of one short line in append mode: lines from parallel tests and test
        // binaries do not interleave.
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = appended {
            panic!(
                "{test}: cannot record the skip in {} ({e}); the reason was: {reason}",
                PathBuf::from(path).display()
            );
        }
    }
}

/// `<test binary> <test>`: the binary's name without cargo's hash suffix (`mcp`, `cli`,
/// `switchyard_core`) and the test's path, which the test harness gives the thread it runs the
/// test on (`?` when the test runs on a thread of its own).
fn current_test() -> String {
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|stem| match stem.rsplit_once('-') {
            Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_owned(),
            _ => stem,
        })
        .unwrap_or_else(|| "?".to_owned());
    let thread = std::thread::current();
    let test = match thread.name() {
        Some(name) if name != "main" && !name.starts_with("tokio-runtime") => name,
        _ => "?",
    };
    format!("{binary} {test}")
}

/// Whether `program` can be started (`program --version` runs, whatever it answers). When it
/// cannot, the test is skipped, or fails in CI, with `install` as the way to get it (e.g.
/// `"install it (Debian: apt-get install bsdutils)"`), and this returns `false`: the caller
/// returns at once.
#[track_caller]
pub fn require_program(program: &str, install: &str) -> bool {
    let started = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match started {
        Ok(_) => true,
        Err(e) => {
            skip_or_fail(&format!("`{program}` cannot be run ({e}); {install}"));
            false
        }
    }
}

/// [`require_program`] for util-linux's `script`, which the terminal tests use to run
/// `switchyard` on a pseudo-terminal (Debian ships it in `bsdutils`).
#[track_caller]
pub fn require_script() -> bool {
    require_program(
        "script",
        "install util-linux's `script` (Debian: apt-get install bsdutils; .ci/run installs it)",
    )
}

/// The folder of the npm MCP test servers' executables (`mcp-server-everything`,
/// `mcp-server-filesystem`), installed by `scripts/mcp-servers.sh` into `<workspace>/.mcp-servers`
/// (or `$SWITCHYARD_MCP_SERVERS_DIR`). When they are not installed the test is skipped, or fails
/// in CI, and this returns `None`: the caller returns at once.
#[track_caller]
pub fn mcp_test_servers() -> Option<PathBuf> {
    let dir = std::env::var_os("SWITCHYARD_MCP_SERVERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            // `<workspace>/tests/..`, written without the `..` when it resolves.
            let root = crate::test_data_dir().join("..");
            root.canonicalize().unwrap_or(root).join(".mcp-servers")
        });
    let bin = dir.join("node_modules").join(".bin");
    let missing: Vec<&str> = ["mcp-server-everything", "mcp-server-filesystem"]
        .into_iter()
        .filter(|b| !bin.join(b).exists())
        .collect();
    if missing.is_empty() {
        return Some(bin);
    }
    skip_or_fail(&format!(
        "the npm MCP test servers ({}) are not installed in {}; run scripts/mcp-servers.sh (needs node and npm)",
        missing.join(", "),
        dir.display()
    ));
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_is_named_after_its_binary_and_thread() {
        let name = current_test();
        let (binary, test) = name.split_once(' ').unwrap();
        assert_eq!(binary, "switchyard_testkit");
        // The harness runs each test on a thread named after it (with --test-threads=1 too,
        // which tests/prerequisites.rs uses).
        assert_eq!(
            test,
            "prerequisites::tests::the_test_is_named_after_its_binary_and_thread"
        );
    }
}
