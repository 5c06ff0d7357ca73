//! Crash and failure tests of block-file compaction on the fault-injecting
//! file system (`FaultFs`, the SSD crash model): a compaction after a
//! checkpoint (merged file written and synced, installed, its own manifest
//! renamed, old files deleted) is crashed after every file operation, with
//! every image the model allows, and made to fail at every operation.
//! Between the checkpoint and the compaction a write and a range delete
//! reach only the log: the compaction's manifest keeps the checkpoint's log
//! position, so recovery replays them. Recovery (and the live engine after
//! a failure) must read every acknowledged point, and no point a range
//! delete removed may come back. (The planted bug of a compaction that
//! deletes its inputs too early is caught by strata-crashtest's
//! `series-compaction` line.)

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata_log::ssd_log::SsdLogOptions;
use strata_log::SerialLog;
use strata_media::fs::{FailMode, FaultFs, FileSystem, Tear};
use strata_series::{EngineOptions, FieldValue, Point, RecoveryReport, SeriesEngine, SeriesStore, TimeRange};

const ABOVE_FILES: usize = 2;
const HOSTS: [&str; 2] = ["a", "b"];

type Model = BTreeMap<(String, i64), f64>;

fn open(fs: &FaultFs) -> (Arc<SeriesEngine>, RecoveryReport) {
    let fs: Arc<dyn FileSystem> = Arc::new(fs.clone());
    let (log, recs) = SerialLog::open_ssd(fs.clone(), Path::new("/wal"), SsdLogOptions::default()).unwrap();
    let opts = EngineOptions {
        fs,
        checkpoint_interval: None,
        compact_above_files: ABOVE_FILES,
        ..EngineOptions::new("/series")
    };
    SeriesEngine::open(opts, strata_series::WalOpener::boxed(Box::new(log), recs), &|_, _, _| {}).unwrap()
}

fn write(e: &SeriesEngine, model: &mut Model, host: &str, points: &[(i64, f64)]) {
    let batch: Vec<Point> = points
        .iter()
        .map(|(t, v)| Point {
            measurement: "m".into(),
            tags: vec![("h".into(), host.into())],
            fields: vec![("f".into(), FieldValue::Float(*v))],
            timestamp_ns: *t,
        })
        .collect();
    e.write("db", &batch).unwrap();
    model.extend(points.iter().map(|(t, v)| ((host.to_string(), *t), *v)));
}

fn read_all(e: &SeriesEngine) -> Model {
    let series = e.series("db", "m").unwrap();
    let ids: Vec<_> = series.iter().map(|s| s.id).collect();
    let data = e.read("db", &ids, TimeRange::ALL).unwrap();
    let mut out = Model::new();
    for (s, points) in series.iter().zip(data) {
        for (t, v) in points {
            let FieldValue::Float(v) = v else { panic!("not a float: {v:?}") };
            out.insert((s.tags[0].1.clone(), t), v);
        }
    }
    out
}

/// Two checkpointed files (overwrites across them), then a range delete
/// masking sealed points of host `a` and more writes in DRAM, sealed into a
/// third file by a checkpoint; then a write and a delete of sealed points of
/// host `b` that only the log holds. The next compaction merges the files.
fn prepare(fs: &FaultFs) -> (Arc<SeriesEngine>, Model) {
    let (e, _) = open(fs);
    e.create_database("db").unwrap();
    let mut model = Model::new();
    for round in 0..2i64 {
        for host in HOSTS {
            let pts: Vec<(i64, f64)> =
                (0..8).map(|i| (round * 100 + i * 10, (round * 1000 + i) as f64)).collect();
            write(&e, &mut model, host, &pts);
        }
        if round == 1 {
            // Overwrites of points of the first file, sealed in the second.
            write(&e, &mut model, "b", &[(20, -20.0), (35, -35.0)]);
        }
        e.checkpoint().unwrap();
        assert_eq!(e.compact().unwrap().files_merged, 0, "round {round}: below the threshold");
    }
    let ids: Vec<_> =
        e.series("db", "m").unwrap().iter().filter(|s| s.tags[0].1 == "a").map(|s| s.id).collect();
    let doomed = TimeRange { min_ns: 30, max_ns: 130 };
    e.delete("db", &ids, doomed).unwrap();
    model.retain(|(h, t), _| !(h == "a" && doomed.contains(*t)));
    for host in HOSTS {
        write(&e, &mut model, host, &[(200, 2.0), (210, 2.1), (5, 0.5)]);
    }
    e.checkpoint().unwrap();
    write(&e, &mut model, "a", &[(250, 2.5), (60, 0.6)]);
    let ids: Vec<_> =
        e.series("db", "m").unwrap().iter().filter(|s| s.tags[0].1 == "b").map(|s| s.id).collect();
    let doomed = TimeRange { min_ns: 0, max_ns: 15 };
    e.delete("db", &ids, doomed).unwrap();
    model.retain(|(h, t), _| !(h == "b" && doomed.contains(*t)));
    (e, model)
}

#[test]
fn a_crash_at_every_step_of_a_compaction_loses_and_resurrects_nothing() {
    for seed in 0..3u64 {
        let fs = FaultFs::with_tear_seed(seed);
        let (e, mut model) = prepare(&fs);
        let before = model.clone();
        fs.capture_crash_points(true);
        let report = e.compact().unwrap();
        // One acknowledged write after the checkpoint.
        write(&e, &mut model, "b", &[(300, 3.0)]);
        let acked_at = fs.last_mutation_op();
        fs.capture_crash_points(false);
        assert_eq!(report.files_merged, 3, "seed {seed}: the compaction merged every file");
        assert_eq!(read_all(&e), model, "seed {seed}: live reads after the compaction");
        drop(e);
        let mut files_after_recovery = std::collections::BTreeSet::new();
        let points = fs.crash_points();
        assert!(points.len() >= 8, "seed {seed}: {} crash points", points.len());
        for (index, point) in points.iter().enumerate() {
            for image in 0..point.image_count() {
                let ctx = format!("seed {seed}, crash point {index} (op {}), image {image}", point.op());
                let (e, report) = open(&point.image(image));
                let got = read_all(&e);
                let expected = if point.op() >= acked_at { &model } else { &before };
                // The write after the checkpoint may survive unacknowledged.
                let mut got_acked = got.clone();
                if point.op() < acked_at {
                    got_acked.remove(&("b".to_string(), 300));
                }
                assert_eq!(&got_acked, expected, "{ctx}: recovered points");
                let stats = e.stats();
                files_after_recovery.insert((stats.block_files, report.orphan_files_removed > 0));
                // Nothing left but what the manifest lists.
                let image_fs = point.image(image);
                let on_disk = image_fs
                    .list_dir(Path::new("/series"))
                    .unwrap()
                    .iter()
                    .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("blocks-"))
                    .count() as u64;
                assert!(on_disk >= stats.block_files, "{ctx}: listed files exist");
            }
        }
        // Crashes before the manifest (old files, an orphan removed) and
        // after it (the merged file alone) were both seen.
        assert!(
            files_after_recovery.iter().any(|(n, _)| *n >= 2),
            "seed {seed}: recovered with the old files: {files_after_recovery:?}"
        );
        assert!(
            files_after_recovery.contains(&(1, true)) || files_after_recovery.contains(&(1, false)),
            "seed {seed}: recovered with the merged file: {files_after_recovery:?}"
        );
        assert!(
            files_after_recovery.iter().any(|(_, orphans)| *orphans),
            "seed {seed}: some recovery removed orphan files: {files_after_recovery:?}"
        );
    }
}

#[test]
fn a_compaction_failing_at_any_file_operation_loses_nothing() {
    let ops = {
        let fs = FaultFs::new();
        let (e, _) = prepare(&fs);
        let before = fs.ops();
        assert_eq!(e.compact().unwrap().files_merged, 3);
        fs.ops() - before
    };
    assert!(ops >= 10, "the compaction does file operations: {ops}");
    let mut failures_seen = 0;
    for k in 0..ops {
        let ctx = format!("failure at op +{k} of {ops}");
        let fs = FaultFs::new();
        let (e, mut model) = prepare(&fs);
        fs.fail_at(fs.ops() + k, FailMode::Once);
        failures_seen += u32::from(e.compact().is_err());
        fs.clear_faults();
        if e.writes_stopped().is_some() {
            drop(e);
            let (e, _) = open(&fs.crash(Tear::None));
            assert_eq!(read_all(&e), model, "{ctx}: recovery after a poisoned log");
            continue;
        }
        assert_eq!(read_all(&e), model, "{ctx}: live reads after the failure");
        write(&e, &mut model, "a", &[(400, 4.0)]);
        e.checkpoint().unwrap_or_else(|err| panic!("{ctx}: the checkpoint failed: {err}"));
        e.compact().unwrap_or_else(|err| panic!("{ctx}: the retry failed: {err}"));
        assert_eq!(read_all(&e), model, "{ctx}: live reads after the retry");
        assert!(e.stats().block_files <= ABOVE_FILES as u64, "{ctx}: {} files", e.stats().block_files);
        drop(e);
        let (e, _) = open(&fs.crash(Tear::None));
        assert_eq!(read_all(&e), model, "{ctx}: recovery");
    }
    assert!(failures_seen as u64 >= ops / 2, "the faults hit the checkpoint: {failures_seen} of {ops}");
}
