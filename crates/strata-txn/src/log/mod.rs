//! The logging schemes of transactional tables, siblings behind
//! [`TxnLogging`]: `none`, `serial` (one log, one LSN order: the baseline of
//! taurus.txt section 5) and `taurus` (N logs, LSN Vectors, section 3). A
//! new scheme (Silo-R, command logging) is a new module and one arm in
//! [`open_logging`].
//!
//! ## Committed, not only persistent
//!
//! Algorithm 1 commits T once `PLV ≥ T.LV` and every earlier record of its
//! log has committed. Read literally, T may then depend on a record R of
//! another log that is persistent but not committed (an earlier record of
//! R's log waits on a third log); after a crash, recovery stops R's log
//! before that earlier record (Algorithm 3), drops R, and keeps T: the
//! recovered set would not be closed under dependencies, and T was
//! acknowledged. Strata therefore commits a record once its LV is at most
//! the *committed* vector `CLV` (each log's committed end), which implies
//! `PLV ≥ T.LV`, and recovery computes each log's kept prefix as a fixed
//! point (`recovery`). A read-only transaction waits for `CLV ≥ T.LV`.

pub mod device;
mod manager;
mod schemes;
pub mod silo;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use strata_sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};

use strata_sync::{Condvar, Mutex};

pub use schemes::{NoLogging, ParallelLogging, ANCHOR_EVERY_BYTES};
pub use silo::EpochClock;

use crate::error::TxnError;
use crate::ids::{LogId, WorkerId};
use crate::lv::{Lv, MAX_LOGS};
use crate::record::{Command, RowWrite};

/// Which scheme.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LoggingKind {
    None,
    /// One log; records carry no LV.
    Serial,
    /// `logs` logs (1 to [`MAX_LOGS`]), workers mapped `worker % logs`.
    Taurus {
        logs: usize,
    },
    /// Silo-R (taurus.txt section 5's baseline): `logs` logs, workers mapped
    /// `worker % logs`, records ordered by Silo TIDs, durable by epoch.
    SiloR {
        logs: usize,
    },
}

impl LoggingKind {
    pub fn name(self) -> &'static str {
        match self {
            LoggingKind::None => "none",
            LoggingKind::Serial => "serial",
            LoggingKind::Taurus { .. } => "taurus",
            LoggingKind::SiloR { .. } => "silo-r",
        }
    }

    /// Logs it writes.
    pub fn logs(self) -> usize {
        match self {
            LoggingKind::None => 0,
            LoggingKind::Serial => 1,
            LoggingKind::Taurus { logs } | LoggingKind::SiloR { logs } => logs,
        }
    }

    /// Elements of the tuples' and transactions' LVs: one per log, except
    /// Silo-R's one, the TID of a tuple's last writer (a transaction's
    /// TID must exceed those of the rows it read and wrote).
    pub fn lv_len(self) -> usize {
        match self {
            LoggingKind::SiloR { .. } => 1,
            k => k.logs(),
        }
    }
}

/// What a record holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LogMode {
    /// The rows a transaction wrote (after-images).
    Data,
    /// The stored procedure it ran and its arguments (transactions run
    /// through `TxnDb::run`; others are logged as data).
    Command,
}

/// A record's payload, as a transaction hands it to the log.
#[derive(Copy, Clone, Debug)]
pub enum Payload<'a> {
    Data(&'a [RowWrite]),
    Command(&'a Command),
}

/// Where the logs live.
#[derive(Clone)]
pub enum LogDeviceKind {
    /// Files `log-<i>` in the directory on this file system.
    Ssd { fs: Arc<dyn strata_media::FileSystem>, dir: PathBuf },
    /// Regions `log-<i>.pmem` in the directory.
    Pmem { mode: strata_pmem::PmemMode, dir: PathBuf },
    /// Regions handed in (the crash simulator's).
    Regions(Vec<Arc<strata_pmem::Region>>),
}

/// What a committed transaction waits on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitTicket {
    /// T.LV after its record was written (its own element is its LSN).
    pub lv: Lv,
    /// Its record's log and LSN (None: read-only, or no logging).
    pub record: Option<(LogId, u64)>,
}

/// A logging scheme.
pub trait TxnLogging: Send + Sync {
    fn name(&self) -> &'static str;
    /// Logs written (0 for none).
    fn logs(&self) -> usize;
    /// Whether transactions track LVs through the tuples.
    fn tracks_lv(&self) -> bool;
    /// Writes T's record with a copy of `lv` into the log of `worker`
    /// (Algorithm 1, lines 9-11); its log and LSN.
    fn append(
        &self,
        worker: WorkerId,
        lv: &Lv,
        payload: Payload<'_>,
    ) -> Result<Option<(LogId, u64)>, TxnError>;
    /// `T.LV` after T's record `(log, lsn)` was appended by `worker`:
    /// Algorithm 1 line 11 sets `T.LV[log]` to the LSN.
    fn stamp(&self, _worker: WorkerId, lv: &mut Lv, record: (LogId, u64)) {
        lv.set(record.0.index(), record.1);
    }
    fn is_committed(&self, ticket: &CommitTicket) -> bool;
    /// Blocks until the ticket's transaction committed (or the log failed).
    fn wait_committed(&self, ticket: &CommitTicket) -> Result<(), TxnError>;
    /// Tuple LV compression (taurus.txt 4.1): the LV at or below which
    /// every dependency is durable (the logs' committed ends), from which
    /// the lock table evicts `δ` below; None where the tuples' LVs are
    /// no LSNs (Silo-R's TIDs) or nothing is logged.
    fn evictable_below(&self) -> Option<Lv> {
        None
    }
    /// Advances the global epoch once, marking the logs; the durable epoch
    /// after it (schemes with epochs: Silo-R).
    fn advance_epoch(&self) -> Result<u64, TxnError> {
        Err(TxnError::Unsupported("advancing the epoch: only silo-r logging has epochs"))
    }
    /// Flushes and commits what can be, then stops the log manager threads.
    fn shutdown(&self);
    /// Bytes written to the devices.
    fn device_bytes(&self) -> u64;
}

/// `PLV`, the committed vector `CLV`, and the wait for commits.
pub struct Commits {
    logs: usize,
    /// One cache line per log: each is written by its own log's rounds.
    flushed: [PerLog; MAX_LOGS],
    committed: [PerLog; MAX_LOGS],
    failure: Mutex<Option<(usize, String)>>,
    changed: Condvar,
    changed_lock: Mutex<()>,
    /// Threads in [`Self::wait`]: a commit takes the lock and notifies
    /// only when somebody waits.
    waiters: AtomicUsize,
}

/// A log's element of `PLV` or `CLV`, alone on its cache line.
#[derive(Default)]
#[repr(align(64))]
struct PerLog(AtomicU64);

impl std::ops::Deref for PerLog {
    type Target = AtomicU64;
    fn deref(&self) -> &AtomicU64 {
        &self.0
    }
}

/// The LV of one element per log (SeqCst loads: the committed vector's
/// waiters rely on it, see `Commits::set_committed`).
fn vector(elems: &[PerLog]) -> Lv {
    let mut lv = Lv::ZERO;
    for (j, a) in elems.iter().enumerate() {
        lv.set(j, a.load(SeqCst));
    }
    lv
}

/// A committed-vector waiter re-checks at least this often.
pub(crate) const WAIT_POLL: Duration = Duration::from_millis(2);

impl Commits {
    pub(crate) fn new(logs: usize, start: &[u64]) -> Commits {
        let c = Commits {
            logs,
            flushed: std::array::from_fn(|_| PerLog::default()),
            committed: std::array::from_fn(|_| PerLog::default()),
            failure: Mutex::new(None),
            changed: Condvar::new(),
            changed_lock: Mutex::new(()),
            waiters: AtomicUsize::new(0),
        };
        for (i, s) in start.iter().enumerate() {
            c.flushed[i].store(*s, Relaxed);
            c.committed[i].store(*s, Relaxed);
        }
        c
    }

    /// `PLV`.
    pub fn persistent_lv(&self) -> Lv {
        vector(&self.flushed[..self.logs])
    }

    /// `CLV`: each log's committed end.
    pub fn committed_lv(&self) -> Lv {
        vector(&self.committed[..self.logs])
    }

    /// Only a round of `log` sets it (under the log's round lock), so a
    /// plain store, no read-modify-write.
    fn set_flushed(&self, log: usize, end: u64) {
        debug_assert!(self.flushed[log].load(Relaxed) <= end, "log {log}: PLV only rises");
        self.flushed[log].store(end, Release);
    }

    /// Only a round of `log` sets it (under the log's round lock).
    fn set_committed(&self, log: usize, end: u64) {
        debug_assert!(self.committed[log].load(Relaxed) <= end, "log {log}: CLV only rises");
        // SeqCst with the waiter's count and check: either it sees this
        // end, or this sees it waiting.
        self.committed[log].store(end, SeqCst);
        if self.waiters.load(SeqCst) > 0 {
            let _g = self.changed_lock.lock();
            self.changed.notify_all();
        }
    }

    fn fail(&self, log: usize, e: TxnError) {
        self.failure.lock().get_or_insert((log, e.to_string()));
        let _g = self.changed_lock.lock();
        self.changed.notify_all();
    }

    fn failed(&self) -> Option<u32> {
        self.failure.lock().as_ref().map(|(log, _)| *log as u32)
    }

    fn covers(&self, ticket: &CommitTicket) -> bool {
        match ticket.record {
            Some((log, lsn)) => self.committed[log.index()].load(SeqCst) >= lsn,
            None => ticket.lv.le(&self.committed_lv()),
        }
    }

    /// Blocks until `ticket` commits; `help` runs rounds where workers may
    /// (true if one made progress), else the wait re-checks every `poll`.
    fn wait(
        &self,
        ticket: &CommitTicket,
        poll: Duration,
        mut help: impl FnMut() -> bool,
    ) -> Result<(), TxnError> {
        loop {
            if self.covers(ticket) {
                return Ok(());
            }
            if let Some(log) = self.failed() {
                return Err(TxnError::LogFailed { log });
            }
            if help() {
                continue;
            }
            self.waiters.fetch_add(1, SeqCst);
            let mut g = self.changed_lock.lock();
            if !self.covers(ticket) {
                self.changed.wait_for(&mut g, poll);
            }
            drop(g);
            self.waiters.fetch_sub(1, SeqCst);
        }
    }
}

/// Options of the logging scheme.
#[derive(Clone)]
pub struct LoggingOptions {
    pub kind: LoggingKind,
    pub mode: LogMode,
    pub device: LogDeviceKind,
    /// Workers that will run transactions (ids `0..workers`).
    pub workers: usize,
    /// Per log: its bandwidth limit.
    pub log_mbps: Option<f64>,
    /// Log buffer per log.
    pub buffer_bytes: usize,
    /// Device size per log (PMem region size; SSD: the most a log may grow to).
    pub capacity_bytes: u64,
    /// How long an idle log manager sleeps between rounds.
    pub flush_interval: Duration,
    /// Taurus: a worker places an LV anchor once its log grew this much
    /// past the last one ([`ANCHOR_EVERY_BYTES`] by default).
    pub anchor_every_bytes: u64,
    /// Taurus's δ of tuple LV compression (taurus.txt 4.1), in log bytes:
    /// the lock table evicts a tuple's LVs once both are this far below
    /// the committed ends ([`TUPLE_LV_DELTA_BYTES`] by default; None keeps
    /// every tuple's LVs).
    pub tuple_lv_delta: Option<u64>,
    /// Silo-R: what advances the global epoch (every 5 ms by default).
    pub epoch_clock: EpochClock,
}

/// The default δ: 1 MiB of each log. Larger keeps more tuples in the lock
/// table and adds fewer artificial dependencies (each one on a record
/// already committed, so it costs recovery order, never commit latency).
pub const TUPLE_LV_DELTA_BYTES: u64 = 1 << 20;

/// Opens the scheme of `options.kind` over devices already recovered to
/// `starts` (each log's kept prefix).
pub fn open_logging(
    options: &LoggingOptions,
    devices: Vec<Box<dyn device::LogDevice>>,
    starts: &[u64],
) -> Result<Box<dyn TxnLogging>, TxnError> {
    Ok(match options.kind {
        LoggingKind::None => Box::new(NoLogging),
        LoggingKind::Serial | LoggingKind::Taurus { .. } => {
            Box::new(ParallelLogging::start(options, devices, starts)?)
        }
        // It starts from what its own recovery found: `TxnDb::open` starts it.
        LoggingKind::SiloR { .. } => {
            return Err(TxnError::Options("silo-r is opened with its recovery (TxnDb::open)".into()))
        }
    })
}
