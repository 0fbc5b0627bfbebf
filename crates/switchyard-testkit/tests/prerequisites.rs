//! `skip_or_fail` and its helpers, run for real: this test binary runs one of its own tests again
//! as a child process with a chosen environment (`CI`, `SWITCHYARD_TEST_SKIPS`) and checks what
//! the child printed, recorded and exited with.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: failing loudly is the point

use std::process::{Command, Output};

use switchyard_testkit::{SKIPS_FILE_ENV, require_program};

/// Set in the child: which prerequisite to call.
const CHILD_ENV: &str = "SWITCHYARD_TESTKIT_PREREQUISITE_CHILD";
const MISSING: &str = "switchyard-no-such-program-9f3a";

/// Runs this binary's test `name` as a child with `CHILD_ENV` set, `CI` as given (removed when
/// `None`) and the skips file as given.
fn child(name: &str, ci: Option<&str>, skips: Option<&std::path::Path>) -> Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", name, "--test-threads", "1"])
        .env(CHILD_ENV, "1")
        .env_remove("CI")
        .env_remove(SKIPS_FILE_ENV);
    if let Some(ci) = ci {
        cmd.env("CI", ci);
    }
    if let Some(file) = skips {
        cmd.env(SKIPS_FILE_ENV, file);
    }
    cmd.output().unwrap()
}

#[test]
fn a_missing_program_fails_in_ci_and_is_a_visible_recorded_skip_elsewhere() {
    const NAME: &str = "a_missing_program_fails_in_ci_and_is_a_visible_recorded_skip_elsewhere";
    if std::env::var_os(CHILD_ENV).is_some() {
        assert!(!require_program(MISSING, "install it from nowhere"));
        assert!(require_program("sh", "it is everywhere"));
        return;
    }
    let dir = tempfile::tempdir().unwrap();

    // CI: the test fails, and says why.
    for ci in ["true", "1", "yes"] {
        let skips = dir.path().join(format!("skips-ci-{ci}.txt"));
        let out = child(NAME, Some(ci), Some(&skips));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "CI={ci}: {text}");
        assert!(
            text.contains(&format!("`{MISSING}` cannot be run")),
            "{text}"
        );
        assert!(text.contains("install it from nowhere"), "{text}");
        assert!(text.contains("CI is set: no test may skip"), "{text}");
        assert!(!skips.exists(), "a failure is not recorded as a skip");
    }

    // Elsewhere: the test passes; the skip is on stderr although the harness captured the
    // test's output, and it is recorded once in the skips file.
    for ci in [None, Some(""), Some("0"), Some("false"), Some("FALSE")] {
        let skips = dir.path().join(format!("skips-{ci:?}.txt"));
        let out = child(NAME, ci, Some(&skips));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "CI={ci:?}: {stderr}");
        let line = format!(
            "SKIPPED prerequisites {NAME}: `{MISSING}` cannot be run (No such file or directory (os error 2)); install it from nowhere\n"
        );
        assert!(stderr.contains(&line), "CI={ci:?}: {stderr}");
        assert_eq!(std::fs::read_to_string(&skips).unwrap(), line, "CI={ci:?}");
    }

    // Without a skips file the skip is still shown.
    let out = child(NAME, None, None);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("SKIPPED prerequisites"));

    // A skips file that cannot be written fails the test rather than hiding the skip.
    let out = child(NAME, None, Some(&dir.path().join("no-such-dir/skips.txt")));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(text.contains("cannot record the skip"), "{text}");
}
