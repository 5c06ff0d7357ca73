//! `strata recover`: open the data directory as `serve` would, print what
//! recovery found and the time of each phase, optionally checkpoint (which
//! empties the log), and exit.

use clap::Args;

use crate::open_args::{open_db, OpenArgs};

#[derive(Args)]
pub struct RecoverArgs {
    #[command(flatten)]
    open: OpenArgs,
    /// Checkpoint after recovering (seals DRAM data into block files and empties the log).
    #[arg(long)]
    checkpoint: bool,
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
    if args.checkpoint {
        println!("{}", db.engine().checkpoint()?);
    }
    Ok(())
}
