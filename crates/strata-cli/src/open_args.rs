//! Flags shared by every subcommand that opens a data directory: an
//! optional TOML configuration file, then flags that override it.

use std::path::PathBuf;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use strata_engine::{Config, Db};
use strata_series::RecoveryPhase;

#[derive(Args, Clone, Debug, Default)]
pub struct OpenArgs {
    /// TOML configuration file (see docs/configuration.md); every key is optional.
    #[arg(long, short = 'c')]
    pub config: Option<PathBuf>,
    /// Data directory (default ./strata-data).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Commit protocol: auto (default: declog-pmem when the data directory is
    /// on real PMem, a DAX mount, or with --pmem-mode dax; else declog-ssd),
    /// declog-pmem (on emulated PMem without DAX: survives a process crash,
    /// not a power loss), declog-ssd, serial-pmem, serial-ssd or none.
    #[arg(long)]
    pub protocol: Option<String>,
    /// PMem backend for the PMem files: emulated (default), dax or msync.
    #[arg(long)]
    pub pmem_mode: Option<String>,
}

impl OpenArgs {
    pub fn load(&self) -> anyhow::Result<Config> {
        let mut c = match &self.config {
            Some(p) => Config::from_file(p)?,
            None => Config::default(),
        };
        if let Some(d) = &self.data_dir {
            c.data_dir = d.clone();
        }
        if let Some(p) = &self.protocol {
            c.storage.protocol = p.clone();
        }
        if let Some(m) = &self.pmem_mode {
            c.pmem.mode = m.clone();
        }
        c.validate()?;
        Ok(c)
    }
}

/// Opens the data directory with a progress bar per recovery phase.
pub fn open_db(config: &Config) -> anyhow::Result<Db> {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} {elapsed}")
            .expect("template")
            .progress_chars("=> "),
    );
    let progress = |phase: RecoveryPhase, done: u64, total: u64| {
        bar.set_prefix(match phase {
            RecoveryPhase::Manifest => "manifest",
            RecoveryPhase::BlockFiles => "block files",
            RecoveryPhase::Replay => "log replay",
        });
        bar.set_length(total);
        bar.set_position(done);
    };
    let db = Db::open(config, &progress);
    bar.finish_and_clear();
    Ok(db?)
}
