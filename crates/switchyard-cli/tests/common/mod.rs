//! Shared by the tests that run the `switchyard` binary.

// Each agent-client test uses part of the harness; the other test binaries none of it.
#[allow(dead_code)]
pub mod agents;

use std::process::{Child, ExitStatus};
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
