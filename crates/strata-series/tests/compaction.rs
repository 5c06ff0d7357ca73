//! Block-file compaction under every commit protocol (`core/compact.rs`):
//! many checkpoints of steady ingest with overwrites, range deletes and a
//! dropped series, each followed by a compaction, keep the live block files
//! at or below the threshold, and every point reads back as a model says,
//! live and after restarts (some right after a compaction, whose manifest
//! keeps the checkpoint's log position: writes made between the checkpoint
//! and the compaction come back from the log); reads running while files
//! are merged see every point; writes and deletes go on during a merge.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use common::{point, Harness, LogKind, ALL_LOGS};
use rand::{Rng, SeedableRng};
use strata_series::{FieldValue, SeriesEngine, SeriesStore, TimeRange};

const ABOVE_FILES: usize = 4;
const HOSTS: [&str; 3] = ["a", "b", "c"];

/// Every host's points of measurement `m`, field `v`.
fn read_all(e: &SeriesEngine) -> BTreeMap<String, BTreeMap<i64, f64>> {
    let series = e.series("db", "m").unwrap();
    let ids: Vec<_> = series.iter().map(|s| s.id).collect();
    let data = e.read("db", &ids, TimeRange::ALL).unwrap();
    let mut out: BTreeMap<String, BTreeMap<i64, f64>> = BTreeMap::new();
    for (s, points) in series.iter().zip(data) {
        let host = s.tags[0].1.clone();
        for (t, v) in points {
            let FieldValue::Float(v) = v else { panic!("{host}: not a float: {v:?}") };
            out.entry(host.clone()).or_default().insert(t, v);
        }
    }
    out.retain(|_, pts| !pts.is_empty());
    out
}

fn write(e: &SeriesEngine, host: &str, points: &[(i64, f64)]) {
    let batch: Vec<_> =
        points.iter().map(|(t, v)| point("m", host, vec![("v", FieldValue::Float(*v))], *t)).collect();
    e.write("db", &batch).unwrap();
}

fn ids_of(e: &SeriesEngine, host: &str) -> Vec<strata_series::SeriesId> {
    e.series("db", "m").unwrap().iter().filter(|s| s.tags[0].1 == host).map(|s| s.id).collect()
}

/// One protocol's run; returns the block files merged over all checkpoints.
fn steady_ingest(kind: LogKind, seed: u64) -> u64 {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut h = Harness::with_compaction(kind, ABOVE_FILES);
    let mut model: BTreeMap<String, BTreeMap<i64, f64>> = BTreeMap::new();
    let mut merged_files = 0;
    let ctx = |round: u64| format!("{kind:?}, seed {seed}, round {round}");
    for round in 0..48u64 {
        let e = h.engine().clone();
        for host in HOSTS {
            let mut pts: Vec<(i64, f64)> =
                (0..20).map(|i| ((round * 20 + i) as i64 * 10, rng.gen_range(0.0..1e6))).collect();
            if round > 0 {
                // An overwrite of a point sealed earlier, and an out-of-order one.
                let old = rng.gen_range(0..round * 20) as i64 * 10;
                pts.push((old, -1.0 - round as f64));
                pts.push((old + 5, -2.0 - round as f64));
            }
            write(&e, host, &pts);
            model.entry(host.to_string()).or_default().extend(pts);
        }
        if round % 7 == 3 {
            let (lo, hi) = ((round as i64 - 3) * 200, (round as i64 - 1) * 200 + 55);
            e.delete("db", &ids_of(&e, "a"), TimeRange { min_ns: lo, max_ns: hi }).unwrap();
            model.get_mut("a").unwrap().retain(|t, _| !(lo..=hi).contains(t));
        }
        if round == 20 {
            e.drop_series("db", &ids_of(&e, "c")).unwrap();
            model.remove("c");
        }
        e.checkpoint().unwrap();
        if round % 5 == 2 && kind != LogKind::None {
            // Writes and a delete between the checkpoint and the compaction:
            // only the log holds them when it writes its manifest (`none`
            // has no log: a restart loses them).
            write(&e, "b", &[(-(round as i64) - 1, 7.0)]);
            model.entry("b".to_string()).or_default().insert(-(round as i64) - 1, 7.0);
            let (lo, hi) = ((round as i64 - 2) * 200, (round as i64 - 2) * 200 + 30);
            e.delete("db", &ids_of(&e, "b"), TimeRange { min_ns: lo, max_ns: hi }).unwrap();
            model.get_mut("b").unwrap().retain(|t, _| !(lo..=hi).contains(t));
        }
        let report = e.compact().unwrap();
        merged_files += report.files_merged;
        let files = e.stats().block_files;
        assert!(files <= ABOVE_FILES as u64, "{}: {files} block files live", ctx(round));
        assert_eq!(read_all(&e), model, "{}: live reads", ctx(round));
        if round % 12 == 11 || round % 10 == 7 {
            drop(e);
            h.crash_restart();
            let e = h.engine();
            assert_eq!(read_all(e), model, "{}: after a restart", ctx(round));
            let on_disk = std::fs::read_dir(h.dir.path().join("series"))
                .unwrap()
                .filter(|f| f.as_ref().unwrap().file_name().to_string_lossy().starts_with("blocks-"))
                .count() as u64;
            assert_eq!(on_disk, e.stats().block_files, "{}: only the listed files are left", ctx(round));
        }
    }
    merged_files
}

#[test]
fn steady_ingest_keeps_the_block_files_bounded_under_every_protocol() {
    for (i, kind) in ALL_LOGS.into_iter().enumerate() {
        let seed = 0x5eed_0000 + i as u64;
        let merged = steady_ingest(kind, seed);
        assert!(merged >= 40, "{kind:?}, seed {seed}: compaction ran ({merged} files merged)");
    }
}

#[test]
fn reads_during_compacting_checkpoints_see_every_point() {
    let h = Harness::with_compaction(LogKind::SerialSsd, 2);
    let e = h.engine().clone();
    let fixed: Vec<(i64, f64)> = (0..400).map(|t| (t * 7, t as f64)).collect();
    for chunk in fixed.chunks(100) {
        write(&e, "r", chunk);
        e.checkpoint().unwrap();
    }
    let expected: BTreeMap<i64, f64> = fixed.iter().copied().collect();
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (e, stop, reads, expected) = (e.clone(), stop.clone(), reads.clone(), expected.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let got = read_all(&e).remove("r").unwrap_or_default();
                    assert_eq!(got, expected, "a read during compaction");
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let mut merged = 0;
    for round in 0..40i64 {
        write(&e, "w", &[(round, round as f64)]);
        e.checkpoint().unwrap();
        merged += e.compact().unwrap().files_merged;
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().expect("a reader failed");
    }
    assert!(merged > 0, "checkpoints compacted");
    assert!(reads.load(Ordering::Relaxed) > 0, "the readers ran");
    assert!(e.stats().block_files <= 2);
}
