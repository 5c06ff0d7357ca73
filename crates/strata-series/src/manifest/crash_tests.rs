//! Crash tests of the manifest on `FaultFs` (DESIGN.md section 3, SSD):
//! writing manifests one after another and crashing at every operation, with
//! every image the model allows, `read_manifest` returns exactly one of the
//! manifests written so far (or none before the first), never one older
//! than the last acknowledged write. Likewise with a failure injected at
//! every operation.

use std::path::PathBuf;

use strata_media::fs::{FailMode, FaultFs, FileSystem, Tear};

use super::tests::sample;
use super::*;

fn fresh_fs(tear_seed: u64) -> (FaultFs, PathBuf) {
    let fs = FaultFs::with_tear_seed(tear_seed);
    let dir = PathBuf::from("data");
    fs.create_dir_all(&dir).unwrap();
    (fs, dir)
}

/// Which of `written` `found` is (`0` = none, `k` = `written[k - 1]`);
/// panics if it is none of them.
fn version_of(found: &Option<Manifest>, written: &[Manifest], context: &str) -> usize {
    match found {
        None => 0,
        Some(m) => {
            written.iter().position(|w| w == m).unwrap_or_else(|| panic!("{context}: unknown manifest {m:?}"))
                + 1
        }
    }
}

#[test]
fn crash_at_every_point_reads_old_or_new_manifest() {
    for seed in 0..4u64 {
        let (fault, dir) = fresh_fs(seed);
        // Growing manifests, so a torn image of a longer one is different.
        let written: Vec<Manifest> = (1..=3).map(|n| sample(n + seed)).collect();
        fault.capture_crash_points(true);
        let mut acked_at_op = Vec::new();
        for m in &written {
            write_manifest(&fault, &dir, m).unwrap();
            acked_at_op.push(fault.last_mutation_op());
        }
        fault.capture_crash_points(false);
        let points = fault.crash_points();
        let mut seen = [false; 4];
        for (index, point) in points.iter().enumerate() {
            let acked = acked_at_op.iter().filter(|&&op| op <= point.op()).count();
            for image in 0..point.image_count() {
                let context = format!("seed {seed} point {index} (op {}) image {image}", point.op());
                let crashed = point.image(image);
                let found = read_manifest(&crashed, &dir)
                    .unwrap_or_else(|err| panic!("{context}: read_manifest failed: {err}"));
                let version = version_of(&found, &written, &context);
                assert!(version >= acked, "{context}: read version {version}, {acked} acknowledged");
                seen[version] = true;
            }
        }
        assert_eq!(seen, [true; 4], "seed {seed}: every version is observed at some crash point");
    }
}

#[test]
fn failure_at_every_operation_reads_old_or_new_manifest() {
    let (old, new) = (sample(1), sample(4));
    let ops_per_write = {
        let (fault, dir) = fresh_fs(0);
        write_manifest(&fault, &dir, &old).unwrap();
        let before = fault.ops();
        write_manifest(&fault, &dir, &new).unwrap();
        fault.ops() - before
    };
    assert!(ops_per_write >= 5, "create, write, sync, rename, sync_dir");
    for n in 1..=ops_per_write {
        let (fault, dir) = fresh_fs(n);
        write_manifest(&fault, &dir, &old).unwrap();
        fault.fail_at(fault.ops() + n, FailMode::Once);
        let result = write_manifest(&fault, &dir, &new);
        let context = format!("failure at op {n} of the write");
        assert!(result.is_err(), "{context}: the failure surfaces");
        let now = read_manifest(&fault, &dir).unwrap();
        assert!(now == Some(old.clone()) || now == Some(new.clone()), "{context}: {now:?}");
        for tear in [Tear::None, Tear::LastSector { seed: n }] {
            let crashed = fault.crash(tear);
            let after = read_manifest(&crashed, &dir).unwrap();
            assert!(
                after == Some(old.clone()) || after == Some(new.clone()),
                "{context}, crash {tear:?}: {after:?}"
            );
        }
        // A retry after the failure succeeds and is durable.
        write_manifest(&fault, &dir, &new).unwrap();
        assert_eq!(
            read_manifest(&fault.crash(Tear::None), &dir).unwrap(),
            Some(new.clone()),
            "{context}: retry"
        );
    }
}
