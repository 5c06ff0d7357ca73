//! Compaction as a step of its own after a checkpoint (`core/compact.rs`):
//! a checkpoint never merges files; the compaction's manifest is the last
//! checkpoint's with the merged file in place of its inputs (same log
//! position and series index, so a series created since comes back from
//! the log); writers run while files are merged; `compact_all` leaves one
//! file without the overwritten and deleted points.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{point, Harness, LogKind};
use strata_media::fs::RealFs;
use strata_series::manifest::read_manifest;
use strata_series::{CompactionSkip, FieldValue, SeriesEngine, SeriesStore, TimeRange};

fn write(e: &SeriesEngine, host: &str, points: &[(i64, f64)]) {
    let batch: Vec<_> =
        points.iter().map(|(t, v)| point("m", host, vec![("v", FieldValue::Float(*v))], *t)).collect();
    e.write("db", &batch).unwrap();
}

fn read_host(e: &SeriesEngine, host: &str) -> BTreeMap<i64, f64> {
    let series: Vec<_> = e.series("db", "m").unwrap().into_iter().filter(|s| s.tags[0].1 == host).collect();
    let ids: Vec<_> = series.iter().map(|s| s.id).collect();
    let mut out = BTreeMap::new();
    for points in e.read("db", &ids, TimeRange::ALL).unwrap() {
        for (t, v) in points {
            let FieldValue::Float(v) = v else { panic!("not a float: {v:?}") };
            out.insert(t, v);
        }
    }
    out
}

fn manifest(h: &Harness) -> strata_series::manifest::Manifest {
    read_manifest(&RealFs::new(), &h.dir.path().join("series")).unwrap().expect("a manifest")
}

#[test]
fn a_checkpoint_never_merges_files_and_the_compaction_manifest_keeps_its_log_position() {
    for kind in [LogKind::SerialSsd, LogKind::SerialPmem, LogKind::DeclogPmem] {
        let mut h = Harness::with_compaction(kind, 2);
        let e = h.engine().clone();
        for round in 0..4i64 {
            write(&e, "a", &[(round * 10, round as f64), (0, -(round as f64))]);
            e.checkpoint().unwrap();
        }
        assert!(e.stats().block_files >= 4, "{kind:?}: checkpoints alone do not merge");
        let ckpt = manifest(&h);
        // A series and a write the checkpoint does not hold.
        write(&e, "new", &[(5, 5.0)]);
        write(&e, "a", &[(1000, 1.0)]);
        let report = e.compact().unwrap();
        assert!(report.files_merged >= 3, "{kind:?}: {report:?}");
        assert!(e.stats().block_files <= 2, "{kind:?}");
        let after = manifest(&h);
        assert_eq!(after.checkpoint_seq, ckpt.checkpoint_seq, "{kind:?}");
        assert_eq!(after.checkpoint_lsn, ckpt.checkpoint_lsn, "{kind:?}");
        assert_eq!(after.declog_cut, ckpt.declog_cut, "{kind:?}");
        assert_eq!(after.series, ckpt.series, "{kind:?}: the checkpoint's index, the new series not in it");
        assert_eq!(after.next_series_id, ckpt.next_series_id, "{kind:?}");
        let merged = *after.block_files.last().unwrap();
        assert!(merged >= ckpt.next_file_seq && after.next_file_seq > merged, "{kind:?}: {after:?}");
        assert!(ckpt.block_files.iter().all(|s| !after.block_files.contains(s) || *s < merged));
        let expected_a: BTreeMap<i64, f64> =
            [(0, -3.0), (10, 1.0), (20, 2.0), (30, 3.0), (1000, 1.0)].into_iter().collect();
        assert_eq!(read_host(&e, "a"), expected_a, "{kind:?}: live");
        drop(e);
        h.crash_restart();
        let e = h.engine();
        assert_eq!(read_host(e, "a"), expected_a, "{kind:?}: after a restart");
        assert_eq!(
            read_host(e, "new"),
            [(5, 5.0)].into_iter().collect(),
            "{kind:?}: the new series, from the log"
        );
        assert_eq!(e.compact().unwrap().skipped, Some(CompactionSkip::NothingToMerge), "{kind:?}");
    }
}

#[test]
fn compact_all_leaves_one_file_without_overwritten_or_deleted_points() {
    let mut h = Harness::with_compaction(LogKind::SerialSsd, 16);
    let e = h.engine().clone();
    let mut model = BTreeMap::new();
    for round in 0..6i64 {
        // The same 100 points overwritten every round.
        let pts: Vec<(i64, f64)> = (0..100).map(|i| (i * 10, (round * 1000 + i) as f64)).collect();
        write(&e, "a", &pts);
        model.extend(pts);
        e.checkpoint().unwrap();
    }
    let ids: Vec<_> = e.series("db", "m").unwrap().iter().map(|s| s.id).collect();
    e.delete("db", &ids, TimeRange { min_ns: 0, max_ns: 495 }).unwrap();
    model.retain(|t, _| *t > 495);
    assert_eq!(e.compact().unwrap().skipped, Some(CompactionSkip::NothingToMerge), "below the threshold");
    let before = e.stats().block_file_bytes;
    let report = e.compact_all().unwrap();
    assert_eq!(report.files_merged, 6, "{report:?}");
    let stats = e.stats();
    assert_eq!(stats.block_files, 1);
    assert!(stats.block_file_bytes * 4 < before, "{} bytes after, {before} before", stats.block_file_bytes);
    assert_eq!(stats.compactions, 1);
    assert!(manifest(&h).tombstones.is_empty() || manifest(&h).tombstones.len() == 1);
    assert_eq!(read_host(&e, "a"), model, "live");
    drop(e);
    h.crash_restart();
    assert_eq!(read_host(h.engine(), "a"), model, "after a restart");
    let again = h.engine().compact_all().unwrap();
    assert_eq!(again.skipped, Some(CompactionSkip::NothingToMerge), "one file, nothing masked: {again:?}");
    // A delete of sealed points of the lone file: a full compaction rewrites it.
    let e = h.engine().clone();
    let ids: Vec<_> = e.series("db", "m").unwrap().iter().map(|s| s.id).collect();
    e.delete("db", &ids, TimeRange { min_ns: 600, max_ns: 700 }).unwrap();
    model.retain(|t, _| !(600..=700).contains(t));
    let again = e.compact_all().unwrap();
    assert_eq!(again.files_merged, 1, "a lone file with a tombstone is rewritten: {again:?}");
    assert!(again.merged_file_bytes < again.input_bytes, "{again:?}");
    assert_eq!(read_host(&e, "a"), model, "after the second full compaction");
    drop(e);
    h.crash_restart();
    assert_eq!(read_host(h.engine(), "a"), model, "after another restart");
}

/// Writers are not held back by a compaction: one thread writes (new
/// points, overwrites, deletes under DecLog too) while another checkpoints
/// and compacts in a loop; every write lands, live and after a restart.
#[test]
fn writes_and_deletes_go_on_while_files_are_merged() {
    for kind in [LogKind::SerialSsd, LogKind::DeclogPmem] {
        let mut h = Harness::with_compaction(kind, 2);
        let e = h.engine().clone();
        let stop = Arc::new(AtomicBool::new(false));
        let maintainer = {
            let (e, stop) = (e.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut merged = 0;
                while !stop.load(Ordering::Relaxed) {
                    e.checkpoint().unwrap();
                    merged += e.compact().unwrap().files_merged;
                }
                merged
            })
        };
        let mut model = BTreeMap::new();
        let ids =
            |e: &SeriesEngine| -> Vec<_> { e.series("db", "m").unwrap().iter().map(|s| s.id).collect() };
        for i in 0..400i64 {
            let (t, v) = if i % 3 == 0 { ((i / 2) * 10, -(i as f64)) } else { (i * 10, i as f64) };
            write(&e, "a", &[(t, v)]);
            model.insert(t, v);
            if i % 50 == 49 {
                let range = TimeRange { min_ns: i * 5, max_ns: i * 5 + 40 };
                e.delete("db", &ids(&e), range).unwrap();
                model.retain(|t, _| !range.contains(*t));
            }
        }
        stop.store(true, Ordering::Relaxed);
        let merged = maintainer.join().expect("the maintainer failed");
        assert!(merged > 0, "{kind:?}: compactions ran beside the writer");
        assert_eq!(read_host(&e, "a"), model, "{kind:?}: live");
        drop(e);
        h.crash_restart();
        assert_eq!(read_host(h.engine(), "a"), model, "{kind:?}: after a restart");
    }
}
