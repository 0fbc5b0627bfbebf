//! What every suite test starts from (SPEC R13.1): [`StoreFixture`], a backend's fresh storage
//! that hands out new handles on it, and [`new_task`], the task the tests create.

use std::sync::Arc;

use crate::store::{NewTask, TaskStore};

/// One test's store: every [`StoreFixture::open`] is a new handle (its own connection) on the
/// same, initially empty, storage.
pub(crate) trait StoreFixture: Send + Sync {
    fn open(&self) -> Arc<dyn TaskStore>;

    /// Runs `sql` on the storage behind the store's back: a test plants what no method writes.
    fn execute(&self, sql: &str);
}

/// The task the suite's tests create, with `prompt` as its first prompt.
pub(crate) fn new_task(prompt: &str) -> NewTask {
    NewTask {
        cwd: "/work".into(),
        mode: "act".into(),
        provider: "anthropic".into(),
        model: "claude".into(),
        first_prompt: prompt.into(),
    }
}
