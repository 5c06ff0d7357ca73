//! One running peer process: started from a [`Launch`] in its own temporary
//! root directory (configuration files written first, output to a log file
//! in that directory), waited for until its health endpoint answers, and
//! stopped with SIGTERM (SIGKILL after a grace period). `Drop` kills it and
//! removes the directory, so an error anywhere leaves nothing behind; an
//! interrupt is handled by [`super::interrupt`].

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use tempfile::TempDir;

use super::config::Launch;
use super::install::tail;
use super::interrupt;
use crate::ingest::http_client::{HttpConnection, HttpUrl};

/// How long a peer may take to answer its health endpoint (QuestDB's JVM
/// start takes several seconds on a busy 2-core machine).
pub const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a peer may take to exit after SIGTERM before it is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(20);
const POLL: Duration = Duration::from_millis(100);

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> anyhow::Result<u16> {
    let l = TcpListener::bind(("127.0.0.1", 0)).context("binding 127.0.0.1:0 to find a free port")?;
    Ok(l.local_addr()?.port())
}

/// A started peer.
pub struct PeerProcess {
    name: String,
    child: Option<Child>,
    root: Option<TempDir>,
    pub data_dir: PathBuf,
    pub url: HttpUrl,
    log_path: PathBuf,
    command_line: String,
}

impl PeerProcess {
    /// Writes `launch.files`, starts the program with its output in
    /// `<root>/peer.log`, and waits until `GET health_path` answers 2xx.
    pub fn start(name: &str, root: TempDir, launch: &Launch) -> anyhow::Result<PeerProcess> {
        let mut p = PeerProcess::spawn(name, root, launch)?;
        p.wait_healthy(launch.health_path, START_TIMEOUT)?;
        Ok(p)
    }

    /// Writes `launch.files` and starts the program without waiting for it.
    pub fn spawn(name: &str, root: TempDir, launch: &Launch) -> anyhow::Result<PeerProcess> {
        for (path, contents) in &launch.files {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))?;
        }
        std::fs::create_dir_all(&launch.data_dir)
            .with_context(|| format!("creating {}", launch.data_dir.display()))?;
        let log_path = root.path().join("peer.log");
        let log = File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
        let mut cmd = Command::new(&launch.program);
        cmd.args(&launch.args)
            .current_dir(root.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let command_line = format!("{cmd:?}");
        let child = cmd.spawn().with_context(|| format!("starting {name}: {command_line}"))?;
        interrupt::register(child.id(), root.path().to_path_buf());
        let url = HttpUrl { host: "127.0.0.1".into(), port: launch.http_port, base_path: String::new() };
        Ok(PeerProcess {
            name: name.to_string(),
            child: Some(child),
            root: Some(root),
            data_dir: launch.data_dir.clone(),
            url,
            log_path,
            command_line,
        })
    }

    /// Process id of the running peer (`None` once stopped).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn command_line(&self) -> &str {
        &self.command_line
    }

    pub fn root(&self) -> &Path {
        self.root.as_ref().map_or(Path::new(""), |r| r.path())
    }

    /// The last lines of the peer's output, for error messages.
    pub fn log_tail(&self, lines: usize) -> String {
        std::fs::read_to_string(&self.log_path).map(|t| tail(&t, lines)).unwrap_or_default()
    }

    /// `Err` with the log's tail if the process has exited.
    pub fn check_alive(&mut self) -> anyhow::Result<()> {
        let Some(child) = self.child.as_mut() else { anyhow::bail!("{} was stopped", self.name) };
        if let Some(status) = child.try_wait()? {
            anyhow::bail!("{} exited ({status}); its last output:\n{}", self.name, self.log_tail(30));
        }
        Ok(())
    }

    /// Polls `GET path` until it answers 2xx; `Err` (with the log's tail) if
    /// the process exits or `timeout` passes first.
    pub fn wait_healthy(&mut self, path: &str, timeout: Duration) -> anyhow::Result<()> {
        let started = Instant::now();
        let mut last_error = String::from("no answer yet");
        while started.elapsed() < timeout {
            self.check_alive()?;
            match HttpConnection::connect(&self.url).and_then(|mut c| c.get(path)) {
                Ok(r) if (200..300).contains(&r.status) => return Ok(()),
                Ok(r) => last_error = format!("HTTP {}: {}", r.status, r.body_text()),
                Err(e) => last_error = format!("{e:#}"),
            }
            std::thread::sleep(POLL);
        }
        anyhow::bail!(
            "{} did not answer GET {}{path} within {} s (last: {last_error}); its last output:\n{}",
            self.name,
            self.url,
            timeout.as_secs(),
            self.log_tail(30)
        )
    }

    /// SIGTERM, wait up to [`STOP_GRACE`], then SIGKILL; removes the root
    /// directory. `Err` if the peer had to be killed.
    pub fn stop(self) -> anyhow::Result<()> {
        self.stop_then(|_| ())
    }

    /// Like [`PeerProcess::stop`], running `at_rest` on the data directory
    /// after the process exited and before the directory is removed (only
    /// if it exited by itself after SIGTERM: a killed peer's files are not
    /// at rest).
    pub fn stop_then<T>(mut self, at_rest: impl FnOnce(&Path) -> T) -> anyhow::Result<T> {
        let result = self.terminate().map(|()| at_rest(&self.data_dir));
        self.remove_root();
        result
    }

    fn terminate(&mut self) -> anyhow::Result<()> {
        let Some(mut child) = self.child.take() else { return Ok(()) };
        let pid = child.id();
        if child.try_wait()?.is_none() {
            if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::TERM);
            }
            let started = Instant::now();
            while child.try_wait()?.is_none() {
                if started.elapsed() > STOP_GRACE {
                    let _ = child.kill();
                    let _ = child.wait();
                    interrupt::unregister(pid);
                    anyhow::bail!(
                        "{} did not stop within {} s of SIGTERM: killed",
                        self.name,
                        STOP_GRACE.as_secs()
                    );
                }
                std::thread::sleep(POLL);
            }
        }
        interrupt::unregister(pid);
        Ok(())
    }

    fn remove_root(&mut self) {
        if let Some(root) = self.root.take() {
            let path = root.path().to_path_buf();
            if let Err(e) = root.close() {
                eprintln!("peers: warning: could not remove {}: {e}", path.display());
            }
        }
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = child.id();
            let _ = child.kill();
            let _ = child.wait();
            interrupt::unregister(pid);
        }
        self.remove_root();
    }
}
