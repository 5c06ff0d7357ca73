//! Cleaning up peers when the benchmark is interrupted. Every started peer
//! registers its process id and temporary directory here; on Ctrl-C (SIGINT)
//! or SIGTERM a watcher thread kills the registered processes, removes their
//! directories and exits with status 130. Normal ends unregister through
//! `PeerProcess`'s stop or `Drop`, which kill and clean up themselves.

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// A started peer that is not yet stopped.
#[derive(Clone, Debug)]
struct Live {
    pid: u32,
    dir: PathBuf,
}

fn registry() -> &'static Mutex<Vec<Live>> {
    static LIVE: OnceLock<Mutex<Vec<Live>>> = OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(Vec::new()))
}

/// Remembers a started peer (and installs the watcher on first use).
pub fn register(pid: u32, dir: PathBuf) {
    install_watcher();
    registry().lock().unwrap_or_else(|e| e.into_inner()).push(Live { pid, dir });
}

/// Forgets a peer that was stopped.
pub fn unregister(pid: u32) {
    registry().lock().unwrap_or_else(|e| e.into_inner()).retain(|l| l.pid != pid);
}

/// Process ids registered now (for tests).
pub fn registered_pids() -> Vec<u32> {
    registry().lock().unwrap_or_else(|e| e.into_inner()).iter().map(|l| l.pid).collect()
}

/// Sends SIGKILL to `pid` (errors ignored: it may be gone).
pub fn kill_now(pid: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

fn cleanup_all() {
    let live = std::mem::take(&mut *registry().lock().unwrap_or_else(|e| e.into_inner()));
    for l in live {
        kill_now(l.pid);
        let _ = std::fs::remove_dir_all(&l.dir);
        eprintln!("peers: interrupted: killed process {} and removed {}", l.pid, l.dir.display());
    }
}

fn install_watcher() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let spawned = std::thread::Builder::new().name("strata-bench-peers-signals".into()).spawn(|| {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                return;
            };
            runtime.block_on(async {
                use tokio::signal::unix::{signal, SignalKind};
                let (Ok(mut int), Ok(mut term)) =
                    (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
                else {
                    return;
                };
                tokio::select! {
                    _ = int.recv() => {},
                    _ = term.recv() => {},
                }
                cleanup_all();
                std::process::exit(130);
            });
        });
        if let Err(e) = spawned {
            eprintln!("peers: warning: no signal watcher ({e}); Ctrl-C may leave peer processes behind");
        }
    });
}
