//! Tests of `bench logging`: tiny windows of Strata's logs and SQLite on
//! tmpfs whose commits are all found again afterwards (records recovered,
//! rows counted), the db_bench output parser on a captured output, a real
//! db_bench run when it is installed, and the report's shape.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use super::record::{key_of, KEY_BYTES};
use super::rocksdb::{parse_db_bench_output, parse_rocksdb_version, DbBenchRun};
use super::sqlite::{count_rows, sqlite_window, SqliteSync};
use super::strata::{ssd_recovered_records, ssd_window, PmemLogBench};
use super::*;

const WINDOW: Duration = Duration::from_millis(20);

/// `/dev/shm` when it is there (tmpfs), else the temp directory.
fn tmpfs_dir() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    }
}

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("strata-logging-test-").tempdir_in(tmpfs_dir()).unwrap()
}

/// A db_bench 7.8.3 (Debian rocksdb-tools 7.8.3-2) output, 2 threads x 2000
/// writes on tmpfs, progress lines cut short.
const DB_BENCH_SAMPLE: &str = "\
RocksDB:    version 7.8.3
Date:       Sun Nov 22 11:09:31 2026
CPU:        2 * AMD EPYC
CPUCache:   512 KB
Keys:       16 bytes each (+ 0 bytes user-defined timestamp)
Values:     100 bytes each (50 bytes after compression)
Entries:    2000
Compression: NoCompression
WARNING: Assertions are enabled; benchmarks unnecessarily slow
------------------------------------------------
DB path: [/dev/shm/dbb]
fillrandom   :      20.016 micros/op 99621 ops/sec 0.040 seconds 4000 operations;   11.0 MB/s
Microseconds per write:
Count: 4000 Average: 19.9475  StdDev: 576.23
Min: 5  Median: 6.3349  Max: 25788
Percentiles: P50: 6.33 P75: 8.26 P99: 23.20 P99.9: 63.50 P99.99: 25788.00
------------------------------------------------------
(       4,       6 ]     1826  45.650%  45.650% #########
(       6,      10 ]     2078  51.950%  97.600% ##########
(   22000,   33000 ]        2   0.050% 100.000%
";

#[test]
fn db_bench_output_parses() {
    let f = parse_db_bench_output(DB_BENCH_SAMPLE).unwrap();
    assert_eq!(f.ops_per_s, 99621.0);
    assert_eq!(f.operations, 4000);
    assert_eq!(f.seconds, 0.040);
    assert_eq!(f.latency_us_p50, 6.33);
    assert_eq!(f.latency_us_p99, 23.20);
    assert!(f.assertions_enabled);
    assert_eq!(parse_rocksdb_version(DB_BENCH_SAMPLE).as_deref(), Some("7.8.3"));
}

#[test]
fn db_bench_output_without_figures_is_an_error() {
    let no_result = DB_BENCH_SAMPLE.replace("fillrandom   :", "fillseq   :");
    assert!(parse_db_bench_output(&no_result).unwrap_err().to_string().contains("fillrandom"));
    let no_histogram = DB_BENCH_SAMPLE.replace("Microseconds per write:", "");
    assert!(parse_db_bench_output(&no_histogram).unwrap_err().to_string().contains("--histogram=1"));
    let bad_p99 = DB_BENCH_SAMPLE.replace("P99: 23.20", "P99: x");
    assert!(parse_db_bench_output(&bad_p99).unwrap_err().to_string().contains("P99"));
    assert!(parse_db_bench_output("").is_err());
    assert!(parse_db_bench_output("fillrandom : ops/sec").is_err(), "a unit without a number is an error");
}

#[test]
fn db_bench_runs_when_installed() {
    // The parser part holds whatever the machine has.
    assert!(parse_db_bench_output(DB_BENCH_SAMPLE).is_ok());
    if let Some(why) = rocksdb::why_no_db_bench() {
        eprintln!("skipping the db_bench run: {why}");
        return;
    }
    let db_bench = rocksdb::ensure_db_bench(false).unwrap();
    assert!(!db_bench.version.is_empty());
    let dir = scratch();
    let run = DbBenchRun {
        dir: &dir.path().join("db"),
        threads: 2,
        writes_per_thread: 50,
        value_bytes: DEFAULT_VALUE_BYTES,
        seed: 7,
    };
    let (f, wall_s) = rocksdb::run_db_bench(&db_bench, &run).unwrap();
    assert_eq!(f.operations, 100, "2 threads x 50 writes");
    assert!(f.ops_per_s > 0.0 && f.latency_us_p50 > 0.0 && f.latency_us_p99 >= f.latency_us_p50);
    assert!(wall_s > 0.0);
}

#[test]
fn strata_ssd_log_commits_are_all_recovered() {
    let dir = scratch();
    let log_dir = dir.path().join("ssd-log");
    let value = record::value_of(100);
    let o = ssd_window(&log_dir, 2, WINDOW, &value, 1 << 20).unwrap();
    assert!(o.commits >= 2, "each thread commits at least once");
    assert_eq!(o.latency_ns.len(), o.commits, "one latency sample per commit");
    assert_eq!(ssd_recovered_records(&log_dir, 1 << 20).unwrap(), o.commits);
}

#[test]
fn strata_pmem_log_commits_are_all_recovered() {
    let dir = scratch();
    let pmem = PmemLogBench::create(&dir.path().join("region"), 16 << 20).unwrap();
    let value = record::value_of(100);
    let o = pmem.window(2, WINDOW, &value).unwrap();
    assert!(o.commits >= 2);
    assert_eq!(pmem.truncations(), 0, "the ring is large enough for a 20 ms window");
    assert_eq!(pmem.recovered_records().unwrap(), o.commits);
    // The next window starts on an emptied ring.
    let again = pmem.window(1, WINDOW, &value).unwrap();
    assert_eq!(pmem.recovered_records().unwrap(), again.commits);
}

#[test]
fn sqlite_rows_are_all_there_in_both_modes() {
    let dir = scratch();
    let value = record::value_of(100);
    for (sync, name) in [(SqliteSync::Full, "full.db"), (SqliteSync::Normal, "normal.db")] {
        let path = dir.path().join(name);
        let o = sqlite_window(&path, sync, 2, WINDOW, &value).unwrap();
        assert!(o.commits >= 2, "{sync:?}");
        assert_eq!(count_rows(&path).unwrap(), o.commits, "{sync:?}: one row per acknowledged commit");
    }
    assert!(sqlite::sqlite_version().starts_with('3'), "{}", sqlite::sqlite_version());
    // A database that exists already is refused, not appended to.
    let err = sqlite_window(&dir.path().join("full.db"), SqliteSync::Full, 1, WINDOW, &value).unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
}

#[test]
fn keys_are_unique_and_sized() {
    let mut seen = HashSet::new();
    for t in 0..4 {
        for seq in 0..5000 {
            let k = key_of(t, seq);
            assert_eq!(k.len(), KEY_BYTES);
            assert!(seen.insert(k), "duplicate key for thread {t} seq {seq}");
        }
    }
    // Consecutive keys are not in key order (fillrandom-like).
    let ordered = (0..100).filter(|&s| key_of(0, s) < key_of(0, s + 1)).count();
    assert!((20..80).contains(&ordered), "{ordered} of 100 consecutive pairs ordered");
}

#[test]
fn systems_parse_and_state_their_durability() {
    assert_eq!(System::parse_list(&[]).unwrap(), System::ALL.to_vec());
    let picked = System::parse_list(&["rocksdb".into(), " strata-ssd".into()]).unwrap();
    assert_eq!(picked, [System::RocksDb, System::StrataSsd]);
    assert!(System::parse("leveldb").unwrap_err().contains("sqlite-normal"));
    assert!(System::parse_list(&["rocksdb".into(), "rocksdb".into()]).unwrap_err().contains("twice"));
    assert_eq!(System::SqliteFull.survives("ext4"), "power loss");
    assert_eq!(System::SqliteNormal.survives("ext4"), "process crash");
    assert_eq!(System::StrataSsd.survives("tmpfs"), "process crash");
    assert!(System::StrataSsd.group_commit() && System::RocksDb.group_commit());
    assert!(!System::SqliteFull.group_commit() && !System::StrataPmem.group_commit());
}

#[test]
fn tiny_run_reports_every_variant_with_ratios() {
    let ext4 = tempfile::tempdir_in(default_disk_dir()).unwrap();
    let json_dir = tempfile::tempdir().unwrap();
    let json_path = json_dir.path().join("logging.json");
    let opts = LoggingOptions {
        json_path: Some(json_path.clone()),
        budget: Some(LoggingBudget::tiny()),
        tmpfs_dir: tmpfs_dir(),
        ext4_dir: ext4.path().to_path_buf(),
        value_bytes: 40,
        threads: vec![1, 2],
        systems: vec![System::StrataSsd, System::StrataPmem, System::SqliteFull],
        systems_required: true,
        install: false,
        print: false,
        ..LoggingOptions::default()
    };
    let report = run_logging_bench(&opts).unwrap();
    // 2 thread counts x (2 media x {ssd, sqlite-full} + the tmpfs pmem log).
    assert_eq!(report.results.len(), 10);
    let media: Vec<String> = report.config["media"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["label"].as_str().unwrap().to_string())
        .collect();
    for row in &report.results {
        let rate = row["throughput_commits_per_s"].as_f64().unwrap();
        assert!(rate > 0.0, "{row:?}");
        assert!(row["latency_us_p99"].as_f64().unwrap() >= row["latency_us_p50"].as_f64().unwrap());
        assert!(media.contains(&row["medium"].as_str().unwrap().to_string()));
        if row["system"] == "strata-ssd" {
            assert_eq!(row["ratio_to_strata_ssd"].as_f64(), Some(1.0));
        } else {
            assert!(row["ratio_to_strata_ssd"].as_f64().unwrap() > 0.0);
        }
        if row["system"] == "strata-pmem" {
            assert_eq!(row["medium"].as_str(), Some(media[1].as_str()), "PMem log on the tmpfs medium only");
        }
    }
    assert_eq!(report.config["value_bytes"], 40);
    assert_eq!(report.config["strata_payload_bytes"], 56);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(json["benchmark"], "logging");
    assert_eq!(json["results"].as_array().unwrap().len(), 10);
    assert!(json["machine"]["cores"].as_u64().unwrap() >= 1);
    let table = table::render(&report);
    for s in ["commits/s", "vs strata-ssd", "strata-pmem", "sqlite-full", "survives", "process crash"] {
        assert!(table.contains(s), "missing {s} in\n{table}");
    }
}

#[test]
fn bad_options_are_refused() {
    let base = LoggingOptions { print: false, install: false, ..LoggingOptions::default() };
    let zero_value = LoggingOptions { value_bytes: 0, ..base.clone() };
    assert!(run_logging_bench(&zero_value).unwrap_err().to_string().contains("--value-bytes"));
    let no_threads = LoggingOptions { threads: vec![], ..base.clone() };
    assert!(run_logging_bench(&no_threads).unwrap_err().to_string().contains("thread"));
    let twice = LoggingOptions { threads: vec![1, 2, 1], ..base.clone() };
    assert!(run_logging_bench(&twice).unwrap_err().to_string().contains("twice"));
    let json_nowhere = LoggingOptions { json_path: Some("/nonexistent-dir/x.json".into()), ..base };
    assert!(run_logging_bench(&json_nowhere).unwrap_err().to_string().contains("not a directory"));
}
