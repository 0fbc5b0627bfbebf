//! Single sign-on to the dashboard end to end (SPEC R14.11b; issue 44): a real OpenID provider,
//! npm's `oidc-provider` (scripts/oidc-provider.sh installs it, scripts/oidc-provider.mjs runs
//! it on 127.0.0.1 with accounts whose ID tokens carry groups), a real `switchyard serve` with
//! `[serve.oidc]`, and headless Chromium signing in through the provider's login page
//! (`tests/ui/sso.mjs`). Checked: each group mapped to its role, team, models and budget; a
//! member sees their own budget, used and left, as `users list` reads it; a
//! member makes, rotates and revokes their own keys and cannot see or change another member's,
//! by the page and by direct requests; a viewer changes nothing; an admin sees everyone's keys
//! and the users page; a person in no mapped group is disabled and told why; a callback not
//! started in the browser is refused; every sign-in and failed sign-in is audited, with no
//! secret in the audit rows. Screenshots go to `target/ui-screenshots/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_testkit::{HttpResponse, MockServer, Reply, skip_or_fail};

mod common;

const PROVIDER_KEY: &str = "sk-ant-ui-sso-test-0123456789";
const CLIENT_SECRET: &str = "sso-test-client-secret-5d1f0c";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The installed `playwright-core` and `oidc-provider` folders, or why not.
fn installed() -> Result<(PathBuf, PathBuf), String> {
    let idp = std::env::var_os("SWITCHYARD_OIDC_PROVIDER_DIR")
        .map_or_else(|| root().join(".oidc-provider"), PathBuf::from);
    let browser = common::playwright_dir()?;
    if !idp.join("node_modules/oidc-provider/package.json").exists() {
        return Err(format!(
            "the OpenID provider of the single sign-on test is not installed in {}: run scripts/oidc-provider.sh install",
            idp.display()
        ));
    }
    Ok((browser, idp))
}

/// A child process killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The test accounts: login, email, name and groups.
fn accounts() -> Value {
    json!({
        "ada": {"email": "ada@example.com", "name": "Ada", "groups": ["eng", "everyone"]},
        "bob": {"email": "bob@example.com", "name": "Bob", "groups": ["eng"]},
        "vic": {"email": "vic@example.com", "name": "Vic", "groups": ["auditors"]},
        "root": {"email": "root@example.com", "name": "Root", "groups": ["platform", "eng"]},
        "eve": {"email": "eve@example.com", "name": "Eve", "groups": ["contractors"]},
    })
}

/// Starts the provider for a gateway at `gateway`, its stderr to `log`: it and its issuer URL.
fn provider(idp: &Path, gateway: &str, log: &Path) -> (Running, String) {
    let mut child = Command::new("node")
        .arg(root().join("scripts/oidc-provider.mjs"))
        .env("OIDC_PROVIDER_DIR", idp)
        .env("OIDC_CLIENT_ID", "switchyard")
        .env("OIDC_CLIENT_SECRET", CLIENT_SECRET)
        .env("OIDC_REDIRECT_URI", format!("{gateway}/ui/oidc/callback"))
        .env("OIDC_ACCOUNTS", accounts().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut line).unwrap();
    // The provider prints its development notes later: read on, or its writes fail and it ends.
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = stdout.read_to_string(&mut sink);
    });
    let issuer = line
        .trim()
        .strip_prefix("issuer ")
        .unwrap_or_else(|| panic!("no issuer line: {line:?}"))
        .to_owned();
    (Running(child), issuer)
}

/// A port free now on 127.0.0.1: the provider must know the gateway's callback before it starts.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn config(home: &Path, upstream: &str, issuer: &str, gateway: &str) -> PathBuf {
    let text = format!(
        r#"[serve.routes."claude-sonnet-4-5"]
provider = "anthropic"
model = "claude-sonnet-4-5"
base_url = "{upstream}"

[serve.oidc]
issuer = "{issuer}"
client_id = "switchyard"
client_secret_env = "SSO_TEST_SECRET"
scopes = ["email", "profile", "groups"]
redirect_base = "{gateway}"

[serve.oidc.groups."eng"]
role = "member"
team = "eng"
models = ["claude-*"]
budget = "5/day"

[serve.oidc.groups."auditors"]
role = "viewer"

[serve.oidc.groups."platform"]
role = "admin"
budget = "100/month"
"#
    );
    let path = home.join("serve.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn serve(home: &Path, store: &str, config: &Path, port: u16) -> Running {
    let mut cmd = common::switchyard_on(home, store, PROVIDER_KEY);
    cmd.arg("--config")
        .arg(config)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")]);
    cmd.env("SSO_TEST_SECRET", CLIENT_SECRET)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    common::serve::announced_address(&mut stderr);
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = stderr.read_to_string(&mut sink);
    });
    Running(child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_sign_in_through_a_real_openid_provider_and_see_and_change_only_what_their_groups_allow()
 {
    let (browser, idp) = match installed() {
        Ok(dirs) => dirs,
        Err(reason) => return skip_or_fail(&reason),
    };
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_owned();
    let store = format!("sqlite:{}", h.join("sso.db").display());
    let port = free_port();
    let gateway = format!("http://127.0.0.1:{port}");
    let idp_log = h.join("oidc-provider.log");
    let (_idp, issuer) = provider(&idp, &gateway, &idp_log);
    let config = config(&h, &upstream.url(), &issuer, &gateway);
    let made = common::switchyard_on(&h, &store, PROVIDER_KEY)
        .args(["teams", "create", "eng"])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let _serve = serve(&h, &store, &config, port);

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("ui-screenshots");
    let mut node = Command::new("node");
    node.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui/sso.mjs"))
        .env("GATEWAY", &gateway)
        .env("ISSUER", &issuer)
        .env("SHOTS", &shots)
        .env("PLAYWRIGHT_DIR", &browser)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let idp_log_read = idp_log.clone();
    let out = tokio::task::spawn_blocking(move || {
        let mut child = node.spawn().unwrap();
        let status = common::wait_or_kill(&mut child, Duration::from_secs(240), &"node sso.mjs");
        let (mut out, mut err) = (String::new(), String::new());
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let idp = std::fs::read_to_string(&idp_log_read).unwrap_or_default();
        assert!(
            status.success(),
            "the browser test failed:\n{out}\n{err}\nthe provider's log:\n{idp}"
        );
        out
    })
    .await
    .unwrap();
    assert!(out.contains("ok "), "{out}");
    eprintln!("{out}");
    for shot in [
        "sso-signin",
        "sso-idp-login",
        "sso-member-keys",
        "sso-viewer-keys",
        "sso-admin-users",
        "sso-unmapped",
    ] {
        assert!(
            shots.join(format!("{shot}.png")).exists(),
            "no screenshot {shot}"
        );
    }
    check_audit(&h, &store);
    check_own_budget(&h, &store, &out);
}

/// The budget the member's page showed is what `users show` reads for her: one function
/// sums a user's use for both.
fn check_own_budget(h: &Path, store: &str, out: &str) {
    let shown: f64 = (out.lines())
        .find_map(|l| l.strip_prefix("ada used "))
        .expect("the browser test printed the member's use")
        .trim()
        .parse()
        .unwrap();
    let (code, listed) = {
        let o = common::switchyard_on(h, store, PROVIDER_KEY)
            .args(["users", "list", "--json"])
            .output()
            .unwrap();
        (o.status.code(), String::from_utf8(o.stdout).unwrap())
    };
    assert_eq!(code, Some(0), "{listed}");
    let ada: Value = (listed.lines())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|u| u["email"] == "ada@example.com")
        .unwrap();
    let used = ada["used_usd"].as_f64().unwrap();
    assert!(
        shown > 0.0 && (used - shown).abs() < 1e-9,
        "the page showed {shown}, users list {used}"
    );
}

/// Every sign-in and the refused ones are in the audit log once, and no row holds the client
/// secret or a key.
fn check_audit(h: &Path, store: &str) {
    let out = common::switchyard_on(h, store, PROVIDER_KEY)
        .args(["audit", "--json"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    assert!(
        !text.contains(CLIENT_SECRET),
        "the client secret in the audit log: {text}"
    );
    // A key is named by its display prefix (six characters after `sk-sy-`), never more of it.
    for (at, _) in text.match_indices("sk-sy-") {
        let shown = text[at + 6..]
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .count();
        assert!(
            shown <= 6,
            "more of a key than its prefix in the audit log: {text}"
        );
    }
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let signed = |who: &str, action: &str| {
        rows.iter()
            .filter(|r| r["action"] == action && r["actor"].as_str().unwrap().contains(who))
            .count()
    };
    for who in [
        "ada@example.com",
        "bob@example.com",
        "vic@example.com",
        "root@example.com",
    ] {
        assert!(signed(who, "signin") >= 1, "no sign-in of {who}: {text}");
    }
    assert_eq!(signed("eve@example.com", "signin.failed"), 1, "{text}");
    assert!(
        signed("single sign-on", "signin.failed") >= 1,
        "the forged callback: {text}"
    );
}
