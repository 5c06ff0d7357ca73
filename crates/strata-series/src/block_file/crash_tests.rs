//! Crash tests of block files on `FaultFs` (DESIGN.md section 3, SSD): a
//! crash at every operation of a write, with every image the model allows,
//! leaves the file absent, rejected as corrupt, or complete; once `finish`
//! has returned, always complete. Likewise with a failure injected at every
//! operation.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_media::fs::{FailMode, FaultFs, FileSystem, Tear};

use super::tests::{random_blocks, write_blocks, TestBlock};
use super::*;
use crate::error::EngineError;

#[derive(Debug, Default)]
struct Outcomes {
    absent: u64,
    corrupt_at_open: u64,
    corrupt_block: u64,
    complete: u64,
}

/// Opens `path` on `fs` and classifies it. Panics if the file returns data
/// other than `blocks`, or if it is not complete although `acknowledged`.
fn classify(
    fs: Arc<dyn FileSystem>,
    path: &Path,
    meta: &BlockFileMeta,
    blocks: &[TestBlock],
    acknowledged: bool,
    context: &str,
    out: &mut Outcomes,
) {
    let file = match BlockFile::open(fs, path) {
        Ok(file) => file,
        Err(EngineError::Io(err)) if err.kind() == std::io::ErrorKind::NotFound => {
            assert!(!acknowledged, "{context}: file missing after finish returned");
            out.absent += 1;
            return;
        }
        Err(EngineError::Corruption { .. }) => {
            assert!(!acknowledged, "{context}: file corrupt after finish returned");
            out.corrupt_at_open += 1;
            return;
        }
        Err(other) => panic!("{context}: unexpected error {other}"),
    };
    assert_eq!(file.entries(), meta.entries.as_slice(), "{context}: an opened file has the full index");
    let mut damaged = false;
    for entry in file.entries() {
        match file.read_block(entry) {
            Ok(bytes) => {
                let expected =
                    blocks.iter().any(|b| b.0 == entry.series.0 && b.1 == entry.min_ts && b.4 == bytes);
                assert!(expected, "{context}: wrong bytes for {} at offset {}", entry.series, entry.offset);
            }
            Err(EngineError::Corruption { .. }) => {
                assert!(!acknowledged, "{context}: damaged block after finish returned");
                damaged = true;
            }
            Err(other) => panic!("{context}: unexpected error {other}"),
        }
    }
    if damaged {
        out.corrupt_block += 1;
    } else {
        out.complete += 1;
    }
}

fn fresh_fs(tear_seed: u64) -> (FaultFs, PathBuf) {
    let fs = FaultFs::with_tear_seed(tear_seed);
    let dir = PathBuf::from("data");
    fs.create_dir_all(&dir).unwrap();
    (fs, dir)
}

fn crash_everywhere(seed: u64, blocks: &[TestBlock]) -> Outcomes {
    let (fault, dir) = fresh_fs(seed);
    let fs: Arc<dyn FileSystem> = Arc::new(fault.clone());
    fault.capture_crash_points(true);
    let meta = write_blocks(&fs, &dir, 1, blocks).unwrap();
    let finished_op = fault.last_mutation_op();
    fault.capture_crash_points(false);
    let mut out = Outcomes::default();
    let points = fault.crash_points();
    assert!(points.len() >= 3, "create, write, sync, sync_dir at least");
    for (index, point) in points.iter().enumerate() {
        for image in 0..point.image_count() {
            let context = format!("seed {seed} point {index} (op {}) image {image}", point.op());
            let acknowledged = point.op() >= finished_op;
            classify(
                Arc::new(point.image(image)),
                &meta.path,
                &meta,
                blocks,
                acknowledged,
                &context,
                &mut out,
            );
        }
    }
    out
}

#[test]
fn crash_at_every_point_leaves_absent_corrupt_or_complete_file() {
    let mut total = Outcomes::default();
    for seed in 0..4u64 {
        // Small (one write) and large (several WRITE_CHUNK_BYTES writes) files.
        for blocks in [random_blocks(seed, 12, 200), random_blocks(seed, 40, 70_000)] {
            let out = crash_everywhere(seed, &blocks);
            assert!(out.complete > 0, "seed {seed}: the last crash point keeps the file");
            total.absent += out.absent;
            total.corrupt_at_open += out.corrupt_at_open;
            total.corrupt_block += out.corrupt_block;
            total.complete += out.complete;
        }
    }
    assert!(total.absent > 0, "some images lose the file: {total:?}");
    assert!(total.corrupt_at_open > 0, "some images keep a partial file: {total:?}");
}

#[test]
fn failure_at_every_operation_never_yields_wrong_data() {
    let blocks = random_blocks(21, 30, 90_000);
    let clean_ops = {
        let (fault, dir) = fresh_fs(0);
        let fs: Arc<dyn FileSystem> = Arc::new(fault.clone());
        write_blocks(&fs, &dir, 1, &blocks).unwrap();
        fault.ops()
    };
    let reference = {
        let (fault, dir) = fresh_fs(0);
        write_blocks(&(Arc::new(fault) as Arc<dyn FileSystem>), &dir, 1, &blocks).unwrap()
    };
    let mut failed_runs = 0;
    for fail_op in 1..=clean_ops {
        let (fault, dir) = fresh_fs(fail_op);
        fault.fail_at(fail_op, FailMode::Once);
        let fs: Arc<dyn FileSystem> = Arc::new(fault.clone());
        let result = write_blocks(&fs, &dir, 1, &blocks);
        failed_runs += u64::from(result.is_err());
        let acknowledged = result.is_ok();
        let mut out = Outcomes::default();
        let context = format!("failure at op {fail_op}");
        classify(fs, &reference.path, &reference, &blocks, acknowledged, &context, &mut out);
        for tear in [Tear::None, Tear::LastSector { seed: fail_op }] {
            let crashed: Arc<dyn FileSystem> = Arc::new(fault.crash(tear));
            let context = format!("failure at op {fail_op}, then crash {tear:?}");
            classify(crashed, &reference.path, &reference, &blocks, acknowledged, &context, &mut out);
        }
    }
    assert_eq!(failed_runs, clean_ops, "every injected failure surfaces as an error");
}
