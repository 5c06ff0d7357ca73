//! Block-file compaction, a step of every checkpoint (shared by all commit
//! protocols; Beringei keeps a bounded set of block files, declog.txt
//! section 5.1 leaves it open): when more than
//! `EngineOptions::compact_above_files` block files are open after sealing,
//! the newest ones are merged into one new file, so the number of live files
//! (and of open file descriptors) stays bounded under steady ingest.
//!
//! Owns: which files to merge ([`compaction_start`]), merging one series'
//! blocks of those files ([`merge_series`]) and [`SeriesCore::compact_block_files`].
//!
//! Why the newest files: a merged file gets a fresh (highest) sequence, and
//! reads rank blocks by file sequence (a newer file's point wins; a tombstone
//! masks files up to its sequence). A suffix of the files merged into a
//! file newer than all of them keeps every ranking: the merge resolves the
//! inputs among themselves (newest wins, tombstones applied, masked points
//! dropped) and every file left is older than all inputs. Size-tiered: the
//! suffix grows over older files no larger than what it holds, so files stay
//! in decreasing sizes and a point is rewritten about log(files) times.
//!
//! Crash safety: the merged file is written and fsynced (with its directory)
//! before anything refers to it; the blocks are installed in memory in place
//! of the inputs, then the checkpoint's manifest (one atomic rename) lists the
//! new file instead of the old ones, then the old files are deleted. A crash
//! before the rename leaves the old manifest and files authoritative and the
//! new file an orphan that opening deletes; after it, the old files are the
//! orphans.
//!
//! Concurrency: compaction runs inside the checkpoint (one at a time), while
//! readers and, under DecLog, writers go on. Readers hold `Arc`s of the files
//! they resolved under the apply gate, so a file deleted meanwhile stays
//! readable until they drop it (its descriptor closes then). The merged
//! file's sequence is taken before any series is read, so a delete applied
//! later masks it too; a series that got a tombstone masking its input blocks
//! between reading and installing keeps its old blocks (and their files)
//! until a later compaction.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::checkpoint::CheckpointReport;
use super::SeriesCore;
use crate::block_file::{BlockFile, BlockFileWriter, BlockIndexEntry};
use crate::error::EngineError;
use crate::model::{FieldType, FieldValue, SeriesId, TimestampNs};
use crate::series_data::{CompactionInput, SealInput, SealedBlock};

/// Default of `EngineOptions::compact_above_files`.
pub const COMPACT_ABOVE_FILES_DEFAULT: usize = 16;

/// Which files to merge, given the open files' sizes oldest first: the index
/// where the merged suffix starts, or None while at most `above_files`
/// (at least 1) files are open. The suffix leaves at most `above_files`
/// files, and grows over each older file no larger than the suffix.
pub fn compaction_start(sizes_bytes: &[u64], above_files: usize) -> Option<usize> {
    let above_files = above_files.max(1);
    if sizes_bytes.len() <= above_files {
        return None;
    }
    let mut start = above_files - 1;
    let mut run_bytes: u64 = sizes_bytes[start..].iter().sum();
    while start > 0 && sizes_bytes[start - 1] <= run_bytes {
        start -= 1;
        run_bytes += sizes_bytes[start];
    }
    Some(start)
}

/// One series' blocks of the input files merged: oldest file first, a newer
/// point over an older one, points masked by a tombstone dropped; cut into
/// sorted blocks as a checkpoint cuts them (`super::cut`, spans of
/// `span_ns`). A lone block no tombstone touches is carried over as it is,
/// unless it lacks the summary it could have (a version-1 file's block).
pub fn merge_series(
    id: SeriesId,
    input: &CompactionInput,
    files: &BTreeMap<u64, Arc<BlockFile>>,
    span_ns: Option<i64>,
) -> Result<Vec<SealInput>, EngineError> {
    let file_of = |b: &SealedBlock| {
        files.get(&b.file_seq).ok_or_else(|| {
            EngineError::corruption(
                crate::block_file::block_file_name(b.file_seq),
                format!("block file of {id} is not open for compaction"),
            )
        })
    };
    let touched = |b: &SealedBlock| {
        input
            .tombstones
            .iter()
            .any(|t| t.upto_file_seq >= b.file_seq && t.range.overlaps(b.entry.min_ts, b.entry.max_ts))
    };
    if let [b] = input.blocks.as_slice() {
        if !touched(b) && (b.entry.summary.is_some() || input.field_type == FieldType::String) {
            let e = &b.entry;
            let block = file_of(b)?.read_block(e)?;
            return Ok(vec![SealInput {
                min_ts: e.min_ts,
                max_ts: e.max_ts,
                point_count: e.point_count,
                block,
                summary: e.summary,
            }]);
        }
    }
    let mut blocks: Vec<&SealedBlock> = input.blocks.iter().collect();
    blocks.sort_by_key(|b| b.file_seq);
    let mut points: BTreeMap<TimestampNs, FieldValue> = BTreeMap::new();
    for b in blocks {
        let file = file_of(b)?;
        let bytes = file.read_block(&b.entry)?;
        let decoded = crate::gorilla::decode_block(&bytes).map_err(|e| {
            EngineError::corruption(file.path().display().to_string(), format!("block of {id}: {e}"))
        })?;
        let masks: Vec<_> =
            input.tombstones.iter().filter(|t| t.upto_file_seq >= b.file_seq).map(|t| t.range).collect();
        // Masks cover every file up to a sequence: when a newer block's
        // point is masked, so are the older ones, so skipping is enough.
        points
            .extend(decoded.into_points().into_iter().filter(|(t, _)| !masks.iter().any(|m| m.contains(*t))));
    }
    let points: Vec<(TimestampNs, FieldValue)> = points.into_iter().collect();
    super::cut::cut_blocks(input.field_type, &points, span_ns)
}

/// A series whose merged blocks were written: what was read, for the install.
struct Merged {
    id: SeriesId,
    input: CompactionInput,
}

impl SeriesCore {
    /// Merges the newest block files when more than
    /// `compact_above_files` are open (see the module comment); the
    /// checkpoint's manifest, written next, lists the merged file and the
    /// old ones are deleted after it. A failure leaves the old blocks
    /// installed and the partial file removed (best effort; opening removes
    /// it anyway).
    pub fn compact_block_files(&self, report: &mut CheckpointReport) -> Result<(), EngineError> {
        let files = self.blocks().files();
        let sizes: Vec<u64> = files.iter().map(|(_, f)| f.len_bytes()).collect();
        let Some(start) = compaction_start(&sizes, self.options().compact_above_files) else {
            return Ok(());
        };
        let inputs: BTreeMap<u64, Arc<BlockFile>> = files[start..].iter().cloned().collect();
        let first_input = files[start].0;
        let (fs, dir) = (&self.options().fs, &self.options().dir);
        // Before any series is read: a delete applied from now on masks the
        // merged file as well as the inputs.
        let seq = self.blocks().take_file_seq();
        let mut writer = BlockFileWriter::create(fs.clone(), dir, seq)?;
        let merged = match self.write_merged(&mut writer, first_input, &inputs) {
            Ok(merged) => merged,
            Err(e) => {
                let _ = writer.abandon();
                return Err(e);
            }
        };
        if merged.is_empty() {
            // No live series has blocks there: the manifest drops the files.
            // (An empty file left behind is an orphan opening removes.)
            let _ = writer.abandon();
            return Ok(());
        }
        // Best effort on failure: no manifest lists the file, and opening
        // removes it anyway.
        let remove = |_: &EngineError| {
            let _ = fs.remove(&dir.join(crate::block_file::block_file_name(seq)));
        };
        let meta = writer.finish().inspect_err(remove)?;
        let file = Arc::new(BlockFile::open(fs.clone(), &meta.path).inspect_err(remove)?);
        self.blocks().add_file(seq, file);
        let mut by_series: BTreeMap<SeriesId, Vec<BlockIndexEntry>> = BTreeMap::new();
        for e in meta.entries {
            by_series.entry(e.series).or_default().push(e);
        }
        let items = merged.into_iter().map(|m| {
            let entries = by_series.remove(&m.id).unwrap_or_default();
            (m.id, m.input, entries)
        });
        report.series_kept_uncompacted += self.data().install_compacted(seq, items);
        report.files_compacted += inputs.len() as u64;
        report.compacted_file_bytes = meta.len_bytes;
        Ok(())
    }

    /// Appends the merged blocks of every live series with blocks in the
    /// inputs (files from `first_input` on).
    fn write_merged(
        &self,
        writer: &mut BlockFileWriter,
        first_input: u64,
        inputs: &BTreeMap<u64, Arc<BlockFile>>,
    ) -> Result<Vec<Merged>, EngineError> {
        let mut merged = Vec::new();
        for ids in self.data().ids_by_shard() {
            for id in ids {
                if self.index().read().entry(id).is_none() {
                    continue;
                }
                let Some(input) = self.data().compaction_input(id, |s| s >= first_input) else { continue };
                for b in merge_series(id, &input, inputs, self.options().block_span_ns)? {
                    writer.append(id, b.min_ts, b.max_ts, b.point_count, &b.block, b.summary)?;
                }
                merged.push(Merged { id, input });
            }
        }
        Ok(merged)
    }
}

#[cfg(test)]
mod tests {
    use super::compaction_start;

    #[test]
    fn nothing_is_merged_up_to_the_threshold() {
        assert_eq!(compaction_start(&[], 4), None);
        assert_eq!(compaction_start(&[10, 10, 10, 10], 4), None);
        assert_eq!(compaction_start(&[10], 0), None, "a threshold of 0 counts as 1");
    }

    #[test]
    fn the_suffix_leaves_at_most_the_threshold_and_stops_at_a_larger_file() {
        // 5 files over a threshold of 4: the two newest at least; the third
        // newest (30) is larger than them (20), so it stays.
        assert_eq!(compaction_start(&[100, 50, 30, 10, 10], 4), Some(3));
        // Equal sizes: the suffix grows over every file no larger than it.
        assert_eq!(compaction_start(&[10, 10, 10, 10, 10], 4), Some(0));
        // Threshold 1: everything into one.
        assert_eq!(compaction_start(&[100, 1], 1), Some(0));
    }

    #[test]
    fn steady_ingest_keeps_the_file_count_bounded_and_sizes_decreasing() {
        let above_files = 4;
        let mut files: Vec<u64> = Vec::new();
        let mut rewritten_bytes = 0u64;
        for _ in 0..1000 {
            files.push(10);
            if let Some(start) = compaction_start(&files, above_files) {
                let merged: u64 = files.drain(start..).sum();
                rewritten_bytes += merged;
                files.push(merged);
            }
            assert!(files.len() <= above_files, "{files:?}");
        }
        assert_eq!(files.iter().sum::<u64>(), 10_000, "no bytes lost in the model");
        assert!(files.windows(2).all(|w| w[0] >= w[1]), "older files are larger: {files:?}");
        // Rewriting is far below rewriting everything at every merge.
        assert!(rewritten_bytes < 10_000 * 120, "rewritten {rewritten_bytes}");
    }
}
