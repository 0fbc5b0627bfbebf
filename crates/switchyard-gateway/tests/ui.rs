//! The dashboard at `/ui` without a browser (SPEC R14.11): every path refused without a
//! session (API 401, pages a redirect), sign-in with an admin key only and its cookie, the
//! change header, a new key shown once, a revoked admin key's session ended, the spend figures
//! the store's own rows, and the live page's event stream. The browser test is
//! crates/switchyard-cli/tests/ui_dashboard.rs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use serde_json::{Value, json};
use switchyard_api::ApiConfiguration;
use switchyard_core::store::{NewKeyRequest, SqliteStore, TaskStore, UsageBy, create_client_key};
use switchyard_gateway::{Gateway, ServerLimits, serve};
use switchyard_testkit::{HttpResponse, MockServer, Reply};
use tokio_util::sync::CancellationToken;

mod common;

/// A key made in `store` by the library's one rule: (key, id).
async fn make_key(store: &dyn TaskStore, name: &str, admin: bool) -> (String, String) {
    let new = NewKeyRequest {
        name: name.into(),
        admin,
        ..NewKeyRequest::default()
    };
    let made = create_client_key(store, &new, 0).await.unwrap();
    (made.secret.key, made.key.id)
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn sign_in(base: &str, key: &str) -> reqwest::Response {
    client()
        .post(format!("{base}/ui/signin"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("key={key}"))
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_answers_only_a_signed_in_admin_and_shows_the_stores_figures() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let text = common::route("sonnet", "anthropic", "claude-sonnet-4-5", &upstream.url());
    let config =
        ApiConfiguration::from_toml(&text, "serve.toml", |_| Some(common::KEY.to_owned())).unwrap();
    let store: Arc<dyn TaskStore> = Arc::new(SqliteStore::in_memory().unwrap());
    let (admin, admin_id) = make_key(&*store, "ops", true).await;
    let (user, user_id) = make_key(&*store, "alice", false).await;
    let gateway = Gateway::with_store(config, Arc::clone(&store)).with_client_keys(true);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    tokio::spawn(serve(
        listener,
        Arc::new(gateway),
        ServerLimits::default(),
        shutdown.clone(),
    ));

    // Without a session: pages redirect to sign in, the API is 401; the sign-in form answers.
    for path in [
        "/ui",
        "/ui/spend",
        "/ui/keys",
        "/ui/live",
        "/ui/assets/app.js",
    ] {
        let r = client().get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(r.status(), 303, "{path}");
        assert_eq!(r.headers()["location"], "/ui/signin", "{path}");
    }
    for path in [
        "/ui/api/spend",
        "/ui/api/keys",
        "/ui/api/providers",
        "/ui/api/live",
    ] {
        let r = client().get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(r.status(), 401, "{path}");
    }
    let form = client()
        .get(format!("{base}/ui/signin"))
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 200);
    assert!(
        form.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("default-src 'none'")
    );

    // A client key is not an admin key; the admin key signs in with a random session id.
    let refused = sign_in(&base, &user).await;
    assert_eq!(refused.status(), 401);
    assert!(refused.headers().get("set-cookie").is_none());
    let signed = sign_in(&base, &admin).await;
    assert_eq!(signed.status(), 303);
    let set = signed.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Path=/ui"),
        "{set}"
    );
    assert!(!set.contains(&admin) && !set.contains(&admin[6..]), "{set}");
    let cookie = set.split(';').next().unwrap().to_owned();
    let get = |path: &str| {
        client()
            .get(format!("{base}{path}"))
            .header("cookie", &cookie)
            .send()
    };

    // One request with the client key: the spend page's figures are the store's rows.
    let body = json!({"model": "sonnet", "messages": [{"role": "user", "content": "hi"}]});
    let answered = client()
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(&user)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    let mut usage = Vec::new();
    for _ in 0..200 {
        usage = store.usage(UsageBy::Key, 0).await.unwrap();
        if !usage.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let spend: Value = get("/ui/api/spend").await.unwrap().json().await.unwrap();
    let totals = spend["totals"].as_array().unwrap();
    assert_eq!(totals.len(), 1, "{spend}");
    assert_eq!(totals[0]["group"], user_id.as_str());
    assert_eq!(totals[0]["cost_usd"].as_f64().unwrap(), usage[0].cost_usd);
    assert!(usage[0].cost_usd > 0.0);
    let series = spend["series"][0]["costs"].as_array().unwrap();
    assert_eq!(
        series.last().unwrap().as_f64().unwrap(),
        usage[0].cost_usd,
        "{spend}"
    );
    let csv = get("/ui/api/spend.csv")
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(csv.lines().nth(1).unwrap().contains(&user_id), "{csv}");

    // A change needs the dashboard's header; a new key is in that answer only.
    let post = |path: &str, header: bool| {
        let mut r = client()
            .post(format!("{base}{path}"))
            .header("cookie", &cookie)
            .json(&json!({"name": "bot"}));
        if header {
            r = r.header("x-switchyard-ui", "1");
        }
        r.send()
    };
    assert_eq!(post("/ui/api/keys", false).await.unwrap().status(), 403);
    let made: Value = post("/ui/api/keys", true)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let made = made["key"].as_str().unwrap().to_owned();
    assert!(made.starts_with("sk-sy-"));
    let listed = get("/ui/api/keys").await.unwrap().text().await.unwrap();
    for secret in [&made, &admin, &user] {
        assert!(!listed.contains(secret.as_str()), "{listed}");
    }

    // The live page's stream sends a snapshot.
    let mut live = get("/ui/api/live").await.unwrap();
    assert_eq!(live.headers()["content-type"], "text/event-stream");
    let first = live.chunk().await.unwrap().unwrap();
    assert!(
        String::from_utf8_lossy(&first).starts_with("event: snapshot\ndata: {"),
        "{first:?}"
    );
    drop(live);

    // Revoking the admin key ends its session at the next request.
    store.revoke_key(&admin_id, 1).await.unwrap();
    assert_eq!(get("/ui/api/keys").await.unwrap().status(), 401);
    assert_eq!(get("/ui/spend").await.unwrap().status(), 303);
    shutdown.cancel();
}

/// Edits on the keys page are audited with the signed-in admin's prefix and the client's
/// address, and so is every sign-in, failed ones too; the audit page lists them, and no key, not
/// even a secret typed into the sign-in form, is in a row (SPEC R14.11a; issue 44, case U05).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_edits_and_sign_ins_are_audited_with_the_admin_and_address() {
    let config = ApiConfiguration::from_toml("", "serve.toml", |_| None).unwrap();
    let store: Arc<dyn TaskStore> = Arc::new(SqliteStore::in_memory().unwrap());
    let (admin, _) = make_key(&*store, "ops", true).await;
    let (user, user_id) = make_key(&*store, "alice", false).await;
    let gateway = Gateway::with_store(config, Arc::clone(&store)).with_client_keys(true);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    tokio::spawn(serve(
        listener,
        Arc::new(gateway),
        ServerLimits::default(),
        shutdown.clone(),
    ));
    let planted = "sk-proj-PLANTED-secret-0123456789abcdef";
    assert_eq!(sign_in(&base, planted).await.status(), 401);
    assert_eq!(sign_in(&base, &user).await.status(), 401);
    let signed = sign_in(&base, &admin).await;
    assert_eq!(signed.status(), 303);
    let cookie = signed.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let post = |path: String, body: Value, header: bool| {
        let mut r = client()
            .post(format!("{base}{path}"))
            .header("cookie", &cookie)
            .json(&body);
        if header {
            r = r.header("x-switchyard-ui", "1");
        }
        r.send()
    };
    let edit = json!({"budget": "1/day", "rpm": "5"});
    let path = format!("/ui/api/keys/{user_id}/update");
    assert_eq!(
        post(path.clone(), edit.clone(), false)
            .await
            .unwrap()
            .status(),
        403
    );
    let r = post(path, edit, true).await.unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["changed"], "budget: none → $1/day; rpm: none → 5");
    let team = json!({"name": "ml team", "budget": "50/month"});
    assert_eq!(
        post("/ui/api/teams".into(), team, true)
            .await
            .unwrap()
            .status(),
        200
    );
    let lower = json!({"budget": "none"});
    let r = post("/ui/api/teams/ml%20team/update".into(), lower, true)
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let bad = json!({"rpm": "lots"});
    let r = post(format!("/ui/api/keys/{user_id}/update"), bad, true)
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    // The dashboard moves no key between owners, so its sentence offers no owner.
    let owner_only = json!({"owner": "usr_0123456789abcdef"});
    let r = post(format!("/ui/api/keys/{user_id}/update"), owner_only, true)
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let said = r.text().await.unwrap();
    assert!(said.contains("`switchyard keys update --owner`"), "{said}");
    let k = (store.client_keys().await.unwrap().into_iter())
        .find(|k| k.id == user_id)
        .unwrap();
    assert_eq!(k.rpm, Some(5));

    let get = |path: &str| {
        client()
            .get(format!("{base}{path}"))
            .header("cookie", &cookie)
            .send()
    };
    assert_eq!(get("/ui/audit").await.unwrap().status(), 200);
    let audit: Value = get("/ui/api/audit").await.unwrap().json().await.unwrap();
    let text = audit.to_string();
    for secret in [planted, &admin, &user] {
        assert!(!text.contains(secret), "a secret in the audit log: {text}");
    }
    let rows = audit["entries"].as_array().unwrap();
    let seen: Vec<(&str, &str)> = (rows.iter().rev())
        .map(|r| (r["action"].as_str().unwrap(), r["actor"].as_str().unwrap()))
        .collect();
    let me = format!("dashboard admin {}…", &admin[..12]);
    let alice = format!("key {}…", &user[..12]);
    assert_eq!(
        seen,
        [
            ("signin.failed", "an unknown key"),
            ("signin.failed", alice.as_str()),
            ("signin", me.as_str()),
            ("key.update", me.as_str()),
            ("team.create", me.as_str()),
            ("team.update", me.as_str()),
        ],
        "{text}"
    );
    assert!(rows.iter().all(|r| r["origin"] == "127.0.0.1"), "{text}");
    assert_eq!(rows[0]["detail"], "budget: $50/month → none", "{text}");
    shutdown.cancel();
}
