//! [`BlockStore`]: the series' sealed data on SSD (declog.txt section 5.1,
//! the baseline's block files) and the checkpoint bookkeeping: the open
//! block files by sequence, the next file sequence, the last checkpoint's
//! sequence and log position, and its timing.
//!
//! Owns: the block-file map and the checkpoint state. Sealing (which needs
//! the series data too) and the manifest are orchestrated by
//! `super::checkpoint`.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use strata_log::Lsn;

use crate::block_file::BlockFile;

/// Checkpoint bookkeeping.
struct CheckpointState {
    checkpoint_seq: u64,
    checkpoint_lsn: Lsn,
    next_file_seq: u64,
    last_duration_s: f64,
}

pub struct BlockStore {
    files: RwLock<BTreeMap<u64, Arc<BlockFile>>>,
    ckpt: Mutex<CheckpointState>,
}

impl Default for BlockStore {
    fn default() -> Self {
        BlockStore {
            files: RwLock::new(BTreeMap::new()),
            ckpt: Mutex::new(CheckpointState {
                checkpoint_seq: 0,
                checkpoint_lsn: Lsn(0),
                next_file_seq: 1,
                last_duration_s: 0.0,
            }),
        }
    }
}

/// What a checkpoint recorded (for the manifest and the next checkpoint).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckpointMark {
    pub checkpoint_seq: u64,
    pub checkpoint_lsn: Lsn,
    pub next_file_seq: u64,
}

impl BlockStore {
    /// The open block file with sequence `seq`.
    pub fn file(&self, seq: u64) -> Option<Arc<BlockFile>> {
        self.files.read().get(&seq).cloned()
    }

    /// Every open block file, by sequence (oldest first).
    pub fn files(&self) -> Vec<(u64, Arc<BlockFile>)> {
        self.files.read().iter().map(|(s, f)| (*s, f.clone())).collect()
    }

    pub fn add_file(&self, seq: u64, file: Arc<BlockFile>) {
        self.files.write().insert(seq, file);
    }

    /// Closes the files whose sequence `keep` refuses, returning them.
    pub fn remove_files(&self, keep: impl Fn(u64) -> bool) -> Vec<Arc<BlockFile>> {
        let mut files = self.files.write();
        let gone: Vec<u64> = files.keys().copied().filter(|s| !keep(*s)).collect();
        gone.into_iter().filter_map(|s| files.remove(&s)).collect()
    }

    /// (number of files, their bytes).
    pub fn file_totals(&self) -> (u64, u64) {
        let files = self.files.read();
        (files.len() as u64, files.values().map(|f| f.len_bytes()).sum())
    }

    /// The newest file sequence in use: a delete from now on masks up to it.
    pub fn max_file_seq(&self) -> u64 {
        self.ckpt.lock().next_file_seq.saturating_sub(1)
    }

    /// Takes the next file sequence (used up at once: a later checkpoint
    /// must never reuse, and truncate, a file that may exist under it).
    pub fn take_file_seq(&self) -> u64 {
        let mut ck = self.ckpt.lock();
        let seq = ck.next_file_seq;
        ck.next_file_seq += 1;
        seq
    }

    pub fn mark(&self) -> CheckpointMark {
        let ck = self.ckpt.lock();
        CheckpointMark {
            checkpoint_seq: ck.checkpoint_seq,
            checkpoint_lsn: ck.checkpoint_lsn,
            next_file_seq: ck.next_file_seq,
        }
    }

    /// Records a checkpoint whose manifest is durable (or the one loaded).
    pub fn set_mark(&self, mark: CheckpointMark) {
        let mut ck = self.ckpt.lock();
        ck.checkpoint_seq = mark.checkpoint_seq;
        ck.checkpoint_lsn = mark.checkpoint_lsn;
        ck.next_file_seq = mark.next_file_seq.max(1);
    }

    pub fn record_duration(&self, duration_s: f64) {
        let mut ck = self.ckpt.lock();
        ck.last_duration_s = duration_s;
    }

    pub fn last_duration_s(&self) -> f64 {
        self.ckpt.lock().last_duration_s
    }
}
