//! Files only their owner can read, under names no other file has: refreshed sign-ins, and
//! long system prompts handed to a child process.
//! Spec: R10.5.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// `{folder}/{prefix}-{process id}-{n}.{extension}`, with `n` counting up in this process.
pub(crate) fn unique_path(folder: &Path, prefix: &str, extension: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    folder.join(format!(
        "{prefix}-{}-{}.{extension}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Creates `path`, failing if it exists, readable by its owner only and flushed to disk.
pub(crate) fn create(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(contents)?;
    file.sync_all()
}
