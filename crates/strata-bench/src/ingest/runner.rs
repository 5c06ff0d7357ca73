//! The ingest benchmark's run: generate the data set once, then for R rounds
//! load it into every variant in turn (A B C A B C ...), each time into a
//! fresh instance that first takes an uncounted warm-up load into another
//! database ([`super::warmup`]) and then the counted load into a fresh
//! database; after each load checkpoint, read the storage figures (the
//! warm-up's share taken out) and count the rows back. Variants are the
//! commit protocols of a local Strata (over HTTP on loopback, or
//! in-process), remote HTTP targets (no warm-up: not our instance), or peers
//! (InfluxDB, VictoriaMetrics, QuestDB; [`crate::peers`]) started afresh for
//! every load. A count that differs from the rows loaded is printed loudly
//! and fails the run once the table and the JSON are out ([`super::checks`]).
//! `--scale large` adds one large, streamed load per variant after the
//! rounds ([`super::scale`]).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use strata_engine::Protocol;
use strata_pmem::PersistStats;

use super::checks::{Checks, ReferenceAnswers};
use super::dataset::Dataset;
use super::generator::{CpuSpec, INTERVAL_NS};
use super::http_client::HttpUrl;
use super::http_loader::HttpTarget;
use super::in_process::InProcessTarget;
use super::load::{load, IngestEndpoint, LoadOutcome};
use super::local_db::{pmem_log_bytes_for, BenchDirs, LocalDb};
use super::local_server::LocalServer;
use super::peer_run::{disk_metrics, run_peer};
use super::queries::{run_queries, tsbs_queries, QueryTarget};
use super::report::{
    build_report, load_metrics, print_table, storage_metrics, Counted, RunFacts, VariantResult,
};
use super::rss::RssWatch;
use super::scale::{run_scale_loads, ScaleLoad};
use super::scale_report::add_scale_figures;
use super::warmup::{counted_bytes_at_rest, warm_up, warmup_dataset, warmup_db};
use crate::machine::load_average_1m;
use crate::peers::disk::allocated_bytes;
use crate::peers::{ensure_installed, Installed, PeerKind};
use crate::report::BenchReport;

/// Expected log bytes per row of the data set (ten 25-byte values plus
/// framing), used only to size the PMem ring.
const LOG_BYTES_PER_ROW_ESTIMATE: u64 = 300;
/// The same for DecLog's file (about 8 bytes per value with per-key
/// entries, compressed), used only to size that file (at least its
/// configured default).
const DECLOG_BYTES_PER_ROW_ESTIMATE: u64 = 300;

/// Bytes of the PMem ring (serial) or DecLog file (declog) for `rows`.
fn log_bytes_for(protocol: Protocol, rows: u64) -> u64 {
    let per_row =
        if protocol.is_declog() { DECLOG_BYTES_PER_ROW_ESTIMATE } else { LOG_BYTES_PER_ROW_ESTIMATE };
    pmem_log_bytes_for(rows.saturating_mul(per_row))
}

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
    /// Peers loaded after the protocols in every round (`--peers`), each a
    /// fresh instance per load, in a temporary directory under `dirs.disk_dir`.
    pub peers: Vec<PeerKind>,
    /// Whether a peer that cannot be installed fails the run (peers named
    /// on the command line) or is skipped with a warning (`--peers` alone).
    pub peers_required: bool,
    /// After each load, run the TSBS-style queries ([`super::queries`])
    /// against Strata over HTTP, InfluxDB and QuestDB, and compare answers.
    pub queries: bool,
    /// Timed runs of each query per load (median reported).
    pub query_runs: u32,
    /// Give every system's fresh instance an uncounted warm-up load before
    /// the counted one ([`super::warmup`]; not for `--target`).
    pub warmup: bool,
    /// `--scale large`: after the rounds, one load of this size per variant
    /// (streamed, after a warm-up of the `--quick` size), compared with the
    /// rounds' figures ([`super::scale`]).
    pub scale: Option<ScaleLoad>,
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
            peers: Vec::new(),
            peers_required: false,
            queries: false,
            query_runs: 5,
            warmup: true,
            scale: None,
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
        anyhow::ensure!(
            self.peers.is_empty() || (self.target.is_none() && !self.in_process),
            "--peers loads local peers over HTTP; it cannot be combined with --target or --in-process"
        );
        anyhow::ensure!(
            !(self.queries && (self.in_process || self.target.is_some())),
            "--queries runs over HTTP against a local Strata and the peers; not with --in-process or --target"
        );
        anyhow::ensure!(
            !(self.scale.is_some() && self.target.is_some()),
            "--scale large loads fresh local instances (Strata and peers); not with --target"
        );
        if let Some(s) = &self.scale {
            s.spec(self.seed).check()?;
        }
        anyhow::ensure!(
            self.target.is_some() || !self.protocols.is_empty() || !self.peers.is_empty(),
            "--protocols is empty"
        );
        BenchReport::check_json_path(self.json_path.as_deref())
    }

    pub fn spec(&self) -> CpuSpec {
        CpuSpec::new(self.seed, self.hosts, self.rows_per_host)
    }

    /// The large load's data (`--scale large`), same seed.
    pub fn scale_spec(&self) -> Option<CpuSpec> {
        self.scale.map(|s| s.spec(self.seed))
    }
}

/// `--protocols` when not given: every commit protocol, the baseline
/// (`none`) first; with `--peers` DecLog first.
pub fn default_protocols(with_peers: bool) -> &'static [Protocol] {
    if with_peers {
        &[
            Protocol::DeclogPmem,
            Protocol::DeclogSsd,
            Protocol::SerialPmem,
            Protocol::SerialSsd,
            Protocol::None,
        ]
    } else {
        &[
            Protocol::None,
            Protocol::SerialPmem,
            Protocol::SerialSsd,
            Protocol::DeclogPmem,
            Protocol::DeclogSsd,
        ]
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

/// One thing compared: a commit protocol of a local Strata, a remote
/// endpoint, or a peer started for each load.
pub(super) enum Variant {
    Local(Protocol),
    Remote { name: String, target: HttpTarget },
    Peer(Installed),
}

impl Variant {
    pub(super) fn name(&self) -> String {
        match self {
            Variant::Local(p) => p.name().to_string(),
            Variant::Remote { name, .. } => name.clone(),
            Variant::Peer(i) => i.kind.name().to_string(),
        }
    }

    /// Whether a failed count query fails the run (local Strata and peers)
    /// or only warns (a remote endpoint may not speak InfluxQL).
    pub(super) fn count_required(&self) -> bool {
        !matches!(self, Variant::Remote { .. })
    }
}

/// The variants of a run in round order: the protocols, then the peers
/// (A B C ... per round), or the one remote target.
pub(super) fn variants_in_order(
    protocols: &[Protocol],
    peers: Vec<Installed>,
    target: Option<HttpTarget>,
) -> Vec<Variant> {
    match target {
        Some(t) => vec![Variant::Remote { name: "target".into(), target: t }],
        None => protocols
            .iter()
            .copied()
            .map(Variant::Local)
            .chain(peers.into_iter().map(Variant::Peer))
            .collect(),
    }
}

/// The order of loads: (round, variant index), every variant once per
/// round. The first round is in the given order (A B C ...); every later
/// one a seeded shuffle of it that does not start with the variant the
/// round before ended with, so no variant always follows the same one (the
/// heaviest peer's teardown is not always the same variant's neighbour;
/// rotating the order would keep the neighbours).
pub fn load_order(variants: usize, rounds: u32) -> Vec<(u32, usize)> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x005e_ed0f_10ad);
    let mut order = Vec::with_capacity(variants * rounds as usize);
    let mut round: Vec<usize> = (0..variants).collect();
    for r in 0..rounds {
        if r > 0 && variants > 1 {
            let last = round[variants - 1];
            round.shuffle(&mut rng);
            if round[0] == last {
                round.swap(0, variants - 1);
            }
        }
        order.extend(round.iter().map(|&v| (r, v)));
    }
    order
}

pub(super) fn progress_bar(print: bool, rows: u64, label: String) -> ProgressBar {
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
pub(super) fn load_counted<E: IngestEndpoint, T>(
    endpoint: &E,
    dataset: &Dataset,
    opts: &IngestOptions,
    progress: &ProgressBar,
    after_load: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<(LoadOutcome, T, Counted)> {
    let outcome = load(endpoint, dataset, opts.connections, progress)?;
    progress.finish_and_clear();
    let after = after_load()?;
    let counted = match endpoint.count_rows() {
        Ok(n) => Counted::Rows(n),
        Err(e) => Counted::Failed(format!("counting the rows of {}: {e:#}", endpoint.describe())),
    };
    Ok((outcome, after, counted))
}

/// What the engine did during one load, read after its checkpoint.
pub(super) struct StorageFacts {
    pub protocol: Protocol,
    pub log_bytes: u64,
    pub persist: Option<PersistStats>,
    /// Block-file bytes the load's checkpoint added.
    pub block_file_bytes: u64,
    pub checkpoints_during_load: u64,
    /// Time writers were held back for lack of log room during the load.
    pub log_throttled_ns: u64,
    /// Allocated bytes of the data directory after the load's checkpoint,
    /// and before the load (after the warm-up and its checkpoint).
    pub running_disk_bytes: u64,
    pub baseline_disk_bytes: u64,
    /// What the warm-up and its checkpoint added to the data directory.
    pub warmup_disk_bytes: u64,
}

fn run_local(
    protocol: Protocol,
    dataset: &Dataset,
    warmup: Option<&Dataset>,
    opts: &IngestOptions,
    label: String,
) -> anyhow::Result<VariantResult> {
    let log_bytes = log_bytes_for(protocol, dataset.rows());
    let local = LocalDb::open(protocol, &opts.dirs, &opts.db, log_bytes)?;
    let empty_disk_bytes = allocated_bytes(&local.data_dir_path)?;
    let engine = local.engine().clone();
    let store = local.tables();
    let max_body = dataset.max_body_bytes().max(warmup.map_or(0, Dataset::max_body_bytes));
    let server =
        if opts.in_process { None } else { Some(LocalServer::start(store.clone(), max_body + 4096)?) };
    if let Some(w) = warmup {
        let db = warmup_db(&opts.db);
        match &server {
            Some(server) => warm_up(&HttpTarget::new(server.url(), &db), w, opts, &label)?,
            None => warm_up(&InProcessTarget::new(store.clone(), &db), w, opts, &label)?,
        }
        // Sealed into a block file of its own, its log emptied: the counted
        // load starts from a clean log, and its checkpoint seals only its points.
        engine.checkpoint().context("checkpoint after the warm-up")?;
    }
    let rss = RssWatch::this_process();
    let baseline_disk_bytes = allocated_bytes(&local.data_dir_path)?;
    let stats_before = engine.stats();
    let persist_before = local.persist_stats();
    let after_load = || -> anyhow::Result<StorageFacts> {
        let persist = local.persist_stats().zip(persist_before).map(|(after, before)| after - before);
        let loaded = engine.stats();
        engine.checkpoint().context("checkpoint after the load")?;
        let checkpointed = engine.stats();
        let running_disk_bytes = allocated_bytes(&local.data_dir_path)?;
        Ok(StorageFacts {
            running_disk_bytes,
            baseline_disk_bytes,
            warmup_disk_bytes: baseline_disk_bytes.saturating_sub(empty_disk_bytes),
            protocol,
            log_bytes: loaded.log_bytes_written - stats_before.log_bytes_written,
            persist,
            block_file_bytes: checkpointed.block_file_bytes.saturating_sub(stats_before.block_file_bytes),
            checkpoints_during_load: loaded.checkpoints - stats_before.checkpoints,
            log_throttled_ns: loaded.log_throttled_ns - stats_before.log_throttled_ns,
        })
    };
    let progress = progress_bar(opts.print, dataset.rows(), label.clone());
    let (outcome, storage, counted) = match &server {
        Some(server) => {
            let endpoint = HttpTarget::new(server.url(), &opts.db);
            endpoint.prepare()?;
            load_counted(&endpoint, dataset, opts, &progress, after_load)?
        }
        None => {
            let endpoint = InProcessTarget::new(store.clone(), &opts.db);
            endpoint.prepare()?;
            load_counted(&endpoint, dataset, opts, &progress, after_load)?
        }
    };
    // Before the queries: their client (answers parsed into maps) runs in this process too.
    let (peak_rss, rss_note) = rss.finish(&label_of_server(&label));
    let queries = match &server {
        // InfluxQL and SQL alternate query by query, so both see the same machine state.
        Some(server) if opts.queries => {
            let targets = [QueryTarget::InfluxQl(server.url()), QueryTarget::StrataSql(server.pg_addr())];
            tsbs_queries(&dataset.spec, opts.seed)
                .iter()
                .flat_map(|q| {
                    targets
                        .iter()
                        .flat_map(|t| run_queries(t, &opts.db, std::slice::from_ref(q), opts.query_runs))
                })
                .collect()
        }
        _ => Vec::new(),
    };
    if let Some(server) = server {
        server.stop()?;
    }
    drop((store, engine));
    // Strata keeps every database in the same files: the warm-up's share is
    // what the directory grew by during the warm-up and its checkpoint.
    let (total_at_rest, total_compacted) = local.close_and_compact()?;
    let at_rest_bytes = counted_bytes_at_rest(total_at_rest, None, storage.warmup_disk_bytes);
    let mut metrics = load_metrics(&outcome);
    metrics.extend(storage_metrics(&storage, &outcome));
    metrics.extend(disk_metrics(
        at_rest_bytes,
        storage.running_disk_bytes,
        storage.baseline_disk_bytes,
        outcome.values(),
    ));
    // Reopened and fully compacted at rest, the warm-up's share (its growth,
    // as above) taken out the same way.
    let compacted_bytes = counted_bytes_at_rest(total_compacted, None, storage.warmup_disk_bytes);
    metrics.push(("disk_bytes_per_point_compacted", compacted_bytes as f64 / outcome.values().max(1) as f64));
    metrics.extend(peak_rss);
    Ok(VariantResult {
        metrics,
        checkpoints_during_load: storage.checkpoints_during_load,
        counted,
        queries,
        notes: rss_note.into_iter().collect(),
    })
}

/// Who [`RssWatch::finish`] names for a local load.
fn label_of_server(label: &str) -> String {
    format!("{label} (the benchmark process, Strata's server inside)")
}

fn run_remote(
    target: &HttpTarget,
    dataset: &Dataset,
    opts: &IngestOptions,
    label: String,
) -> anyhow::Result<VariantResult> {
    target.prepare().with_context(|| format!("creating database {} on {}", target.db, target.url))?;
    let progress = progress_bar(opts.print, dataset.rows(), label);
    let (outcome, (), counted) = load_counted(target, dataset, opts, &progress, || Ok(()))?;
    Ok(VariantResult {
        metrics: load_metrics(&outcome),
        checkpoints_during_load: 0,
        counted,
        queries: Vec::new(),
        notes: Vec::new(),
    })
}

/// Installs (if needed) the peers of `opts`; a peer that cannot be had is an
/// error when named, else skipped with a warning.
fn prepare_peers(opts: &IngestOptions) -> anyhow::Result<Vec<Installed>> {
    let mut ready = Vec::new();
    for &kind in &opts.peers {
        match ensure_installed(kind) {
            Ok(i) => {
                if opts.print {
                    eprintln!(
                        "ingest bench: peer {kind} {}{} from {}",
                        i.version,
                        i.runtime.as_deref().map(|r| format!(" on {r}")).unwrap_or_default(),
                        kind.source()
                    );
                }
                ready.push(i);
            }
            Err(e) if opts.peers_required => return Err(e.context(format!("peer {kind}"))),
            Err(e) => eprintln!("ingest bench: WARNING: skipping peer {kind}, it is not available: {e:#}"),
        }
    }
    anyhow::ensure!(opts.peers.is_empty() || !ready.is_empty(), "--peers: no peer is available");
    Ok(ready)
}

/// One load of `dataset` into `v` (named `label` in messages), after the
/// warm-up where `v` is a fresh instance of ours.
pub(super) fn run_variant(
    v: &Variant,
    dataset: &Dataset,
    warmup: Option<&Dataset>,
    opts: &IngestOptions,
    label: &str,
) -> anyhow::Result<VariantResult> {
    match v {
        Variant::Local(p) => run_local(*p, dataset, warmup, opts, label.to_string()),
        Variant::Remote { target, .. } => run_remote(target, dataset, opts, label.to_string()),
        Variant::Peer(installed) => run_peer(installed, dataset, warmup, opts, label.to_string()),
    }
    .with_context(|| label.to_string())
}

/// Runs the ingest benchmark, prints its table (if `print`), writes its JSON
/// (if `json_path`) and returns the report. A variant that does not hold
/// every row after its load is printed loudly and fails the run (after the
/// table and the JSON, which list the failures). With `--scale large`, the
/// rounds are followed by one large load per variant ([`super::scale`]).
pub fn run_ingest_bench(opts: &IngestOptions) -> anyhow::Result<BenchReport> {
    opts.check()?;
    let peers = prepare_peers(opts)?;
    let load_at_start = load_average_1m();
    let generated_at = Instant::now();
    // A large run streams the rounds' loads too: both sides of its
    // scale-to-quick ratio then pay for generation alike.
    let dataset = match opts.scale {
        Some(_) => Dataset::streamed(&opts.spec(), opts.batch_lines)?,
        None => Dataset::generate(&opts.spec(), opts.batch_lines)?,
    };
    let warmup = warmup_dataset(opts, &opts.spec())?;
    let body_bytes =
        dataset.body_bytes().unwrap_or_else(|| dataset.stream().map(|b| b.body.len() as u64).sum());
    let generate_time = generated_at.elapsed();
    let target = match &opts.target {
        Some(url) => Some(HttpTarget::new(HttpUrl::parse(url)?, &opts.db)),
        None => None,
    };
    let variants = variants_in_order(&opts.protocols, peers, target);
    if opts.print {
        eprintln!(
            "ingest bench: {} rows ({} hosts x {} rows, {} values, {:.1} MB of line protocol) {} in {:.2} s; {} requests of {} lines per load",
            dataset.rows(),
            opts.hosts,
            opts.rows_per_host,
            dataset.values(),
            body_bytes as f64 / 1e6,
            if dataset.stored().is_some() { "generated" } else { "to stream during each load; sized" },
            generate_time.as_secs_f64(),
            dataset.requests(),
            opts.batch_lines
        );
        if let Some(w) = &warmup {
            eprintln!(
                "ingest bench: every fresh instance first takes an uncounted warm-up of {} rows ({} hosts x {} rows) into database {}, measurement {}",
                w.rows(),
                w.spec.hosts,
                w.spec.rows_per_host,
                warmup_db(&opts.db),
                w.measurement
            );
        }
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
    let mut checks = Checks::default();
    let mut answers = ReferenceAnswers::default();
    let mut load_notes: Vec<String> = Vec::new();
    let started = Instant::now();
    let mut rows_per_s = vec![f64::NAN; variants.len()];
    let mut unsettled_loads = 0u32;
    let order = load_order(variants.len(), opts.rounds);
    for (i, &(round, at)) in order.iter().enumerate() {
        if !crate::settle::settle().1 {
            unsettled_loads += 1;
        }
        let v = &variants[at];
        let label = format!("round {}/{} {}", round + 1, opts.rounds, v.name());
        let result = run_variant(v, &dataset, warmup.as_ref(), opts, &label)?;
        let figures = checks.check(v, &label, &result, dataset.rows(), &mut answers, opts.print);
        checkpoints_during_load += result.checkpoints_during_load;
        load_notes.extend(result.notes);
        rows_per_s[at] = figures.iter().find(|(m, _)| *m == "rows_per_s").map_or(f64::NAN, |(_, v)| *v);
        for (metric, value) in figures {
            samples[at].push(metric, value);
        }
        let round_done = order.get(i + 1).is_none_or(|&(next, _)| next != round);
        if let Some(none_at) = variants.iter().position(|v| matches!(v, Variant::Local(Protocol::None))) {
            if round_done {
                let base = rows_per_s[none_at];
                for (s, r) in samples.iter_mut().zip(&rows_per_s) {
                    s.push("ratio_to_none", r / base);
                }
            }
        }
    }
    let scale = match opts.scale_spec() {
        Some(spec) => Some(run_scale_loads(&variants, &spec, opts, &mut checks, &mut unsettled_loads)?),
        None => None,
    };
    let failures = checks.failures.clone();
    let facts = RunFacts {
        opts: opts.clone(),
        warmup: warmup.as_ref().map(|w| (w.spec.clone(), warmup_db(&opts.db), w.measurement.clone())),
        dataset_rows: dataset.rows(),
        dataset_values: dataset.values(),
        body_bytes,
        requests_per_load: dataset.requests(),
        pmem_log_bytes: log_bytes_for(Protocol::SerialPmem, dataset.rows()),
        declog_file_bytes: log_bytes_for(Protocol::DeclogPmem, dataset.rows()),
        load_average_1m: [load_at_start, load_average_1m()],
        unsettled_loads,
        checkpoints_during_load,
        run_time: started.elapsed(),
        verification_failures: checks.failures,
        query_errors: checks.query_errors,
        query_answer_rows: answers.rows(),
        queries: if opts.queries { tsbs_queries(&dataset.spec, opts.seed) } else { Vec::new() },
        load_notes,
    };
    let mut report = build_report(&facts, &variants, &samples);
    if let Some(scale) = &scale {
        add_scale_figures(&mut report, scale, &facts);
    }
    if opts.print {
        print_table(&report);
    }
    if let Some(path) = &opts.json_path {
        report.write_json(path)?;
        if opts.print {
            eprintln!("ingest bench: wrote {}", path.display());
        }
    }
    if !failures.is_empty() {
        eprintln!("ingest bench: !!!!! {} VERIFICATION FAILURE(S) !!!!!", failures.len());
        for f in &failures {
            eprintln!("ingest bench: !!!!! {f}");
        }
        anyhow::bail!(
            "{} load(s) did not hold every row afterwards (first: {})",
            failures.len(),
            failures[0]
        );
    }
    Ok(report)
}
