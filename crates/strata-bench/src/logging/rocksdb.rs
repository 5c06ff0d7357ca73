//! RocksDB as `bench logging` measures it: Debian's `rocksdb-tools`
//! `db_bench`, `fillrandom` with `--sync=1` (every write waits for its WAL
//! record to be synced; concurrent writers share a sync through RocksDB's
//! write groups), the WAL in the data directory on the same medium, a fresh
//! database per run. Its own timer and latency histogram are parsed from its
//! output: `ops/sec` over all threads, and `P50`/`P99` of "Microseconds per
//! write" (interpolated inside its histogram buckets).
//!
//! `db_bench` is installed with `apt-get install -y rocksdb-tools` when it is
//! missing and we are root; otherwise the error says how. Nothing here
//! installs anything from `cargo test`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::Context;

use crate::peers::install::{apt_install, debian_version, tail};

/// The Debian package that ships `db_bench`.
pub const ROCKSDB_PACKAGE: &str = "rocksdb-tools";
const DB_BENCH: &str = "db_bench";

/// A runnable `db_bench` and its versions.
#[derive(Clone, Debug)]
pub struct DbBench {
    pub program: PathBuf,
    /// `7.8.3 (Debian 7.8.3-2)`.
    pub version: String,
}

/// What one `db_bench` run reported.
#[derive(Clone, Debug, PartialEq)]
pub struct DbBenchFigures {
    /// Writes over all threads per second of its own timer.
    pub ops_per_s: f64,
    /// Writes over all threads.
    pub operations: u64,
    /// Its own timer, seconds.
    pub seconds: f64,
    pub latency_us_p50: f64,
    pub latency_us_p99: f64,
    /// The build warns "Assertions are enabled" (a debug-assertion build is slower).
    pub assertions_enabled: bool,
}

/// How one run is configured.
#[derive(Clone, Debug)]
pub struct DbBenchRun<'a> {
    /// Data directory (and WAL directory): must not exist or be empty.
    pub dir: &'a Path,
    pub threads: usize,
    /// Writes per thread (`--num`).
    pub writes_per_thread: u64,
    pub value_bytes: u64,
    pub seed: u64,
}

/// The command line of one run (also printed in the report to reproduce it).
pub fn db_bench_args(run: &DbBenchRun<'_>) -> Vec<String> {
    let dir = run.dir.display();
    vec![
        "--benchmarks=fillrandom".into(),
        "--sync=1".into(),
        format!("--num={}", run.writes_per_thread),
        format!("--value_size={}", run.value_bytes),
        format!("--key_size={}", super::record::KEY_BYTES),
        format!("--threads={}", run.threads),
        format!("--db={dir}"),
        format!("--wal_dir={dir}"),
        "--histogram=1".into(),
        "--compression_type=none".into(),
        format!("--seed={}", run.seed),
    ]
}

fn find_in_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file())
}

/// Why `db_bench` cannot run without installing anything (`None`: it can).
pub fn why_no_db_bench() -> Option<String> {
    find_in_path(DB_BENCH)
        .is_none()
        .then(|| format!("{DB_BENCH} is not on PATH (Debian package {ROCKSDB_PACKAGE})"))
}

/// `RocksDB:    version 7.8.3` (first lines of any run) -> `7.8.3`.
pub fn parse_rocksdb_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.trim_start().starts_with("RocksDB:"))?;
    let v = line.split_once("version")?.1.trim();
    (!v.is_empty()).then(|| v.to_string())
}

/// Finds `db_bench` (installing `rocksdb-tools` if `install` and missing)
/// and reads its version (`--version`, plus the Debian package version).
pub fn ensure_db_bench(install: bool) -> anyhow::Result<DbBench> {
    let program = match find_in_path(DB_BENCH) {
        Some(p) => p,
        None if install => {
            apt_install(ROCKSDB_PACKAGE).context("or leave RocksDB out with --systems")?;
            find_in_path(DB_BENCH).with_context(|| format!("{DB_BENCH} is still missing after installing"))?
        }
        None => anyhow::bail!("{}", why_no_db_bench().unwrap_or_default()),
    };
    let out =
        Command::new(&program).arg("--version").output().with_context(|| format!("running {program:?}"))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // `db_bench version 7.8.3`
    let reported = text.lines().find_map(|l| l.trim().strip_prefix("db_bench version ")).map(str::to_string);
    let version = match (reported, debian_version(ROCKSDB_PACKAGE)) {
        (Some(v), Some(deb)) => format!("{v} (Debian {deb})"),
        (Some(v), None) => v,
        (None, Some(deb)) => format!("Debian {deb}"),
        (None, None) => "unknown".into(),
    };
    Ok(DbBench { program, version })
}

fn number_after<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    let at = text.find(label)? + label.len();
    text[at..].split_whitespace().next()
}

/// Parses a `fillrandom` run of `db_bench --histogram=1`: the result line
/// `fillrandom : 20.016 micros/op 99621 ops/sec 0.040 seconds 4000 operations; ...`
/// and the `Percentiles: P50: ... P99: ...` line under "Microseconds per write".
pub fn parse_db_bench_output(text: &str) -> anyhow::Result<DbBenchFigures> {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("fillrandom") && l.contains("ops/sec"))
        .context("no `fillrandom ... ops/sec` line in db_bench's output")?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let before = |unit: &str| -> anyhow::Result<&str> {
        let i = words
            .iter()
            .position(|w| w.trim_end_matches(';') == unit)
            .with_context(|| format!("no `{unit}` in {line:?}"))?;
        anyhow::ensure!(i > 0, "nothing before `{unit}` in {line:?}");
        Ok(words[i - 1])
    };
    let ops_per_s: f64 =
        before("ops/sec")?.parse().with_context(|| format!("ops/sec is not a number in {line:?}"))?;
    let seconds: f64 =
        before("seconds")?.parse().with_context(|| format!("seconds is not a number in {line:?}"))?;
    let operations: u64 =
        before("operations")?.parse().with_context(|| format!("operations is not a count in {line:?}"))?;
    let hist = text
        .split_once("Microseconds per write:")
        .map(|(_, rest)| rest)
        .context("no `Microseconds per write:` histogram in db_bench's output (was --histogram=1 given?)")?;
    let percentiles = hist
        .lines()
        .find(|l| l.trim_start().starts_with("Percentiles:"))
        .context("no `Percentiles:` line under `Microseconds per write:`")?;
    let quantile = |label: &str| -> anyhow::Result<f64> {
        number_after(percentiles, label)
            .with_context(|| format!("no {label} in {percentiles:?}"))?
            .parse()
            .with_context(|| format!("{label} is not a number in {percentiles:?}"))
    };
    let figures = DbBenchFigures {
        ops_per_s,
        operations,
        seconds,
        latency_us_p50: quantile("P50:")?,
        latency_us_p99: quantile("P99:")?,
        assertions_enabled: text.contains("Assertions are enabled"),
    };
    anyhow::ensure!(
        figures.ops_per_s.is_finite() && figures.ops_per_s > 0.0 && figures.operations > 0,
        "db_bench reported no writes: {line:?}"
    );
    Ok(figures)
}

/// Runs `db_bench` once and parses its output; the wall time of the whole
/// process (start, open, writes, close) is returned beside it.
pub fn run_db_bench(db_bench: &DbBench, run: &DbBenchRun<'_>) -> anyhow::Result<(DbBenchFigures, f64)> {
    let args = db_bench_args(run);
    let start = Instant::now();
    let out = Command::new(&db_bench.program)
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("starting {}", db_bench.program.display()))?;
    let wall_s = start.elapsed().as_secs_f64();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    anyhow::ensure!(
        out.status.success(),
        "{} {} failed ({}):\n{}",
        db_bench.program.display(),
        args.join(" "),
        out.status,
        tail(&text, 20)
    );
    let figures = parse_db_bench_output(&text)
        .with_context(|| format!("reading db_bench's output:\n{}", tail(&text, 20)))?;
    Ok((figures, wall_s))
}
