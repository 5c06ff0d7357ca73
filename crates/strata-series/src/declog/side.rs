//! [`DeclogSide`]: what a series engine running DecLog holds besides its
//! series (declog.txt section 4): the DecLog streams, the extended-timestamp
//! side table, the cut lock of the non-blocking checkpoint (4.5), the LSN
//! era, and a cache of each series' log key.
//!
//! LSN eras (our reading of 4.5's `t_LSN`): a checkpoint resets every
//! extended timestamp, so data-driven LSNs start again from 1. An update
//! entry therefore carries `era << ERA_SHIFT | data LSN`, the era counting
//! resets; replay in ascending entry LSN replays the updates before `t_LSN`
//! (older eras) before those after it, which is the paper's split. Insert
//! entries keep LSN 0. At open, the era continues above every era in the log.

use foldhash::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use strata_declog::{DecLog, DeclogError, Ticket};

use super::control_table::ControlTable;
use super::ext_ts::UTS_MAX;
use crate::model::SeriesId;

/// Bits of an update entry's LSN below the era.
pub const ERA_SHIFT: u32 = 10;
/// Eras fit in the rest of the u32 entry LSN.
pub const MAX_ERA: u32 = u32::MAX >> ERA_SHIFT;
const _: () = assert!((UTS_MAX as u32) < (1 << ERA_SHIFT));

/// Engine-side DecLog switches (the log-side ones are in `DeclogConfig`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DeclogEngineOptions {
    /// Protocol name reported and stored in the manifest
    /// ("declog-pmem", "declog-ssd").
    pub name: &'static str,
    /// Data-driven LSNs (4.1.2). Off (the Fig. 12(a) ablation): every
    /// logged transaction takes the next value of one central counter, so
    /// every transaction orders the log like an update.
    pub data_driven_lsn: bool,
    /// Checkpoints may run (the Fig. 12(a) ablation turns them off; the
    /// log must then be large enough for the whole run).
    pub checkpoints: bool,
}

impl Default for DeclogEngineOptions {
    fn default() -> Self {
        DeclogEngineOptions { name: "declog-pmem", data_driven_lsn: true, checkpoints: true }
    }
}

/// A series' key bytes in log entries and their hash (stream routing and
/// compression key).
pub(crate) struct LogKey {
    pub bytes: Vec<u8>,
    pub hash: u64,
}

pub struct DeclogSide {
    pub(crate) log: DecLog,
    pub(crate) options: DeclogEngineOptions,
    pub(crate) control: ControlTable,
    /// Transactions hold it shared from planning to apply; the checkpoint's
    /// cut takes it exclusively (so nothing is in flight at the cut).
    pub(crate) cut: RwLock<()>,
    pub(crate) era: AtomicU32,
    /// Next LSN when data-driven LSNs are off.
    pub(crate) central_lsn: AtomicU32,
    pub(crate) next_txn: AtomicU64,
    pub(crate) keys: RwLock<HashMap<SeriesId, Arc<LogKey>>>,
    /// Set while a checkpoint for lack of log space is running on a
    /// writer's ack path (the log was out of room).
    pub(crate) space_low: AtomicBool,
    /// Set when a stream passed its checkpoint threshold: the engine's
    /// background checkpointer runs one (4.5: the checkpoint runs beside
    /// the writers, not on their ack path).
    pub(crate) checkpoint_wanted: AtomicBool,
    /// Writers held back because a stream had no room for them, and for
    /// how long in total.
    pub(crate) throttles: AtomicU64,
    pub(crate) throttled_ns: AtomicU64,
}

impl DeclogSide {
    pub(crate) fn new(
        log: DecLog,
        options: DeclogEngineOptions,
        era: u32,
        central_lsn: u32,
        next_txn: u64,
    ) -> Self {
        DeclogSide {
            log,
            options,
            control: ControlTable::new(),
            cut: RwLock::new(()),
            era: AtomicU32::new(era),
            central_lsn: AtomicU32::new(central_lsn.max(1)),
            next_txn: AtomicU64::new(next_txn.max(1)),
            keys: RwLock::new(HashMap::default()),
            space_low: AtomicBool::new(false),
            checkpoint_wanted: AtomicBool::new(false),
            throttles: AtomicU64::new(0),
            throttled_ns: AtomicU64::new(0),
        }
    }

    pub fn log(&self) -> &DecLog {
        &self.log
    }

    pub fn options(&self) -> DeclogEngineOptions {
        self.options
    }

    pub fn control(&self) -> &ControlTable {
        &self.control
    }

    pub fn era(&self) -> u32 {
        self.era.load(Ordering::Relaxed)
    }

    /// Bytes between each stream's head and end, summed.
    pub fn log_bytes(&self) -> u64 {
        self.log.stream_positions().iter().map(|(head, end)| end.saturating_sub(*head)).sum()
    }

    /// The least free space of any stream, as a fraction of its capacity.
    pub fn min_free_fraction(&self) -> f64 {
        let capacity = self.log.layout().stream_capacity_bytes.max(1) as f64;
        self.log.free_bytes().into_iter().min().unwrap_or(0) as f64 / capacity
    }

    /// The entry LSN of a transaction whose data-driven LSN is `data_lsn`.
    pub(crate) fn entry_lsn(&self, data_lsn: u16) -> u32 {
        if !self.options.data_driven_lsn {
            return self.central_lsn.fetch_add(1, Ordering::Relaxed);
        }
        if data_lsn == 0 {
            0
        } else {
            (self.era() << ERA_SHIFT) | data_lsn as u32
        }
    }

    /// Waits for a ticket: the logging threads make it durable, or in
    /// inline mode (crash tests) this thread runs the pipeline.
    pub(crate) fn wait(&self, ticket: &Ticket) -> Result<(), DeclogError> {
        self.log.wait_helping(ticket)
    }
}

/// The era and central LSN to continue with after a log whose largest
/// entry LSN is `max_lsn`: above everything there.
pub(crate) fn resume_after(max_lsn: u32) -> (u32, u32) {
    let era = ((max_lsn >> ERA_SHIFT) + 1).min(MAX_ERA);
    (era, max_lsn.saturating_add(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resumed_lsns_sort_after_every_lsn_of_the_log() {
        for max in [0u32, 1, 1023, 1024, 5 << ERA_SHIFT | 7, u32::MAX - 5] {
            let (era, central) = resume_after(max);
            let first_update = (era << ERA_SHIFT) | 1;
            assert!(first_update > max || era == MAX_ERA, "max {max}: era {era}");
            assert!(central > max || max == u32::MAX, "max {max}: central {central}");
        }
    }
}
