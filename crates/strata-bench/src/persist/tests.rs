//! Shape tests of the persist benchmark: a tiny run must produce every
//! variant with positive figures in the DESIGN.md section 6 JSON shape. No
//! figure is compared with a time.

use serde_json::Value;

use super::*;

fn tiny_options(json_path: PathBuf) -> PersistBenchOptions {
    let shm = PathBuf::from("/dev/shm");
    PersistBenchOptions {
        json_path: Some(json_path),
        quick: true,
        tmpfs_dir: if shm.is_dir() { shm } else { std::env::temp_dir() },
        ext4_dir: std::env::temp_dir(),
        budget: Some(PersistBudget::tiny()),
        print: false,
    }
}

fn expected_metrics(variant: &str) -> &'static [&'static str] {
    let bytes_ratio = &["throughput_bytes_per_s", "ratio_to_memcpy"];
    if variant.starts_with("memcpy-noflush/") {
        bytes_ratio
    } else if variant.starts_with("persist-") {
        &["throughput_bytes_per_s", "ratio_to_memcpy", "ns_per_persist"]
    } else if variant.starts_with("serial-pmem-") {
        &[
            "throughput_entries_per_s",
            "throughput_bytes_per_s",
            "ratio_to_memcpy",
            "fences_per_entry",
            "lines_flushed_per_entry",
            "bytes_per_entry",
            "media_blocks_per_entry",
        ]
    } else if variant.starts_with("ssd-log-") {
        &[
            "throughput_entries_per_s",
            "throughput_bytes_per_s",
            "ratio_to_memcpy",
            "latency_us_p50",
            "latency_us_p99",
        ]
    } else {
        panic!("unexpected variant {variant}")
    }
}

#[test]
fn tiny_run_writes_every_variant_in_the_shared_json_shape() {
    let out = tempfile::tempdir().unwrap();
    let json_path = out.path().join("persist.json");
    let report = run_persist_bench(&tiny_options(json_path.clone())).unwrap();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();

    let top: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(top.len(), 4, "benchmark, machine, config, results: {top:?}");
    assert_eq!(v["benchmark"], "persist");
    let machine = &v["machine"];
    assert!(machine["cores"].as_u64().unwrap() >= 1);
    assert!(machine["memory_gib"].as_f64().unwrap() > 0.0);
    assert_eq!(machine["pmem_mode"], "emulated");
    assert!(machine["flush_instruction"].is_string());
    assert!(v["config"].is_object());

    let labels: Vec<&str> =
        v["config"]["media"].as_array().unwrap().iter().map(|m| m["label"].as_str().unwrap()).collect();
    assert_eq!(labels.len(), 2);
    let mut expected = Vec::new();
    for label in &labels {
        expected.extend([
            format!("memcpy-noflush/{label}"),
            format!("persist-64B/{label}"),
            format!("persist-256B/{label}"),
            format!("persist-4KiB/{label}"),
            format!("serial-pmem-64B/{label}"),
            format!("serial-pmem-256B/{label}"),
            format!("ssd-log-1thread/{label}"),
            format!("ssd-log-4threads/{label}"),
        ]);
    }
    let results = v["results"].as_array().unwrap();
    let names: Vec<&str> = results.iter().map(|r| r["variant"].as_str().unwrap()).collect();
    assert_eq!(names, expected);

    for r in results {
        let row = r.as_object().unwrap();
        let name = row["variant"].as_str().unwrap();
        let metrics: Vec<&str> = row.keys().map(String::as_str).filter(|k| *k != "variant").collect();
        let mut want = expected_metrics(name).to_vec();
        let mut got = metrics.clone();
        want.sort();
        got.sort();
        assert_eq!(got, want, "metrics of {name}");
        for m in metrics {
            let x = row[m].as_f64().unwrap_or(f64::NAN);
            assert!(x.is_finite() && x > 0.0, "{name}.{m} = {x}");
        }
    }
    for label in &labels {
        assert_eq!(report.result(&format!("memcpy-noflush/{label}")).unwrap()["ratio_to_memcpy"], 1.0);
    }
    // Strict ordering: two fences per serial entry, plus the rare truncation.
    let serial = report.result(&format!("serial-pmem-64B/{}", labels[0])).unwrap();
    let fences = serial["fences_per_entry"].as_f64().unwrap();
    assert!((2.0..2.1).contains(&fences), "fences per entry {fences}");
    let table = report.render_table();
    for name in &expected {
        assert!(table.contains(name.as_str()), "table lacks {name}");
    }
}

#[test]
fn budgets_are_valid_and_ordered() {
    for b in [PersistBudget::full(), PersistBudget::quick(), PersistBudget::tiny()] {
        b.check().unwrap();
    }
    assert!(PersistBudget::quick().rounds < PersistBudget::full().rounds);
    let bad = PersistBudget { raw_area_bytes: 1000, ..PersistBudget::tiny() };
    assert!(bad.check().is_err());
}

#[test]
fn variant_names_and_payloads() {
    assert_eq!(size_label(64), "64B");
    assert_eq!(size_label(4096), "4KiB");
    assert_eq!(pmem::payload_bytes(64), 24);
    assert_eq!(pmem::payload_bytes(256), 216);
    let names: Vec<String> = variants_of(0, "tmpfs").into_iter().map(|v| v.name).collect();
    assert_eq!(names.len(), 8);
    assert_eq!(names[0], "memcpy-noflush/tmpfs");
    assert_eq!(names[7], "ssd-log-4threads/tmpfs");
}
