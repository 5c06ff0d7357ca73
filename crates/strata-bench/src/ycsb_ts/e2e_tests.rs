//! End to end: a tiny `strata bench ycsb-ts` of `none` and `declog-pmem`
//! with real child processes killed by SIGKILL and real recoveries. The
//! child is this test binary re-executed on this very test with the job in
//! the environment (the CLI re-executes `strata bench ycsb-ts-child`).

use std::path::PathBuf;

use super::job::JOB_ENV;
use super::{run_child_from_env, run_ycsb_ts_bench, ChildCommand, Variant, YcsbTsOptions};
use crate::ingest::BenchDirs;
use crate::svg::check_well_formed;

const THIS_TEST: &str = "ycsb_ts::e2e_tests::tiny_run_of_none_and_declog_pmem_end_to_end";

#[test]
fn tiny_run_of_none_and_declog_pmem_end_to_end() {
    if std::env::var_os(JOB_ENV).is_some() {
        // The child: runs the job, prints its result, waits for SIGKILL.
        let outcome = run_child_from_env();
        panic!("the child returned instead of waiting to be killed: {outcome:?}");
    }
    let child = ChildCommand {
        program: std::env::current_exe().unwrap(),
        args: vec!["--exact".into(), THIS_TEST.into(), "--nocapture".into(), "--test-threads=1".into()],
        env: Vec::new(),
    };
    let work = tempfile::tempdir().unwrap();
    let detected = BenchDirs::detect();
    let mut opts = YcsbTsOptions::quick(child);
    opts.num_keys = 40;
    opts.load_points_per_key = 10;
    opts.txns = 300;
    opts.variants = vec![Variant::parse("none").unwrap(), Variant::parse("declog-pmem").unwrap()];
    opts.dirs = BenchDirs { pmem_dir: detected.pmem_dir, disk_dir: work.path().to_path_buf() };
    opts.json_path = Some(work.path().join("ycsb.json"));
    opts.svg_dir = Some(work.path().join("svg"));
    let out = run_ycsb_ts_bench(&opts).expect("a tiny run succeeds");

    let r = &out.report;
    assert_eq!(r.results.len(), 2);
    let m = |v: &str, k: &str| super::report::metric(r, v, k);
    for v in ["none", "declog-pmem"] {
        assert!(m(v, "throughput_txn_per_s").is_some_and(|t| t > 0.0), "{v}");
        assert_eq!(m(v, "txns"), Some(300.0), "{v}: every transaction committed");
        assert_eq!(m(v, "reads_missing"), Some(0.0), "{v}: every read found its point");
        assert!(m(v, "latency_us_p99") >= m(v, "latency_us_p50"), "{v}");
        assert!(m(v, "recovery_s").is_some_and(|s| s > 0.0), "{v}");
        assert!(m(v, "recovery_with_checkpoint_s").is_some_and(|s| s > 0.0), "{v}");
    }
    assert!(m("declog-pmem", "fences_per_txn").is_some_and(|f| f > 0.0), "DecLog persists through PMem");
    assert!(m("none", "fences_per_txn").is_none(), "none has no log region: null");
    assert_eq!(m("declog-pmem", "lost_last_inserts"), Some(0.0), "acknowledged inserts survive SIGKILL");
    assert_eq!(m("declog-pmem", "lost_last_inserts_with_checkpoint"), Some(0.0));
    assert!(m("none", "lost_last_inserts").is_some_and(|l| l > 0.0), "none keeps nothing uncheckpointed");
    assert!(m("declog-pmem", "ratio_to_none").is_some_and(|x| x > 0.0));

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(opts.json_path.as_ref().unwrap()).unwrap()).unwrap();
    assert_eq!(json["benchmark"], "ycsb-ts");
    assert!(json["results"][1]["fences_per_txn"].is_number());
    assert!(json["results"][0]["fences_per_txn"].is_null());
    assert!(json["latency_cdf_us"]["declog-pmem"].as_array().is_some_and(|a| !a.is_empty()));
    assert_eq!(json["acceptance"].as_array().map(Vec::len), Some(3));

    let names: Vec<PathBuf> = out.svg_files.iter().map(|p| PathBuf::from(p.file_name().unwrap())).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    for p in &out.svg_files {
        check_well_formed(&std::fs::read_to_string(p).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    }
}
