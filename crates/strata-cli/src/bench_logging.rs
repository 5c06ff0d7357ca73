//! `strata bench logging`: Strata's log devices against RocksDB (`db_bench
//! fillrandom --sync=1`) and SQLite (WAL, `synchronous=FULL` and `NORMAL`)
//! on ext4 and tmpfs (issue 6, item 4): arguments and the call into
//! `strata_bench::logging`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use strata_bench::logging::{run_logging_bench, LoggingBudget, LoggingOptions, System, DEFAULT_VALUE_BYTES};

#[derive(Args)]
pub struct LoggingArgs {
    /// A short run (5 rounds of 400 ms windows, about a minute).
    #[arg(long)]
    quick: bool,
    /// Write the JSON report here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Value bytes of every record; the key is 16 bytes (db_bench's default shape).
    #[arg(long, default_value_t = DEFAULT_VALUE_BYTES)]
    value_bytes: u64,
    /// Committer thread counts, each run for every system.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
    /// Systems in round order (default: strata-ssd,strata-pmem,rocksdb,sqlite-full,sqlite-normal;
    /// RocksDB is skipped with a warning if db_bench cannot be had, unless listed here).
    #[arg(long, value_delimiter = ',')]
    systems: Vec<String>,
    /// Rounds (A B C A B C ...); medians are reported. Default 7, 5 with --quick.
    #[arg(long)]
    rounds: Option<u32>,
    /// Window of each run in milliseconds. Default 1000, 400 with --quick.
    #[arg(long)]
    window_ms: Option<u64>,
    /// A tmpfs directory (also holds the emulated PMem region).
    #[arg(long, default_value = "/dev/shm")]
    tmpfs_dir: PathBuf,
    /// A directory on a disk file system (ext4); default: a temporary directory on disk.
    #[arg(long)]
    ext4_dir: Option<PathBuf>,
    /// Never run apt-get: fail (or skip RocksDB) when db_bench is missing.
    #[arg(long)]
    no_install: bool,
}

impl LoggingArgs {
    pub fn options(self) -> anyhow::Result<LoggingOptions> {
        let mut budget = if self.quick { LoggingBudget::quick() } else { LoggingBudget::full() };
        if let Some(r) = self.rounds {
            budget.rounds = r;
        }
        if let Some(ms) = self.window_ms {
            budget.window = Duration::from_millis(ms);
        }
        let mut o = LoggingOptions {
            json_path: self.json,
            quick: self.quick,
            budget: Some(budget),
            tmpfs_dir: self.tmpfs_dir,
            value_bytes: self.value_bytes,
            threads: self.threads,
            systems: System::parse_list(&self.systems).map_err(anyhow::Error::msg)?,
            systems_required: !self.systems.is_empty(),
            install: !self.no_install,
            print: true,
            ..LoggingOptions::default()
        };
        if let Some(d) = self.ext4_dir {
            o.ext4_dir = d;
        }
        Ok(o)
    }
}

/// Runs the benchmark: prints the table, writes JSON on request.
pub fn run(args: LoggingArgs) -> anyhow::Result<()> {
    run_logging_bench(&args.options()?)?;
    Ok(())
}
