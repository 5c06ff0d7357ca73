//! `strata bench ...`: benchmark programs that print a table and write JSON in
//! the DESIGN.md section 6 shape. The measuring code lives in `strata-bench`.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use strata_bench::fir_recovery::{run_fir_recovery_bench, FirRecoveryOptions};
use strata_bench::ingest::{default_protocols, rows_per_host_for, BenchDirs, Scale};
use strata_bench::peers::parse_peer_list;
use strata_bench::stream_queries::{run_stream_queries_bench, StreamQueriesOptions};
use strata_bench::ycsb_ts::{self, ChildCommand, Variant, Workload, YcsbTsOptions};
use strata_bench::{run_ingest_bench, run_persist_bench, IngestOptions, PersistBenchOptions};
use strata_engine::Protocol;

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    which: Benchmark,
}

#[derive(Subcommand)]
enum Benchmark {
    /// What a persist costs here: memcpy limit, flush+fence per 64 B / 256 B /
    /// 4 KiB, the serial PMem log, the group-committed SSD log; on emulated
    /// PMem on tmpfs and on ext4.
    Persist(PersistArgs),
    /// TSBS-like cpu-only ingest (hosts x 10 float fields every 10 s) per
    /// commit protocol (none, serial-pmem, serial-ssd, declog-pmem,
    /// declog-ssd) over HTTP, in-process, or into any InfluxDB-v1-compatible
    /// endpoint (--target); with --peers also into InfluxDB, VictoriaMetrics
    /// and QuestDB started on this machine: rows/s, ack latency, bytes per
    /// point on disk, SSD and PMem, compression ratio.
    Ingest(IngestArgs),
    /// YCSB-TS, DecLog's benchmark (workloads A-D of its Table 1): per
    /// variant (declog-pmem, declog-ssd, serial-pmem, serial-ssd, none; with
    /// --ablation the Fig. 12(a) steps) throughput, commit latency, persist
    /// counts per transaction, and recovery time after SIGKILL with and
    /// without a checkpoint. Writes JSON and SVG figures on request.
    YcsbTs(YcsbTsArgs),
    /// ChronicleDB-on-PMem micro-benchmarks (chronicledb-pmem.txt Fig. 5-9)
    /// on the event store: PMem right flank vs DRAM by flush batch size,
    /// placements of aggregates and index nodes, address translation,
    /// out-of-order queues.
    Events(crate::bench_events::EventsArgs),
    /// Strata's log devices (SSD log with group commit on ext4 and tmpfs,
    /// serial PMem log on emulated PMem) against RocksDB db_bench
    /// fillrandom --sync=1 and SQLite WAL (synchronous=FULL and NORMAL), one
    /// record per commit: commits/s, commit latency p50/p99, durability.
    Logging(crate::bench_logging::LoggingArgs),
    /// Transactional tables per logging scheme (none, serial and Taurus,
    /// data and command logging; taurus.txt section 5) on YCSB or TPC-C: throughput,
    /// commit latency, log bytes per transaction, recovery time and speed,
    /// recovery parallelism; optional bandwidth limit per log device. With
    /// --figures DIR: sweeps drawn as SVG in the shapes of the paper's Fig. 5,
    /// 7, 13 and 14.
    Oltp(Box<crate::bench_oltp::OltpArgs>),
    /// FIR's recovery (fir.txt 4.4) against a Zen-style scan of the whole
    /// tuple heap: rows loaded into emulated PMem, a full checkpoint, 1 %
    /// updated after it; recovery until the first transaction commits, with
    /// the index rebuilt on 2 threads and on 1.
    FirRecovery(FirRecoveryArgs),
    /// Event-stream queries at scale: `LIMIT 10` (oldest and newest) and
    /// `count` on a stream of 10^7 events, a full scan, and a writer's
    /// acknowledgement latency alone and during full scans (the lock held
    /// per chunk, or for the whole scan).
    StreamQueries(StreamQueriesArgs),
    /// Internal: the child process of `bench oltp` (job in $STRATA_OLTP_JOB).
    #[command(hide = true)]
    OltpChild,
    /// Internal: the child process of `bench ycsb-ts` (job in $STRATA_YCSB_TS_JOB).
    #[command(hide = true)]
    YcsbTsChild,
}

#[derive(Args)]
struct YcsbTsArgs {
    /// Workload of DecLog's Table 1: A, B, C or D.
    #[arg(long, default_value = "B")]
    workload: String,
    /// What Table 1's mix picks: `transaction` (one kind per transaction:
    /// insert-only, read-only, update transactions, the paper's reading) or
    /// `operation` (each operation drawn on its own).
    #[arg(long, default_value = "transaction")]
    mix: String,
    /// Transaction threads.
    #[arg(long, default_value_t = 2)]
    workers: u64,
    /// DecLog logging threads (m), one stream each.
    #[arg(long, default_value_t = 2)]
    logging_threads: usize,
    /// Log queues per logging thread (n).
    #[arg(long, default_value_t = 2)]
    queues: usize,
    /// Entries per log queue (l).
    #[arg(long, default_value_t = 300)]
    queue_len: usize,
    /// Transactions each worker submits together and waits for (as that
    /// many clients per worker thread; 1: one synchronous client each).
    #[arg(long, default_value_t = 8)]
    txns_in_flight: usize,
    /// Transactions per run (default 100,000; 20,000 with --quick).
    #[arg(long)]
    txns: Option<u64>,
    /// Stop every run after this many seconds, even before --txns committed
    /// (default 60, 5 with --quick; 0: no limit).
    #[arg(long)]
    seconds: Option<f64>,
    /// Variants to compare, in round order (default: the five competitors).
    #[arg(long, value_delimiter = ',')]
    variants: Vec<String>,
    /// Add the cumulative steps of Fig. 12(a): strict, +relaxed, +lsn, +parallel, +compress, +checkpoint.
    #[arg(long)]
    ablation: bool,
    /// Rounds (A B C A B C ...); medians are reported. Default 3, 1 with --quick.
    #[arg(long)]
    rounds: Option<u32>,
    /// Series keys (each with the fields value and note).
    #[arg(long)]
    keys: Option<u64>,
    /// Points per key inserted by the load phase (default 100, 40 with --quick).
    #[arg(long)]
    load_points: Option<u64>,
    /// Seed of the workload generator.
    #[arg(long, default_value_t = 0x5eed)]
    seed: u64,
    /// The measured run checkpoints after this share of its transactions
    /// (recovery then replays the rest: the speedup is bounded near 1 / (1 - share)).
    #[arg(long, default_value_t = 0.95)]
    checkpoint_at: f64,
    /// Write the JSON report here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the SVG figures (Fig. 10(a), Fig. 11, Table 2, Fig. 12(a)) into this directory.
    #[arg(long)]
    svg_dir: Option<PathBuf>,
    /// A small run: well under two minutes on 2 cores.
    #[arg(long)]
    quick: bool,
    /// Directory for the emulated PMem files (default /dev/shm, else the temp directory).
    #[arg(long)]
    pmem_dir: Option<PathBuf>,
    /// Directory on disk for block files and SSD logs (default: a temporary directory on disk).
    #[arg(long)]
    ssd_dir: Option<PathBuf>,
}

impl YcsbTsArgs {
    fn options(self) -> anyhow::Result<YcsbTsOptions> {
        let child = ChildCommand::current_strata()?;
        let mut o = if self.quick { YcsbTsOptions::quick(child) } else { YcsbTsOptions::full(child) };
        o.workload = self.workload.parse::<Workload>().map_err(|e| anyhow::anyhow!("{e}"))?;
        o.mix = ycsb_ts::job::parse_mix(&self.mix)?;
        o.workers = self.workers;
        o.txns_in_flight = self.txns_in_flight;
        o.logging_threads = self.logging_threads;
        o.queues_per_thread = self.queues;
        o.queue_len = self.queue_len;
        if let Some(t) = self.txns {
            o.txns = t;
        }
        if let Some(s) = self.seconds {
            o.seconds = (s > 0.0).then_some(s);
        }
        if !self.variants.is_empty() {
            o.variants = Variant::parse_list(&self.variants).map_err(anyhow::Error::msg)?;
        }
        if self.ablation {
            for v in Variant::ABLATION {
                if !o.variants.contains(&v) {
                    o.variants.push(v);
                }
            }
        }
        if let Some(r) = self.rounds {
            o.rounds = r;
        }
        if let Some(k) = self.keys {
            o.num_keys = k;
        }
        if let Some(p) = self.load_points {
            o.load_points_per_key = p;
        }
        o.seed = self.seed;
        o.checkpoint_at_fraction = self.checkpoint_at;
        o.json_path = self.json;
        o.svg_dir = self.svg_dir;
        o.dirs = BenchDirs::detect_unless(self.pmem_dir, self.ssd_dir);
        o.print = true;
        Ok(o)
    }
}

#[derive(Args)]
struct StreamQueriesArgs {
    /// Events in the stream (default 10^7; --quick 10^6).
    #[arg(long)]
    events: Option<u64>,
    /// 10^6 events.
    #[arg(long)]
    quick: bool,
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// A directory on a disk file system for the data directory (removed after the run).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Write the JSON report here.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Args)]
struct FirRecoveryArgs {
    /// Versions of 1,000-byte rows to load (default 2,000,000: about 2 GB;
    /// --quick 200,000).
    #[arg(long)]
    versions: Option<u64>,
    /// Versions each row has before the checkpoint (inserted, then updated).
    #[arg(long, default_value_t = 4)]
    versions_per_key: u64,
    /// 200,000 versions.
    #[arg(long)]
    quick: bool,
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Where the emulated PMem region goes (removed after the run).
    #[arg(long, default_value = "/dev/shm")]
    pmem_dir: PathBuf,
    /// Write the JSON report here.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Args)]
struct PersistArgs {
    /// Write the JSON report here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// A shorter run (a few seconds).
    #[arg(long)]
    quick: bool,
    /// A tmpfs directory for the emulated PMem file.
    #[arg(long, default_value = "/dev/shm")]
    tmpfs_dir: PathBuf,
    /// A directory on a disk file system (ext4); default: a temporary directory on disk.
    #[arg(long)]
    ext4_dir: Option<PathBuf>,
}

#[derive(Args)]
struct IngestArgs {
    /// Write the JSON report here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// A smaller run (1 hour of data instead of 6; well under a minute): --scale quick.
    #[arg(long, conflicts_with = "scale")]
    quick: bool,
    /// The run's size: quick (100 hosts x 1 h, as --quick), default (100
    /// hosts x 6 h), or large: the quick run, then one load per system of
    /// 1,000 hosts x 1 day (8.64 M rows, streamed) after a quick-size
    /// warm-up, with rows/s, query latency, peak RSS and bytes on disk per
    /// point at scale beside the quick figures.
    #[arg(long, value_name = "quick|default|large")]
    scale: Option<String>,
    /// With --scale large: hosts of the large load (default 1000).
    #[arg(long)]
    scale_hosts: Option<u32>,
    /// With --scale large: time span of the large load (default 1d).
    #[arg(long)]
    scale_duration: Option<String>,
    /// Hosts (one series per host and field). Default 100.
    #[arg(long)]
    hosts: Option<u32>,
    /// Rows per host (one every 10 s). Default 2160 (6 h), 360 with --quick.
    #[arg(long, conflicts_with = "duration")]
    rows_per_host: Option<u64>,
    /// Time span of the data instead of --rows-per-host: 90s, 30m, 6h, 1d.
    #[arg(long)]
    duration: Option<String>,
    /// Lines per request.
    #[arg(long, default_value_t = 5000)]
    batch: u64,
    /// Parallel connections (each its own thread and keep-alive socket).
    #[arg(long, default_value_t = 2)]
    connections: usize,
    /// Rounds; each loads every protocol once (A B C A B C ...), medians are reported.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Seed of the data generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Load this InfluxDB-v1-compatible endpoint (http://host:port) instead of a local Strata.
    #[arg(long)]
    target: Option<String>,
    /// Database to write into (created first).
    #[arg(long, default_value = "benchmark")]
    db: String,
    /// Parse and write in-process instead of over HTTP (local Strata only).
    #[arg(long, conflicts_with = "target")]
    in_process: bool,
    /// Commit protocols to compare, in round order (default
    /// none,serial-pmem,serial-ssd,declog-pmem,declog-ssd; with --peers
    /// declog-pmem,declog-ssd,serial-pmem,serial-ssd,none).
    #[arg(long, value_delimiter = ',')]
    protocols: Vec<String>,
    /// Skip the uncounted warm-up load each fresh instance (every Strata
    /// variant, every peer) takes into another database before the counted
    /// load; the figures then include each system's cold start.
    #[arg(long)]
    no_warmup: bool,
    /// Also load peers, each a fresh instance per load on 127.0.0.1:
    /// `--peers` alone runs every available one (influxdb, victoriametrics,
    /// questdb; skipping any that cannot be installed), `--peers influxdb,questdb`
    /// picks (and fails if one is missing). Installs a missing Debian package
    /// with apt-get (root) and caches the QuestDB jar in ~/.cache/strata-bench.
    #[arg(long, num_args = 0..=1, default_missing_value = "all", value_name = "PEERS",
          conflicts_with_all = ["target", "in_process"])]
    peers: Option<String>,
    /// After each load run TSBS cpu-only style queries (single-groupby,
    /// double-groupby, max-all-8, lastpoint, high-cpu-all) against Strata
    /// (InfluxQL), InfluxDB (InfluxQL) and QuestDB (SQL): median latency per
    /// query, answers compared across systems.
    #[arg(long, conflicts_with_all = ["target", "in_process"])]
    queries: bool,
    /// Timed runs of each query per load (the median is reported).
    #[arg(long, default_value_t = 5)]
    query_runs: u32,
    /// Directory for the emulated PMem pool (default /dev/shm, else the temp directory).
    #[arg(long)]
    pmem_dir: Option<PathBuf>,
    /// Directory on disk for block files and the SSD log (default: a temporary directory on disk).
    #[arg(long)]
    ssd_dir: Option<PathBuf>,
}

impl IngestArgs {
    fn options(self) -> anyhow::Result<IngestOptions> {
        let scale = match (&self.scale, self.quick) {
            (Some(s), _) => s.parse::<Scale>()?,
            (None, true) => Scale::Quick,
            (None, false) => Scale::Default,
        };
        let mut o = IngestOptions::at_scale(scale);
        match (&mut o.scale, self.scale_hosts, &self.scale_duration) {
            (_, None, None) => {}
            (None, _, _) => anyhow::bail!("--scale-hosts and --scale-duration need --scale large"),
            (Some(load), hosts, duration) => {
                if let Some(h) = hosts {
                    load.hosts = h;
                }
                if let Some(d) = duration {
                    load.rows_per_host = rows_per_host_for(d)?;
                }
            }
        }
        if let Some(h) = self.hosts {
            o.hosts = h;
        }
        if let Some(r) = self.rows_per_host {
            o.rows_per_host = r;
        }
        if let Some(d) = &self.duration {
            o.rows_per_host = rows_per_host_for(d)?;
        }
        o.batch_lines = self.batch;
        o.connections = self.connections;
        o.rounds = self.rounds;
        o.seed = self.seed;
        o.json_path = self.json;
        o.target = self.target;
        o.db = self.db;
        o.in_process = self.in_process;
        if let Some(list) = &self.peers {
            o.peers = parse_peer_list(list).map_err(anyhow::Error::msg)?;
            o.peers_required = list.trim() != "all";
        }
        o.queries = self.queries;
        o.query_runs = self.query_runs;
        o.warmup = !self.no_warmup;
        o.protocols = if self.protocols.is_empty() {
            default_protocols(!o.peers.is_empty()).to_vec()
        } else {
            self.protocols
                .iter()
                .map(|p| p.parse::<Protocol>())
                .collect::<Result<_, _>>()
                .map_err(anyhow::Error::msg)?
        };
        o.dirs = BenchDirs::detect_unless(self.pmem_dir, self.ssd_dir);
        o.print = true;
        Ok(o)
    }
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    match args.which {
        Benchmark::Persist(a) => {
            let mut o =
                PersistBenchOptions { json_path: a.json, quick: a.quick, print: true, ..Default::default() };
            o.tmpfs_dir = a.tmpfs_dir;
            if let Some(d) = a.ext4_dir {
                o.ext4_dir = d;
            }
            run_persist_bench(&o)?;
            Ok(())
        }
        Benchmark::Ingest(a) => {
            run_ingest_bench(&a.options()?)?;
            Ok(())
        }
        Benchmark::FirRecovery(a) => {
            let mut o = if a.quick { FirRecoveryOptions::quick() } else { FirRecoveryOptions::full() };
            if let Some(v) = a.versions {
                o.versions = v;
            }
            o.versions_per_key = a.versions_per_key;
            o.rounds = a.rounds;
            o.pmem_dir = a.pmem_dir;
            o.json_path = a.json;
            run_fir_recovery_bench(&o)?;
            Ok(())
        }
        Benchmark::YcsbTs(a) => {
            ycsb_ts::run_ycsb_ts_bench(&a.options()?)?;
            Ok(())
        }
        Benchmark::StreamQueries(a) => {
            let mut o = if a.quick { StreamQueriesOptions::quick() } else { StreamQueriesOptions::full() };
            if let Some(n) = a.events {
                o.events = n;
            }
            o.rounds = a.rounds;
            if let Some(d) = a.dir {
                o.dir = d;
            }
            o.json_path = a.json;
            run_stream_queries_bench(&o)?;
            Ok(())
        }
        Benchmark::Events(a) => crate::bench_events::run(a),
        Benchmark::Logging(a) => crate::bench_logging::run(a),
        Benchmark::Oltp(a) => crate::bench_oltp::run(*a),
        Benchmark::OltpChild => strata_bench::oltp::run_child_from_env(),
        Benchmark::YcsbTsChild => ycsb_ts::run_child_from_env(),
    }
}
