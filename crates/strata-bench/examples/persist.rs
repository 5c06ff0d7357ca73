//! Runs the persist benchmark until `strata bench persist` exists:
//!
//! ```text
//! cargo run --release -p strata-bench --example persist -- [--quick] [--json FILE]
//!     [--tmpfs-dir DIR] [--ext4-dir DIR]
//! ```

use std::path::PathBuf;

use anyhow::{bail, Context};
use strata_bench::{run_persist_bench, PersistBenchOptions};

fn main() -> anyhow::Result<()> {
    let mut opts = PersistBenchOptions::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().with_context(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--quick" => opts.quick = true,
            "--json" => opts.json_path = Some(PathBuf::from(value("--json")?)),
            "--tmpfs-dir" => opts.tmpfs_dir = PathBuf::from(value("--tmpfs-dir")?),
            "--ext4-dir" => opts.ext4_dir = PathBuf::from(value("--ext4-dir")?),
            "-h" | "--help" => {
                println!("usage: persist [--quick] [--json FILE] [--tmpfs-dir DIR] [--ext4-dir DIR]");
                return Ok(());
            }
            other => bail!("unknown argument `{other}` (try --help)"),
        }
    }
    run_persist_bench(&opts)?;
    Ok(())
}
