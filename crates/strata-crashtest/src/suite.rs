//! The crash-test suite behind `strata crashtest`: which protocols run on
//! which medium, with what budget, and how a failure is reproduced.
//!
//! Budgets: the default run checks well over 100,000 images in total (at
//! least 150,000 more on the nine series-over-DecLog lines, two to three
//! minutes of it, and about 535,000 on the fourteen transactional-table
//! lines, five to six minutes more, and over 100,000 on the two FIR lines,
//! seconds) and takes several minutes on two cores;
//! `quick` is sized for CI.

use crate::fs_harness::{reproduce_fs_failure, run_fs_crashtest, FsCrashConfig, FsCrashProtocol};
use crate::oracle::{CrashReport, OracleCounts};
use crate::pmem_harness::{reproduce_pmem_failure, run_pmem_crashtest, PmemCrashConfig, PmemCrashProtocol};

use crate::declog_stream::DeclogPmemCrash;
use crate::events_flank::FlankPmemCrash;
use crate::events_ooo::OooPmemCrash;
use crate::events_stream::StreamOooPmemCrash;
use crate::events_translation::PmemTranslationCrash;
use crate::fir_pmem::{FirLine, FirPmemCrash};
use crate::halloc_pmem::HallocCrashProtocol;
use crate::serial_pmem::SerialPmemCrash;
use crate::serial_ssd::SerialSsdCrash;
use crate::series_compaction::SeriesCompactionCrash;
use crate::series_declog::{DeclogVariant, SeriesDeclogCrash};
use crate::series_pmem::SeriesPmemCrash;
use crate::series_ssd::SeriesSsdCrash;
use crate::txn_lines::{pmem_line, ssd_line, TxnLine};
use crate::txn_pmem::{reproduce_txn_pmem_failure, run_txn_pmem_crashtest, TxnPmemConfig, TxnPmemCrash};

/// One protocol on one medium.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SuiteTarget {
    SerialPmem,
    SerialSsd,
    HallocPmem,
    SeriesPmem,
    SeriesSsd,
    /// Block-file compaction after every few checkpoints, crashed inside it.
    SeriesCompactionSsd,
    DeclogStreamPmem,
    /// The series engine over DecLog, one line per variant.
    SeriesDeclogPmem(DeclogVariant),
    /// The event store's PMem translation array with the SSD block file.
    EventsTranslationPmem,
    /// The event store's out-of-order queue on PMem (indexed).
    EventsOooQueuePmem,
    /// The TAB+-tree's right flank on PMem, persisted every `k` events.
    EventsFlankPmem(FlankBatch),
    /// An event stream (PMem flank + PMem OOO queue) with out-of-order
    /// events and crash-atomic merges of the queue into the tree.
    EventsStreamOooPmem,
    /// The same with the DRAM queue: merges spill their input to a file
    /// first, so an interrupted merge is resumed from it.
    EventsStreamOooDramQueue,
    /// Full leaves: merges shift runs of leaves and append long tails.
    EventsStreamShiftPmem,
    /// Aggregates and index nodes on PMem (completed index nodes refreshed
    /// in place by merges).
    EventsStreamOooAllPmem,
    /// Transactional tables, one simulated region per log.
    TxnPmem(TxnLine),
    /// Transactional tables, log files on the fault-injecting file system.
    TxnSsd(TxnLine),
    /// FIR's log-free tables on the simulator.
    FirPmem(FirLine),
}

/// The flush batch sizes of the PMem right flank that get a crash line.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FlankBatch {
    K1,
    K25,
}

impl FlankBatch {
    fn events(self) -> u32 {
        match self {
            FlankBatch::K1 => 1,
            FlankBatch::K25 => 25,
        }
    }
}

impl SuiteTarget {
    pub const ALL: [SuiteTarget; 40] = [
        SuiteTarget::SerialPmem,
        SuiteTarget::SerialSsd,
        SuiteTarget::HallocPmem,
        SuiteTarget::SeriesPmem,
        SuiteTarget::SeriesSsd,
        SuiteTarget::SeriesCompactionSsd,
        SuiteTarget::DeclogStreamPmem,
        SuiteTarget::SeriesDeclogPmem(DeclogVariant::Full),
        SuiteTarget::SeriesDeclogPmem(DeclogVariant::Strict),
        SuiteTarget::SeriesDeclogPmem(DeclogVariant::CentralLsn),
        SuiteTarget::SeriesDeclogPmem(DeclogVariant::OneThread),
        SuiteTarget::SeriesDeclogPmem(DeclogVariant::Raw),
        SuiteTarget::SeriesDeclogPmem(DeclogVariant::NoCheckpoints),
        SuiteTarget::SeriesDeclogPmem(DeclogVariant::OutOfOrderLoad),
        SuiteTarget::SeriesDeclogPmem(DeclogVariant::SamePoint),
        SuiteTarget::SeriesDeclogPmem(DeclogVariant::PerKeyRuns),
        SuiteTarget::EventsTranslationPmem,
        SuiteTarget::EventsOooQueuePmem,
        SuiteTarget::EventsFlankPmem(FlankBatch::K1),
        SuiteTarget::EventsFlankPmem(FlankBatch::K25),
        SuiteTarget::EventsStreamOooPmem,
        SuiteTarget::EventsStreamOooDramQueue,
        SuiteTarget::EventsStreamShiftPmem,
        SuiteTarget::EventsStreamOooAllPmem,
        SuiteTarget::TxnPmem(TxnLine::Serial),
        SuiteTarget::TxnPmem(TxnLine::Taurus2),
        SuiteTarget::TxnPmem(TxnLine::Taurus4),
        SuiteTarget::TxnPmem(TxnLine::Taurus2Occ),
        SuiteTarget::TxnSsd(TxnLine::Serial),
        SuiteTarget::TxnSsd(TxnLine::Taurus2),
        SuiteTarget::TxnSsd(TxnLine::Taurus4),
        SuiteTarget::TxnSsd(TxnLine::Taurus2Occ),
        SuiteTarget::TxnPmem(TxnLine::SerialCmd),
        SuiteTarget::TxnPmem(TxnLine::Taurus2Cmd),
        SuiteTarget::TxnPmem(TxnLine::Silo2),
        SuiteTarget::TxnSsd(TxnLine::SerialCmd),
        SuiteTarget::TxnSsd(TxnLine::Taurus2Cmd),
        SuiteTarget::TxnSsd(TxnLine::Silo2),
        SuiteTarget::FirPmem(FirLine::Commit),
        SuiteTarget::FirPmem(FirLine::Checkpoint),
    ];

    /// `protocol/medium`, as accepted by `--only`.
    pub fn label(self) -> &'static str {
        match self {
            SuiteTarget::SerialPmem => "serial/pmem",
            SuiteTarget::SerialSsd => "serial/ssd",
            SuiteTarget::HallocPmem => "halloc/pmem",
            SuiteTarget::SeriesPmem => "series-serial/pmem",
            SuiteTarget::SeriesSsd => "series-serial/ssd",
            SuiteTarget::SeriesCompactionSsd => "series-compaction/ssd",
            SuiteTarget::DeclogStreamPmem => "declog-stream/pmem",
            SuiteTarget::SeriesDeclogPmem(v) => match v {
                DeclogVariant::Full => "series-declog/pmem",
                DeclogVariant::Strict => "series-declog-strict/pmem",
                DeclogVariant::CentralLsn => "series-declog-central-lsn/pmem",
                DeclogVariant::OneThread => "series-declog-1thread/pmem",
                DeclogVariant::Raw => "series-declog-raw/pmem",
                DeclogVariant::NoCheckpoints => "series-declog-nockpt/pmem",
                DeclogVariant::OutOfOrderLoad => "series-declog-ooo-load/pmem",
                DeclogVariant::SamePoint => "series-declog-same-point/pmem",
                DeclogVariant::PerKeyRuns => "series-declog-perkey-runs/pmem",
            },
            SuiteTarget::EventsTranslationPmem => "events-translation/pmem",
            SuiteTarget::EventsOooQueuePmem => "events-ooo-queue/pmem",
            SuiteTarget::EventsFlankPmem(FlankBatch::K1) => "events-flank-k1/pmem",
            SuiteTarget::EventsFlankPmem(FlankBatch::K25) => "events-flank-k25/pmem",
            SuiteTarget::EventsStreamOooPmem => "events-stream-ooo/pmem",
            SuiteTarget::EventsStreamOooDramQueue => "events-stream-ooo-dramq/pmem",
            SuiteTarget::EventsStreamShiftPmem => "events-stream-shift/pmem",
            SuiteTarget::EventsStreamOooAllPmem => "events-stream-ooo-allpmem/pmem",
            SuiteTarget::TxnPmem(TxnLine::Serial) => "txn-serial/pmem",
            SuiteTarget::TxnPmem(TxnLine::Taurus2) => "txn-taurus2/pmem",
            SuiteTarget::TxnPmem(TxnLine::Taurus4) => "txn-taurus4/pmem",
            SuiteTarget::TxnPmem(TxnLine::Taurus2Occ) => "txn-taurus2-occ/pmem",
            SuiteTarget::TxnSsd(TxnLine::Serial) => "txn-serial/ssd",
            SuiteTarget::TxnSsd(TxnLine::Taurus2) => "txn-taurus2/ssd",
            SuiteTarget::TxnSsd(TxnLine::Taurus4) => "txn-taurus4/ssd",
            SuiteTarget::TxnSsd(TxnLine::Taurus2Occ) => "txn-taurus2-occ/ssd",
            SuiteTarget::TxnPmem(TxnLine::SerialCmd) => "txn-serial-cmd/pmem",
            SuiteTarget::TxnPmem(TxnLine::Taurus2Cmd) => "txn-taurus2-cmd/pmem",
            SuiteTarget::TxnPmem(TxnLine::Silo2) => "txn-silo2/pmem",
            SuiteTarget::TxnSsd(TxnLine::SerialCmd) => "txn-serial-cmd/ssd",
            SuiteTarget::TxnSsd(TxnLine::Taurus2Cmd) => "txn-taurus2-cmd/ssd",
            SuiteTarget::TxnSsd(TxnLine::Silo2) => "txn-silo2/ssd",
            SuiteTarget::FirPmem(FirLine::Commit) => "fir-commit/pmem",
            SuiteTarget::FirPmem(FirLine::Checkpoint) => "fir-checkpoint/pmem",
        }
    }

    pub fn parse(label: &str) -> Option<SuiteTarget> {
        SuiteTarget::ALL.into_iter().find(|t| t.label() == label)
    }
}

#[derive(Clone, Debug)]
pub struct SuiteOptions {
    pub seed: u64,
    /// CI-sized workloads.
    pub quick: bool,
    /// Cap on images per protocol and medium.
    pub images: Option<u64>,
    pub threads: usize,
}

impl Default for SuiteOptions {
    fn default() -> Self {
        SuiteOptions {
            seed: 0x5eed,
            quick: false,
            images: None,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

enum Protocol {
    Pmem(Box<dyn PmemCrashProtocol>, PmemCrashConfig),
    Ssd(Box<dyn FsCrashProtocol>, FsCrashConfig),
    /// One simulated region per log: its own harness.
    TxnPmem(Box<TxnPmemCrash>, TxnPmemConfig),
}

fn protocol(target: SuiteTarget, o: &SuiteOptions) -> Protocol {
    let pmem_cfg = |samples: u64| PmemCrashConfig {
        seed: o.seed,
        samples_per_point: samples,
        max_images: o.images,
        threads: o.threads,
        ..Default::default()
    };
    match target {
        SuiteTarget::SerialPmem => {
            let txns = if o.quick { 40 } else { 320 };
            let samples = if o.quick { 24 } else { 200 };
            Protocol::Pmem(Box::new(SerialPmemCrash::new(o.seed, txns)), pmem_cfg(samples))
        }
        SuiteTarget::SerialSsd => {
            let txns = if o.quick { 60 } else { 1500 };
            Protocol::Ssd(
                Box::new(SerialSsdCrash::new(o.seed, txns)),
                FsCrashConfig { seed: o.seed, max_images: o.images },
            )
        }
        SuiteTarget::HallocPmem => {
            let ops = if o.quick { 60 } else { 400 };
            let samples = if o.quick { 16 } else { 64 };
            Protocol::Pmem(Box::new(HallocCrashProtocol::new(o.seed, ops)), pmem_cfg(samples))
        }
        SuiteTarget::SeriesPmem => {
            let txns = if o.quick { 30 } else { 150 };
            let samples = if o.quick { 4 } else { 24 };
            Protocol::Pmem(Box::new(SeriesPmemCrash::new(o.seed, txns)), pmem_cfg(samples))
        }
        SuiteTarget::DeclogStreamPmem => {
            // The DecLog log streams alone (issue 4 in progress): inserts and
            // updates with LSN dependencies, checkpoints, wrap-around.
            let txns = if o.quick { 120 } else { 600 };
            let samples = if o.quick { 8 } else { 48 };
            Protocol::Pmem(Box::new(DeclogPmemCrash::new(o.seed, txns)), pmem_cfg(samples))
        }
        SuiteTarget::SeriesDeclogPmem(variant) => {
            // The engine over DecLog: each image opens the log and the
            // engine, replays and reads every point (a quarter also resume
            // and restart), so images cost more than the log-level lines':
            // about 20,000 images a line, 0.2-0.5 ms each. Small points are
            // enumerated, larger ones sampled. Without checkpoints the log
            // holds the whole run, so that line runs fewer steps; so does
            // the per-key line, whose steps of 20-60 points log several
            // batches each (and checkpoint first: about 2 ms an image).
            let no_checkpoints = variant == DeclogVariant::NoCheckpoints;
            let fewer = no_checkpoints || variant == DeclogVariant::PerKeyRuns;
            let steps = match (o.quick, fewer) {
                (true, _) => 60,
                (false, true) => 120,
                (false, false) => 200,
            };
            // The raw and no-checkpoint lines have had fewer crash points
            // since a transaction logs one entry per series (14,761 and
            // 14,932 images at 16 and 24 samples, seed 24301): more samples
            // per point keep them past 15,000.
            let (exhaustive_limit, samples) = match (o.quick, no_checkpoints) {
                (true, _) => (16, 4),
                (false, true) => (64, 28),
                (false, false) if variant == DeclogVariant::Raw => (64, 20),
                (false, false) => (64, 16),
            };
            let cfg = PmemCrashConfig { exhaustive_limit, ..pmem_cfg(samples) };
            Protocol::Pmem(Box::new(SeriesDeclogCrash::new(o.seed, variant, steps)), cfg)
        }
        SuiteTarget::EventsTranslationPmem => {
            // Nodes appended to the block file and synced, their translations
            // set in the flat PMem array (256-byte batches); chronicledb-pmem.txt 4.2.
            let nodes = if o.quick { 60 } else { 140 };
            let samples = if o.quick { 4 } else { 16 };
            Protocol::Pmem(Box::new(PmemTranslationCrash::new(o.seed, nodes)), pmem_cfg(samples))
        }
        SuiteTarget::EventsOooQueuePmem => {
            // Out-of-order events pushed (one fence each), merges and
            // truncations; chronicledb-pmem.txt 4.3.
            let events = if o.quick { 60 } else { 150 };
            let samples = if o.quick { 4 } else { 16 };
            Protocol::Pmem(Box::new(OooPmemCrash::new(o.seed, events)), pmem_cfg(samples))
        }
        SuiteTarget::EventsFlankPmem(batch) => {
            // In-order events appended to the TAB+-tree with its right flank
            // on PMem, acknowledged per persisted batch of k; full nodes
            // written out to the block file (chronicledb-pmem.txt 4.1).
            let samples = if o.quick { 2 } else { 16 };
            Protocol::Pmem(Box::new(FlankPmemCrash::new(batch.events())), pmem_cfg(samples))
        }
        SuiteTarget::EventsStreamOooPmem => {
            // 70 events, 40 % late, a queue of 4, flank batches of 5: six
            // merges with leaf rewrites and carries (chronicledb-pmem.txt 4.3).
            let samples = if o.quick { 8 } else { 128 };
            Protocol::Pmem(Box::new(StreamOooPmemCrash::new(5)), pmem_cfg(samples))
        }
        SuiteTarget::EventsStreamOooDramQueue => {
            // The same workload with the DRAM queue under the PMem flank.
            let samples = if o.quick { 8 } else { 128 };
            Protocol::Pmem(Box::new(StreamOooPmemCrash::new(5).with_dram_queue()), pmem_cfg(samples))
        }
        SuiteTarget::EventsStreamShiftPmem => {
            // Full leaves, half the events late, a queue of 12: every merge
            // shifts runs of leaves and appends tails longer than a leaf.
            let samples = if o.quick { 8 } else { 96 };
            Protocol::Pmem(Box::new(StreamOooPmemCrash::shifting(5)), pmem_cfg(samples))
        }
        SuiteTarget::EventsStreamOooAllPmem => {
            let samples = if o.quick { 8 } else { 64 };
            Protocol::Pmem(Box::new(StreamOooPmemCrash::all_pmem(5)), pmem_cfg(samples))
        }
        SuiteTarget::SeriesSsd => {
            let txns = if o.quick { 24 } else { 200 };
            Protocol::Ssd(
                Box::new(SeriesSsdCrash::new(o.seed, txns)),
                FsCrashConfig { seed: o.seed, max_images: o.images },
            )
        }
        SuiteTarget::SeriesCompactionSsd => {
            // A checkpoint and a compaction every 3 requests; crash points
            // only inside the compactions (about 11 images each).
            let txns = if o.quick { 90 } else { 360 };
            Protocol::Ssd(
                Box::new(SeriesCompactionCrash::new(o.seed, txns)),
                FsCrashConfig { seed: o.seed, max_images: o.images },
            )
        }
        SuiteTarget::TxnPmem(line) => {
            let (p, cfg) = pmem_line(line, o);
            Protocol::TxnPmem(Box::new(p), cfg)
        }
        SuiteTarget::TxnSsd(line) => {
            let (p, cfg) = ssd_line(line, o);
            Protocol::Ssd(Box::new(p), cfg)
        }
        SuiteTarget::FirPmem(line) => {
            // Transactions of 1-3 writes on two regions, a clean restart
            // halfway; the checkpoint line checkpoints inside every sixth.
            let txns = if o.quick { 24 } else { 800 };
            let samples = if o.quick { 4 } else { 128 };
            Protocol::Pmem(Box::new(FirPmemCrash::new(line, o.seed, txns)), pmem_cfg(samples))
        }
    }
}

/// Runs one target and returns its report.
pub fn run_target(target: SuiteTarget, o: &SuiteOptions) -> CrashReport {
    match protocol(target, o) {
        Protocol::Pmem(p, cfg) => run_pmem_crashtest(p.as_ref(), &cfg),
        Protocol::Ssd(p, cfg) => run_fs_crashtest(p.as_ref(), &cfg),
        Protocol::TxnPmem(p, cfg) => run_txn_pmem_crashtest(&p, &cfg),
    }
}

/// Runs `targets` in order, calling `each` with every report as it completes.
pub fn run_suite(
    o: &SuiteOptions,
    targets: &[SuiteTarget],
    mut each: impl FnMut(&CrashReport),
) -> Vec<CrashReport> {
    targets
        .iter()
        .map(|t| {
            let r = run_target(*t, o);
            each(&r);
            r
        })
        .collect()
}

/// Replays one image named by a failure report.
pub fn reproduce(
    target: SuiteTarget,
    o: &SuiteOptions,
    point: u64,
    image: u64,
) -> (OracleCounts, Option<String>) {
    match protocol(target, o) {
        Protocol::Pmem(p, cfg) => reproduce_pmem_failure(p.as_ref(), &cfg, point, image),
        Protocol::Ssd(p, _) => reproduce_fs_failure(p.as_ref(), o.seed, point, image),
        Protocol::TxnPmem(p, cfg) => reproduce_txn_pmem_failure(&p, &cfg, point, image),
    }
}
