//! A fresh database on the test PostgreSQL server that `scripts/postgres.sh` starts (a real
//! server, initdb'd into a scratch folder and listening on 127.0.0.1 only; no mock).

use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};

/// The environment variable holding the test server's URL (set by `scripts/test.sh` from
/// `scripts/postgres.sh url`), e.g. `postgres://postgres@127.0.0.1:54329/postgres`.
pub const POSTGRES_URL_ENV: &str = "SWITCHYARD_TEST_POSTGRES_URL";

/// The test server's URL, or `None` after [`crate::skip_or_fail`] (which panics in CI) when
/// [`POSTGRES_URL_ENV`] is not set.
#[track_caller]
pub fn postgres_server_url() -> Option<String> {
    match std::env::var(POSTGRES_URL_ENV) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            crate::skip_or_fail(&format!(
                "no PostgreSQL test server: run scripts/test.sh, or start one with scripts/postgres.sh start and set {POSTGRES_URL_ENV}=\"$(scripts/postgres.sh url)\""
            ));
            None
        }
    }
}

/// Creates an empty database on the test server and returns its URL, or `None` when there is
/// no test server (see [`postgres_server_url`]). Each call gets its own database, named from
/// `label`, the process id and a counter, so tests and test processes never share one.
///
/// # Panics
///
/// When the server is set but cannot be reached, or the database cannot be created.
#[track_caller]
pub fn fresh_postgres_database(label: &str) -> Option<String> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let server = postgres_server_url()?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let clean: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(30)
        .collect();
    let name = format!("t_{clean}_{}_{n}", std::process::id());
    let config = tokio_postgres::Config::from_str(&server)
        .unwrap_or_else(|e| panic!("{POSTGRES_URL_ENV} is not a PostgreSQL URL: {e}"));
    // Two statements: CREATE DATABASE cannot run inside the implicit transaction of a
    // multi-statement query.
    let drop_old = format!("DROP DATABASE IF EXISTS {name}");
    let create = format!("CREATE DATABASE {name}");
    // Its own thread and runtime: callable from sync code and from any runtime flavour.
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
        rt.block_on(async move {
            let (client, conn) = config
                .connect(tokio_postgres::NoTls)
                .await
                .unwrap_or_else(|e| panic!("cannot reach the PostgreSQL test server: {e}"));
            let conn = tokio::spawn(conn);
            for sql in [&drop_old, &create] {
                client.batch_execute(sql).await.unwrap_or_else(|e| {
                    panic!(
                        "cannot create a test database ({sql}): {e}: {:?}",
                        e.as_db_error()
                    )
                });
            }
            drop(client);
            let _ = conn.await;
        });
    })
    .join()
    .unwrap_or_else(|_| panic!("creating the test database failed"));
    let base = server
        .rsplit_once('/')
        .map(|(base, _)| base.to_owned())
        .unwrap_or(server);
    Some(format!("{base}/{name}"))
}
