//! Silo-R, the parallel data logging of Silo (Zheng et al., OSDI 2014) that
//! taurus.txt section 5 compares against: epochs, one log per group of
//! workers, no dependency tracking.
//!
//! - A global epoch advances every [`EPOCH_INTERVAL`] (the authors' Silo-R
//!   setting in DBx1000 is 5 ms), or, with [`EpochClock::OnDemand`], only
//!   when asked (see there).
//! - A committing transaction announces the epoch it reads, takes a TID
//!   `epoch << 32 | n` above the TIDs of every row it read or wrote (kept in
//!   the tuples' one-element LVs: `writeLV[0]` is the TID of the row's last
//!   writer) and above its worker's last one, writes its after-images with
//!   the TID into its worker's log, and clears the announcement.
//! - The epoch thread, after advancing to `E`, appends to each log an
//!   *epoch mark* (an anchor record whose one LV element is `p`): every
//!   record of that log with an epoch at most `p = min(E, announced) - 1`
//!   lies before the mark. Once a log is flushed past its mark it is
//!   durable through `p`; the durable epoch `D` is the least such `p` over
//!   the logs, and a transaction is acknowledged once its epoch is at most
//!   `D` (read-only ones once the epochs of the rows they read are).
//! - Recovery ([`recover`]): `D` is the least, over the logs, of the
//!   largest mark; every record with an epoch at most `D` is applied, in
//!   parallel and in any order, a row taking the image of the highest TID.
//!   Records of later epochs stay in the log, never acknowledged; so that
//!   a later recovery does not take them, the reopened database first
//!   writes a *barrier* to every log (an anchor of two elements: the `D` it
//!   recovered and `E0 - 1`, its first epoch less one), and records before
//!   a barrier count only up to that barrier's `D`.
//!
//! Records are the Taurus log's (`docs/format/taurus-log.md`): data records
//! with one LV element (the TID), anchors with one (a mark) or two (a
//! barrier). Silo-R logs data only.

use std::sync::Arc;
use std::time::Duration;
use strata_sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use strata_sync::thread::{spawn_named, JoinHandle};

use strata_sync::Mutex;

use super::device::LogDevice;
use super::manager::{run_managers, LogManager};
use super::{CommitTicket, Commits, LoggingOptions, Payload, TxnLogging};
use crate::error::TxnError;
use crate::ids::{LogId, WorkerId};
use crate::lv::Lv;
use crate::record::{decode, encode_masked, full_mask, Record, RecordBody};

/// How often the global epoch advances (the default [`EpochClock`]).
pub const EPOCH_INTERVAL: Duration = Duration::from_millis(5);

/// What advances Silo-R's global epoch (`LoggingOptions::epoch_clock`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EpochClock {
    /// The epoch thread, every interval ([`EPOCH_INTERVAL`] by default).
    Timer(Duration),
    /// No epoch thread: the epoch advances (and every log gets its mark)
    /// only when [`crate::TxnDb::advance_epoch`] is called or a commit
    /// waits for an epoch that is not durable yet (the wait advances it
    /// until its own is). Epochs, marks and acknowledgements are then a
    /// function of the calls, not of a timer: what a run that must perform
    /// the same medium operations every time needs (the crash lines of
    /// `strata-crashtest`), and a group commit for a client that waits.
    OnDemand,
}

impl Default for EpochClock {
    fn default() -> Self {
        EpochClock::Timer(EPOCH_INTERVAL)
    }
}

/// A worker that is not committing.
const IDLE: u64 = u64::MAX;

/// The epoch of a TID.
pub fn epoch_of(tid: u64) -> u64 {
    tid >> 32
}

struct Epochs {
    /// The global epoch.
    current: AtomicU64,
    /// Per worker: the epoch its commit in progress read, else [`IDLE`].
    announced: Box<[AtomicU64]>,
    /// Per worker: its last TID.
    last_tid: Box<[AtomicU64]>,
    /// `D`: every transaction of an epoch at most this is durable.
    durable: AtomicU64,
}

pub struct SiloLogging {
    managers: Arc<Vec<LogManager>>,
    commits: Arc<Commits>,
    epochs: Arc<Epochs>,
    /// The epoch advances: the epoch thread's, or on demand.
    ticker: Arc<Mutex<Ticker>>,
    clock: EpochClock,
    starts: Vec<u64>,
    stop: Arc<AtomicBool>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

thread_local! {
    static RECORD: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What recovery found in the logs.
#[derive(Clone, Debug, Default)]
pub struct SiloRecovery {
    /// Per log: the records to apply (TID in `lv[0]`), in log order.
    pub records: Vec<Vec<Record>>,
    /// Per log: the end of its valid records.
    pub valid_ends: Vec<u64>,
    /// The durable epoch `D`.
    pub durable_epoch: u64,
    /// The largest epoch anywhere in the logs.
    pub max_epoch: u64,
    /// Records left out (epochs never durable).
    pub dropped: u64,
    pub marks: u64,
}

enum Entry {
    Data(Record),
    Mark(u64),
    Barrier { durable: u64, epoch_before: u64 },
}

/// One log as recovery reads it.
pub struct LogScan {
    entries: Vec<Entry>,
    valid_end: u64,
    /// The largest mark or barrier epoch.
    through: u64,
    max_epoch: u64,
    marks: u64,
}

/// Decodes one log up to its first invalid record (one per thread).
pub fn scan_log(bytes: &[u8]) -> LogScan {
    let mut scan = LogScan { entries: Vec::new(), valid_end: 0, through: 0, max_epoch: 0, marks: 0 };
    let mut at = 0usize;
    while at < bytes.len() {
        let Ok(Some((rec, len))) = decode(&bytes[at..], at as u64) else { break };
        at += len;
        let entry = match (rec.anchor, rec.lv_len) {
            (true, 2) => Entry::Barrier { durable: rec.lv.get(0), epoch_before: rec.lv.get(1) },
            (true, _) => Entry::Mark(rec.lv.get(0)),
            (false, _) => Entry::Data(rec),
        };
        match &entry {
            Entry::Mark(p) | Entry::Barrier { epoch_before: p, .. } => {
                scan.through = scan.through.max(*p);
                scan.max_epoch = scan.max_epoch.max(*p);
                scan.marks += 1;
            }
            Entry::Data(r) => scan.max_epoch = scan.max_epoch.max(epoch_of(r.lv.get(0))),
        }
        scan.entries.push(entry);
    }
    scan.valid_end = at as u64;
    scan
}

/// What to apply, given every log's scan (module comment).
pub fn decide(scans: Vec<LogScan>) -> SiloRecovery {
    let mut out = SiloRecovery {
        durable_epoch: scans.iter().map(|s| s.through).min().unwrap_or(0),
        max_epoch: scans.iter().map(|s| s.max_epoch).max().unwrap_or(0),
        marks: scans.iter().map(|s| s.marks).sum(),
        ..Default::default()
    };
    for scan in scans {
        out.valid_ends.push(scan.valid_end);
        // Backwards: the nearest barrier after a record decides it.
        let mut bound = out.durable_epoch;
        let mut kept = Vec::new();
        for e in scan.entries.into_iter().rev() {
            match e {
                Entry::Barrier { durable, .. } => bound = durable,
                Entry::Mark(_) => {}
                Entry::Data(r) if epoch_of(r.lv.get(0)) <= bound => kept.push(r),
                Entry::Data(_) => out.dropped += 1,
            }
        }
        kept.reverse();
        out.records.push(kept);
    }
    out
}

/// [`scan_log`] of every log, then [`decide`].
pub fn recover(logs: &[Vec<u8>]) -> SiloRecovery {
    decide(logs.iter().map(|b| scan_log(b)).collect())
}

impl SiloLogging {
    /// Starts over logs recovered to `starts` (`recovery` what was found):
    /// writes the barrier to every log and makes it durable, then starts
    /// the epoch thread and the log managers.
    pub(crate) fn start(
        options: &LoggingOptions,
        devices: Vec<Box<dyn LogDevice>>,
        starts: &[u64],
        recovery: &SiloRecovery,
    ) -> Result<SiloLogging, TxnError> {
        let logs = devices.len();
        if logs == 0 || starts.len() != logs {
            return Err(TxnError::Options(format!("silo-r over {logs} logs and {} starts", starts.len())));
        }
        let workers = options.workers.max(1);
        let slots = workers.div_ceil(logs);
        // One more slot per log: the epoch thread's, for its marks.
        let managers: Arc<Vec<LogManager>> = Arc::new(
            devices
                .into_iter()
                .enumerate()
                .map(|(i, d)| {
                    LogManager::new(i, d, slots + 1, options.buffer_bytes, starts[i]).without_lv_commit()
                })
                .collect(),
        );
        let commits = Arc::new(Commits::new(logs, starts));
        let first_epoch = recovery.max_epoch + 1;
        let epochs = Arc::new(Epochs {
            current: AtomicU64::new(first_epoch),
            announced: (0..workers).map(|_| AtomicU64::new(IDLE)).collect(),
            last_tid: (0..workers).map(|_| AtomicU64::new(0)).collect(),
            durable: AtomicU64::new(recovery.durable_epoch),
        });
        let barrier = Lv::from_slice(&[recovery.durable_epoch, first_epoch - 1]);
        let mut buf = Vec::new();
        encode_masked(&barrier, 2, full_mask(2), RecordBody::Anchor, &mut buf);
        for m in managers.iter() {
            let end = m.write(slots, &buf)?;
            while m.flushed() < end {
                m.flush_round(&commits)?;
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::with_capacity(logs + 1);
        for i in 0..logs {
            let (m, c, s) = (managers.clone(), commits.clone(), stop.clone());
            let interval = options.flush_interval;
            threads.push(spawn_named(format!("silo-log-{i}"), move || {
                run_managers(m, vec![i], c, s, interval)
            })?);
        }
        let ticker = Arc::new(Mutex::new(Ticker::new(logs, slots, first_epoch - 1)));
        if let EpochClock::Timer(interval) = options.epoch_clock {
            let (m, c, e, t, s) =
                (managers.clone(), commits.clone(), epochs.clone(), ticker.clone(), stop.clone());
            threads.push(spawn_named("silo-epochs".into(), move || {
                while !s.load(Acquire) {
                    strata_sync::thread::sleep(interval);
                    t.lock().tick(&m, &c, &e);
                }
            })?);
        }
        Ok(SiloLogging {
            managers,
            commits,
            epochs,
            ticker,
            clock: options.epoch_clock,
            starts: starts.to_vec(),
            stop,
            threads: Mutex::new(threads),
        })
    }

    /// Announces the global epoch for `worker` and returns it (re-read
    /// until stable, so the epoch thread either sees the announcement or
    /// advanced past before this worker read).
    fn announce(&self, worker: usize) -> u64 {
        loop {
            let e = self.epochs.current.load(SeqCst);
            self.epochs.announced[worker].store(e, SeqCst);
            if self.epochs.current.load(SeqCst) == e {
                return e;
            }
        }
    }

    /// The durable epoch `D`.
    pub fn durable_epoch(&self) -> u64 {
        self.epochs.durable.load(Acquire)
    }
}

/// What advancing the epoch keeps between advances (the epoch thread's
/// state, or the on-demand clock's).
struct Ticker {
    /// The manager slot the marks are written from.
    slot: usize,
    /// Per log: the last mark written.
    marked: Vec<u64>,
    /// Per log: marks written, not yet known flushed: (end, p).
    queued: Vec<std::collections::VecDeque<(u64, u64)>>,
    /// Per log: the epoch it is durable through (its last flushed mark).
    through: Vec<u64>,
    buf: Vec<u8>,
}

impl Ticker {
    fn new(logs: usize, slot: usize, start_mark: u64) -> Ticker {
        Ticker {
            slot,
            marked: vec![start_mark; logs],
            queued: vec![Default::default(); logs],
            through: vec![start_mark; logs],
            buf: Vec::new(),
        }
    }

    /// One advance: the epoch moves on, every log gets a mark (if its
    /// workers' announcements allow a later one) and a round, and `D`
    /// becomes the least epoch every log is durable through; returns `D`.
    fn tick(&mut self, managers: &[LogManager], commits: &Commits, epochs: &Epochs) -> u64 {
        let logs = managers.len();
        let now = epochs.current.fetch_add(1, SeqCst) + 1;
        for (i, m) in managers.iter().enumerate() {
            let announced = epochs
                .announced
                .iter()
                .enumerate()
                .filter(|(w, _)| w % logs == i)
                .map(|(_, a)| a.load(SeqCst))
                .min()
                .unwrap_or(IDLE);
            let p = now.min(announced) - 1;
            if p > self.marked[i] {
                self.buf.clear();
                encode_masked(&Lv::from_slice(&[p]), 1, full_mask(1), RecordBody::Anchor, &mut self.buf);
                match m.write(self.slot, &self.buf) {
                    Ok(end) => {
                        self.queued[i].push_back((end, p));
                        self.marked[i] = p;
                    }
                    Err(e) => commits.fail(i, e),
                }
            }
            // A round now, so the mark counts at this tick rather than the
            // next (on PMem it only publishes; on SSD it group-commits).
            if let Err(e) = m.flush_round(commits) {
                commits.fail(i, e);
            }
            let flushed = m.flushed();
            while let Some(&(end, p)) = self.queued[i].front() {
                if end > flushed {
                    break;
                }
                self.through[i] = p;
                self.queued[i].pop_front();
            }
        }
        let d = self.through.iter().copied().min().unwrap_or(0);
        epochs.durable.fetch_max(d, Release);
        epochs.durable.load(Acquire)
    }
}

impl SiloLogging {
    /// Advances the epoch once, marking every log (module comment); the
    /// durable epoch `D` after it. Besides the epoch thread's advances
    /// under [`EpochClock::Timer`]; the only ones under
    /// [`EpochClock::OnDemand`] apart from waiting commits.
    pub fn advance_epoch(&self) -> Result<u64, TxnError> {
        let d = self.ticker.lock().tick(&self.managers, &self.commits, &self.epochs);
        match self.commits.failed() {
            Some(log) => Err(TxnError::LogFailed { log }),
            None => Ok(d),
        }
    }
}

impl TxnLogging for SiloLogging {
    fn name(&self) -> &'static str {
        "silo-r"
    }

    fn logs(&self) -> usize {
        self.managers.len()
    }

    fn tracks_lv(&self) -> bool {
        // The one element: the TID of the rows' last writers.
        true
    }

    fn append(
        &self,
        worker: WorkerId,
        lv: &Lv,
        payload: Payload<'_>,
    ) -> Result<Option<(LogId, u64)>, TxnError> {
        let Payload::Data(writes) = payload else {
            return Err(TxnError::Options("silo-r logs data only (it tracks no WAR dependencies)".into()));
        };
        let w = worker.0 as usize;
        if w >= self.epochs.announced.len() {
            return Err(TxnError::Options(format!("worker {w} of {}", self.epochs.announced.len())));
        }
        let logs = self.managers.len();
        let (log, slot) = (w % logs, w / logs);
        let epoch = self.announce(w);
        let tid = (lv.get(0) + 1).max(self.epochs.last_tid[w].load(Relaxed) + 1).max((epoch << 32) | 1);
        self.epochs.last_tid[w].store(tid, Relaxed);
        let m = &self.managers[log];
        let written = RECORD.with_borrow_mut(|buf| {
            buf.clear();
            encode_masked(&Lv::from_slice(&[tid]), 1, full_mask(1), RecordBody::Data(writes), buf);
            m.write(slot, buf)
        });
        self.epochs.announced[w].store(IDLE, SeqCst);
        let end = written?;
        if m.workers_help() {
            if let Some(Err(e)) = m.help_round(&self.commits, &[]) {
                self.commits.fail(log, e);
            }
        }
        Ok(Some((LogId(log as u32), end)))
    }

    /// `T.LV[0]` becomes T's TID (its worker's last), which the rows it
    /// wrote take as their `writeLV[0]`.
    fn stamp(&self, worker: WorkerId, lv: &mut Lv, _: (LogId, u64)) {
        lv.set(0, self.epochs.last_tid[worker.0 as usize].load(Relaxed));
    }

    fn is_committed(&self, ticket: &CommitTicket) -> bool {
        epoch_of(ticket.lv.get(0)) <= self.durable_epoch()
    }

    /// Under [`EpochClock::OnDemand`] the wait advances the epoch itself
    /// until the ticket's is durable (more than once only while another
    /// worker's commit in progress holds a log's mark back).
    fn wait_committed(&self, ticket: &CommitTicket) -> Result<(), TxnError> {
        loop {
            if self.is_committed(ticket) {
                return Ok(());
            }
            if let Some(log) = self.commits.failed() {
                return Err(TxnError::LogFailed { log });
            }
            if self.clock == EpochClock::OnDemand {
                self.advance_epoch()?;
                if self.is_committed(ticket) {
                    return Ok(());
                }
            }
            strata_sync::thread::sleep(EPOCH_INTERVAL / 20);
        }
    }

    fn advance_epoch(&self) -> Result<u64, TxnError> {
        SiloLogging::advance_epoch(self)
    }

    fn shutdown(&self) {
        self.stop.store(true, Release);
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        for (i, m) in self.managers.iter().enumerate() {
            while let Ok(o) = m.flush_round(&self.commits) {
                if o.flushed_bytes == 0 {
                    break;
                }
            }
            if let Some(log) = self.commits.failed() {
                debug_assert_eq!(log as usize, i);
            }
        }
    }

    fn device_bytes(&self) -> u64 {
        self.managers.iter().zip(&self.starts).map(|(m, s)| m.flushed() - s).sum()
    }
}

impl Drop for SiloLogging {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{RowKey, TableId};
    use crate::record::{RowWrite, WriteOp};

    fn data(tid: u64, key: u64) -> Vec<u8> {
        let writes = [RowWrite { table: TableId(0), key: RowKey(key), op: WriteOp::Put(vec![key as u8]) }];
        let mut b = Vec::new();
        encode_masked(&Lv::from_slice(&[tid]), 1, 1, RecordBody::Data(&writes), &mut b);
        b
    }

    fn anchor(values: &[u64]) -> Vec<u8> {
        let mut b = Vec::new();
        encode_masked(
            &Lv::from_slice(values),
            values.len(),
            full_mask(values.len()),
            RecordBody::Anchor,
            &mut b,
        );
        b
    }

    /// `EpochClock::OnDemand`: no epoch passes and no mark is written
    /// until asked; a waiting commit advances the epoch until it is
    /// durable, and `advance_epoch` marks every log.
    #[test]
    fn an_on_demand_clock_advances_only_when_asked() {
        use crate::{LogDeviceKind, LoggingKind, TableSchema, TxnDb, TxnDbOptions};
        use strata_pmem::Region;

        let regions: Vec<Arc<Region>> = (0..2).map(|_| Arc::new(Region::sim(1 << 16))).collect();
        let mut o =
            TxnDbOptions::new(LoggingKind::SiloR { logs: 2 }, LogDeviceKind::Regions(regions.clone()), 2);
        o.cc = crate::CcKind::Occ;
        o.logging.capacity_bytes = 1 << 16;
        o.logging.epoch_clock = EpochClock::OnDemand;
        let schemas = vec![TableSchema { name: "t".into(), row_bytes: 8 }];
        let (db, _) = TxnDb::open(&o, schemas.clone()).unwrap();
        let images =
            || -> Vec<Vec<u8>> { regions.iter().map(|r| r.as_sim().unwrap().persistent_image()).collect() };
        let mut txn = db.begin(WorkerId(1));
        txn.insert(TableId(0), RowKey(1), &7u64.to_le_bytes()).unwrap();
        let ticket = txn.commit().unwrap();
        let written = images();
        std::thread::sleep(EPOCH_INTERVAL * 4);
        assert!(!db.is_committed(&ticket), "no epoch passed by itself");
        assert_eq!(images(), written, "no mark written by itself");
        db.wait_committed(&ticket).unwrap();
        assert!(db.is_committed(&ticket));
        let marked = images();
        assert_ne!(marked, written, "the wait marked the logs");
        let d = db.advance_epoch().unwrap();
        assert!(d > epoch_of(ticket.lv.get(0)), "an advance with nothing in flight makes its epoch durable");
        assert_ne!(images(), marked, "an advance marks the logs");
        drop(db);
        let (db, report) = TxnDb::open(&o, schemas).unwrap();
        assert_eq!(report.transactions, 1);
        assert_eq!(db.rows(TableId(0))[&RowKey(1)], 7u64.to_le_bytes());
        // Other schemes have no epochs.
        let data = TxnDbOptions::new(LoggingKind::None, LogDeviceKind::Regions(Vec::new()), 1);
        let (none, _) = TxnDb::open(&data, vec![]).unwrap();
        assert!(matches!(none.advance_epoch(), Err(TxnError::Unsupported(_))));
    }

    #[test]
    fn recovery_takes_the_epochs_every_log_marked_and_barriers_cut_older_ones() {
        // Log 0: epochs 1 and 3, marked through 2; log 1: epoch 2, marked through 4.
        let log0 = [data((1 << 32) | 1, 1), anchor(&[2]), data((3 << 32) | 1, 2)].concat();
        let log1 = [data((2 << 32) | 1, 3), anchor(&[4])].concat();
        let r = recover(&[log0.clone(), log1.clone()]);
        assert_eq!(r.durable_epoch, 2, "the least of the logs' marks");
        assert_eq!(r.max_epoch, 4);
        let keys = |r: &SiloRecovery| -> Vec<Vec<u64>> {
            r.records.iter().map(|l| l.iter().map(|rec| rec.writes[0].key.0).collect()).collect()
        };
        assert_eq!(keys(&r), vec![vec![1], vec![3]]);
        assert_eq!(r.dropped, 1);
        // Reopened: a barrier (D 2, first epoch 5) then epoch 5 marked on both.
        let log0b = [log0, anchor(&[2, 4]), data((5 << 32) | 1, 4), anchor(&[5])].concat();
        let log1b = [log1, anchor(&[2, 4]), anchor(&[5])].concat();
        let r = recover(&[log0b, log1b]);
        assert_eq!(r.durable_epoch, 5);
        assert_eq!(
            keys(&r),
            vec![vec![1, 4], vec![3]],
            "epoch 3 stays out: the barrier recovered only through 2"
        );
        assert_eq!(r.valid_ends.len(), 2);
    }
}
