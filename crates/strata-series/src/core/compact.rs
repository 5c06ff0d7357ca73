//! Block-file compaction (shared by all commit protocols; Beringei keeps a
//! bounded set of block files, declog.txt section 5.1 leaves it open): a
//! step of its own after a checkpoint. Every checkpoint that sealed a
//! series leaves it one more block in one more file, and overwritten or
//! deleted points stay in the older files; compaction merges the newest
//! files into one (size-tiered, past `EngineOptions::compact_above_files`
//! open files, [`CompactMode::Tiered`]) or every file
//! ([`CompactMode::All`], `SeriesEngine::compact_all`), keeping the newest
//! value of each point and dropping the points tombstones mask.
//!
//! Owns: which files to merge ([`compaction_start`]), merging one series'
//! blocks of those files ([`merge_series`]) and [`SeriesCore::compact`],
//! with its manifest.
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
//! Where it runs: on the engine's background checkpointer after a
//! checkpoint (`Db`'s, in strata-engine), or on demand; never inside a
//! checkpoint, so a writer that checkpoints inline because the log is full
//! never compacts, and no commit waits for a merge (the serial order mutex
//! and DecLog's cut lock are not taken). It holds the checkpoint-running
//! lock ([`SeriesCore::checkpoint_running`]) throughout: one checkpoint or
//! compaction at a time, so the files and the durable manifest do not
//! change under it (a writer whose full log needs a checkpoint waits for
//! the merge to end).
//!
//! The manifest a compaction writes is the durable manifest of the last
//! checkpoint `C` (read back from disk) with the merged file in place of
//! its inputs and `next_file_seq` past the merged file; everything else is
//! `C`'s: its log position (`checkpoint_lsn`, `declog_cut`), sequence,
//! protocol, series index and tombstones. So recovery replays exactly the
//! log it would have replayed from `C`, over the same series index:
//! - series created since `C` are not listed: the log past `C` creates them
//!   again, with the same ids from `C`'s `next_series_id`; the merged file
//!   holds blocks only of series that were in the inputs, all listed in
//!   `C` (ids are never reused). A series dropped since `C` is listed, and
//!   its drop is in the log past `C` (a WAL record; under DecLog a drop is
//!   a checkpoint, which would be the newer `C`), so replay drops it again;
//! - tombstones applied since `C` are not listed: the merged file already
//!   lacks the points they masked in the inputs, and their deletes are in
//!   the log past `C`. Replayed, a delete masks every file up to the
//!   manifest's newest sequence, the merged one included, so it masks
//!   what it masked live (and nothing a later write in the log brings
//!   back: writes land in DRAM). A delete is applied live only once
//!   durable, so no merged-away point can come back from a log that lost
//!   its delete. `C`'s own tombstones stay: they mask the older files
//!   still listed as before, and do not reach the merged file, whose points
//!   they already masked away;
//! - file sequences: the merged file's sequence is above every listed one
//!   (taken after `C`), and `next_file_seq` above it, so a file a later
//!   checkpoint seals never reuses it. Inputs must be listed in `C` (a
//!   failed checkpoint may leave an installed file that no manifest lists:
//!   then nothing is merged until a checkpoint lists it).
//!
//! Crash safety, step by step: (1) the merged file is written, fsynced with
//! its directory; a crash here leaves `C` authoritative and the merged file
//! an orphan opening deletes. (2) It is installed in memory in place of the
//! inputs. (3) The manifest (one atomic rename, directory fsynced) lists it
//! instead of the inputs; a crash before the rename is durable leaves `C`
//! (the merged file an orphan), after it the new manifest (the inputs
//! orphans). (4) Only then are the inputs deleted; a crash in between
//! leaves orphans opening deletes. The next checkpoint's manifest is built
//! from memory, which lists the merged file. Under `none` (no log) a crash
//! after a compaction manifest may keep deletes and drops made since `C`
//! that the merged file reflects: `none` promises nothing past `C`.
//! `tests/compaction_crash.rs` crashes a compaction at every file operation
//! (`strata crashtest`'s `series-compaction/ssd` line too), and a planted
//! bug ([`CompactionBug`]) shows that deleting the inputs before the
//! manifest loses acknowledged points.
//!
//! Concurrency with readers and writers: readers hold `Arc`s of the files
//! they resolved under the apply gate, so a file deleted meanwhile stays
//! readable until they drop it (its descriptor closes then). The merged
//! file's sequence is taken before any series is read, so a delete applied
//! later masks it too; a delete whose newest file sequence was read before
//! and that is applied after the series was read is carried over to the
//! merged file (`SeriesData::replace_compacted`). Writes go to DRAM, above
//! every block.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use super::SeriesCore;
use crate::block_file::{BlockFile, BlockFileWriter, BlockIndexEntry};
use crate::error::EngineError;
use crate::manifest::{read_manifest, write_manifest};
use crate::model::{FieldType, FieldValue, SeriesId, TimestampNs};
use crate::series_data::{CompactionInput, SealInput, SealedBlock};

/// Default of `EngineOptions::compact_above_files`.
pub const COMPACT_ABOVE_FILES_DEFAULT: usize = 16;

/// Which files a compaction merges.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CompactMode {
    /// Past `compact_above_files` open files, the newest ([`compaction_start`]).
    Tiered,
    /// Every block file into one; a lone file too when tombstones may mask
    /// some of its points.
    All,
}

/// Why a compaction merged nothing.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CompactionSkip {
    /// No checkpoint yet: no manifest to start from.
    NoCheckpoint,
    /// Not enough files (or nothing a full compaction would reclaim).
    NothingToMerge,
    /// The manifest on disk is not the last completed checkpoint's (a
    /// checkpoint failed after its rename); the next checkpoint settles it.
    UnsettledManifest,
    /// An input is not listed in the durable manifest (a checkpoint failed
    /// after sealing); the next checkpoint lists it.
    InputNotListed,
}

/// What one compaction did.
#[derive(Clone, Debug, Default)]
pub struct CompactionReport {
    /// Block files merged (0: none).
    pub files_merged: u64,
    /// Their total size.
    pub input_bytes: u64,
    /// Size of the merged file (0: none written, every input's series gone).
    pub merged_file_bytes: u64,
    /// Series whose blocks were merged.
    pub series_merged: u64,
    /// Series that kept their input blocks (dropped while merged).
    pub series_kept: u64,
    pub skipped: Option<CompactionSkip>,
    pub duration_s: f64,
}

impl std::fmt::Display for CompactionReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.skipped {
            Some(why) => write!(f, "compaction: nothing merged ({why:?})"),
            None => write!(
                f,
                "compaction: merged {} block files of {} bytes into {} bytes ({} series) in {:.3} s",
                self.files_merged,
                self.input_bytes,
                self.merged_file_bytes,
                self.series_merged,
                self.duration_s
            ),
        }
    }
}

/// A broken compaction the crash lines plant to show they catch it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CompactionBug {
    None,
    /// The inputs are deleted before the manifest that drops them is written.
    DeleteInputsBeforeManifest,
}

#[cfg(any(test, feature = "crashtest"))]
thread_local! {
    /// The bug planted on this thread (the thread that compacts).
    pub static COMPACTION_BUG: std::cell::Cell<CompactionBug> = const { std::cell::Cell::new(CompactionBug::None) };
}

#[cfg(any(test, feature = "crashtest"))]
fn planted() -> CompactionBug {
    COMPACTION_BUG.with(|b| b.get())
}

#[cfg(not(any(test, feature = "crashtest")))]
fn planted() -> CompactionBug {
    CompactionBug::None
}

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
    /// Merges block files as `mode` says and makes the result durable by a
    /// manifest of its own (see the module comment), then deletes the
    /// inputs. Takes the checkpoint-running lock. A failure before the
    /// install leaves the old blocks and removes the partial file (best
    /// effort; opening removes it anyway); a failure of the manifest leaves
    /// the merged blocks installed, and the next checkpoint lists them.
    pub fn compact(&self, mode: CompactMode) -> Result<CompactionReport, EngineError> {
        let _running = self.checkpoint_running().lock();
        let started = Instant::now();
        let mut report = CompactionReport::default();
        let (fs, dir) = (&self.options().fs, &self.options().dir);
        let skip = |mut report: CompactionReport, why| {
            report.skipped = Some(why);
            Ok(report)
        };
        let files = self.blocks().files();
        let start = match mode {
            CompactMode::Tiered => {
                let sizes: Vec<u64> = files.iter().map(|(_, f)| f.len_bytes()).collect();
                compaction_start(&sizes, self.options().compact_above_files)
            }
            CompactMode::All => {
                (files.len() > 1 || (files.len() == 1 && self.data().any_tombstone())).then_some(0)
            }
        };
        let Some(start) = start else { return skip(report, CompactionSkip::NothingToMerge) };
        // The last checkpoint's manifest, as recovery would read it.
        let Some(durable) = read_manifest(fs.as_ref(), dir)? else {
            return skip(report, CompactionSkip::NoCheckpoint);
        };
        if durable.checkpoint_seq != self.blocks().mark().checkpoint_seq {
            return skip(report, CompactionSkip::UnsettledManifest);
        }
        let inputs: BTreeMap<u64, Arc<BlockFile>> = files[start..].iter().cloned().collect();
        if inputs.keys().any(|s| durable.block_files.binary_search(s).is_err()) {
            return skip(report, CompactionSkip::InputNotListed);
        }
        report.files_merged = inputs.len() as u64;
        report.input_bytes = inputs.values().map(|f| f.len_bytes()).sum();

        // (1) Before any series is read: a delete applied from now on
        // masks the merged file as well as the inputs.
        let seq = self.blocks().take_file_seq();
        let mut writer = BlockFileWriter::create(fs.clone(), dir, seq)?;
        let merged = match self.write_merged(&mut writer, &inputs) {
            Ok(merged) => merged,
            Err(e) => {
                let _ = writer.abandon();
                return Err(e);
            }
        };
        report.series_merged = merged.len() as u64;
        let merged_seq = if merged.is_empty() {
            // No live series has blocks there: the manifest drops the files.
            // (An empty file left behind is an orphan opening removes.)
            let _ = writer.abandon();
            None
        } else {
            // Best effort on failure: no manifest lists the file, and
            // opening removes it anyway.
            let remove = |_: &EngineError| {
                let _ = fs.remove(&dir.join(crate::block_file::block_file_name(seq)));
            };
            let meta = writer.finish().inspect_err(remove)?;
            let file = Arc::new(BlockFile::open(fs.clone(), &meta.path).inspect_err(remove)?);
            // (2) Install.
            self.blocks().add_file(seq, file);
            let mut by_series: BTreeMap<SeriesId, Vec<BlockIndexEntry>> = BTreeMap::new();
            for e in meta.entries {
                by_series.entry(e.series).or_default().push(e);
            }
            let items = merged.into_iter().map(|m| {
                let entries = by_series.remove(&m.id).unwrap_or_default();
                (m.id, m.input, entries)
            });
            report.series_kept = self.data().install_compacted(seq, items);
            report.merged_file_bytes = meta.len_bytes;
            Some(seq)
        };

        // Inputs a live series still references (defensive: only a refused
        // install leaves one) stay listed and on disk.
        let referenced = {
            let index = self.index().read();
            self.data().manifest_parts(|id| index.entry(id).is_some()).0
        };
        let dropped: Vec<u64> = inputs.keys().copied().filter(|s| !referenced.contains(s)).collect();
        let planted_early = planted() == CompactionBug::DeleteInputsBeforeManifest;
        if planted_early {
            for s in &dropped {
                fs.remove(inputs[s].path())?;
            }
        }
        // (3) The manifest: `C`'s, with the merged file in place of the inputs.
        let mut manifest = durable;
        manifest.block_files.retain(|s| dropped.binary_search(s).is_err());
        manifest.block_files.extend(merged_seq);
        manifest.next_file_seq = self.blocks().mark().next_file_seq;
        write_manifest(fs.as_ref(), dir, &manifest)?;

        // (4) The inputs, now orphans.
        for f in self.blocks().remove_files(|s| dropped.binary_search(&s).is_err()) {
            if !planted_early {
                fs.remove(f.path())?;
            }
        }
        report.duration_s = started.elapsed().as_secs_f64();
        let c = self.counters();
        c.compactions.fetch_add(1, Relaxed);
        c.compacted_files.fetch_add(report.files_merged, Relaxed);
        c.compacted_input_bytes.fetch_add(report.input_bytes, Relaxed);
        Ok(report)
    }

    /// Appends the merged blocks of every live series with blocks in the
    /// inputs.
    fn write_merged(
        &self,
        writer: &mut BlockFileWriter,
        inputs: &BTreeMap<u64, Arc<BlockFile>>,
    ) -> Result<Vec<Merged>, EngineError> {
        let mut merged = Vec::new();
        for ids in self.data().ids_by_shard() {
            for id in ids {
                if self.index().read().entry(id).is_none() {
                    continue;
                }
                let Some(input) = self.data().compaction_input(id, |s| inputs.contains_key(&s)) else {
                    continue;
                };
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
