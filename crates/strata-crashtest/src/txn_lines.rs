//! The crash lines of transactional tables (`strata-txn`): which logging
//! schemes get one, on which medium, and their sizes in the suite's quick
//! (CI) and full budgets. The PMem lines are `crate::txn_pmem`, the SSD
//! lines `crate::txn_ssd`; both run `crate::txn_workload` through
//! `crate::txn_driver` and judge images with `crate::txn_oracle`.
//!
//! Lines, each on PMem and SSD: `txn-serial`, `txn-taurus2`, `txn-taurus4`,
//! `txn-taurus2-occ` (data logging), `txn-serial-cmd`, `txn-taurus2-cmd`
//! (command logging: the workload's stored procedure, write-after-read
//! dependencies counted) and `txn-silo2` (Silo-R, epochs on demand).
//!
//! Sizes: an image costs one `TxnDb::open` (its log managers and two replay
//! threads started and stopped, a session's log replayed), so sessions are
//! short and many. Measured on two cores shared with other work (seed
//! 0x5eed_0016): quick, about 29,500 images over the fourteen lines in
//! about 20 s of a debug build (`cargo test`; each new line in 0.6 to 1.8
//! s); full, about 535,000 images in about 350 s of a release build, the
//! command and Silo-R lines 215,000 of them in about 110 s. The largest
//! is `txn-taurus4/pmem` (its anchored sessions' regions are large, and a
//! recovery zeroes a torn tail word by word in the simulator).

use strata_txn::{CcKind, LogMode, LoggingKind};

use crate::fs_harness::FsCrashConfig;
use crate::suite::SuiteOptions;
use crate::txn_pmem::{TxnPmemConfig, TxnPmemCrash};
use crate::txn_ssd::TxnSsdCrash;

/// The logging scheme of a line.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TxnLogging {
    /// One log, one order (taurus.txt's baseline).
    Serial,
    /// Taurus with `logs` logs.
    Taurus { logs: usize },
    /// Taurus with `logs` logs under OCC (taurus.txt Algorithm 6).
    TaurusOcc { logs: usize },
    /// One log of commands (stored procedures re-run at recovery).
    SerialCommand,
    /// Taurus with `logs` logs of commands: LVs also carry write-after-read
    /// dependencies (taurus.txt 2.2).
    TaurusCommand { logs: usize },
    /// Silo-R with `logs` logs (data, OCC, durable by epoch), its epochs
    /// advanced on demand so the driver fixes every medium operation.
    SiloR { logs: usize },
}

impl TxnLogging {
    pub fn logs(self) -> usize {
        match self {
            TxnLogging::Serial | TxnLogging::SerialCommand => 1,
            TxnLogging::Taurus { logs }
            | TxnLogging::TaurusOcc { logs }
            | TxnLogging::TaurusCommand { logs }
            | TxnLogging::SiloR { logs } => logs,
        }
    }

    /// Two workers per log.
    pub fn workers(self) -> usize {
        2 * self.logs()
    }

    pub fn kind(self) -> LoggingKind {
        match self {
            TxnLogging::Serial | TxnLogging::SerialCommand => LoggingKind::Serial,
            TxnLogging::Taurus { logs }
            | TxnLogging::TaurusOcc { logs }
            | TxnLogging::TaurusCommand { logs } => LoggingKind::Taurus { logs },
            TxnLogging::SiloR { logs } => LoggingKind::SiloR { logs },
        }
    }

    /// What the records hold: commands run through the workload's stored
    /// procedure (`crate::txn_workload::procedures`), or rows.
    pub fn mode(self) -> LogMode {
        match self {
            TxnLogging::SerialCommand | TxnLogging::TaurusCommand { .. } => LogMode::Command,
            _ => LogMode::Data,
        }
    }

    /// The concurrency control the line's transactions run under (Silo-R's
    /// own is OCC).
    pub fn cc(self) -> CcKind {
        match self {
            TxnLogging::TaurusOcc { .. } | TxnLogging::SiloR { .. } => CcKind::Occ,
            _ => CcKind::TwoPlNoWait,
        }
    }

    /// Whether commits wait for epochs (Silo-R): acknowledged only once an
    /// epoch mark covers them, which `TxnDb::advance_epoch` writes.
    pub fn epochs(self) -> bool {
        matches!(self, TxnLogging::SiloR { .. })
    }

    /// The protocol name in the `CRASHTEST` line.
    pub fn name(self) -> String {
        match self {
            TxnLogging::Serial => "txn-serial".into(),
            TxnLogging::Taurus { logs } => format!("txn-taurus{logs}"),
            TxnLogging::TaurusOcc { logs } => format!("txn-taurus{logs}-occ"),
            TxnLogging::SerialCommand => "txn-serial-cmd".into(),
            TxnLogging::TaurusCommand { logs } => format!("txn-taurus{logs}-cmd"),
            TxnLogging::SiloR { logs } => format!("txn-silo{logs}"),
        }
    }
}

/// The schemes with a line on each medium.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TxnLine {
    Serial,
    Taurus2,
    Taurus4,
    Taurus2Occ,
    SerialCmd,
    Taurus2Cmd,
    Silo2,
}

impl TxnLine {
    pub const ALL: [TxnLine; 7] = [
        TxnLine::Serial,
        TxnLine::Taurus2,
        TxnLine::Taurus4,
        TxnLine::Taurus2Occ,
        TxnLine::SerialCmd,
        TxnLine::Taurus2Cmd,
        TxnLine::Silo2,
    ];

    pub fn logging(self) -> TxnLogging {
        match self {
            TxnLine::Serial => TxnLogging::Serial,
            TxnLine::Taurus2 => TxnLogging::Taurus { logs: 2 },
            TxnLine::Taurus4 => TxnLogging::Taurus { logs: 4 },
            TxnLine::Taurus2Occ => TxnLogging::TaurusOcc { logs: 2 },
            TxnLine::SerialCmd => TxnLogging::SerialCommand,
            TxnLine::Taurus2Cmd => TxnLogging::TaurusCommand { logs: 2 },
            TxnLine::Silo2 => TxnLogging::SiloR { logs: 2 },
        }
    }
}

/// (sessions, transactions per session) of a line: PMem images are fewer
/// per transaction (every combination of a wave's logs, sampled torn ones)
/// but checked on every core; SSD images (about six per transaction) are
/// checked on one thread by `crate::fs_harness`. Silo-R's waves append
/// twice to every log they touch (records, then epoch marks to every log),
/// which about doubles the images per transaction: it runs half the
/// sessions (rounded up).
fn sessions(logging: TxnLogging, quick: bool, pmem: bool) -> (usize, usize) {
    let (sessions, txns): (usize, usize) = match (quick, pmem) {
        (true, true) => (3, 60),
        (true, false) => (5, 60),
        (false, true) => (18, 80),
        (false, false) => (52, 100),
    };
    match logging {
        TxnLogging::SiloR { .. } => (sessions.div_ceil(2), txns),
        _ => (sessions, txns),
    }
}

/// The PMem line of `line` in the suite.
pub fn pmem_line(line: TxnLine, o: &SuiteOptions) -> (TxnPmemCrash, TxnPmemConfig) {
    let (sessions, txns) = sessions(line.logging(), o.quick, true);
    let cfg = TxnPmemConfig {
        seed: o.seed,
        torn_per_log: if o.quick { 8 } else { 24 },
        max_images: o.images,
        threads: o.threads,
        ..Default::default()
    };
    (TxnPmemCrash::new(o.seed, line.logging(), sessions, txns), cfg)
}

/// The SSD line of `line` in the suite.
pub fn ssd_line(line: TxnLine, o: &SuiteOptions) -> (TxnSsdCrash, FsCrashConfig) {
    let (sessions, txns) = sessions(line.logging(), o.quick, false);
    let cfg = FsCrashConfig { seed: o.seed, max_images: o.images };
    (TxnSsdCrash::new(o.seed, line.logging(), sessions, txns), cfg)
}
