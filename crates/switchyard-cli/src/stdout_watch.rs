//! Noticing at once that stdout's reader has gone, even while no write is due, so a slow stream
//! is not billed until its next piece fails to write.
//!
//! A thread polls a pipe's write end for `POLLERR`, which the kernel reports once every reader
//! has closed it; other stdouts are not watched.
//! Spec: R9.5.

use std::sync::Arc;

use tokio::sync::Notify;

/// A `Notify` that gets a permit when stdout's reader goes away.
pub fn watch() -> Arc<Notify> {
    let closed = Arc::new(Notify::new());
    #[cfg(unix)]
    spawn_watcher(Arc::clone(&closed));
    closed
}

#[cfg(unix)]
fn spawn_watcher(closed: Arc<Notify>) {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return;
    };
    let file = std::fs::File::from(fd);
    let is_pipe = file
        .metadata()
        .map(|m| m.file_type().is_fifo())
        .unwrap_or(false);
    if !is_pipe {
        return;
    }
    let fd = std::os::fd::OwnedFd::from(file);
    let _ = std::thread::Builder::new()
        .name("stdout-watch".into())
        .spawn(move || {
            use rustix::event::{PollFd, PollFlags, poll};
            loop {
                let mut fds = [PollFd::new(&fd, PollFlags::empty())];
                match poll(&mut fds, None) {
                    Ok(_) => {
                        let revents = fds[0].revents();
                        if revents.intersects(PollFlags::ERR | PollFlags::HUP | PollFlags::NVAL) {
                            closed.notify_one();
                            return;
                        }
                    }
                    Err(rustix::io::Errno::INTR) => {}
                    Err(_) => return,
                }
            }
        });
}
