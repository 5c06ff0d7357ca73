//! One crash run and its recovery (DecLog section 5.2, "Recovery" and
//! Table 2): the workload runs in a child process (see [`super::child`]);
//! once it reports, the parent kills it with SIGKILL (no graceful close, no
//! final checkpoint), then times `Db::open` of the same directory in this
//! process: wall time, and process CPU time (the paper's measure). Then it
//! checks that every worker's last acknowledged insert came back (for a
//! durable protocol) and closes the database.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Context;
use strata_engine::Db;

use super::cpu_time::process_cpu_s;
use super::job::{ChildJob, ChildResult, DB_NAME, JOB_ENV};
use super::txn_ops::value_ref;

/// How to start a child: a program, its arguments (the job goes in the
/// environment), extra environment variables.
#[derive(Clone, Debug)]
pub struct ChildCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl ChildCommand {
    /// This very binary as `strata bench ycsb-ts-child`.
    pub fn current_strata() -> anyhow::Result<ChildCommand> {
        let program = std::env::current_exe().context("finding the strata binary to re-execute")?;
        Ok(ChildCommand { program, args: vec!["bench".into(), "ycsb-ts-child".into()], env: Vec::new() })
    }
}

/// A crash run: what the child measured and how recovery went.
#[derive(Clone, Debug)]
pub struct CrashRun {
    pub result: ChildResult,
    pub recovery_s: f64,
    pub recovery_cpu_s: f64,
    /// Workers' last acknowledged inserts not found after recovery.
    pub lost_last_inserts: u64,
}

/// Runs `job` in a child, kills it, recovers, verifies.
pub fn crash_and_recover(
    command: &ChildCommand,
    job: &ChildJob,
    timeout: Duration,
) -> anyhow::Result<CrashRun> {
    let config = job.config()?;
    let mut child = Command::new(&command.program)
        .args(&command.args)
        .envs(command.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env(JOB_ENV, job.to_env_value())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {}", command.program.display()))?;
    let result = wait_for_result(&mut child, timeout);
    // SIGKILL: the crash. The child may already be gone if it failed.
    let _ = child.kill();
    let status = child.wait().context("waiting for the killed child")?;
    let result =
        result.with_context(|| format!("YCSB-TS child for {} (exit status {status})", job.variant))?;

    let wall = Instant::now();
    let cpu = process_cpu_s();
    let db = Db::open(&config, &|_, _, _| {})
        .with_context(|| format!("recovering {} in {}", job.variant, config.data_dir.display()))?;
    let recovery_cpu_s = process_cpu_s() - cpu;
    let recovery_s = wall.elapsed().as_secs_f64();
    let mut lost_last_inserts = 0;
    for &(key, ts) in &result.last_inserts {
        let found =
            db.engine().read_value(DB_NAME, &value_ref(key), ts).context("reading back a last insert")?;
        lost_last_inserts += u64::from(found.is_none());
    }
    drop(db);
    Ok(CrashRun { result, recovery_s, recovery_cpu_s, lost_last_inserts })
}

/// Reads the child's stdout on a thread until the result line, the end of
/// output, or `timeout`.
fn wait_for_result(child: &mut Child, timeout: Duration) -> anyhow::Result<ChildResult> {
    let stdout = child.stdout.take().context("the child has no stdout")?;
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(result) = ChildResult::from_line(&line) {
                let _ = send.send(Some(result));
                return;
            }
        }
        let _ = send.send(None);
    });
    match receive.recv_timeout(timeout) {
        Ok(Some(result)) => result,
        Ok(None) | Err(mpsc::RecvTimeoutError::Disconnected) => {
            anyhow::bail!("the child ended without a result line (its error is above)")
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            anyhow::bail!("no result after {} s: killed", timeout.as_secs())
        }
    }
}
