//! What opening a series engine reports: its phases (manifest, block
//! files, log replay; `crate::core::load` does the first two for every
//! protocol, the protocol's opener the third) and what each found and how
//! long it took, for `strata recover`.

use std::fmt;

/// Phases reported to a progress callback: (phase, done, total).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RecoveryPhase {
    Manifest,
    BlockFiles,
    Replay,
}

/// What recovery found and how long each phase took.
#[derive(Clone, Debug, Default)]
pub struct RecoveryReport {
    pub protocol: String,
    pub manifest_found: bool,
    pub checkpoint_seq: u64,
    pub checkpoint_lsn: u64,
    pub databases: usize,
    pub series: usize,
    pub block_files: usize,
    pub sealed_blocks: u64,
    pub tombstones: usize,
    pub log_records: usize,
    pub log_records_skipped: usize,
    pub points_replayed: u64,
    pub orphan_files_removed: usize,
    pub manifest_s: f64,
    pub block_files_s: f64,
    pub replay_s: f64,
    pub total_s: f64,
}

impl fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "protocol            {}", self.protocol)?;
        if self.manifest_found {
            writeln!(f, "checkpoint          #{} at LSN {}", self.checkpoint_seq, self.checkpoint_lsn)?;
        } else {
            writeln!(f, "checkpoint          none (fresh data directory or never checkpointed)")?;
        }
        writeln!(f, "databases           {}", self.databases)?;
        writeln!(f, "series              {}", self.series)?;
        writeln!(
            f,
            "block files         {} ({} sealed blocks, {} tombstones)",
            self.block_files, self.sealed_blocks, self.tombstones
        )?;
        if self.orphan_files_removed > 0 {
            writeln!(
                f,
                "orphan block files  {} removed (from an unfinished checkpoint)",
                self.orphan_files_removed
            )?;
        }
        writeln!(
            f,
            "log records         {} replayed ({} points), {} already checkpointed",
            self.log_records.saturating_sub(self.log_records_skipped),
            self.points_replayed,
            self.log_records_skipped
        )?;
        writeln!(f, "phase manifest      {:.3} s", self.manifest_s)?;
        writeln!(f, "phase block files   {:.3} s", self.block_files_s)?;
        writeln!(f, "phase log replay    {:.3} s", self.replay_s)?;
        write!(f, "total               {:.3} s", self.total_s)
    }
}
