//! A checkpoint that fails part-way (any one file operation) must lose
//! nothing: the engine keeps serving every point, a retried checkpoint
//! succeeds, and recovery after a crash finds every point. Regression test
//! for a failed checkpoint whose block-file sequence was reused (and the
//! file truncated) by the retry.

use std::path::Path;
use std::sync::Arc;

use strata_log::ssd_log::SsdLogOptions;
use strata_log::SerialLog;
use strata_media::fs::{FailMode, FaultFs, FileSystem, Tear};
use strata_series::{EngineOptions, FieldValue, Point, SeriesEngine, SeriesStore, TimeRange};

fn open(fs: &FaultFs) -> Arc<SeriesEngine> {
    let fs: Arc<dyn FileSystem> = Arc::new(fs.clone());
    let (log, recs) = SerialLog::open_ssd(fs.clone(), Path::new("/wal"), SsdLogOptions::default()).unwrap();
    let opts = EngineOptions { fs, checkpoint_interval: None, ..EngineOptions::new("/series") };
    SeriesEngine::open(opts, strata_series::WalOpener::boxed(Box::new(log), recs), &|_, _, _| {}).unwrap().0
}

fn write(e: &SeriesEngine, ts: i64) {
    let p = Point {
        measurement: "m".into(),
        tags: vec![("h".into(), "a".into())],
        fields: vec![("f".into(), FieldValue::Float(ts as f64))],
        timestamp_ns: ts,
    };
    e.write("db", &[p]).unwrap();
}

fn points(e: &SeriesEngine) -> Vec<i64> {
    let ids: Vec<_> = e.series("db", "m").unwrap().iter().map(|s| s.id).collect();
    e.read("db", &ids, TimeRange::ALL).unwrap().concat().into_iter().map(|(t, _)| t).collect()
}

#[test]
fn a_checkpoint_failing_at_any_file_operation_loses_nothing() {
    let mut failures_seen = 0;
    for k in 0..40u64 {
        let fs = FaultFs::new();
        let e = open(&fs);
        e.create_database("db").unwrap();
        write(&e, 1);
        e.checkpoint().unwrap();
        write(&e, 2);
        fs.fail_at(fs.ops() + k, FailMode::Once);
        let failed = e.checkpoint().is_err();
        failures_seen += failed as u32;
        fs.clear_faults();
        if e.writes_stopped().is_some() {
            // The log poisoned itself (a failed segment rotation): writes stop,
            // and recovery must still find every acknowledged point.
            drop(e);
            let e = open(&fs.crash(Tear::None));
            assert_eq!(points(&e), vec![1, 2], "failure at op +{k}: recovery after a poisoned log");
            continue;
        }
        assert_eq!(points(&e), vec![1, 2], "failure at op +{k}: live reads after the failed checkpoint");
        write(&e, 3);
        e.checkpoint().unwrap_or_else(|err| panic!("failure at op +{k}: the retry failed: {err}"));
        assert_eq!(points(&e), vec![1, 2, 3], "failure at op +{k}: live reads after the retry");
        drop(e);
        let e = open(&fs.crash(Tear::None));
        assert_eq!(points(&e), vec![1, 2, 3], "failure at op +{k}: recovery");
    }
    assert!(failures_seen >= 10, "the faults hit the checkpoint: {failures_seen}");
}
