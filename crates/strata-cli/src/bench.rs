//! `strata bench ...`: benchmark programs that print a table and write JSON in
//! the DESIGN.md section 6 shape. The measuring code lives in `strata-bench`.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use strata_bench::ingest::{rows_per_host_for, BenchDirs};
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
    /// commit protocol (none, serial-pmem, serial-ssd) over HTTP, in-process,
    /// or into any InfluxDB-v1-compatible endpoint (--target): rows/s, ack
    /// latency, bytes per point on SSD and PMem, compression ratio.
    Ingest(IngestArgs),
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
    /// A smaller run (1 hour of data instead of 6; well under a minute).
    #[arg(long)]
    quick: bool,
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
    /// Commit protocols to compare, in round order.
    #[arg(long, value_delimiter = ',', default_value = "none,serial-pmem,serial-ssd")]
    protocols: Vec<String>,
    /// Directory for the emulated PMem pool (default /dev/shm, else the temp directory).
    #[arg(long)]
    pmem_dir: Option<PathBuf>,
    /// Directory on disk for block files and the SSD log (default: a temporary directory on disk).
    #[arg(long)]
    ssd_dir: Option<PathBuf>,
}

impl IngestArgs {
    fn options(self) -> anyhow::Result<IngestOptions> {
        let mut o = if self.quick { IngestOptions::quick() } else { IngestOptions::full() };
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
        o.protocols = self
            .protocols
            .iter()
            .map(|p| p.parse::<Protocol>())
            .collect::<Result<_, _>>()
            .map_err(anyhow::Error::msg)?;
        let detected = BenchDirs::detect();
        o.dirs = BenchDirs {
            pmem_dir: self.pmem_dir.unwrap_or(detected.pmem_dir),
            disk_dir: self.ssd_dir.unwrap_or(detected.disk_dir),
        };
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
    }
}
