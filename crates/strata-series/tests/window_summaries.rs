//! Window aggregates answered from block summaries (issue 21 item 1):
//! a property test that, on random writes with overwrites, out-of-order
//! points, range deletes and checkpoints (with compactions) in between,
//! `SeriesStore::window_aggregates` equals folding the points `read`
//! returns, for several windows and ranges; and a scenario showing that a
//! block inside a window is not read at all.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::{Harness, LogKind};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_media::fs::RealFs;
use strata_series::block_file::BlockFile;
use strata_series::window_agg::fold_points;
use strata_series::{FieldValue, Point, SeriesId, SeriesStore, TimeRange, WindowSpec};

/// Blocks are cut at spans of this many nanoseconds in the property test.
const SPAN_NS: i64 = 40;

/// Windows the property checks: ones the span divides (answered from
/// summaries), ones it does not, offsets, and none.
const WINDOWS: [Option<(i64, i64)>; 6] =
    [None, Some((20, 0)), Some((40, 0)), Some((40, 7)), Some((80, 0)), Some((30, 0))];

/// A value of field `f`: quarters (float sums stay exact, so a summed
/// block's sum equals the point-by-point one), integers and unsigned.
fn value(rng: &mut ChaCha8Rng, field: usize) -> FieldValue {
    match field {
        0 => FieldValue::Float(f64::from(rng.gen_range(-400i32..400)) / 4.0),
        1 => FieldValue::Integer(rng.gen_range(-1_000_000..1_000_000)),
        _ => FieldValue::Unsigned(rng.gen_range(0..1_000_000)),
    }
}

fn random_point(rng: &mut ChaCha8Rng) -> Point {
    let mut fields = Vec::new();
    for f in 0..3 {
        if rng.gen_bool(0.7) {
            fields.push((["f", "i", "u"][f].to_string(), value(rng, f)));
        }
    }
    let fields = if fields.is_empty() { vec![("f".to_string(), value(rng, 0))] } else { fields };
    Point {
        measurement: "cpu".into(),
        tags: vec![("host".into(), ["a", "b"][rng.gen_range(0..2)].into())],
        fields,
        timestamp_ns: rng.gen_range(0..400),
    }
}

/// Every series id of the test's measurement.
fn all_ids(store: &dyn SeriesStore) -> Vec<SeriesId> {
    store.series("db", "cpu").map(|s| s.iter().map(|x| x.id).collect()).unwrap_or_default()
}

/// Compares the engine's window aggregates with the fold of its points for
/// every window of [`WINDOWS`] over the whole range and `range`.
fn check_windows(
    store: &dyn SeriesStore,
    range: TimeRange,
    seed: u64,
    step: usize,
) -> Result<(), TestCaseError> {
    let ids = all_ids(store);
    for r in [TimeRange::ALL, TimeRange { min_ns: 0, max_ns: 399 }, range] {
        let points = store.read("db", &ids, r).unwrap();
        for w in WINDOWS {
            let window = w.map(|(every_ns, offset_ns)| WindowSpec { every_ns, offset_ns });
            let got = store.window_aggregates("db", &ids, r, window).unwrap();
            let want: Vec<_> = points.iter().map(|p| fold_points(p, r, window)).collect();
            prop_assert_eq!(got, want, "seed {} step {} range {:?} window {:?}", seed, step, r, window);
        }
        // A pruned read keeps every point that passes.
        for threshold in [-50.0, 0.0, 60.0] {
            let passes = |v: &FieldValue| match v {
                FieldValue::Float(x) => *x > threshold,
                FieldValue::Integer(x) => *x as f64 > threshold,
                FieldValue::Unsigned(x) => *x as f64 > threshold,
                _ => true,
            };
            let may_pass = |_: usize, _: &FieldValue, max: &FieldValue| passes(max);
            let pruned = store.read_pruned("db", &ids, r, &may_pass).unwrap();
            let keep = |series: &Vec<(i64, FieldValue)>| -> Vec<(i64, FieldValue)> {
                series.iter().filter(|(_, v)| passes(v)).cloned().collect()
            };
            let (got, want): (Vec<_>, Vec<_>) =
                (pruned.iter().map(keep).collect(), points.iter().map(keep).collect());
            prop_assert_eq!(
                got,
                want,
                "seed {} step {} range {:?} pruned above {}",
                seed,
                step,
                r,
                threshold
            );
        }
    }
    Ok(())
}

/// How many index entries of the engine's block files have a summary.
fn summarized_entries(h: &Harness) -> usize {
    let dir = h.dir.path().join("series");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "blk") {
            if let Ok(file) = BlockFile::open(Arc::new(RealFs::new()), &path) {
                n += file.entries().iter().filter(|e| e.summary.is_some()).count();
            }
        }
    }
    n
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

    /// The steps come from `seed` (printed with every failure).
    #[test]
    fn summary_answered_windows_equal_decoded_ones(seed in any::<u64>()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let h = Harness::with_options(LogKind::None, 3, Some(SPAN_NS));
        let store: &dyn SeriesStore = h.engine().as_ref();
        let mut checkpoints = 0;
        for step in 0..30 {
            match rng.gen_range(0..10) {
                0..=5 => {
                    let points: Vec<Point> = (0..rng.gen_range(1..12)).map(|_| random_point(&mut rng)).collect();
                    store.write("db", &points).unwrap();
                }
                6 => {
                    let min_ns = rng.gen_range(0..400);
                    let range = TimeRange { min_ns, max_ns: min_ns + rng.gen_range(0..60) };
                    let ids = all_ids(store);
                    let some: Vec<SeriesId> = ids.into_iter().filter(|_| rng.gen_bool(0.6)).collect();
                    store.delete("db", &some, range).unwrap();
                }
                _ => {
                    h.engine().checkpoint().unwrap();
                    checkpoints += 1;
                }
            }
            let min_ns = rng.gen_range(-10..400);
            let range = TimeRange { min_ns, max_ns: min_ns + rng.gen_range(0..200) };
            check_windows(store, range, seed, step)?;
        }
        h.engine().checkpoint().unwrap();
        check_windows(store, TimeRange::ALL, seed, 30)?;
        let sealed = !all_ids(store).is_empty();
        prop_assert!(!sealed || summarized_entries(&h) > 0, "seed {}: {} checkpoints wrote no summary", seed, checkpoints);
    }
}

/// A block wholly inside a window is answered from its summary: after its
/// bytes are damaged, `read` fails on it but `window_aggregates` by hour
/// still answers, the same as before the damage.
#[test]
fn a_block_inside_a_window_is_not_read() {
    let h = Harness::with_options(LogKind::None, 16, Some(3_600_000_000_000));
    let store: &dyn SeriesStore = h.engine().as_ref();
    let hour = 3_600_000_000_000i64;
    let points: Vec<Point> = (0..720)
        .map(|i| {
            common::point("cpu", "a", vec![("f", FieldValue::Float((i % 50) as f64))], i * 10_000_000_000)
        })
        .collect();
    store.write("db", &points).unwrap();
    h.engine().checkpoint().unwrap();
    let ids = all_ids(store);
    let range = TimeRange { min_ns: 0, max_ns: 2 * hour - 1 };
    let window = Some(WindowSpec { every_ns: hour, offset_ns: 0 });
    let before = store.window_aggregates("db", &ids, range, window).unwrap();
    assert_eq!(before[0].len(), 2, "two hours");
    assert_eq!(before[0][0].count, 360);
    assert_eq!(before[0][0].sum, Some(FieldValue::Float((0..360).map(|i| f64::from(i % 50)).sum())));

    // Damage the first block's first byte (the data area starts at 32).
    let files: BTreeSet<_> = std::fs::read_dir(h.dir.path().join("series"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "blk"))
        .collect();
    assert_eq!(files.len(), 1);
    let path = files.into_iter().next().unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[32] ^= 0xFF;
    std::fs::write(&path, bytes).unwrap();

    assert!(store.read("db", &ids, range).is_err(), "reading the damaged block fails its CRC");
    let after = store.window_aggregates("db", &ids, range, window).unwrap();
    assert_eq!(after, before, "the summaries answered without reading a block");
    // A window the blocks do not lie inside must read them.
    let half_day = Some(WindowSpec { every_ns: 2 * hour, offset_ns: hour / 2 });
    assert!(store.window_aggregates("db", &ids, range, half_day).is_err());
}

/// A block none of whose values passes a caller's condition is not read by
/// a pruned read: after its bytes are damaged, `read` fails on it but
/// `read_pruned` returns the other block's points.
#[test]
fn a_block_no_value_of_which_passes_is_not_read() {
    let h = Harness::with_options(LogKind::None, 16, Some(3_600_000_000_000));
    let store: &dyn SeriesStore = h.engine().as_ref();
    // Hour 0: values below 50; hour 1: from 100 on.
    let value = |i: i64| if i < 360 { (i % 50) as f64 } else { 100.0 + (i % 50) as f64 };
    let points: Vec<Point> = (0..720)
        .map(|i| common::point("cpu", "a", vec![("f", FieldValue::Float(value(i)))], i * 10_000_000_000))
        .collect();
    store.write("db", &points).unwrap();
    h.engine().checkpoint().unwrap();
    let ids = all_ids(store);
    let path = std::fs::read_dir(h.dir.path().join("series"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "blk"))
        .unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[32] ^= 0xFF; // the first block: hour 0
    std::fs::write(&path, bytes).unwrap();

    assert!(store.read("db", &ids, TimeRange::ALL).is_err(), "the damaged block fails its CRC");
    let above_60 = |_: usize, _: &FieldValue, max: &FieldValue| max.as_f64().is_some_and(|m| m > 60.0);
    let got = store.read_pruned("db", &ids, TimeRange::ALL, &above_60).unwrap();
    assert_eq!(got[0].len(), 360, "hour 1 only");
    assert!(got[0].iter().all(|(t, _)| *t >= 3_600_000_000_000));
    let any = |_: usize, _: &FieldValue, _: &FieldValue| true;
    assert!(
        store.read_pruned("db", &ids, TimeRange::ALL, &any).is_err(),
        "nothing pruned, the block is read"
    );
}

/// Block files of format version 1 (no summaries) still serve: an engine
/// whose file is rewritten as version 1 reopens, reads and aggregates the
/// same (decoding), and a compaction rewrites its blocks with summaries.
#[test]
fn version_1_block_files_are_read_and_compacted_into_summaries() {
    use strata_series::block_file::{encode_block_file_version, BlockSpec};
    let span = 3_600_000_000_000i64;
    let mut h = Harness::with_options(LogKind::None, 1, Some(span));
    let points: Vec<Point> = (0..720)
        .map(|i| common::point("cpu", "a", vec![("f", FieldValue::Integer(i % 7))], i * 10_000_000_000))
        .collect();
    h.engine().write("db", &points).unwrap();
    h.engine().checkpoint().unwrap();
    let ids = all_ids(h.engine().as_ref());
    let window = Some(WindowSpec { every_ns: span, offset_ns: 0 });
    let before = h.engine().window_aggregates("db", &ids, TimeRange::ALL, window).unwrap();
    let summarized = summarized_entries(&h);
    assert_eq!(summarized, 2, "two hours, two summarized blocks");

    // Rewrite the one block file as version 1.
    let path = std::fs::read_dir(h.dir.path().join("series"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "blk"))
        .unwrap();
    let image = std::fs::read(&path).unwrap();
    let parsed = BlockFile::parse_image(&image).unwrap();
    let specs: Vec<BlockSpec<'_>> =
        parsed.block_specs(&image).into_iter().map(|b| BlockSpec { summary: None, ..b }).collect();
    std::fs::write(&path, encode_block_file_version(1, parsed.seq, &specs).unwrap()).unwrap();
    h.crash_restart();
    assert_eq!(summarized_entries(&h), 0, "the file is version 1 now");
    let store: &dyn SeriesStore = h.engine().as_ref();
    let read = store.read("db", &ids, TimeRange::ALL).unwrap();
    assert_eq!(read[0].len(), 720, "version-1 blocks read");
    assert_eq!(store.window_aggregates("db", &ids, TimeRange::ALL, window).unwrap(), before);

    // A second file makes the compaction after the checkpoint merge (above
    // 1 file): the merged blocks get summaries again.
    store.write("db", &[common::point("cpu", "b", vec![("f", FieldValue::Integer(1))], 0)]).unwrap();
    h.engine().checkpoint().unwrap();
    assert_eq!(h.engine().compact().unwrap().files_merged, 2);
    assert_eq!(summarized_entries(&h), 3, "the two merged blocks and the new one");
    let ids_a = &ids[..1];
    assert_eq!(h.engine().window_aggregates("db", ids_a, TimeRange::ALL, window).unwrap(), before);
}
