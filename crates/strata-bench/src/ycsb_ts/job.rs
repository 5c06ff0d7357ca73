//! What the benchmark hands a child process and what the child hands back:
//! the [`ChildJob`] (everything needed to rebuild the engine configuration,
//! so the parent reopens exactly what the child wrote) and the
//! [`ChildResult`] line the child prints before it waits to be killed.
//!
//! The job travels in the environment variable [`JOB_ENV`] as JSON; the
//! result is one stdout line starting with [`RESULT_MARKER`].

use std::path::PathBuf;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use strata_engine::pool::POOL_HEADER_BYTES;
use strata_engine::Config;
use strata_pmem::PersistStats;

use super::latency::LatencySummary;
use super::spec::{MixUnit, Workload, YcsbTsSpec};
use super::variants::Variant;

/// Environment variable holding the child's job as JSON.
pub const JOB_ENV: &str = "STRATA_YCSB_TS_JOB";
/// Start of the child's result line on stdout.
pub const RESULT_MARKER: &str = "YCSB-TS-CHILD-RESULT ";
/// The database the benchmark writes into.
pub const DB_NAME: &str = "ycsb";
/// Smallest log (PMem ring, DecLog file) the benchmark configures.
pub const MIN_LOG_BYTES: u64 = 64 << 20;
/// Pool bytes beyond the pool header and the ring.
const POOL_SLACK_BYTES: u64 = 1 << 20;

/// One child run: a variant, its directories, the workload and the knobs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChildJob {
    pub variant: String,
    /// Block files, manifest, SSD logs.
    pub data_dir: PathBuf,
    /// Emulated PMem files (the pool and the DecLog file).
    pub pmem_dir: PathBuf,
    pub workload: String,
    /// `transaction` (one kind per transaction, the paper's) or `operation`.
    pub mix: String,
    pub num_keys: u64,
    pub load_points_per_key: u64,
    pub txns: u64,
    pub seed: u64,
    pub workers: u64,
    /// Transactions each worker submits together (see `run_phase::run`).
    pub txns_in_flight: usize,
    pub logging_threads: usize,
    pub queues_per_thread: usize,
    pub queue_len: usize,
    pub replay_threads: usize,
    /// Capacity of the PMem ring and size of the DecLog file: the whole
    /// run fits, so no protocol checkpoints for lack of log space.
    pub log_bytes: u64,
    /// False for the "without checkpoint" run: checkpoints are disabled.
    pub checkpoints: bool,
    /// Take one checkpoint once this share of the transactions committed.
    pub checkpoint_at_fraction: Option<f64>,
    /// Stop the run after this long, even before `txns` committed.
    pub seconds: Option<f64>,
}

impl ChildJob {
    pub fn variant(&self) -> anyhow::Result<Variant> {
        Variant::parse(&self.variant).map_err(anyhow::Error::msg)
    }

    pub fn spec(&self) -> anyhow::Result<YcsbTsSpec> {
        let workload: Workload = self.workload.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(YcsbTsSpec {
            mix_unit: parse_mix(&self.mix)?,
            num_keys: self.num_keys,
            load_points_per_key: self.load_points_per_key,
            txns: self.txns,
            seed: self.seed,
            ..YcsbTsSpec::new(workload)
        })
    }

    /// The engine configuration of this job (the same in the child that
    /// writes and in the parent that recovers). Checkpoints run only when
    /// the benchmark asks (`checkpoint_interval_s = 0`, log thresholds out
    /// of reach).
    pub fn config(&self) -> anyhow::Result<Config> {
        let variant = self.variant()?;
        let log_bytes = self.log_bytes.max(MIN_LOG_BYTES);
        let mut c = Config { data_dir: self.data_dir.clone(), ..Config::default() };
        c.storage.protocol = variant.protocol.name().to_string();
        c.storage.default_database = DB_NAME.to_string();
        c.storage.max_series_per_database = 0;
        c.storage.checkpoint_interval_s = 0;
        c.storage.checkpoint_log_bytes = u64::MAX;
        c.pmem.pool_file = self.pmem_dir.join("pmem.pool");
        c.pmem.log_bytes = log_bytes;
        c.pmem.pool_bytes = log_bytes + POOL_HEADER_BYTES + POOL_SLACK_BYTES;
        c.declog.pmem_file = self.pmem_dir.join("declog.pmem");
        c.declog.file_bytes = log_bytes;
        c.declog.queues_per_thread = self.queues_per_thread;
        c.declog.queue_len = self.queue_len;
        c.declog.replay_threads = self.replay_threads;
        c.declog.logging_threads = self.logging_threads;
        c.declog.checkpoints = self.checkpoints;
        // One key per YCSB-TS key and stream at most: at least four slots a
        // key, so probing stays short, and no larger (the file is small).
        c.declog.key_slots = (4 * self.num_keys).clamp(1024, 1 << 20) as u32;
        if let Some(s) = variant.declog {
            c.declog.relaxed_ordering = s.relaxed_ordering;
            c.declog.data_driven_lsn = s.data_driven_lsn;
            c.declog.compression_and_alignment = s.compression_and_alignment;
            c.declog.checkpoints = s.checkpoints && self.checkpoints;
            if !s.parallel_logging {
                c.declog.logging_threads = 1;
            }
        }
        c.validate().with_context(|| format!("configuration of variant {}", variant.name))?;
        Ok(c)
    }

    pub fn to_env_value(&self) -> String {
        serde_json::to_string(self).expect("a job always serializes")
    }

    pub fn from_env_value(text: &str) -> anyhow::Result<ChildJob> {
        serde_json::from_str(text).with_context(|| format!("parsing the YCSB-TS child job in ${JOB_ENV}"))
    }
}

/// `transaction` or `operation` (what the mix of Table 1 picks).
pub fn parse_mix(text: &str) -> anyhow::Result<MixUnit> {
    match text {
        "transaction" | "txn" => Ok(MixUnit::Transaction),
        "operation" | "op" => Ok(MixUnit::Operation),
        other => anyhow::bail!("unknown YCSB-TS mix `{other}` (expected transaction or operation)"),
    }
}

/// The name [`parse_mix`] reads.
pub fn mix_name(mix: MixUnit) -> &'static str {
    match mix {
        MixUnit::Transaction => "transaction",
        MixUnit::Operation => "operation",
    }
}

/// Persist counts (`strata_pmem::PersistStats`), serializable.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersistCounts {
    pub lines_flushed: u64,
    pub fences: u64,
    pub bytes_persisted: u64,
    pub media_blocks_written: u64,
}

impl From<PersistStats> for PersistCounts {
    fn from(s: PersistStats) -> PersistCounts {
        PersistCounts {
            lines_flushed: s.lines_flushed,
            fences: s.fences,
            bytes_persisted: s.bytes_persisted,
            media_blocks_written: s.media_blocks_written,
        }
    }
}

/// DecLog's own counters during a run (`strata_declog::DeclogStats`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeclogCounts {
    pub entries: u64,
    /// Batches (flushed log queues).
    pub batches: u64,
    /// Deferred tails: update entries', and every entry's under strict ordering.
    pub deferred_tails: u64,
    pub batch_bytes: u64,
    pub payload_bytes_submitted: u64,
    pub payload_bytes_logged: u64,
}

/// What a child measured in its run (load phase excluded).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChildResult {
    pub committed_txns: u64,
    pub run_s: f64,
    /// Process CPU time of the run (all threads).
    pub run_cpu_s: f64,
    pub load_s: f64,
    pub latency: LatencySummary,
    /// LSN-protocol aborts retried inside `execute`.
    pub retries: u64,
    pub reads: u64,
    /// Reads that found no point (every read targets an existing point).
    pub reads_missing: u64,
    /// Persist counts of the log's region during the run (`None` without one).
    pub persist: Option<PersistCounts>,
    /// Commit-log bytes the engine wrote during the run.
    pub log_bytes_written: u64,
    /// DecLog's counters during the run (DecLog variants).
    pub declog: Option<DeclogCounts>,
    /// Transactions that got an LSN above 0 (DecLog: they ordered the log).
    pub txns_with_lsn: u64,
    /// The benchmark's own checkpoint: how long it took.
    pub checkpoint_s: Option<f64>,
    /// Checkpoints during the run (the benchmark's plus any the engine took).
    pub checkpoints_during_run: u64,
    /// Per worker: the last point it inserted (key, timestamp), which must
    /// be found after recovery under a durable protocol.
    pub last_inserts: Vec<(u64, i64)>,
}

impl ChildResult {
    pub fn to_line(&self) -> String {
        format!("{RESULT_MARKER}{}", serde_json::to_string(self).expect("a result always serializes"))
    }

    /// The result in one line of child output, if it is the result line
    /// (the marker may follow other text: a test harness prints the test's
    /// name without a newline before running it).
    pub fn from_line(line: &str) -> Option<anyhow::Result<ChildResult>> {
        let at = line.find(RESULT_MARKER)?;
        let json = line[at + RESULT_MARKER.len()..].trim_end();
        Some(serde_json::from_str(json).context("parsing the YCSB-TS child's result line"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn job(variant: &str) -> ChildJob {
        ChildJob {
            variant: variant.into(),
            data_dir: "/tmp/d".into(),
            pmem_dir: "/dev/shm/p".into(),
            workload: "B".into(),
            mix: "transaction".into(),
            num_keys: 100,
            load_points_per_key: 10,
            txns: 50,
            seed: 1,
            workers: 2,
            txns_in_flight: 8,
            logging_threads: 2,
            queues_per_thread: 2,
            queue_len: 300,
            replay_threads: 2,
            log_bytes: 1 << 20,
            checkpoints: true,
            checkpoint_at_fraction: Some(0.9),
            seconds: None,
        }
    }

    #[test]
    fn job_and_result_round_trip() {
        let j = job("+lsn");
        assert_eq!(ChildJob::from_env_value(&j.to_env_value()).unwrap(), j);
        let r = ChildResult { committed_txns: 7, last_inserts: vec![(1, 2)], ..Default::default() };
        let line = r.to_line();
        assert!(line.starts_with(RESULT_MARKER) && !line.contains('\n'));
        assert_eq!(ChildResult::from_line(&line).unwrap().unwrap(), r);
        assert!(ChildResult::from_line("running 1 test").is_none());
        assert_eq!(ChildResult::from_line(&format!("test x ... {line}\n")).unwrap().unwrap(), r);
        assert!(ChildResult::from_line(&format!("{RESULT_MARKER}{{")).unwrap().is_err());
    }

    #[test]
    fn mix_names_parse_both_ways() {
        for mix in [MixUnit::Transaction, MixUnit::Operation] {
            assert_eq!(parse_mix(mix_name(mix)).unwrap(), mix);
        }
        assert_eq!(parse_mix("op").unwrap(), MixUnit::Operation);
        assert!(parse_mix("row").unwrap_err().to_string().contains("unknown YCSB-TS mix `row`"));
        assert_eq!(job("none").spec().unwrap().mix_unit, MixUnit::Transaction);
    }

    #[test]
    fn configs_follow_the_variant_and_the_run() {
        let c = job("declog-pmem").config().unwrap();
        assert_eq!(c.storage.protocol, "declog-pmem");
        assert_eq!(c.declog.pmem_file, PathBuf::from("/dev/shm/p/declog.pmem"));
        assert_eq!(
            c.declog_path(strata_engine::Protocol::DeclogPmem),
            PathBuf::from("/dev/shm/p/declog.pmem")
        );
        assert_eq!(c.declog.file_bytes, MIN_LOG_BYTES, "at least the minimum");
        assert!(c.declog.checkpoints && c.declog.relaxed_ordering);
        assert_eq!((c.storage.checkpoint_interval_s, c.storage.checkpoint_log_bytes), (0, u64::MAX));

        let strict = job("strict").config().unwrap();
        assert!(!strict.declog.relaxed_ordering && !strict.declog.data_driven_lsn);
        assert!(!strict.declog.compression_and_alignment && !strict.declog.checkpoints);
        assert_eq!(strict.declog.logging_threads, 1);
        assert_eq!(job("+parallel").config().unwrap().declog.logging_threads, 2);

        let no_ckpt = ChildJob { checkpoints: false, ..job("declog-pmem") }.config().unwrap();
        assert!(!no_ckpt.declog.checkpoints);
        let serial = job("serial-pmem").config().unwrap();
        assert_eq!(serial.pool_path(), PathBuf::from("/dev/shm/p/pmem.pool"));
        assert!(serial.pmem.pool_bytes > serial.pmem.log_bytes);
        assert!(job("paxos").config().is_err());
    }
}
