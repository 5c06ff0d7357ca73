//! `strata recover`: open the data directory as `serve` would, print what
//! recovery found and the time of each phase, optionally checkpoint (which
//! empties the log) or compact every block file into one, and exit.

use clap::Args;

use crate::open_args::{open_db, OpenArgs};

#[derive(Args)]
pub struct RecoverArgs {
    #[command(flatten)]
    open: OpenArgs,
    /// Checkpoint after recovering (seals DRAM data into block files and empties the log).
    #[arg(long)]
    checkpoint: bool,
    /// Checkpoint, then merge every block file into one, dropping overwritten
    /// and deleted points (a full compaction; a stopped server's data directory).
    #[arg(long)]
    compact: bool,
}

pub fn run(args: RecoverArgs) -> anyhow::Result<()> {
    let config = args.open.load()?;
    let db = open_db(&config)?;
    println!(
        "recovered {} (protocol {})\n{}",
        config.data_dir.display(),
        db.protocol().name(),
        db.recovery()
    );
    if args.checkpoint && !args.compact {
        println!("{}", db.engine().checkpoint()?);
    }
    if args.compact {
        let before = db.engine().stats();
        let report = db.compact_all()?;
        let after = db.engine().stats();
        println!("{report}");
        println!(
            "block files: {} ({} bytes) before, {} ({} bytes) after",
            before.block_files, before.block_file_bytes, after.block_files, after.block_file_bytes
        );
    }
    Ok(())
}
