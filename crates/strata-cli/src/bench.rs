//! `strata bench ...`: benchmark programs that print a table and write JSON in
//! the DESIGN.md section 6 shape. The measuring code lives in `strata-bench`.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use strata_bench::{run_persist_bench, PersistBenchOptions};

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
    }
}
