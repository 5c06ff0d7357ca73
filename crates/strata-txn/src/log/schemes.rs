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

thread_local! {
    static RECORD: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
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
        let (lsn, record_len, mask) = RECORD.with_borrow_mut(|buf| {
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
            if let Some(Err(e)) = m.help_round(&self.commits, Some(&written)) {
                self.commits.fail(log, e);
            }
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
                match m.help_round(&self.commits, None) {
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
