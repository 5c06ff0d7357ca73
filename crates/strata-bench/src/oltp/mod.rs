//! `strata bench oltp`: transactional tables under each logging scheme
//! (taurus.txt section 5) and FIR's engine with its baselines (fir.txt
//! 5.1), variants alternating within each round, medians
//! of the rounds: throughput, commit latency, log bytes per transaction,
//! recovery time and speed, and the recovery parallelism the logs allow.
//!
//! Workloads ([`workload::Workload`], taurus.txt 5.1 and 5.5): YCSB
//! ([`ycsb`]), TPC-C Payment, TPC-C New-Order and the full TPC-C mix
//! ([`tpcc`]; warehouses equal to the workers by default).
//!
//! Variants: `none`, `serial-data`, `serial-command`, `taurus-data`,
//! `taurus-command`, `silo-r` (Silo's epochs and OCC, data only) (Taurus with `--logs` logs, workers mapped `worker %
//! logs`). `--log-mbps` puts a bandwidth limit on every log device (a token
//! bucket, reads at recovery included), so a 2-core machine shows what the
//! paper's many disks show: the device, not the CPU, bounds serial logging.
//! On FIR's engine (`--engine`, an alias of `--variants`; `fir_run.rs`):
//! `fir`, `fir-full`, `zen`, `dram-nolog`, `dram-log`, `dram-log-ssd`.
//!
//! Each run is a child process (`strata bench oltp-child`) SIGKILLed
//! 100 ms after its window, transactions in flight; recovery is timed on
//! its logs over the same unlogged base table (the stand-in for a
//! checkpoint): decoding and replay.
//!
//! `--figures DIR` ([`sweep`]) runs [`run`] at every point of the sweeps
//! behind the paper's Fig. 5, 7, 13 and 14 and draws them ([`figures`]).

pub mod figures;
mod fir_run;
pub mod lv_micro;
mod run;
pub use run::run_child_from_env;
pub mod sweep;
pub use sweep::{run_sweeps, Fig, SweepOptions};
pub mod tpcc;
pub mod workload;
pub mod ycsb;
pub use workload::Workload;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde_json::json;
use strata_txn::{CcKind, LogMode, LoggingKind};

use crate::machine::Machine;
use crate::measure::Samples;
use crate::report::BenchReport;
use tpcc::TpccShape;
use ycsb::YcsbShape;

/// Where the logs live.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Device {
    /// Emulated PMem regions (mapped files, pre-touched).
    Pmem,
    /// Files on disk with `fdatasync` group commit.
    Ssd,
}

/// The engine a variant runs: Taurus's `TxnDb` under a logging scheme, or
/// FIR's engine as FIR, its baselines (fir.txt 5.1), on the same procedures.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EngineKind {
    /// `TxnDb`: 2PL (or OCC) rows in DRAM under the variant's logging scheme.
    Logged,
    /// FIR, its checkpoint thread taking the cost model's choice.
    Fir,
    /// FIR with full checkpoints only.
    FirFull,
    /// The Zen-style engine: FIR's tuple heap with no index checkpoints;
    /// recovery scans the whole heap and builds the index top-down.
    Zen,
    /// DRAM-DB (No Log): FIR's engine over DRAM tables, nothing persisted.
    DramNoLog,
    /// DRAM-DB (Log): the same with a serial redo log (on `--device`, or
    /// the variant's own).
    DramLog,
}

impl EngineKind {
    /// Whether FIR's engine runs it (its storage in an emulated PMem or a
    /// DRAM region).
    pub fn on_fir_engine(self) -> bool {
        self != EngineKind::Logged
    }

    /// Whether its tables are in emulated PMem and recover from there.
    pub fn fir_storage(self) -> bool {
        matches!(self, EngineKind::Fir | EngineKind::FirFull | EngineKind::Zen)
    }
}

/// One variant: an engine, its scheme and what its records hold.
#[derive(Clone, Debug)]
pub struct Variant {
    pub name: String,
    pub kind: LoggingKind,
    pub mode: LogMode,
    pub engine: EngineKind,
    /// Where its log goes when not where `--device` says (`dram-log-ssd`).
    pub device: Option<Device>,
}

impl Variant {
    /// Whether a run recovers after the kill (a log, or FIR's region).
    pub fn recovers(&self) -> bool {
        self.kind.logs() > 0 || self.engine.fir_storage()
    }
}

/// The names [`parse_variants`] takes.
pub const VARIANT_NAMES: &str = "none, serial-data, serial-command, taurus-data, taurus-command, silo-r, dram-nolog, dram-log, dram-log-ssd, fir, fir-full, zen";

/// The variants named in `list` (comma separated), Taurus with `logs` logs.
pub fn parse_variants(list: &str, logs: usize) -> anyhow::Result<Vec<Variant>> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|name| {
            let logged = |kind, mode| (kind, mode, EngineKind::Logged, None);
            let fir = |engine| (LoggingKind::None, LogMode::Data, engine, None);
            let (kind, mode, engine, device) = match name {
                "none" => logged(LoggingKind::None, LogMode::Data),
                "serial-data" => logged(LoggingKind::Serial, LogMode::Data),
                "serial-command" => logged(LoggingKind::Serial, LogMode::Command),
                "taurus-data" => logged(LoggingKind::Taurus { logs }, LogMode::Data),
                "taurus-command" => logged(LoggingKind::Taurus { logs }, LogMode::Command),
                // Silo logs data only and runs its own OCC (taurus.txt 5).
                "silo-r" => logged(LoggingKind::SiloR { logs }, LogMode::Data),
                "fir" => fir(EngineKind::Fir),
                "fir-full" => fir(EngineKind::FirFull),
                "zen" => fir(EngineKind::Zen),
                "dram-nolog" => fir(EngineKind::DramNoLog),
                // Its redo log: serial, data records.
                "dram-log" => (LoggingKind::Serial, LogMode::Data, EngineKind::DramLog, None),
                "dram-log-ssd" => {
                    (LoggingKind::Serial, LogMode::Data, EngineKind::DramLog, Some(Device::Ssd))
                }
                other => anyhow::bail!("unknown variant `{other}` ({VARIANT_NAMES})"),
            };
            Ok(Variant { name: name.to_string(), kind, mode, engine, device })
        })
        .collect()
}

/// `--cc`: `2pl` (NO_WAIT) or `occ`.
pub fn parse_cc(name: &str) -> anyhow::Result<CcKind> {
    Ok(match name {
        "2pl" => CcKind::TwoPlNoWait,
        "occ" => CcKind::Occ,
        other => anyhow::bail!("concurrency control `{other}`: 2pl or occ"),
    })
}

pub const DEFAULT_VARIANTS: &str = "none,serial-data,serial-command,taurus-data,taurus-command";

#[derive(Clone, Debug)]
pub struct OltpOptions {
    pub variants: Vec<Variant>,
    pub workload: Workload,
    /// YCSB's shape.
    pub shape: YcsbShape,
    /// TPC-C's population (its warehouses default to the workers).
    pub tpcc: TpccShape,
    pub workers: usize,
    pub logs: usize,
    /// Concurrency control of every variant but `silo-r` (always OCC).
    pub cc: CcKind,
    pub device: Device,
    pub log_mbps: Option<f64>,
    /// Bytes per log (PMem regions touched whole before each run). Enough
    /// for one worker streaming about 0.9 GB/s of 1 KB row images into
    /// its log through the warm-up, the window and the 100 ms before the
    /// kill (there is no log truncation yet): 1.5 GiB for `--quick`'s
    /// 1.6 s, 4 GiB for the full 4.1 s.
    pub log_capacity_bytes: u64,
    /// How long each run goes before its window (uncounted).
    pub warmup: Duration,
    pub window: Duration,
    pub rounds: usize,
    /// Emulated PMem regions go here (default /dev/shm).
    pub pmem_dir: Option<PathBuf>,
    /// Logs on SSD and the rest go under here (default: the temp directory).
    pub dir: Option<PathBuf>,
    pub print: bool,
    /// Let the machine settle before each run (`settle`).
    pub settle: bool,
    /// How to start a run's child process (`strata bench oltp-child`).
    pub child: crate::ycsb_ts::ChildCommand,
    /// FIR's checkpoint thread period (`fir`, `fir-full`; 1 s): fir.txt
    /// 4.4.1 bounds what recovery scans by it, and leaves it open.
    pub fir_checkpoint_every: Duration,
}

impl OltpOptions {
    /// `--quick`: YCSB on a 20,000-row table, TPC-C at a tenth of the
    /// spec's population ([`TpccShape::quick`]), 1 s windows, 3 rounds.
    pub fn quick(variants: Vec<Variant>, workers: usize, logs: usize) -> Self {
        OltpOptions {
            variants,
            workload: Workload::Ycsb,
            shape: YcsbShape { rows: 20_000, theta: 0.6, accesses: 2, read_ratio: 0.5 },
            tpcc: TpccShape::quick(workers as u32),
            cc: CcKind::TwoPlNoWait,
            workers,
            logs,
            device: Device::Pmem,
            log_mbps: None,
            log_capacity_bytes: 3 << 29,
            warmup: Duration::from_millis(500),
            window: Duration::from_secs(1),
            rounds: 3,
            pmem_dir: None,
            dir: None,
            print: true,
            settle: true,
            child: crate::ycsb_ts::ChildCommand {
                program: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("strata")),
                args: vec!["bench".into(), "oltp-child".into()],
                env: Vec::new(),
            },
            fir_checkpoint_every: Duration::from_millis(1_000),
        }
    }

    /// The default size: a 200,000-row YCSB table (200 MB), TPC-C at the
    /// spec's population, 3 s windows.
    pub fn full(variants: Vec<Variant>, workers: usize, logs: usize) -> Self {
        let mut o = OltpOptions::quick(variants, workers, logs);
        o.shape.rows = 200_000;
        o.tpcc = TpccShape::spec(workers as u32);
        o.window = Duration::from_secs(3);
        o.warmup = Duration::from_secs(1);
        o.log_capacity_bytes = 4 << 30;
        o
    }

    pub(crate) fn pmem_dir_for(&self, run_dir: &Path) -> PathBuf {
        let base = self.pmem_dir.clone().unwrap_or_else(|| {
            let shm = PathBuf::from("/dev/shm");
            if shm.is_dir() {
                shm
            } else {
                std::env::temp_dir()
            }
        });
        base.join(run_dir.file_name().unwrap_or_default())
    }
}

/// Runs every variant `rounds` times, alternating, and reports medians.
pub fn run(o: &OltpOptions) -> anyhow::Result<BenchReport> {
    anyhow::ensure!(
        o.workers >= 1 && o.rounds >= 1 && !o.variants.is_empty(),
        "workers, rounds and variants"
    );
    let machine = Machine::detect(
        strata_pmem::PmemMode::Emulated,
        "mapped files (the log regions)",
        strata_pmem::detected_flush_instruction(),
    );
    let tpcc = o.workload.tpcc_mix().is_some();
    if tpcc {
        o.tpcc.validate()?;
    }
    // The workload, its shape, then what every workload shares (YCSB's
    // config as it always was).
    let shape = if tpcc {
        json!({
            "warehouses": o.tpcc.warehouses,
            "items": o.tpcc.items,
            "customers_per_district": o.tpcc.customers,
            "orders_per_district": o.tpcc.customers,
            "new_orders_per_district": o.tpcc.new_orders,
            "scale": o.tpcc.scale_name(),
        })
    } else {
        json!({
            "rows": o.shape.rows,
            "row_bytes": ycsb::ROW_BYTES,
            "theta": o.shape.theta,
            "accesses": o.shape.accesses,
            "read_ratio": o.shape.read_ratio,
        })
    };
    let shared = json!({
        "workers": o.workers,
        "logs": o.logs,
        "device": format!("{:?}", o.device).to_lowercase(),
        "log_mbps": o.log_mbps,
        "window_s": o.window.as_secs_f64(),
        "warmup_s": o.warmup.as_secs_f64(),
        "rounds": o.rounds,
        "cc": o.cc.name(),
    });
    let mut config = serde_json::Map::new();
    config.insert("workload".into(), json!(o.workload.name()));
    for part in [shape, shared] {
        if let serde_json::Value::Object(fields) = part {
            config.extend(fields);
        }
    }
    let config = serde_json::Value::Object(config);
    let mut report = BenchReport::new("oltp", machine, config);
    let mut samples: Vec<Samples> = vec![Samples::default(); o.variants.len()];
    let parent = o.dir.clone().unwrap_or_else(std::env::temp_dir);
    for round in 0..o.rounds {
        for (vi, v) in o.variants.iter().enumerate() {
            if o.settle {
                crate::settle::settle();
            }
            let dir = tempfile::Builder::new().prefix("strata-oltp-").tempdir_in(&parent)?;
            let pmem = o.pmem_dir_for(dir.path());
            std::fs::create_dir_all(&pmem).with_context(|| format!("creating {}", pmem.display()))?;
            let f = run::run_once(o, v, dir.path(), round as u64);
            let _ = std::fs::remove_dir_all(&pmem);
            let f = f.with_context(|| format!("round {} of {}", round + 1, v.name))?;
            if o.print {
                let rollbacks =
                    if tpcc { format!(", {} New-Orders rolled back", f.rollbacks) } else { String::new() };
                eprintln!(
                    "oltp bench: round {}/{} {} {}: {:.0} txn/s, p99 {:.0} us, {:.0} log B/txn, CPU {:.0} % busy, recovery {:.3} s ({:.0} txn/s){rollbacks}",
                    round + 1,
                    o.rounds,
                    o.workload.name(),
                    v.name,
                    f.throughput_txn_per_s,
                    f.latency_us_p99,
                    f.log_bytes_per_txn,
                    f.cpu_busy_pct,
                    f.recovery_s,
                    f.recovery_txn_per_s
                );
            }
            let s = &mut samples[vi];
            s.push("throughput_txn_per_s", f.throughput_txn_per_s);
            s.push("latency_us_p50", f.latency_us_p50);
            s.push("latency_us_p99", f.latency_us_p99);
            s.push("abort_ratio", f.aborts as f64 / (f.committed + f.aborts).max(1) as f64);
            if tpcc {
                s.push("new_order_txn_per_s", f.new_order_txn_per_s);
                s.push("rollback_ratio", f.rollbacks as f64 / (f.committed + f.rollbacks).max(1) as f64);
            }
            s.push("log_bytes_per_txn", f.log_bytes_per_txn);
            s.push("cpu_busy_pct", f.cpu_busy_pct);
            if v.recovers() {
                s.push("recovery_s", f.recovery_s);
                s.push("recovery_txn_per_s", f.recovery_txn_per_s);
                s.push("recovered_txns", f.recovered_txns as f64);
                s.push("recovery_threads", f.recovery_threads as f64);
                s.push("recovery_parallelism", f.recovery_parallelism);
                if let Some(t) = f.recovery_parallelism_true {
                    s.push("recovery_parallelism_true", t);
                }
            }
            if v.engine.fir_storage() {
                s.push("recovery_data_s", f.recovery_data_s);
                s.push("recovery_index_s", f.recovery_index_s);
                s.push("recovery_versions_scanned", f.recovery_versions_scanned as f64);
                s.push("checkpoints", f.checkpoints as f64);
                s.push("incremental_checkpoints", f.incremental_checkpoints as f64);
                s.push("checkpoint_ms_mean", f.checkpoint_ms_mean);
            }
        }
    }
    // The no-log baseline: FIR's DRAM-DB (No Log) when it runs, else `none`.
    let none = o.variants.iter().position(|v| v.engine == EngineKind::DramNoLog).or_else(|| {
        o.variants.iter().position(|v| v.kind == LoggingKind::None && v.engine == EngineKind::Logged)
    });
    let serial_data = o.variants.iter().position(|v| v.name == "serial-data");
    let medians: Vec<_> = o.variants.iter().zip(&samples).map(|(v, s)| s.median_row(&v.name)).collect();
    let get = |i: usize, m: &str| medians[i].get(m).and_then(|x| x.as_f64());
    for (i, mut row) in medians.clone().into_iter().enumerate() {
        if let (Some(n), Some(t), Some(tn)) =
            (none, get(i, "throughput_txn_per_s"), none.and_then(|n| get(n, "throughput_txn_per_s")))
        {
            let _ = n;
            row.insert("ratio_to_none".into(), json!(t / tn));
        }
        if let Some(sd) = serial_data {
            if let (Some(t), Some(ts)) = (get(i, "throughput_txn_per_s"), get(sd, "throughput_txn_per_s")) {
                row.insert("ratio_to_serial_data".into(), json!(t / ts));
            }
            // Per recovered transaction: the variants recover different counts.
            if let (Some(r), Some(rs)) = (get(i, "recovery_txn_per_s"), get(sd, "recovery_txn_per_s")) {
                row.insert("recovery_rate_to_serial_data".into(), json!(r / rs));
            }
        }
        report.results.push(row);
    }
    report.columns = [
        "throughput_txn_per_s",
        "new_order_txn_per_s",
        "ratio_to_none",
        "ratio_to_serial_data",
        "latency_us_p50",
        "latency_us_p99",
        "abort_ratio",
        "rollback_ratio",
        "log_bytes_per_txn",
        "cpu_busy_pct",
        "recovery_s",
        "recovery_txn_per_s",
        "recovery_rate_to_serial_data",
        "recovery_threads",
        "recovery_parallelism",
        "recovery_parallelism_true",
        "recovery_data_s",
        "recovery_index_s",
        "recovery_versions_scanned",
        "checkpoints",
        "incremental_checkpoints",
        "checkpoint_ms_mean",
    ]
    .map(String::from)
    .to_vec();
    let window = format!("{:.1} s", o.window.as_secs_f64());
    let window = format!("{window} windows after {:.1} s warm-ups", o.warmup.as_secs_f64());
    let cc = match o.cc {
        CcKind::TwoPlNoWait => "2PL NO_WAIT (silo-r: OCC)",
        CcKind::Occ => "OCC",
    };
    report.notes.push(match o.workload.tpcc_mix() {
        None => format!(
            "YCSB: {} rows of {} B, Zipf theta {}, {} accesses per transaction, {:.0} % reads; {cc}; {} workers; Taurus and Silo-R with {} logs; {window}; medians of {} rounds, variants alternating",
            o.shape.rows, ycsb::ROW_BYTES, o.shape.theta, o.shape.accesses, o.shape.read_ratio * 100.0, o.workers, o.logs, o.rounds
        ),
        Some(mix) => format!(
            "TPC-C {}: {} warehouses (worker w's home warehouse w % {} + 1), {} scale: {} items, per district {} customers and orders ({} new); {cc}; {} workers; Taurus and Silo-R with {} logs; {window}; medians of {} rounds, variants alternating",
            match mix {
                tpcc::Mix::Payment => "Payment only",
                tpcc::Mix::NewOrder => "New-Order only",
                tpcc::Mix::Full => "full mix (45 % New-Order, 43 % Payment, 4 % each Order-Status, Delivery, Stock-Level)",
            },
            o.tpcc.warehouses, o.tpcc.warehouses, o.tpcc.scale_name(), o.tpcc.items, o.tpcc.customers, o.tpcc.new_orders, o.workers, o.logs, o.rounds
        ),
    });
    if tpcc {
        report.notes.push("TPC-C inputs per clauses 2.4.1-2.8.1 (NURand ids, 1 % remote order lines, 15 % remote payments, 60 % of customers by last name); 1 % of New-Orders roll back on an unused item: counted in rollback_ratio, not as committed; new_order_txn_per_s is tpmC / 60; non-key accesses through index tables in the same transactions (no ordered index yet)".into());
    }
    report.notes.push(match o.log_mbps {
        Some(m) => format!("every log device limited to {m} MB/s (token bucket; recovery reads too): a simulation of many slow devices on this machine"),
        None => "no bandwidth limit on the log devices".into(),
    });
    report.notes.push(format!(
        "logs on {}; commit latency from a transaction's start to its commit (PLV/CLV covering its LV), workers committing asynchronously",
        match o.device { Device::Pmem => "emulated PMem (pre-touched mapped files in /dev/shm)", Device::Ssd => "files on disk, fdatasync per flush" }
    ));
    report.notes.push("each run in a child process, SIGKILLed 100 ms after its window with transactions in flight; recovery: decode + replay of its logs over the unlogged base table (a checkpoint's stand-in); parallelism = transactions / longest chain of the replay order (LV), and of true WAW conflicts (data logging only)".into());
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_parse_and_unknown_ones_are_refused() {
        let v = parse_variants(DEFAULT_VARIANTS, 4).unwrap();
        assert_eq!(v.len(), 5);
        assert_eq!(v[3].kind, LoggingKind::Taurus { logs: 4 });
        assert_eq!(v[4].mode, LogMode::Command);
        assert!(parse_variants("silo", 2).is_err());
    }

    const THIS_TEST: &str = "oltp::tests::a_tiny_run_reports_every_variant";

    /// Real child processes (this test binary re-executed on this test with
    /// the job in the environment), killed by SIGKILL, and real recoveries.
    /// Options of a tiny run whose children re-execute `this_test` (in a
    /// child, runs the job instead and never returns): one round, short
    /// windows, logs in files (they grow as needed; PMem regions would be
    /// touched whole), no settling, nothing printed.
    fn tiny_run(variants: &str, this_test: &str, window_ms: u64) -> OltpOptions {
        if std::env::var_os(run::JOB_ENV).is_some() {
            let outcome = run_child_from_env();
            panic!("the child returned instead of waiting to be killed: {outcome:?}");
        }
        let mut o = OltpOptions::quick(parse_variants(variants, 2).unwrap(), 2, 2);
        o.child = crate::ycsb_ts::ChildCommand {
            program: std::env::current_exe().unwrap(),
            args: vec!["--exact".into(), this_test.into(), "--nocapture".into(), "--test-threads=1".into()],
            env: Vec::new(),
        };
        o.window = Duration::from_millis(window_ms);
        o.warmup = Duration::from_millis(50);
        o.rounds = 1;
        o.device = Device::Ssd;
        o.print = false;
        o.settle = false;
        o
    }

    #[test]
    fn a_tiny_run_reports_every_variant() {
        let mut o = tiny_run(DEFAULT_VARIANTS, THIS_TEST, 150);
        o.shape.rows = 500;
        let report = run(&o).unwrap();
        assert_eq!(report.results.len(), 5);
        for r in &report.results {
            let t = r["throughput_txn_per_s"].as_f64().unwrap();
            assert!(t > 0.0, "{r:?}");
        }
        let td = report.result("taurus-data").unwrap();
        assert!(td["recovered_txns"].as_f64().unwrap() > 0.0);
        assert!(td["recovery_parallelism"].as_f64().unwrap() >= 1.0);
        let tc = report.result("taurus-command").unwrap();
        assert!(
            tc["log_bytes_per_txn"].as_f64().unwrap() < td["log_bytes_per_txn"].as_f64().unwrap(),
            "commands are smaller than rows"
        );
    }

    const THIS_TPCC_TEST: &str = "oltp::tests::a_tiny_tpcc_mix_run_reports_new_orders_rollbacks_and_recovery";

    /// The same for the TPC-C mix on a small population: the child loads
    /// and runs TPC-C, the parent recovers it over the same load.
    #[test]
    fn a_tiny_tpcc_mix_run_reports_new_orders_rollbacks_and_recovery() {
        let mut o = tiny_run("none,taurus-data,taurus-command", THIS_TPCC_TEST, 200);
        o.workload = Workload::TpccMix;
        o.tpcc = TpccShape { warehouses: 2, items: 1_000, customers: 60, new_orders: 18 };
        let report = run(&o).unwrap();
        assert_eq!(report.config["workload"], "tpcc-mix");
        assert_eq!(report.config["warehouses"], 2);
        assert_eq!(report.results.len(), 3);
        for r in &report.results {
            let (t, n) =
                (r["throughput_txn_per_s"].as_f64().unwrap(), r["new_order_txn_per_s"].as_f64().unwrap());
            assert!(t > 0.0 && n > 0.2 * t && n < 0.7 * t, "New-Orders are about 45 %: {r:?}");
            assert!(r["rollback_ratio"].as_f64().unwrap() < 0.05, "{r:?}");
        }
        let tc = report.result("taurus-command").unwrap();
        assert!(tc["recovered_txns"].as_f64().unwrap() > 0.0, "{tc:?}");
        let td = report.result("taurus-data").unwrap();
        assert!(
            tc["log_bytes_per_txn"].as_f64().unwrap() < td["log_bytes_per_txn"].as_f64().unwrap(),
            "commands are smaller than rows"
        );
    }

    const THIS_FIR_TEST: &str =
        "oltp::tests::a_tiny_tpcc_run_on_fir_s_engine_reports_checkpoints_and_recoveries";

    /// FIR's engine and its baselines on the TPC-C mix: each runs the same
    /// procedures; FIR and Zen recover from their regions, DRAM-DB (Log)
    /// from its log.
    #[test]
    fn a_tiny_tpcc_run_on_fir_s_engine_reports_checkpoints_and_recoveries() {
        let mut o = tiny_run("dram-nolog,dram-log,fir,zen", THIS_FIR_TEST, 300);
        o.workload = Workload::TpccMix;
        o.tpcc = TpccShape { warehouses: 2, items: 1_000, customers: 60, new_orders: 18 };
        o.fir_checkpoint_every = Duration::from_millis(50);
        let report = run(&o).unwrap();
        assert_eq!(report.results.len(), 4);
        for r in &report.results {
            assert!(r["throughput_txn_per_s"].as_f64().unwrap() > 0.0, "{r:?}");
        }
        let none = report.result("dram-nolog").unwrap();
        assert_eq!(none["ratio_to_none"].as_f64(), Some(1.0), "DRAM-DB (No Log) is the base: {none:?}");
        assert!(none.get("recovery_s").is_none(), "it does not recover: {none:?}");
        let log = report.result("dram-log").unwrap();
        assert!(log["log_bytes_per_txn"].as_f64().unwrap() > 100.0, "{log:?}");
        assert!(log["recovered_txns"].as_f64().unwrap() > 0.0, "its log replayed: {log:?}");
        let fir = report.result("fir").unwrap();
        // The checkpoint thread runs at a low priority: on a loaded test
        // machine none may finish inside a short window; the count is
        // reported all the same.
        assert!(fir["checkpoints"].as_f64().is_some_and(|n| n >= 0.0), "{fir:?}");
        let zen = report.result("zen").unwrap();
        assert_eq!(zen["checkpoints"].as_f64(), Some(0.0), "{zen:?}");
        for r in [fir, zen] {
            assert!(r["recovery_s"].as_f64().unwrap() > 0.0, "{r:?}");
            assert!(r["recovery_versions_scanned"].as_f64().unwrap() > 0.0, "{r:?}");
        }
        assert!(
            zen["recovery_versions_scanned"].as_f64() > fir["recovery_versions_scanned"].as_f64(),
            "Zen scans the whole heap, FIR only past its checkpoint: {zen:?} {fir:?}"
        );
    }
}
