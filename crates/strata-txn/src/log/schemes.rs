//! The schemes: [`NoLogging`], and [`ParallelLogging`] for serial (one log,
//! records without LV) and Taurus (N logs, records with T's LV).

use std::sync::Arc;
use strata_sync::atomic::{AtomicBool, Ordering::*};
use strata_sync::thread::{spawn_named, JoinHandle};

use strata_sync::Mutex;

use super::device::LogDevice;
use super::manager::{run_managers, LogManager, Written};
use super::{CommitTicket, Commits, LoggingKind, LoggingOptions, Payload, TxnLogging, WAIT_POLL};
use crate::error::TxnError;
use crate::ids::{LogId, WorkerId};
use crate::lv::{Lv, MAX_LOGS};
use crate::record::{encode_masked, full_mask, RecordBody};

/// A worker places an anchor (Algorithm 5's `FlushPLV`) once its log grew
/// this much past the last one: the trade-off between compression (more
/// elements at or below the anchor) and recovery parallelism (left-out
/// elements decompress to the anchor's larger values).
pub const ANCHOR_EVERY_BYTES: u64 = 64 << 10;

/// A waiter that runs rounds itself re-checks this often (a record it
/// depends on may still be filling in another worker's slot).
const HELPING_WAIT_POLL: std::time::Duration = std::time::Duration::from_micros(20);

/// No log: commits are not durable; the upper bound of throughput.
pub struct NoLogging;

impl TxnLogging for NoLogging {
    fn name(&self) -> &'static str {
        "none"
    }
    fn logs(&self) -> usize {
        0
    }
    fn tracks_lv(&self) -> bool {
        false
    }
    fn append(&self, _: WorkerId, _: &Lv, _: Payload<'_>) -> Result<Option<(LogId, u64)>, TxnError> {
        Ok(None)
    }
    fn is_committed(&self, _: &CommitTicket) -> bool {
        true
    }
    fn wait_committed(&self, _: &CommitTicket) -> Result<(), TxnError> {
        Ok(())
    }
    fn shutdown(&self) {}
    fn device_bytes(&self) -> u64 {
        0
    }
}

/// Serial or Taurus logging: `logs` log managers, one thread each (workers
/// of log i are `worker % logs == i`, in slot `worker / logs`).
pub struct ParallelLogging {
    kind: LoggingKind,
    managers: Arc<Vec<LogManager>>,
    commits: Arc<Commits>,
    /// Records carry T's LV (Taurus) or none (serial: one log, one order).
    record_lv: bool,
    anchor_every_bytes: u64,
    starts: Vec<u64>,
    stop: Arc<AtomicBool>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// A worker writing a PMem log in place runs a round (publishes and
/// commits) after this many of its records, not after each: a round's
/// fixed cost (the round lock, the other logs' committed ends, the commit
/// bookkeeping) spread over a batch, as the paper's log manager flushes
/// in batches. A waiter runs one at once; an idle log's manager thread
/// within a millisecond.
const HELP_EVERY_RECORDS: usize = 8;

/// Most records a worker's list keeps (see [`OwnRecords`]).
const MAX_OWN_RECORDS: usize = 256;

/// The records this thread wrote to one log since its last round, which
/// that round need not read back from the region.
struct OwnRecords {
    /// [`LogManager::id`] of the log they are in.
    log: Option<u64>,
    records: Vec<Written>,
}

strata_sync::thread_local! {
    static RECORD: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    static OWN_RECORDS: std::cell::RefCell<OwnRecords> =
        const { std::cell::RefCell::new(OwnRecords { log: None, records: Vec::new() }) };
}

impl ParallelLogging {
    pub(crate) fn start(
        options: &LoggingOptions,
        devices: Vec<Box<dyn LogDevice>>,
        starts: &[u64],
    ) -> Result<ParallelLogging, TxnError> {
        let logs = options.kind.logs();
        if !(1..=MAX_LOGS).contains(&logs) || devices.len() != logs || starts.len() != logs {
            return Err(TxnError::Options(format!(
                "{logs} logs with {} devices (1 to {MAX_LOGS} logs)",
                devices.len()
            )));
        }
        let slots = options.workers.div_ceil(logs).max(1);
        let managers: Arc<Vec<LogManager>> = Arc::new(
            devices
                .into_iter()
                .enumerate()
                .map(|(i, d)| LogManager::new(i, d, slots, options.buffer_bytes, starts[i]))
                .collect(),
        );
        let commits = Arc::new(Commits::new(logs, starts));
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..logs)
            .map(|i| {
                let (m, c, s) = (managers.clone(), commits.clone(), stop.clone());
                let interval = options.flush_interval;
                spawn_named(format!("log-manager-{i}"), move || run_managers(m, vec![i], c, s, interval))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ParallelLogging {
            kind: options.kind,
            managers,
            commits,
            record_lv: matches!(options.kind, LoggingKind::Taurus { .. }),
            anchor_every_bytes: options.anchor_every_bytes,
            starts: starts.to_vec(),
            stop,
            threads: Mutex::new(threads),
        })
    }

    /// PLV and CLV (for tests and reports).
    pub fn commits(&self) -> &Commits {
        &self.commits
    }
}

impl TxnLogging for ParallelLogging {
    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn logs(&self) -> usize {
        self.managers.len()
    }

    fn tracks_lv(&self) -> bool {
        true
    }

    fn evictable_below(&self) -> Option<Lv> {
        Some(self.commits.committed_lv())
    }

    fn append(
        &self,
        worker: WorkerId,
        lv: &Lv,
        payload: Payload<'_>,
    ) -> Result<Option<(LogId, u64)>, TxnError> {
        let logs = self.managers.len();
        let log = worker.0 as usize % logs;
        let slot = worker.0 as usize / logs;
        let lv_len = if self.record_lv { logs } else { 0 };
        let body = match payload {
            Payload::Data(writes) => RecordBody::Data(writes),
            Payload::Command(c) => RecordBody::Command(c),
        };
        let m = &self.managers[log];
        // The record's end, length and LV mask.
        let (lsn, record_len, mask) = RECORD.with(|buf| {
            let buf = &mut *buf.borrow_mut();
            buf.clear();
            if self.record_lv && m.anchor_due(self.anchor_every_bytes) {
                // Anchor = every log's committed end now; the record after it
                // stores only the elements above it.
                let anchor = self.commits.committed_lv();
                encode_masked(&anchor, lv_len, full_mask(lv_len), RecordBody::Anchor, buf);
                let anchor_bytes = buf.len();
                let mask = lv.compress_mask(&anchor, lv_len);
                encode_masked(lv, lv_len, mask, body, buf);
                if let Some(r) = m.write_with_anchor(slot, &anchor, buf, anchor_bytes) {
                    return r.map(|end| (end, (buf.len() - anchor_bytes) as u64, mask));
                }
                buf.clear();
            }
            let mask = if self.record_lv { lv.compress_mask(&m.lplv(lv_len), lv_len) } else { 0 };
            encode_masked(lv, lv_len, mask, body, buf);
            m.write(slot, buf).map(|end| (end, buf.len() as u64, mask))
        })?;
        if m.workers_help() {
            let written = Written {
                start: lsn - record_len,
                end: lsn,
                lv: if self.record_lv { *lv } else { Lv::ZERO },
                mask,
            };
            OWN_RECORDS.with(|own| {
                let own = &mut *own.borrow_mut();
                if own.log != Some(m.id()) {
                    own.log = Some(m.id());
                    own.records.clear();
                }
                own.records.push(written);
                if own.records.len() < HELP_EVERY_RECORDS {
                    return;
                }
                if let Some(Err(e)) = m.help_round(&self.commits, &own.records) {
                    self.commits.fail(log, e);
                }
                // Published records are done with; a list a busy round kept
                // growing keeps its newest (older ones are read back).
                let flushed = m.flushed();
                own.records.retain(|w| w.end > flushed);
                let excess = own.records.len().saturating_sub(MAX_OWN_RECORDS);
                own.records.drain(..excess);
            });
        }
        Ok(Some((LogId(log as u32), lsn)))
    }

    fn is_committed(&self, ticket: &CommitTicket) -> bool {
        self.commits.covers(ticket)
    }

    fn wait_committed(&self, ticket: &CommitTicket) -> Result<(), TxnError> {
        if !self.managers.iter().all(LogManager::workers_help) {
            return self.commits.wait(ticket, WAIT_POLL, || false);
        }
        self.commits.wait(ticket, HELPING_WAIT_POLL, || {
            let mut progress = false;
            for (i, m) in self.managers.iter().enumerate() {
                let round = OWN_RECORDS.with(|own| {
                    let own = own.borrow();
                    m.help_round(&self.commits, if own.log == Some(m.id()) { &own.records } else { &[] })
                });
                match round {
                    Some(Ok(o)) => progress |= o.flushed_bytes > 0 || o.committed,
                    Some(Err(e)) => self.commits.fail(i, e),
                    None => {}
                }
            }
            progress
        })
    }

    fn shutdown(&self) {
        self.stop.store(true, Release);
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        // Last rounds here, until nothing moves.
        loop {
            let mut progress = false;
            for (i, m) in self.managers.iter().enumerate() {
                match m.flush_round(&self.commits) {
                    Ok(o) => progress |= o.flushed_bytes > 0 || o.committed,
                    Err(e) => self.commits.fail(i, e),
                }
            }
            if !progress {
                break;
            }
        }
    }

    fn device_bytes(&self) -> u64 {
        self.managers.iter().zip(&self.starts).map(|(m, s)| m.flushed() - s).sum()
    }
}

impl Drop for ParallelLogging {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use strata_pmem::Region;

    use super::HELP_EVERY_RECORDS;
    use crate::{LogDeviceKind, LoggingKind, RowKey, TableId, TableSchema, TxnDb, TxnDbOptions, WorkerId};

    const T: TableId = TableId(0);

    fn db() -> TxnDb {
        let regions = vec![Arc::new(Region::sim(1 << 20))];
        let mut o = TxnDbOptions::new(LoggingKind::Taurus { logs: 1 }, LogDeviceKind::Regions(regions), 1);
        o.logging.capacity_bytes = 1 << 20;
        let db = TxnDb::open(&o, vec![TableSchema { name: "t".into(), row_bytes: 8 }]).unwrap().0;
        for k in 0..64u64 {
            db.bulk_load(T, RowKey(k), &[0; 8]).unwrap();
        }
        db
    }

    /// Commits `n` one-row updates without waiting; their tickets.
    fn commit(db: &TxnDb, n: u64) -> Vec<crate::CommitTicket> {
        (0..n)
            .map(|k| {
                let mut t = db.begin(WorkerId(0));
                t.put(T, RowKey(k), &k.to_le_bytes()).unwrap();
                t.commit().unwrap()
            })
            .collect()
    }

    #[test]
    fn records_short_of_a_batch_commit_through_the_backstop_without_a_waiter() {
        let db = db();
        let tickets = commit(&db, HELP_EVERY_RECORDS as u64 - 1);
        let deadline = Instant::now() + Duration::from_secs(5);
        while !tickets.iter().all(|t| db.is_committed(t)) {
            assert!(Instant::now() < deadline, "no round committed a partial batch within 5 s");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_waiter_commits_its_record_at_once_and_batches_of_own_records_commit_in_log_order() {
        let db = db();
        let lone = commit(&db, 1).pop().unwrap();
        db.wait_committed(&lone).unwrap();
        assert!(db.is_committed(&lone));
        let tickets = commit(&db, 3 * HELP_EVERY_RECORDS as u64 + 1);
        db.wait_committed(tickets.last().unwrap()).unwrap();
        assert!(tickets.iter().all(|t| db.is_committed(t)), "a later record committed before an earlier one");
        let ends: Vec<u64> = tickets.iter().map(|t| t.record.unwrap().1).collect();
        assert!(ends.windows(2).all(|w| w[0] < w[1]), "one worker's records in LSN order: {ends:?}");
    }
}
