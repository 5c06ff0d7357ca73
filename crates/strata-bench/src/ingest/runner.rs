//! The ingest benchmark's run: generate the data set once, then for R rounds
//! load it into every variant in turn (A B C A B C ...), each time into a
//! fresh database; after each load checkpoint, read the storage figures and
//! count the rows back. Variants are the commit protocols of a local Strata
//! (over HTTP on loopback, or in-process) or remote HTTP targets.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use strata_engine::Protocol;
use strata_pmem::PersistStats;
use strata_series::SeriesStore;

use super::generator::{CpuSpec, Dataset, INTERVAL_NS};
use super::http_client::HttpUrl;
use super::http_loader::HttpTarget;
use super::in_process::InProcessTarget;
use super::load::{load, IngestEndpoint, LoadOutcome};
use super::local_db::{pmem_log_bytes_for, BenchDirs, LocalDb};
use super::local_server::LocalServer;
use super::report::{build_report, load_metrics, storage_metrics, RunFacts, VariantResult};
use crate::machine::load_average_1m;
use crate::report::BenchReport;

/// Expected log bytes per row of the data set (ten 25-byte values plus
/// framing), used only to size the PMem ring.
const LOG_BYTES_PER_ROW_ESTIMATE: u64 = 300;

/// Everything a run needs. [`IngestOptions::full`] and
/// [`IngestOptions::quick`] are the presets of the CLI.
#[derive(Clone, Debug)]
pub struct IngestOptions {
    pub hosts: u32,
    pub rows_per_host: u64,
    /// Lines per request.
    pub batch_lines: u64,
    /// Parallel connections (workers).
    pub connections: usize,
    pub rounds: u32,
    pub seed: u64,
    pub json_path: Option<PathBuf>,
    /// Load this InfluxDB-v1-compatible endpoint instead of a local Strata.
    pub target: Option<String>,
    /// Database to write into.
    pub db: String,
    /// Call the store directly instead of going through HTTP (local only).
    pub in_process: bool,
    /// Commit protocols compared (local only), in round order.
    pub protocols: Vec<Protocol>,
    pub dirs: BenchDirs,
    /// Print progress (stderr) and the table (stdout).
    pub print: bool,
}

impl IngestOptions {
    /// The default run: 100 hosts, 6 hours of 10-second rows (216,000 rows,
    /// 2.16 M values), 3 rounds of 3 protocols.
    pub fn full() -> IngestOptions {
        IngestOptions {
            hosts: 100,
            rows_per_host: 6 * 360,
            batch_lines: 5000,
            connections: 2,
            rounds: 3,
            seed: 1,
            json_path: None,
            target: None,
            db: "benchmark".to_string(),
            in_process: false,
            protocols: Protocol::ALL.to_vec(),
            dirs: BenchDirs::detect(),
            print: true,
        }
    }

    /// `--quick`: 100 hosts, 1 hour (36,000 rows); well under a minute.
    pub fn quick() -> IngestOptions {
        IngestOptions { rows_per_host: 360, ..IngestOptions::full() }
    }

    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.connections >= 1, "--connections must be at least 1");
        anyhow::ensure!(self.rounds >= 1, "--rounds must be at least 1");
        anyhow::ensure!(self.batch_lines >= 1, "--batch must be at least 1");
        anyhow::ensure!(!self.db.is_empty(), "--db must not be empty");
        anyhow::ensure!(
            !(self.in_process && self.target.is_some()),
            "--in-process loads a local Strata; it cannot be combined with --target"
        );
        anyhow::ensure!(self.target.is_some() || !self.protocols.is_empty(), "--protocols is empty");
        if let Some(dir) = self.json_path.as_deref().and_then(Path::parent) {
            let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
            anyhow::ensure!(
                dir.is_dir(),
                "cannot write the JSON report: {} is not a directory",
                dir.display()
            );
        }
        Ok(())
    }

    pub fn spec(&self) -> CpuSpec {
        CpuSpec::new(self.seed, self.hosts, self.rows_per_host)
    }
}

/// Rows per host covering `text` (`90s`, `30m`, `6h`, `2d`) at 10-second intervals.
pub fn rows_per_host_for(text: &str) -> anyhow::Result<u64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 =
        number.parse().with_context(|| format!("duration {text:?}: expected a number and s, m, h or d"))?;
    let unit_s = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => anyhow::bail!("duration {text:?}: unit must be s, m, h or d"),
    };
    let seconds = n.checked_mul(unit_s).context("duration too long")?;
    let rows = seconds / (INTERVAL_NS / 1_000_000_000) as u64;
    anyhow::ensure!(rows >= 1, "duration {text:?} is shorter than one 10-second interval");
    Ok(rows)
}

/// One thing compared: a commit protocol of a local Strata, or a remote endpoint.
enum Variant {
    Local(Protocol),
    Remote { name: String, target: HttpTarget },
}

impl Variant {
    fn name(&self) -> String {
        match self {
            Variant::Local(p) => p.name().to_string(),
            Variant::Remote { name, .. } => name.clone(),
        }
    }
}

/// Whether a failed count query fails the run (local) or only warns (a
/// remote endpoint may not speak InfluxQL).
#[derive(Copy, Clone, PartialEq, Eq)]
enum Verify {
    Required,
    BestEffort,
}

fn progress_bar(print: bool, rows: u64, label: String) -> ProgressBar {
    if !print {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(rows);
    let style =
        ProgressStyle::with_template("{msg:28} [{bar:30}] {human_pos}/{human_len} rows {per_sec} {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(label);
    bar
}

/// Loads, then runs `after_load`, then counts the rows back.
fn load_verified<E: IngestEndpoint, T>(
    endpoint: &E,
    dataset: &Dataset,
    opts: &IngestOptions,
    progress: &ProgressBar,
    verify: Verify,
    after_load: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<(LoadOutcome, T)> {
    let outcome = load(endpoint, dataset, opts.connections, progress)?;
    progress.finish_and_clear();
    let after = after_load()?;
    match endpoint.count_rows() {
        Ok(n) => anyhow::ensure!(
            n == dataset.rows(),
            "{} counts {n} rows after the load, expected {}",
            endpoint.describe(),
            dataset.rows()
        ),
        Err(e) if verify == Verify::BestEffort => {
            if opts.print {
                eprintln!(
                    "ingest bench: warning: could not count the rows of {}: {e:#}",
                    endpoint.describe()
                );
            }
        }
        Err(e) => return Err(e.context(format!("counting the rows of {}", endpoint.describe()))),
    }
    Ok((outcome, after))
}

/// What the engine did during one load, read after its checkpoint.
pub(super) struct StorageFacts {
    pub protocol: Protocol,
    pub log_bytes: u64,
    pub persist: Option<PersistStats>,
    pub block_file_bytes: u64,
    pub checkpoints_during_load: u64,
}

fn run_local(
    protocol: Protocol,
    dataset: &Dataset,
    opts: &IngestOptions,
    label: String,
) -> anyhow::Result<VariantResult> {
    let log_bytes = pmem_log_bytes_for(dataset.rows().saturating_mul(LOG_BYTES_PER_ROW_ESTIMATE));
    let local = LocalDb::open(protocol, &opts.dirs, &opts.db, log_bytes)?;
    let engine = local.engine().clone();
    let store: Arc<dyn SeriesStore> = engine.clone();
    let server = if opts.in_process {
        None
    } else {
        Some(LocalServer::start(store.clone(), dataset.max_body_bytes() + 4096)?)
    };
    let stats_before = engine.stats();
    let persist_before = local.persist_stats();
    let after_load = || -> anyhow::Result<StorageFacts> {
        let persist = local.persist_stats().zip(persist_before).map(|(after, before)| after - before);
        let loaded = engine.stats();
        engine.checkpoint().context("checkpoint after the load")?;
        let checkpointed = engine.stats();
        Ok(StorageFacts {
            protocol,
            log_bytes: loaded.log_bytes_written - stats_before.log_bytes_written,
            persist,
            block_file_bytes: checkpointed.block_file_bytes,
            checkpoints_during_load: loaded.checkpoints - stats_before.checkpoints,
        })
    };
    let progress = progress_bar(opts.print, dataset.rows(), label);
    let (outcome, storage) = match &server {
        Some(server) => {
            let endpoint = HttpTarget::new(server.url(), &opts.db);
            endpoint.prepare()?;
            load_verified(&endpoint, dataset, opts, &progress, Verify::Required, after_load)?
        }
        None => {
            let endpoint = InProcessTarget::new(store, &opts.db);
            endpoint.prepare()?;
            load_verified(&endpoint, dataset, opts, &progress, Verify::Required, after_load)?
        }
    };
    if let Some(server) = server {
        server.stop()?;
    }
    let mut metrics = load_metrics(&outcome);
    metrics.extend(storage_metrics(&storage, &outcome));
    Ok(VariantResult { metrics, checkpoints_during_load: storage.checkpoints_during_load })
}

fn run_remote(
    target: &HttpTarget,
    dataset: &Dataset,
    opts: &IngestOptions,
    label: String,
) -> anyhow::Result<VariantResult> {
    target.prepare().with_context(|| format!("creating database {} on {}", target.db, target.url))?;
    let progress = progress_bar(opts.print, dataset.rows(), label);
    let (outcome, ()) = load_verified(target, dataset, opts, &progress, Verify::BestEffort, || Ok(()))?;
    Ok(VariantResult { metrics: load_metrics(&outcome), checkpoints_during_load: 0 })
}

/// Runs the ingest benchmark, prints its table (if `print`), writes its JSON
/// (if `json_path`) and returns the report.
pub fn run_ingest_bench(opts: &IngestOptions) -> anyhow::Result<BenchReport> {
    opts.check()?;
    let load_at_start = load_average_1m();
    let generated_at = Instant::now();
    let dataset = Dataset::generate(&opts.spec(), opts.batch_lines)?;
    let generate_time = generated_at.elapsed();
    let variants: Vec<Variant> = match &opts.target {
        Some(url) => {
            let url = HttpUrl::parse(url)?;
            vec![Variant::Remote { name: "target".into(), target: HttpTarget::new(url, &opts.db) }]
        }
        None => opts.protocols.iter().copied().map(Variant::Local).collect(),
    };
    if opts.print {
        eprintln!(
            "ingest bench: {} rows ({} hosts x {} rows, {} values, {:.1} MB of line protocol) generated in {:.2} s; {} requests of {} lines per load",
            dataset.rows(),
            opts.hosts,
            opts.rows_per_host,
            dataset.values(),
            dataset.body_bytes() as f64 / 1e6,
            generate_time.as_secs_f64(),
            dataset.batches.len(),
            opts.batch_lines
        );
        match &opts.target {
            Some(_) => eprintln!("ingest bench: loading {}", variants[0].name()),
            None => eprintln!(
                "ingest bench: {}; {} over {}",
                opts.dirs.describe(),
                if opts.in_process { "in-process writes" } else { "HTTP on 127.0.0.1" },
                if opts.connections == 1 {
                    "1 connection".to_string()
                } else {
                    format!("{} connections", opts.connections)
                }
            ),
        }
    }
    let mut samples: Vec<crate::measure::Samples> = variants.iter().map(|_| Default::default()).collect();
    let mut checkpoints_during_load = 0;
    let started = Instant::now();
    for round in 0..opts.rounds {
        let mut rows_per_s = Vec::with_capacity(variants.len());
        for (v, s) in variants.iter().zip(&mut samples) {
            let label = format!("round {}/{} {}", round + 1, opts.rounds, v.name());
            let result = match v {
                Variant::Local(p) => run_local(*p, &dataset, opts, label.clone()),
                Variant::Remote { target, .. } => run_remote(target, &dataset, opts, label.clone()),
            }
            .with_context(|| label.clone())?;
            checkpoints_during_load += result.checkpoints_during_load;
            let mut this_rows_per_s = f64::NAN;
            for (metric, value) in &result.metrics {
                if *metric == "rows_per_s" {
                    this_rows_per_s = *value;
                }
                s.push(metric, *value);
            }
            if opts.print {
                let get =
                    |m: &str| result.metrics.iter().find(|(k, _)| *k == m).map_or(f64::NAN, |(_, v)| *v);
                eprintln!(
                    "ingest bench: {label}: {:.0} rows/s, ack p50 {:.2} ms, p99 {:.2} ms",
                    this_rows_per_s,
                    get("latency_ms_p50"),
                    get("latency_ms_p99")
                );
            }
            rows_per_s.push(this_rows_per_s);
        }
        if let Some(none_at) = variants.iter().position(|v| matches!(v, Variant::Local(Protocol::None))) {
            let base = rows_per_s[none_at];
            for (s, r) in samples.iter_mut().zip(&rows_per_s) {
                s.push("ratio_to_none", r / base);
            }
        }
    }
    let facts = RunFacts {
        opts: opts.clone(),
        dataset_rows: dataset.rows(),
        dataset_values: dataset.values(),
        body_bytes: dataset.body_bytes(),
        requests_per_load: dataset.batches.len() as u64,
        pmem_log_bytes: pmem_log_bytes_for(dataset.rows().saturating_mul(LOG_BYTES_PER_ROW_ESTIMATE)),
        load_average_1m: [load_at_start, load_average_1m()],
        checkpoints_during_load,
        run_time: started.elapsed(),
    };
    let names: Vec<String> = variants.iter().map(Variant::name).collect();
    let report = build_report(&facts, &names, &samples);
    if opts.print {
        report.print_table();
    }
    if let Some(path) = &opts.json_path {
        report.write_json(path)?;
        if opts.print {
            eprintln!("ingest bench: wrote {}", path.display());
        }
    }
    Ok(report)
}
