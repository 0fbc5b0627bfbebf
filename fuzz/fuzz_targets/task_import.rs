//! The import of a reference (Cline) task folder (SPEC R10.1, R10.3): any files read as a task
//! or a clear error naming the file. Input: up to four files separated by NUL bytes:
//! `api_conversation_history.json`, `ui_messages.json`, `context_history.json`,
//! `task_metadata.json` (a missing part: no such file).
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_core::store::fuzz_read_reference_dir;

const NAMES: [&str; 4] = [
    "api_conversation_history.json",
    "ui_messages.json",
    "context_history.json",
    "task_metadata.json",
];

fuzz_target!(|data: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let task = dir.path().join("1700000000000");
    if std::fs::create_dir(&task).is_err() {
        return;
    }
    let mut parts = data.split(|&b| b == 0);
    for name in NAMES {
        if let Some(part) = parts.next() {
            if std::fs::write(task.join(name), part).is_err() {
                return;
            }
        }
    }
    if let Err(e) = fuzz_read_reference_dir(&task) {
        let shown = e.to_string();
        assert!(
            shown.contains("1700000000000") || shown.contains(".json"),
            "{shown}"
        );
    }
});
