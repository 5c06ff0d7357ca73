//! Opening a series engine, phases 1 and 2 (every protocol's): load the
//! manifest (the persistent series index), open the block files it lists
//! (removing files an unfinished checkpoint left), and load the tombstones.
//! The protocol's log replay (phase 3) follows, in `crate::protocol`.

use std::sync::Arc;
use std::time::Instant;

use super::blocks::CheckpointMark;
use super::SeriesCore;
use crate::block_file::{parse_block_file_name, BlockFile};
use crate::error::EngineError;
use crate::index::SeriesIndex;
use crate::manifest::{read_manifest, Manifest};
use crate::model::TimeRange;
use crate::options::EngineOptions;
use crate::recovery::{RecoveryPhase, RecoveryReport};
use crate::series_data::{SealedBlock, Tombstone};

impl SeriesCore {
    /// Phases 1 (manifest and series index) and 2 (block files and
    /// tombstones): the core with its checkpointed state, and the manifest.
    pub fn load(
        opts: EngineOptions,
        report: &mut RecoveryReport,
        progress: &dyn Fn(RecoveryPhase, u64, u64),
    ) -> Result<(SeriesCore, Option<Manifest>), EngineError> {
        let started = Instant::now();
        opts.fs.create_dir_all(&opts.dir)?;

        // Phase 1: the manifest and the series index.
        progress(RecoveryPhase::Manifest, 0, 1);
        let manifest = read_manifest(opts.fs.as_ref(), &opts.dir)?;
        let mut index = SeriesIndex::new(0);
        if let Some(m) = &manifest {
            report.manifest_found = true;
            report.checkpoint_seq = m.checkpoint_seq;
            report.checkpoint_lsn = m.checkpoint_lsn;
            for db in &m.databases {
                index.create_database(db);
            }
            for s in &m.series {
                index.insert(&s.db, s.id, s.key.clone(), s.field_type);
            }
            index = SeriesIndex::max_next_id(index, m.next_series_id);
        }
        let core = SeriesCore::new(opts, index);
        if let Some(m) = &manifest {
            core.blocks().set_mark(CheckpointMark {
                checkpoint_seq: m.checkpoint_seq,
                checkpoint_lsn: strata_log::Lsn(m.checkpoint_lsn),
                next_file_seq: m.next_file_seq,
            });
        }
        report.manifest_s = started.elapsed().as_secs_f64();
        progress(RecoveryPhase::Manifest, 1, 1);

        // Phase 2: block files and tombstones.
        let t = Instant::now();
        let opts = core.options();
        let listed: Vec<u64> = manifest.as_ref().map(|m| m.block_files.clone()).unwrap_or_default();
        for name in opts.fs.list_dir(&opts.dir)? {
            let Some(seq) = name.file_name().and_then(|n| n.to_str()).and_then(parse_block_file_name) else {
                continue;
            };
            if listed.binary_search(&seq).is_err() {
                opts.fs.remove(&name)?;
                report.orphan_files_removed += 1;
            }
        }
        for (i, seq) in listed.iter().enumerate() {
            progress(RecoveryPhase::BlockFiles, i as u64, listed.len() as u64);
            let path = opts.dir.join(crate::block_file::block_file_name(*seq));
            let file = Arc::new(BlockFile::open(opts.fs.clone(), &path)?);
            {
                let index = core.index().read();
                for entry in file.entries() {
                    let Some(e) = index.entry(entry.series) else { continue };
                    core.data().load_sealed(
                        entry.series,
                        e.field_type,
                        SealedBlock { file_seq: *seq, entry: entry.clone() },
                    );
                    report.sealed_blocks += 1;
                }
            }
            core.blocks().add_file(*seq, file);
        }
        if let Some(m) = &manifest {
            let index = core.index().read();
            for t in &m.tombstones {
                let Some(e) = index.entry(t.series) else { continue };
                let range = TimeRange { min_ns: t.min_ts, max_ns: t.max_ts };
                core.data().load_tombstone(
                    t.series,
                    e.field_type,
                    Tombstone { range, upto_file_seq: t.upto_file_seq },
                );
                report.tombstones += 1;
            }
        }
        report.block_files = listed.len();
        report.block_files_s = t.elapsed().as_secs_f64();
        progress(RecoveryPhase::BlockFiles, listed.len() as u64, listed.len() as u64);
        Ok((core, manifest))
    }
}
