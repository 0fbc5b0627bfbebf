//! A store failure on the request step's own path — the limits state of SPEC R12, here the
//! rate-limit slot every request takes — ends the turn as the store's failure (issue 26: it
//! said "the provider rejected the request: the task database …"), before anything is sent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use switchyard_api::{ApiConfiguration, CancellationToken, Mode};
use switchyard_core::Task;
use switchyard_core::store::{DB_FILE, SqliteStore};
use switchyard_core::task::{TaskError, TaskEvent};
use switchyard_testkit::{HttpResponse, MockServer, Reply};

#[tokio::test]
async fn a_store_failure_on_the_limits_path_is_the_stores_and_sends_nothing() {
    let server =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
    let toml = format!(
        "[act]\nprovider = \"openai\"\nmodel = \"m\"\n[providers.openai]\nbase_url = \"{}/v1\"\n",
        server.url()
    );
    let config =
        ApiConfiguration::from_toml(&toml, "t.toml", |_| Some("sk-test-key".into())).unwrap();
    let (data, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let store = Arc::new(SqliteStore::open(data.path()).unwrap());
    let mut task = Task::builder(&config, Mode::Act, store.clone())
        .unwrap()
        .cwd(cwd.path())
        .global_rules_dir(None)
        .create("hello")
        .await
        .unwrap();
    // From now on the store cannot take a rate-limit slot, as a full disk would refuse it.
    let other = rusqlite::Connection::open(data.path().join(DB_FILE)).unwrap();
    other
        .execute_batch(
            "CREATE TRIGGER no_room BEFORE INSERT ON rate_slots \
             BEGIN SELECT RAISE(FAIL, 'no room for the slot'); END;",
        )
        .unwrap();

    let mut events = Vec::new();
    let turn = task
        .run_turn(None, &CancellationToken::new(), &mut |e| events.push(e))
        .await;

    let Err(TaskError::Store(e)) = turn else {
        panic!("a store failure, not {turn:?}");
    };
    assert!(e.to_string().contains("task database"), "{e}");
    assert_eq!(server.request_count(), 0, "nothing is sent");
    let blamed: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, TaskEvent::Error { .. }))
        .collect();
    assert!(
        blamed.is_empty(),
        "no error event blames the provider: {blamed:?}"
    );
}
