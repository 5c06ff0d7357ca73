//! Checkpoint of the series engine (the baseline's, declog.txt section 5.1:
//! seal the open blocks, write them to SSD, then truncate the log).
//!
//! Protocol, all under the order mutex (new commits wait; readers go on):
//! 1. drain the applier, so the DRAM state holds exactly the records up to
//!    the log's end `L`, and freeze it (each series' DRAM points move aside);
//! 2. seal: every series' frozen points become one sorted Gorilla block, all
//!    written to a new block file, fsynced with its directory;
//! 3. install: the series reference their new blocks and drop their DRAM
//!    points (under the apply gate, so a reader sees one or the other);
//! 4. write the manifest (index, live files, tombstones, checkpoint LSN `L`)
//!    atomically by rename;
//! 5. truncate the log.
//!
//! A crash before 4 leaves the old manifest, which does not list the new
//! file: recovery deletes it and replays the log. A crash between 4 and 5
//! leaves records with LSN <= L in the log: recovery skips them. Blocking
//! commits during a checkpoint is the baseline's cost; DecLog (section 4.5,
//! `crate::declog::checkpoint`) removes it, reusing steps 2-4 here.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::MutexGuard;
use strata_log::Lsn;

use crate::block_file::{BlockFile, BlockFileWriter};
use crate::engine::{OrderState, SeriesEngine};
use crate::error::EngineError;
use crate::manifest::{write_manifest, Manifest, ManifestSeries, ManifestTombstone};
use crate::series_data::SealedBlock;

/// What one checkpoint did.
#[derive(Clone, Debug, Default)]
pub struct CheckpointReport {
    pub checkpoint_seq: u64,
    pub checkpoint_lsn: u64,
    pub series_sealed: u64,
    pub points_sealed: u64,
    pub block_file_bytes: u64,
    pub log_bytes_freed: u64,
    pub duration_s: f64,
}

impl std::fmt::Display for CheckpointReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "checkpoint {} at LSN {}: sealed {} points of {} series into {} bytes, freed {} log bytes in {:.3} s",
            self.checkpoint_seq,
            self.checkpoint_lsn,
            self.points_sealed,
            self.series_sealed,
            self.block_file_bytes,
            self.log_bytes_freed,
            self.duration_s
        )
    }
}

impl SeriesEngine {
    /// Takes a checkpoint now (also called on graceful shutdown).
    pub fn checkpoint(&self) -> Result<CheckpointReport, EngineError> {
        if let Some(dl) = &self.declog {
            return self.checkpoint_declog(dl);
        }
        let mut order = self.order.lock();
        self.checkpoint_locked(&mut order)
    }

    /// Bytes of log written since the last checkpoint.
    pub fn log_bytes_since_checkpoint(&self) -> u64 {
        if let Some(dl) = &self.declog {
            return dl.log_bytes();
        }
        let lsn = self.ckpt.lock().checkpoint_lsn;
        self.log.end().0.saturating_sub(lsn.0)
    }

    pub(crate) fn checkpoint_locked(
        &self,
        order: &mut MutexGuard<'_, OrderState>,
    ) -> Result<CheckpointReport, EngineError> {
        if self.declog.is_some() {
            // DecLog's checkpoint takes its own cut; it must not run under
            // the order mutex (transactions in flight need it to finish).
            return Err(EngineError::Other("internal: serial checkpoint called on a DecLog engine".into()));
        }
        let started = Instant::now();
        self.drain(order);
        let cut = self.log.end();
        let prev_lsn = self.ckpt.lock().checkpoint_lsn;
        let mut report = CheckpointReport { checkpoint_lsn: cut.0, ..Default::default() };
        // 1. Freeze: commits are excluded by the order mutex, so this is the
        // DRAM state at `cut`.
        self.freeze_all();
        // 2.-3. Seal and install.
        self.seal_frozen(&mut report)?;
        // 4. Manifest.
        let checkpoint_seq = self.write_checkpoint_manifest(cut)?;
        // 5. Truncate.
        if let Err(e) = self.log.truncate_all() {
            // A failed segment rotation leaves the log refusing appends: stop
            // writes with a clear reason. (Failing to remove the old segment
            // is harmless: the manifest covers it and open removes it.)
            if matches!(e, strata_log::LogError::Poisoned(_)) {
                self.poison(&e);
            }
            return Err(e.into());
        }
        report.log_bytes_freed = cut.0.saturating_sub(prev_lsn.0);
        self.finish_checkpoint(&mut report, checkpoint_seq, started);
        Ok(report)
    }

    /// Moves every series' DRAM points aside for sealing (under the apply
    /// gate, so readers see them before, during and after).
    pub(crate) fn freeze_all(&self) {
        let _gate = self.gate.write();
        for shard in &self.shards {
            for data in shard.lock().values_mut() {
                data.freeze();
            }
        }
    }

    /// Seals the frozen points of every series into one new block file
    /// (fsynced), then installs the blocks in their place. Writes may go on
    /// meanwhile: they land in the series' fresh open blocks and patches.
    pub(crate) fn seal_frozen(&self, report: &mut CheckpointReport) -> Result<(), EngineError> {
        let file_seq = self.ckpt.lock().next_file_seq;
        let mut writer: Option<BlockFileWriter> = None;
        for shard in &self.shards {
            let ids: Vec<_> = {
                let mut ids: Vec<_> = shard.lock().keys().copied().collect();
                ids.sort();
                ids
            };
            for id in ids {
                let input = {
                    let mut shard = shard.lock();
                    let Some(data) = shard.get_mut(&id) else { continue };
                    let input = data.seal_input()?;
                    if input.is_none() {
                        data.drop_empty_frozen();
                    }
                    input
                };
                let Some(input) = input else { continue };
                if writer.is_none() {
                    // The sequence is used up as soon as a file may exist under it:
                    // a later checkpoint must never reuse (and truncate) it, and
                    // a delete from now on masks it.
                    self.ckpt.lock().next_file_seq = file_seq + 1;
                    writer = Some(BlockFileWriter::create(self.opts.fs.clone(), &self.opts.dir, file_seq)?);
                }
                let w = writer.as_mut().expect("created");
                w.append(id, input.min_ts, input.max_ts, input.point_count, &input.block)?;
                report.series_sealed += 1;
                report.points_sealed += input.point_count as u64;
            }
        }
        let Some(w) = writer else { return Ok(()) };
        let meta = w.finish().inspect_err(|_| {
            // Best effort: an unfinished file is not in any manifest, and
            // recovery removes it anyway.
            let _ = self.opts.fs.remove(&self.opts.dir.join(crate::block_file::block_file_name(file_seq)));
        })?;
        report.block_file_bytes = meta.len_bytes;
        let file = Arc::new(BlockFile::open(self.opts.fs.clone(), &meta.path)?);
        // Install. From here on the installed blocks are the only copy in
        // memory of the sealed points; a failure below leaves them installed,
        // their file durable but unlisted, and the log untruncated: the state
        // on media is still the previous checkpoint plus the log, and the next
        // checkpoint lists the file.
        let _gate = self.gate.write();
        self.files.write().insert(file_seq, file);
        for entry in &meta.entries {
            let mut shard = self.shard(entry.series).lock();
            if let Some(data) = shard.get_mut(&entry.series) {
                data.install_sealed(SealedBlock { file_seq, entry: entry.clone() });
            }
        }
        for shard in &self.shards {
            for data in shard.lock().values_mut() {
                data.prune_tombstones();
            }
        }
        Ok(())
    }

    /// Writes the manifest naming `cut` and removes files it no longer
    /// lists; returns the new checkpoint sequence.
    pub(crate) fn write_checkpoint_manifest(&self, cut: Lsn) -> Result<u64, EngineError> {
        let next_file_seq = self.ckpt.lock().next_file_seq;
        let checkpoint_seq = self.ckpt.lock().checkpoint_seq + 1;
        let manifest = self.build_manifest(checkpoint_seq, cut, next_file_seq);
        write_manifest(self.opts.fs.as_ref(), &self.opts.dir, &manifest)?;
        {
            let mut ck = self.ckpt.lock();
            ck.checkpoint_seq = checkpoint_seq;
            ck.checkpoint_lsn = cut;
        }
        self.remove_unreferenced_files(&manifest)?;
        Ok(checkpoint_seq)
    }

    pub(crate) fn finish_checkpoint(
        &self,
        report: &mut CheckpointReport,
        checkpoint_seq: u64,
        started: Instant,
    ) {
        report.checkpoint_seq = checkpoint_seq;
        report.duration_s = started.elapsed().as_secs_f64();
        let mut ck = self.ckpt.lock();
        ck.last_at = Instant::now();
        ck.last_duration_s = report.duration_s;
        drop(ck);
        self.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
        self.counters
            .checkpoint_seconds_total_us
            .fetch_add((report.duration_s * 1e6) as u64, Ordering::Relaxed);
    }

    pub(crate) fn build_manifest(&self, checkpoint_seq: u64, cut: Lsn, next_file_seq: u64) -> Manifest {
        let index = self.index.read();
        let series: Vec<ManifestSeries> = index
            .all()
            .into_iter()
            .map(|(id, e)| ManifestSeries {
                id,
                db: e.db.clone(),
                key: e.key.clone(),
                field_type: e.field_type,
            })
            .collect();
        let mut tombstones = Vec::new();
        let mut live_files = std::collections::BTreeSet::new();
        for shard in &self.shards {
            for (id, data) in shard.lock().iter() {
                if index.entry(*id).is_none() {
                    continue;
                }
                live_files.extend(data.sealed.iter().map(|b| b.file_seq));
                tombstones.extend(data.tombstones.iter().map(|t| ManifestTombstone {
                    series: *id,
                    min_ts: t.range.min_ns,
                    max_ts: t.range.max_ns,
                    upto_file_seq: t.upto_file_seq,
                }));
            }
        }
        tombstones.sort_by_key(|t| (t.series, t.upto_file_seq, t.min_ts));
        Manifest {
            checkpoint_seq,
            checkpoint_lsn: cut.0,
            protocol: self.protocol().to_string(),
            next_series_id: index.next_id(),
            next_file_seq,
            databases: index.databases(),
            series,
            block_files: live_files.into_iter().collect(),
            tombstones,
            declog_cut: self.declog.as_ref().map(|dl| dl.last_cut()).unwrap_or_default(),
        }
    }

    /// Closes and deletes block files no live series references any more
    /// (after drops); the manifest no longer lists them.
    fn remove_unreferenced_files(&self, manifest: &Manifest) -> Result<(), EngineError> {
        let doomed: Vec<Arc<BlockFile>> = {
            let mut files = self.files.write();
            let gone: Vec<u64> =
                files.keys().copied().filter(|s| manifest.block_files.binary_search(s).is_err()).collect();
            gone.into_iter().filter_map(|s| files.remove(&s)).collect()
        };
        for f in doomed {
            self.opts.fs.remove(f.path())?;
        }
        Ok(())
    }
}
