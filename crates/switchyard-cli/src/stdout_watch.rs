//! Noticing at once that stdout's reader has gone (`switchyard task … | head -c 20`), even
//! while no write is due: a slow stream would otherwise go on (and be billed) until its next
//! piece fails to write; the turn is cancelled as Ctrl-C cancels it (SPEC R9.5).
//!
//! When stdout is a pipe, a thread waits in `poll(2)` on it with no events asked: the kernel
//! still reports `POLLERR` on a pipe's write end once every reader has closed it. Other
//! stdouts (a terminal, a file, a socket) are not watched; a failed write still tells.

use std::sync::Arc;

use tokio::sync::Notify;

/// A [`Notify`] that gets a permit (`notify_one`) when stdout's reader goes away.
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
