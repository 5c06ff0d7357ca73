//! `strata bench fir-recovery`: FIR's recovery (fir.txt 4.4, Fig. 11's
//! question) against the Zen-style recovery that scans the whole tuple
//! heap, on one database of rows loaded into emulated PMem.
//!
//! The load writes `versions` versions of 1,000-byte rows from two
//! workers: `versions / versions_per_key` rows inserted, then updated until
//! each has `versions_per_key` versions (an OLTP heap keeps every version
//! until garbage collection, so versions outnumber keys as it runs); then a
//! full checkpoint, then 1 % of the rows updated (the versions after it). Each measured run drops the database (nothing is pending:
//! every commit was waited for, so the region is what a SIGKILL would
//! leave) and times recovery until the first transaction commits:
//! - `fir`: the checkpoint's entries plus the versions after it, the index
//!   rebuilt bottom-up on 2 threads;
//! - `fir-1thread`: the same on 1 thread (the parallel rebuild's speed-up);
//! - `zen-style`: every version scanned, the index built top-down from the
//!   scan, one key at a time (FIR's own recovery told to ignore the
//!   checkpoint);
//! - `fir-clean-shutdown`: `fir` after `FirDb::close` (a checkpoint), so
//!   no version after it (measured after the alternating rounds).
//!
//! Variants alternate within each round; medians of the rounds.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{json, Map, Value};
use strata_fir::{CheckpointKind, FirDb, FirOptions, RunOptions};
use strata_pmem::{PmemMode, Region};
use strata_txn::{RowKey, TableId, TableSchema, WorkerId};

use crate::machine::Machine;
use crate::report::BenchReport;

const ROW_BYTES: usize = 1000;
const T: TableId = TableId(0);
/// Rows a load transaction inserts.
const LOAD_BATCH: u64 = 256;

#[derive(Clone, Debug)]
pub struct FirRecoveryOptions {
    /// Versions loaded before the checkpoint.
    pub versions: u64,
    pub versions_per_key: u64,
    pub rounds: usize,
    pub pmem_dir: PathBuf,
    pub json_path: Option<PathBuf>,
    pub print: bool,
}

impl FirRecoveryOptions {
    /// 2,000,000 versions (about 2 GB), 4 per key, 3 rounds.
    pub fn full() -> Self {
        FirRecoveryOptions {
            versions: 2_000_000,
            versions_per_key: 4,
            rounds: 3,
            pmem_dir: "/dev/shm".into(),
            json_path: None,
            print: true,
        }
    }

    /// 200,000 versions, 4 per key, 3 rounds.
    pub fn quick() -> Self {
        FirRecoveryOptions { versions: 200_000, ..FirRecoveryOptions::full() }
    }

    fn rows(&self) -> u64 {
        (self.versions / self.versions_per_key.max(1)).max(1)
    }
}

fn schemas() -> Vec<TableSchema> {
    vec![TableSchema { name: "usertable".into(), row_bytes: ROW_BYTES }]
}

fn row(key: u64, version: u64) -> Vec<u8> {
    let mut r = vec![0u8; ROW_BYTES];
    r[..8].copy_from_slice(&key.to_le_bytes());
    r[8..16].copy_from_slice(&version.to_le_bytes());
    r
}

/// One measured recovery.
struct Run {
    recovery: Duration,
    data: Duration,
    index: Duration,
    rebuild: Duration,
    versions_scanned: u64,
    keys: u64,
}

fn recover(region: &Arc<Region>, run: &RunOptions, round: u64) -> anyhow::Result<Run> {
    let started = Instant::now();
    let (db, report) = FirDb::open_with(region.clone(), &schemas(), run).context("recovery")?;
    let mut t = db.begin(WorkerId(0))?;
    t.put(T, RowKey(round), &row(round, 1_000 + round))?;
    t.commit_durably()?;
    Ok(Run {
        recovery: started.elapsed(),
        data: report.data_phase,
        index: report.index_phase,
        rebuild: report.rebuild,
        versions_scanned: report.versions_scanned,
        keys: report.keys,
    })
}

/// Loads the database; the region and the rows updated after the checkpoint.
fn load(o: &FirRecoveryOptions, path: &std::path::Path) -> anyhow::Result<(Arc<Region>, u64)> {
    let workers = 2u32;
    let rows = o.rows();
    let options = FirOptions {
        workers,
        blocks_per_table: (o.versions * 12 / 10) / 2048 + 8,
        table_blocks: Vec::new(),
        checkpoint_keys: rows + 1024,
    };
    let len = FirDb::region_bytes(&schemas(), &options);
    let region = Arc::new(crate::emulated_region::open_touched(path, len)?);
    let db = FirDb::create(region.clone(), &schemas(), &options)?;
    for pass in 0..o.versions_per_key.max(1) {
        std::thread::scope(|s| -> anyhow::Result<()> {
            let handles: Vec<_> = (0..workers)
                .map(|w| {
                    let db = &db;
                    s.spawn(move || -> anyhow::Result<()> {
                        let mut key = u64::from(w) * LOAD_BATCH;
                        while key < rows {
                            let mut t = db.begin(WorkerId(w))?;
                            for k in key..(key + LOAD_BATCH).min(rows) {
                                if pass == 0 {
                                    t.insert(T, RowKey(k), &row(k, 0))?;
                                } else {
                                    t.put(T, RowKey(k), &row(k, pass))?;
                                }
                            }
                            t.commit_durably()?;
                            key += LOAD_BATCH * u64::from(workers);
                        }
                        Ok(())
                    })
                })
                .collect();
            for h in handles {
                h.join().expect("a load thread panicked")?;
            }
            Ok(())
        })?;
    }
    let checkpoint = db.checkpoint(CheckpointKind::Full)?;
    let updates = (rows / 100).max(1);
    for i in 0..updates {
        let key = i * 97 % rows;
        let mut t = db.begin(WorkerId((i % 2) as u32))?;
        t.put(T, RowKey(key), &row(key, 1))?;
        t.commit_durably()?;
    }
    if o.print {
        eprintln!(
            "fir-recovery bench: loaded {} versions of {rows} rows, checkpoint of {} entries in {:.2} s, {updates} updates after it",
            o.versions,
            checkpoint.entries,
            checkpoint.elapsed.as_secs_f64()
        );
    }
    Ok((region, updates))
}

/// One measured recovery's line on stderr.
fn print_round(o: &FirRecoveryOptions, round: usize, variant: &str, r: &Run) {
    if o.print {
        eprintln!(
            "fir-recovery bench: round {}/{} {variant}: {:.1} ms ({} versions scanned)",
            round + 1,
            o.rounds,
            r.recovery.as_secs_f64() * 1e3,
            r.versions_scanned
        );
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

pub fn run_fir_recovery_bench(o: &FirRecoveryOptions) -> anyhow::Result<BenchReport> {
    anyhow::ensure!(
        o.versions > 0 && o.versions_per_key > 0 && o.rounds > 0,
        "versions, versions per key and rounds must be positive"
    );
    BenchReport::check_json_path(o.json_path.as_deref())?;
    let path = o.pmem_dir.join(format!("strata-fir-recovery-{}.pmem", std::process::id()));
    let result = (|| -> anyhow::Result<BenchReport> {
        let (region, updates) = load(o, &path)?;
        let variants: [(&str, RunOptions); 3] = [
            ("fir", RunOptions { commit_thread: true, rebuild_threads: 2, ..RunOptions::default() }),
            ("fir-1thread", RunOptions { rebuild_threads: 1, ..RunOptions::default() }),
            ("zen-style", RunOptions { scan_whole_heap: true, rebuild_threads: 2, ..RunOptions::default() }),
        ];
        let mut runs: Vec<Vec<Run>> = variants.iter().map(|_| Vec::new()).collect();
        for round in 0..o.rounds {
            for (i, (name, run)) in variants.iter().enumerate() {
                let r = recover(&region, run, round as u64)?;
                print_round(o, round, name, &r);
                runs[i].push(r);
            }
        }
        let machine = Machine::detect(
            PmemMode::Emulated,
            "emulated (a mapped file in the PMem directory)",
            region.flush_instruction(),
        );
        let config = json!({
            "versions": o.versions, "versions_per_key": o.versions_per_key, "rows": o.rows(), "row_bytes": ROW_BYTES, "versions_after_checkpoint": updates, "rounds": o.rounds,
            "pmem_dir": o.pmem_dir, "region_bytes": region.len(), "workers": 2,
        });
        // A clean shutdown (FirDb::close: a checkpoint), then the same
        // recovery: nothing after the checkpoint to read.
        let (db, _) = FirDb::open(region.clone(), &schemas())?;
        db.close()?;
        let clean_run = RunOptions::default();
        let mut clean = Vec::new();
        for round in 0..o.rounds {
            let r = recover(&region, &clean_run, round as u64)?;
            // Each measured run's own transaction is after the checkpoint:
            // close again so every round starts clean.
            FirDb::open(region.clone(), &schemas())?.0.close()?;
            print_round(o, round, "fir-clean-shutdown", &r);
            clean.push(r);
        }
        runs.push(clean);
        let mut report = BenchReport::new("fir-recovery", machine, config);
        let fir_ms = median(runs[0].iter().map(|r| r.recovery.as_secs_f64() * 1e3).collect());
        let one_ms = median(runs[1].iter().map(|r| r.recovery.as_secs_f64() * 1e3).collect());
        let index_two_ms = median(runs[0].iter().map(|r| r.rebuild.as_secs_f64() * 1e3).collect());
        let index_one_ms = median(runs[1].iter().map(|r| r.rebuild.as_secs_f64() * 1e3).collect());
        let names = variants.iter().map(|(n, _)| *n).chain(["fir-clean-shutdown"]);
        for (name, rs) in names.zip(&runs) {
            let ms =
                |f: &dyn Fn(&Run) -> Duration| median(rs.iter().map(|r| f(r).as_secs_f64() * 1e3).collect());
            let recovery_ms = ms(&|r| r.recovery);
            let mut row: Map<String, Value> = Map::new();
            row.insert("variant".into(), json!(name));
            row.insert("recovery_ms".into(), json!(recovery_ms));
            row.insert("data_phase_ms".into(), json!(ms(&|r| r.data)));
            row.insert("index_phase_ms".into(), json!(ms(&|r| r.index)));
            row.insert("rebuild_ms".into(), json!(ms(&|r| r.rebuild)));
            row.insert("versions_scanned".into(), json!(rs[0].versions_scanned));
            row.insert("keys".into(), json!(rs[0].keys));
            row.insert("ratio_to_fir".into(), json!(recovery_ms / fir_ms));
            report.results.push(row);
        }
        report.columns =
            ["recovery_ms", "ratio_to_fir", "data_phase_ms", "index_phase_ms", "versions_scanned", "keys"]
                .map(String::from)
                .to_vec();
        report.notes.push(format!(
            "{} versions of {} rows of {ROW_BYTES} B loaded by 2 workers into emulated PMem ({} MB region), a full checkpoint, then {updates} updates; recovery = open until the first transaction commits; medians of {} rounds, variants alternating",
            o.versions,
            o.rows(),
            region.len() >> 20,
            o.rounds
        ));
        report.notes.push(format!(
            "index rebuild (the shards' trees built, rebuild_ms) on 2 threads vs 1: {:.2}x the speed ({index_one_ms:.1} ms vs {index_two_ms:.1} ms); whole recovery {:.2}x ({one_ms:.1} ms vs {fir_ms:.1} ms); DRAM tiles and their headers are rebuilt lazily, on first touch",
            index_one_ms / index_two_ms,
            one_ms / fir_ms
        ));
        report.notes.push("zen-style = FIR's recovery ignoring the checkpoint: every version scanned, the index built top-down from the scan".into());
        Ok(report)
    })();
    std::fs::remove_file(&path).ok();
    result?.publish(o.print, o.json_path.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tiny_run_reports_every_variant_and_the_scans_differ() {
        let dir = tempfile::tempdir().unwrap();
        let o = FirRecoveryOptions {
            versions: 6000,
            versions_per_key: 2,
            rounds: 1,
            pmem_dir: dir.path().into(),
            json_path: None,
            print: false,
        };
        let r = run_fir_recovery_bench(&o).unwrap();
        let scanned = |v: &str| r.result(v).unwrap()["versions_scanned"].as_u64().unwrap();
        // Only the updates after the checkpoint (and each earlier
        // measured run's first transaction).
        assert!((30..=32).contains(&scanned("fir")), "{}", scanned("fir"));
        assert!((30..=32).contains(&scanned("fir-1thread")), "{}", scanned("fir-1thread"));
        assert!(scanned("zen-style") >= 6030, "every version");
        assert_eq!(r.result("fir-clean-shutdown").unwrap()["versions_scanned"].as_u64().unwrap(), 0);
        for v in ["fir", "fir-1thread", "zen-style", "fir-clean-shutdown"] {
            assert_eq!(r.result(v).unwrap()["keys"].as_u64().unwrap(), 3000, "{v}");
        }
    }
}
