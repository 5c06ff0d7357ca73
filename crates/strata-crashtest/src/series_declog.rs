//! Crash test of the series engine running DecLog (declog.txt section 4,
//! end to end: data-driven LSNs, decentralized streams, compression, the
//! non-blocking checkpoint and replay) on the PMem simulator, with block
//! files and manifests on an in-memory file system; one line per DecLog
//! variant ([`DeclogVariant`]).
//!
//! The workload (`crate::series_declog_workload`) runs on one thread in
//! [`FlushMode::Inline`], its transactions in groups of 1 to
//! [`MAX_GROUP_TXNS`] (`SeriesEngine::execute_group`, as concurrent clients
//! submit them), so a group returns once its members are durable: that
//! return acknowledges each of them. Every `checkpoint_every`
//! steps it checkpoints (DecLog's cut on PMem, block file and manifest on
//! the file system, then `truncate_to` on PMem); the engine also
//! checkpoints by itself when a stream runs low, and `CREATE DATABASE` is a
//! checkpoint too. The file system is recovered as of the crash point
//! (`crate::recording_fs`).
//!
//! Each image (`crate::series_declog_recovery`, under a watchdog that turns
//! a hang or a panic into a reported failure): open DecLog (parse, seal, new
//! epoch), open the engine (the manifest's checkpoint, then replay with
//! `replay_threads`), read every point and check the oracle
//! (`crate::series_declog_oracle`). On images of every
//! `resume_every_ops`-th crash point the recovered engine then goes on:
//! one more transaction that updates the most rewritten live point,
//! re-writes a point deleted in the log, deletes another and appends one;
//! after a second restart its state must be the recovered one plus that
//! transaction (LSN eras, floors and stream ends resume correctly).
//!
//! A failure of the run itself (an `execute` error, a read returning a value
//! other than the model's) is reported on every image, as `partial`.

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::oracle::{AckLog, OracleCounts};
use crate::pmem_harness::PmemCrashProtocol;
use parking_lot::RwLock;
use strata_declog::{DecLog, DeclogConfig, DeclogStats, FlushMode, Recovered};
use strata_media::TxnId;
use strata_pmem::Region;
use strata_series::{DeclogEngineOptions, SeriesStore, TxnOp};

use crate::error::{CheckResult, CrashCheckError};
use crate::recording_fs::{RecordingFs, Snapshots};
use crate::series_declog_oracle::check;
use crate::series_declog_recovery::{continuation, panic_message, resume, Opener, LOG_BASE};
use crate::series_declog_workload::{DeclogPlan, Model, Step, Val, WorkloadShape, DATABASES};

/// Key-table slots per stream: the workload has 12 series.
const KEY_SLOTS: u32 = 16;
/// Most transactions the workload runs as one group.
const MAX_GROUP_TXNS: usize = 4;

/// The DecLog configurations under test.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DeclogVariant {
    /// The full design: relaxed ordering, data-driven LSNs, 2 streams,
    /// compression, 256-byte alignment, checkpoints.
    Full,
    /// Strict ordering (the Fig. 12(a) baseline).
    Strict,
    /// One central LSN counter instead of data-driven LSNs.
    CentralLsn,
    /// One logging thread (one stream).
    OneThread,
    /// No compression, 8-byte alignment.
    Raw,
    /// No checkpoints but the initial `CREATE DATABASE` barrier (the log
    /// holds the whole run).
    NoCheckpoints,
}

impl DeclogVariant {
    pub const ALL: [DeclogVariant; 6] = [
        DeclogVariant::Full,
        DeclogVariant::Strict,
        DeclogVariant::CentralLsn,
        DeclogVariant::OneThread,
        DeclogVariant::Raw,
        DeclogVariant::NoCheckpoints,
    ];

    /// The protocol name in the `CRASHTEST` line.
    pub fn name(self) -> &'static str {
        match self {
            DeclogVariant::Full => "series-declog",
            DeclogVariant::Strict => "series-declog-strict",
            DeclogVariant::CentralLsn => "series-declog-central-lsn",
            DeclogVariant::OneThread => "series-declog-1thread",
            DeclogVariant::Raw => "series-declog-raw",
            DeclogVariant::NoCheckpoints => "series-declog-nockpt",
        }
    }

    fn threads(self) -> usize {
        if self == DeclogVariant::OneThread {
            1
        } else {
            2
        }
    }

    fn config(self) -> DeclogConfig {
        let raw = self == DeclogVariant::Raw;
        DeclogConfig {
            threads: self.threads(),
            queues_per_thread: 2,
            // Short queues: a transaction's entries in one stream often span queues.
            queue_len: 3,
            align_bytes: if raw { 8 } else { 256 },
            flush_mode: FlushMode::Inline,
            compression: !raw,
            key_slots: KEY_SLOTS,
            strict_ordering: self == DeclogVariant::Strict,
        }
    }

    fn engine_options(self) -> DeclogEngineOptions {
        DeclogEngineOptions {
            name: "declog-pmem",
            data_driven_lsn: self != DeclogVariant::CentralLsn,
            checkpoints: self != DeclogVariant::NoCheckpoints,
        }
    }
}

/// What the run left for the checks.
#[derive(Default)]
struct RunRecord {
    snapshots: Snapshots,
    /// Problems of the run itself (reported on every image).
    errors: Vec<String>,
    stats: RunStats,
}

/// Counters of the last run, for tests that the workload reaches the
/// behaviour it is meant to crash.
#[derive(Copy, Clone, Debug, Default)]
pub struct RunStats {
    pub steps_acknowledged: u64,
    pub checkpoints: u64,
    pub file_system_states: u64,
    /// The furthest stream position written (past the stream size: the ring wrapped).
    pub max_stream_end: u64,
    pub log: DeclogStats,
}

/// The series engine over DecLog on the simulator, one [`DeclogVariant`].
pub struct SeriesDeclogCrash {
    pub seed: u64,
    pub variant: DeclogVariant,
    /// Explicit checkpoint every this many steps (0: never).
    pub checkpoint_every: u64,
    /// Bytes of each stream.
    pub stream_bytes: u64,
    /// The resume check runs on crash points whose op is a multiple of this (0: never).
    pub resume_every_ops: u64,
    pub replay_threads: usize,
    plan: DeclogPlan,
    record: RwLock<RunRecord>,
}

impl SeriesDeclogCrash {
    pub fn new(seed: u64, variant: DeclogVariant, steps: usize) -> Self {
        let no_checkpoints = variant == DeclogVariant::NoCheckpoints;
        // Small streams with checkpoints, so rings wrap and the engine also
        // checkpoints for lack of space (below a quarter free; a quarter
        // must hold the largest transaction, 8 entries of one 256-byte
        // batch each); without, room for every step (they average about
        // 400 bytes in the fuller stream).
        let stream_bytes = if no_checkpoints { (steps as u64 * 640).next_multiple_of(4096) } else { 12288 };
        SeriesDeclogCrash {
            seed,
            variant,
            checkpoint_every: if no_checkpoints { 0 } else { 25 },
            stream_bytes,
            resume_every_ops: 4,
            replay_threads: variant.threads(),
            // Each variant runs its own workload.
            plan: DeclogPlan::new(seed ^ ((variant as u64 + 1) << 40), WorkloadShape { steps, max_ops: 4 }),
            record: RwLock::new(RunRecord::default()),
        }
    }

    /// Counters of the last run.
    pub fn run_stats(&self) -> RunStats {
        self.record.read().stats
    }

    /// Problems the last run met (engine errors, wrong reads).
    pub fn run_errors(&self) -> Vec<String> {
        self.record.read().errors.clone()
    }

    fn area_bytes(&self) -> u64 {
        strata_declog::layout::Layout::footprint_bytes_for(&self.variant.config(), self.stream_bytes)
    }

    fn opener(&self) -> Opener {
        Opener { engine: self.variant.engine_options(), replay_threads: self.replay_threads }
    }

    /// How many steps from `i` run as one `execute_group`: 1 to
    /// [`MAX_GROUP_TXNS`] transactions of one database, by a hash of the seed
    /// and the position, never across a `CREATE DATABASE` or a checkpoint.
    fn group_at(&self, i: usize) -> usize {
        let steps = &self.plan.steps;
        let Step::Txn { db, .. } = &steps[i] else { return 1 };
        let mut h =
            (self.seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        let want = 1 + (h % MAX_GROUP_TXNS as u64) as usize;
        let mut n = 1;
        while n < want && i + n < steps.len() {
            let same_db = matches!(&steps[i + n], Step::Txn { db: d, .. } if d == db);
            let checkpoint_between =
                self.checkpoint_every > 0 && ((i + n) as u64).is_multiple_of(self.checkpoint_every);
            if !same_db || checkpoint_between {
                break;
            }
            n += 1;
        }
        n
    }

    fn run_workload(&self, region: &Arc<Region>, fs: &RecordingFs, acks: &AckLog) -> RunRecord {
        let mut record = RunRecord::default();
        let seed = self.seed;
        let log = match DecLog::format(region.clone(), LOG_BASE, self.area_bytes(), self.variant.config()) {
            Ok(log) => log,
            Err(e) => {
                record.errors.push(format!("seed {seed}: DecLog::format: {e}"));
                return record;
            }
        };
        let engine = match self.opener().open_engine(Arc::new(fs.clone()), log, Recovered::default()) {
            Ok(e) => e,
            Err(e) => {
                record.errors.push(format!("seed {seed}: {e}"));
                return record;
            }
        };
        fs.settle();
        let steps = &self.plan.steps;
        let mut i = 0;
        'steps: while i < steps.len() {
            let group = self.group_at(i);
            let first_t = i as u64 + 1;
            let results: Vec<Result<(), CrashCheckError>> = match &steps[i] {
                Step::CreateDatabase(d) => {
                    vec![engine
                        .create_database(DATABASES[*d as usize])
                        .map_err(CrashCheckError::step("create_database"))]
                }
                Step::Txn { db, .. } => {
                    let txns: Vec<Vec<TxnOp>> = steps[i..i + group]
                        .iter()
                        .map(|s| match s {
                            Step::Txn { ops, .. } => ops.clone(),
                            Step::CreateDatabase(_) => unreachable!("groups hold transactions only"),
                        })
                        .collect();
                    let outcomes = engine.execute_group(DATABASES[*db as usize], &txns);
                    outcomes
                        .into_iter()
                        .zip(&steps[i..i + group])
                        .enumerate()
                        .map(|(k, (out, step))| {
                            let Step::Txn { reads, .. } = step else { unreachable!() };
                            let t = first_t + k as u64;
                            let out = out.map_err(CrashCheckError::step("execute_group"))?;
                            if !out.write.rejected.is_empty() {
                                record
                                    .errors
                                    .push(format!("seed {seed}: step {t} rejected {:?}", out.write.rejected));
                            }
                            let got: Vec<Option<Val>> = out
                                .reads
                                .iter()
                                .map(|v| v.as_ref().and_then(|v| Val::from_field_value(v).ok()))
                                .collect();
                            let want: Vec<Option<Val>> = reads.iter().map(|(_, v)| *v).collect();
                            if got != want {
                                let at: Vec<String> = reads.iter().map(|(k, _)| k.to_string()).collect();
                                record.errors.push(format!(
                                    "seed {seed}: step {t} read {at:?} as {got:?}, the model has {want:?}"
                                ));
                            }
                            Ok(())
                        })
                        .collect()
                }
            };
            // A group is acknowledged member by member once it returned.
            for (k, done) in results.into_iter().enumerate() {
                let t = first_t + k as u64;
                if let Err(e) = done {
                    record.errors.push(format!("seed {seed}: step {t} failed: {e}"));
                    break 'steps;
                }
                acks.ack(TxnId(t));
                record.stats.steps_acknowledged = t;
            }
            i += group;
            let t = i as u64;
            fs.settle();
            if self.checkpoint_every > 0 && t.is_multiple_of(self.checkpoint_every) {
                if let Err(e) = engine.checkpoint() {
                    record.errors.push(format!("seed {seed}: checkpoint after step {t}: {e}"));
                    break;
                }
                fs.settle();
            }
        }
        record.stats.checkpoints = engine.stats().checkpoints;
        if let Some(d) = engine.declog() {
            record.stats.log = d.log().stats();
            record.stats.max_stream_end = d.log().stream_positions().iter().map(|p| p.1).max().unwrap_or(0);
        }
        record
    }

    fn check_image(&self, region: &Arc<Region>, acked: &BTreeSet<TxnId>, crash_op: u64) -> CheckResult {
        let record = self.record.read();
        if let Some(e) = record.errors.first() {
            let c = OracleCounts { partial: 1, ..Default::default() };
            return Ok((c, Some(format!("the run itself failed: {e}"))));
        }
        let fs = record.snapshots.at(crash_op);
        drop(record);
        let Some((engine, state)) = self.opener().recover_state(region.clone(), fs.clone())? else {
            return Ok(check(&self.plan, &Model::default(), acked, |a| self.group_at(a)));
        };
        let verdict = check(&self.plan, &state, acked, |a| self.group_at(a));
        if !verdict.0.is_clean()
            || self.resume_every_ops == 0
            || !crash_op.is_multiple_of(self.resume_every_ops)
        {
            return Ok(verdict);
        }
        let Some(next) = continuation(&self.plan, &state) else { return Ok(verdict) };
        match resume(self.opener(), engine, fs, &state, next) {
            Ok(()) => Ok(verdict),
            Err(why) => Ok((OracleCounts { lost: 1, ..Default::default() }, Some(why.to_string()))),
        }
    }
}

impl PmemCrashProtocol for SeriesDeclogCrash {
    fn name(&self) -> String {
        self.variant.name().into()
    }

    fn region_len(&self) -> u64 {
        LOG_BASE.0 + self.area_bytes()
    }

    fn run(&self, region: &Arc<Region>, acks: &AckLog) {
        let fs = RecordingFs::new(region.clone());
        let mut record = match catch_unwind(AssertUnwindSafe(|| self.run_workload(region, &fs, acks))) {
            Ok(r) => r,
            Err(panic) => RunRecord {
                errors: vec![format!(
                    "seed {}: the run panicked: {}",
                    self.seed,
                    panic_message(panic.as_ref())
                )],
                ..Default::default()
            },
        };
        record.snapshots = fs.snapshots();
        record.stats.file_system_states = record.snapshots.count() as u64;
        *self.record.write() = record;
    }

    fn recover_and_check_at(
        &self,
        region: &Arc<Region>,
        acked: &BTreeSet<TxnId>,
        crash_op: u64,
    ) -> CheckResult {
        // A panic in recovery is a finding, not the end of the whole suite.
        match catch_unwind(AssertUnwindSafe(|| self.check_image(region, acked, crash_op))) {
            Ok(v) => v,
            Err(panic) => Err(CrashCheckError::Panicked {
                what: "the check".into(),
                message: panic_message(panic.as_ref()),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::CrashReport;
    use crate::suite::{reproduce, run_target, SuiteTarget};
    use crate::SuiteOptions;

    /// CI-sized, exactly as the suite's `quick` runs the line.
    fn quick(variant: DeclogVariant) -> CrashReport {
        let seed = 0x05ee_d0d1;
        let target = SuiteTarget::SeriesDeclogPmem(variant);
        let o = SuiteOptions { seed, quick: true, ..Default::default() };
        let report = run_target(target, &o);
        println!("{}", report.line());
        assert!(report.images >= 500, "{}", report.line());
        if let Some(f) = &report.first_failure {
            let again = reproduce(target, &o, f.point, f.image);
            panic!(
                "{} (seed {seed}): {}\nfirst failure: {f}\nreproduced: {again:?}",
                target.label(),
                report.line()
            );
        }
        report
    }

    #[test]
    fn full_declog_survives_every_crash_point() {
        let report = quick(DeclogVariant::Full);
        assert!(report.is_clean() && report.images >= 500, "{}", report.line());
    }

    #[test]
    fn strict_ordering_survives_every_crash_point() {
        let report = quick(DeclogVariant::Strict);
        assert!(report.is_clean() && report.images >= 500, "{}", report.line());
    }

    #[test]
    fn central_lsn_survives_every_crash_point() {
        let report = quick(DeclogVariant::CentralLsn);
        assert!(report.is_clean() && report.images >= 500, "{}", report.line());
    }

    #[test]
    fn one_thread_survives_every_crash_point() {
        let report = quick(DeclogVariant::OneThread);
        assert!(report.is_clean() && report.images >= 500, "{}", report.line());
    }

    #[test]
    fn raw_log_survives_every_crash_point() {
        let report = quick(DeclogVariant::Raw);
        assert!(report.is_clean() && report.images >= 500, "{}", report.line());
    }

    #[test]
    fn no_checkpoints_survives_every_crash_point() {
        let report = quick(DeclogVariant::NoCheckpoints);
        assert!(report.is_clean() && report.images >= 500, "{}", report.line());
    }

    #[test]
    fn the_full_run_wraps_streams_and_checkpoints_by_itself() {
        let proto = SeriesDeclogCrash::new(3, DeclogVariant::Full, 150);
        let region = Arc::new(Region::sim(proto.region_len()));
        let clock = region.clone();
        let acks = AckLog::new(move || clock.as_sim().expect("sim").ops());
        proto.run(&region, &acks);
        let s = proto.run_stats();
        println!("{s:?}");
        assert!(proto.run_errors().is_empty(), "{:?}", proto.run_errors());
        assert_eq!(s.steps_acknowledged, 150);
        // 6 explicit, 2 CREATE DATABASE barriers, and some for space.
        assert!(s.checkpoints > 8, "{s:?}");
        assert!(s.max_stream_end > 2 * proto.stream_bytes, "the rings wrapped: {s:?}");
        assert!(s.file_system_states > 8, "{s:?}");
    }

    #[test]
    fn a_crash_that_loses_the_file_system_is_caught() {
        // Recovering with no files at all: checkpointed data is gone.
        let proto = SeriesDeclogCrash::new(4, DeclogVariant::Full, 60);
        let region = Arc::new(Region::sim(proto.region_len()));
        let clock = region.clone();
        let acks = AckLog::new(move || clock.as_sim().expect("sim").ops());
        proto.run(&region, &acks);
        let image = Arc::new(Region::sim_from_image(region.as_sim().unwrap().persistent_image()));
        let acked = acks.acked_by(u64::MAX);
        let (clean, _) = proto.check_image(&image, &acked, u64::MAX).unwrap();
        assert!(clean.is_clean());
        proto.record.write().snapshots = Snapshots::default();
        let (c, why) = proto.check_image(&image, &acked, u64::MAX).unwrap();
        assert!(c.lost > 0, "{c:?} {why:?}");
    }
}

#[cfg(test)]
mod budget {
    //! The full-budget lines with their time, for sizing the suite:
    //! `cargo test --release -p strata-crashtest -- --ignored full_budget`
    //! (`LINES=series-declog/pmem,...` picks lines, `SEED=n` the seed).
    use crate::suite::{run_target, SuiteTarget};
    use crate::SuiteOptions;

    #[test]
    #[ignore]
    fn full_budget_of_the_declog_lines() {
        let mut o = SuiteOptions::default();
        if let Some(seed) = std::env::var("SEED").ok().and_then(|s| s.parse().ok()) {
            o.seed = seed;
        }
        let only = std::env::var("LINES").unwrap_or_default();
        let mut total = 0;
        for t in SuiteTarget::ALL {
            let picked = only.is_empty() || only.split(',').any(|l| l == t.label());
            if !t.label().starts_with("series-declog") || !picked {
                continue;
            }
            let started = std::time::Instant::now();
            let r = run_target(t, &o);
            println!("{} {:.1} s {:?}", r.line(), started.elapsed().as_secs_f64(), r.first_failure);
            assert!(r.images >= 15_000, "{}", r.line());
            total += r.images;
        }
        println!("{total} images");
    }
}
