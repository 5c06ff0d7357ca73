//! The parts of a checkpoint every commit protocol shares (the baseline's,
//! declog.txt section 5.1: seal the open blocks, write them to SSD, write
//! the manifest): each protocol decides when and under which locks they run
//! and what its log does around them (`crate::protocol::wal` truncates the
//! serial log; DecLog, section 4.5, cuts and purges its streams).
//!
//! 1. [`SeriesCore::seal_frozen`]: every series' frozen DRAM points become
//!    sorted Gorilla blocks with their summaries, cut at the edges of
//!    aligned time spans (`super::cut`), all written to one new block file, fsynced
//!    with its directory, then installed in place of the frozen points;
//! 2. [`SeriesCore::write_checkpoint_manifest`]: the manifest (index, live
//!    files, tombstones, the protocol's log position) atomically by rename;
//!    files no series references any more are deleted (their descriptors
//!    close when the last reader holding them is done).
//!
//! Both run under [`SeriesCore::checkpoint_running`]. Merging block files
//! is a separate step after the checkpoint (`super::compact`), which
//! writes a manifest of its own.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::blocks::CheckpointMark;
use super::SeriesCore;
use crate::block_file::{BlockFile, BlockFileWriter};
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

/// Where a protocol's log stands at a checkpoint, as the manifest records
/// it (`docs/format/manifest.md`): the protocol's name, the serial logs'
/// checkpoint LSN, DecLog's per-stream cut.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogPosition {
    pub protocol: String,
    pub checkpoint_lsn: u64,
    pub declog_cut: Vec<u64>,
}

impl SeriesCore {
    /// Seals the frozen points of every series into one new block file
    /// (fsynced), then installs the blocks in their place. Writes may go on
    /// meanwhile: they land in the series' fresh open blocks and patches.
    pub fn seal_frozen(&self, report: &mut CheckpointReport) -> Result<(), EngineError> {
        let fs = &self.options().fs;
        let dir = &self.options().dir;
        let mut writer: Option<(u64, BlockFileWriter)> = None;
        for ids in self.data().ids_by_shard() {
            for id in ids {
                let Some(blocks) = self.data().seal_input(id, self.options().block_span_ns)? else {
                    continue;
                };
                if writer.is_none() {
                    let seq = self.blocks().take_file_seq();
                    writer = Some((seq, BlockFileWriter::create(fs.clone(), dir, seq)?));
                }
                let (_, w) = writer.as_mut().expect("created");
                for b in blocks {
                    w.append(id, b.min_ts, b.max_ts, b.point_count, &b.block, b.summary)?;
                    report.points_sealed += b.point_count as u64;
                }
                report.series_sealed += 1;
            }
        }
        let Some((file_seq, w)) = writer else { return Ok(()) };
        let meta = w.finish().inspect_err(|_| {
            // Best effort: an unfinished file is not in any manifest, and
            // recovery removes it anyway.
            let _ = fs.remove(&dir.join(crate::block_file::block_file_name(file_seq)));
        })?;
        report.block_file_bytes = meta.len_bytes;
        let file = Arc::new(BlockFile::open(fs.clone(), &meta.path)?);
        // Install. From here on the installed blocks are the only copy in
        // memory of the sealed points; a failure below leaves them installed,
        // their file durable but unlisted, and the log untruncated: the state
        // on media is still the previous checkpoint plus the log, and the next
        // checkpoint lists the file.
        self.blocks().add_file(file_seq, file);
        self.data().install_sealed(
            meta.entries.iter().map(|e| (e.series, SealedBlock { file_seq, entry: e.clone() })),
        );
        Ok(())
    }

    /// Writes the manifest naming `position` and removes files it no longer
    /// lists; returns the new checkpoint sequence.
    pub fn write_checkpoint_manifest(&self, position: LogPosition) -> Result<u64, EngineError> {
        let mark = self.blocks().mark();
        let checkpoint_seq = mark.checkpoint_seq + 1;
        let checkpoint_lsn = position.checkpoint_lsn;
        let manifest = self.build_manifest(checkpoint_seq, mark.next_file_seq, position);
        write_manifest(self.options().fs.as_ref(), &self.options().dir, &manifest)?;
        self.blocks().set_mark(CheckpointMark {
            checkpoint_seq,
            checkpoint_lsn: strata_log::Lsn(checkpoint_lsn),
            next_file_seq: mark.next_file_seq,
        });
        for f in self.blocks().remove_files(|s| manifest.block_files.binary_search(&s).is_ok()) {
            self.options().fs.remove(f.path())?;
        }
        Ok(checkpoint_seq)
    }

    /// Fills in the report's sequence and duration and counts the checkpoint.
    pub fn finish_checkpoint(&self, report: &mut CheckpointReport, checkpoint_seq: u64, started: Instant) {
        report.checkpoint_seq = checkpoint_seq;
        report.duration_s = started.elapsed().as_secs_f64();
        self.blocks().record_duration(report.duration_s);
        let c = self.counters();
        c.checkpoints.fetch_add(1, Ordering::Relaxed);
        c.checkpoint_seconds_total_us.fetch_add((report.duration_s * 1e6) as u64, Ordering::Relaxed);
    }

    fn build_manifest(&self, checkpoint_seq: u64, next_file_seq: u64, position: LogPosition) -> Manifest {
        let index = self.index().read();
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
        let (live_files, tombstones) = self.data().manifest_parts(|id| index.entry(id).is_some());
        let mut tombstones: Vec<ManifestTombstone> = tombstones
            .into_iter()
            .map(|(series, t)| ManifestTombstone {
                series,
                min_ts: t.range.min_ns,
                max_ts: t.range.max_ns,
                upto_file_seq: t.upto_file_seq,
            })
            .collect();
        tombstones.sort_by_key(|t| (t.series, t.upto_file_seq, t.min_ts));
        Manifest {
            checkpoint_seq,
            checkpoint_lsn: position.checkpoint_lsn,
            protocol: position.protocol,
            next_series_id: index.next_id(),
            next_file_seq,
            databases: index.databases(),
            series,
            block_files: live_files.into_iter().collect(),
            tombstones,
            declog_cut: position.declog_cut,
        }
    }
}
