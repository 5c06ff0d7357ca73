//! Shape tests of `strata bench events`: a tiny end-to-end run of every
//! figure (every variant present, every metric finite and positive where a
//! time or rate), the JSON shape, the SVGs and the option parsing. No timed
//! assertions: the figures of a tiny run mean nothing.

use std::path::Path;

use serde_json::Value;

use super::*;

fn tiny_run(figures: Vec<Fig>) -> EventsRun {
    let mut o = EventsOptions::new(EventsBudget::tiny());
    o.figures = figures;
    o.print = false;
    // Tests run on any machine: a temp dir stands in for /dev/shm when needed.
    if !Path::new("/dev/shm").is_dir() {
        o.pmem_dir = std::env::temp_dir();
    }
    run_events_bench(&o).unwrap()
}

fn variants(fig: &Figure) -> Vec<String> {
    fig.rows.iter().map(|r| r["variant"].as_str().unwrap().to_string()).collect()
}

/// Every metric of every row is a finite number; those named in `positive` are > 0.
fn assert_finite(fig: &Figure, positive: &[&str]) {
    for r in &fig.rows {
        for (k, v) in r {
            if k == "variant" {
                continue;
            }
            let x = v.as_f64().unwrap_or_else(|| panic!("{}: {k} = {v} is no number", fig.key));
            assert!(x.is_finite() && x >= 0.0, "{} {}: {k} = {x}", fig.key, r["variant"]);
        }
        for m in positive {
            let x = r.get(*m).and_then(Value::as_f64);
            assert!(x.is_some_and(|x| x > 0.0), "{} {}: {m} = {x:?}", fig.key, r["variant"]);
        }
    }
}

#[test]
fn fig5_has_every_flank_and_the_acceptance_ratio() {
    let run = tiny_run(vec![Fig::Fig5]);
    let fig = &run.figures[0];
    let mut expect = Vec::new();
    for medium in ["ext4", "tmpfs"] {
        expect.push(format!("{medium}/{DRAM_FLANK}"));
        expect.extend(FLUSH_BATCHES.iter().map(|k| format!("{medium}/pmem-flank-k{k}")));
    }
    assert_eq!(variants(fig), expect);
    assert_finite(fig, &["throughput_events_per_s", "ratio_to_dram_flank", "recovery_ms", "tree_height"]);
    for medium in [0, FLUSH_BATCHES.len() + 1] {
        assert_eq!(fig.rows[medium]["ratio_to_dram_flank"], 1.0, "each medium's DRAM flank is its own 1.0");
    }
    let dram = &fig.rows[0];
    assert_eq!(dram["ratio_to_dram_flank"], 1.0);
    assert!(dram["events_at_risk_max"].as_f64().unwrap() > 25.0, "a DRAM flank risks a leaf");
    assert_eq!(dram["fences_per_event"], 0.0, "a DRAM flank never fences");
    for (row, k) in fig.rows[1..]
        .iter()
        .zip(FLUSH_BATCHES)
        .chain(fig.rows[FLUSH_BATCHES.len() + 2..].iter().zip(FLUSH_BATCHES))
    {
        let at_risk = row["events_at_risk_max"].as_f64().unwrap();
        assert!(at_risk < k as f64, "k={k}: at most k-1 events at risk, got {at_risk}");
        let lost = row["events_lost_on_recovery"].as_f64().unwrap();
        assert!(lost < k as f64, "k={k}: recovery loses at most k-1 events, lost {lost}");
    }
    assert!(dram["events_lost_on_recovery"].as_f64().unwrap() > 0.0, "3000 events leave a partial leaf");
    assert!(run.acceptance_ratio.is_some_and(|x| x.is_finite() && x > 0.0));
    assert!(run.acceptance_ratio_ext4.is_some_and(|x| x.is_finite() && x > 0.0));
    assert!(run.acceptance_line().unwrap().starts_with("pmem flank k=25 / dram flank insertion rate = "));
}

#[test]
fn fig6_has_every_placement_relative_to_the_baseline() {
    let run = tiny_run(vec![Fig::Fig6]);
    let fig = &run.figures[0];
    assert_eq!(variants(fig), ["baseline", "aggs-pmem-dense", "aggs-pmem-aligned", "index-pmem"]);
    assert_finite(
        fig,
        &["insert_s", "point_query_us", "aggregate_query_us", "filter_query_us", "filter_selectivity_pct"],
    );
    for m in ["insert_ratio_to_baseline", "point_ratio_to_baseline", "filter_ratio_to_baseline"] {
        assert_eq!(fig.rows[0][m], 1.0, "the baseline is 1 for {m}");
    }
}

#[test]
fn fig7_and_fig8_have_every_variant() {
    let run = tiny_run(vec![Fig::Fig7, Fig::Fig8]);
    let (f7, f8) = (&run.figures[0], &run.figures[1]);
    assert_eq!(variants(f7), ["dram", "pmem-array", "flash-att"]);
    assert_finite(f7, &["update_ns", "lookup_ns", "recovery_ms"]);
    let scanned = |i: usize| f7.rows[i]["recovery_records_scanned"].as_f64().unwrap();
    assert_eq!(scanned(0), 3000.0, "DRAM recovery scans every record");
    assert!(scanned(1) < 3000.0, "PMem recovery replays only the unpersisted tail");
    assert_eq!(variants(f8), ["dram", "pmem-pure", "pmem-indexed", "flash-pure", "flash-indexed"]);
    assert_finite(f8, &["write_ms", "hit_query_us", "miss_query_us", "events"]);
    assert!(f8.rows[0].get("recovery_ms").is_none(), "the DRAM queue has nothing to recover");
    assert!(f8.rows[1..].iter().all(|r| r["recovery_ms"].as_f64().is_some_and(|x| x > 0.0)));
}

#[test]
fn report_json_has_the_shared_shape() {
    let run = tiny_run(vec![Fig::Fig7]);
    let v: Value = serde_json::from_str(&run.report.to_json()).unwrap();
    assert_eq!(v["benchmark"], "events");
    assert_eq!(v["machine"]["pmem_mode"], "emulated");
    assert!(v["machine"]["cores"].as_u64().unwrap() >= 1);
    assert_eq!(v["config"]["rounds"], 1);
    assert_eq!(v["config"]["not_measured"].as_array().map(Vec::len), Some(0), "every figure is measured");
    let names: Vec<&str> =
        v["results"].as_array().unwrap().iter().map(|r| r["variant"].as_str().unwrap()).collect();
    assert_eq!(names, ["fig7/dram", "fig7/pmem-array", "fig7/flash-att"]);
    let text = run.render();
    assert!(text.contains("PMem emulated on a mapped file in"), "{text}");
    assert!(!text.contains("not yet"), "{text}");
    assert!(run.acceptance_line().is_none(), "no Fig. 5, no acceptance line");
}

#[test]
fn fig9_every_variant_holds_every_event_and_merges() {
    let run = tiny_run(vec![Fig::Fig9]);
    let fig = &run.figures[0];
    let mut expect = Vec::new();
    for pct in OOO_FRACTIONS_PCT {
        for v in ["pmem-indexed", "pmem-pure", "flash-indexed", "flash-pure", "dram"] {
            expect.push(format!("ooo{pct}pct/{v}"));
        }
    }
    assert_eq!(variants(fig), expect);
    assert_finite(fig, &["total_s", "throughput_events_per_s", "ratio_to_pmem_indexed", "events"]);
    let tiny = EventsBudget::tiny();
    for r in &fig.rows {
        let name = r["variant"].as_str().unwrap();
        let m = |k: &str| r[k].as_f64().unwrap();
        assert_eq!(m("events"), tiny.stream_events as f64, "{name}");
        // Every late event went somewhere; queued ones were merged or are still queued.
        assert!(m("late_to_flank_leaf") + m("late_to_queue") > 0.0, "{name}: late events");
        assert!(m("queue_events_at_end") <= m("late_to_queue"), "{name}");
        if name.ends_with("/pmem-indexed") {
            assert_eq!(m("ratio_to_pmem_indexed"), 1.0, "{name} is the reference");
        }
        if name.starts_with("ooo10pct/") {
            assert!(m("merges") >= 2.0, "{name}: a 10 % run merges an 8 KiB queue several times");
            assert!(m("leaves_rewritten") > 0.0, "{name}: merges rewrite leaves");
            assert_eq!(m("leaves_rewritten_twice"), 0.0, "{name}: a one-pass merge rewrites a leaf once");
        }
        if name.contains("/flash-") && m("merges") > 0.0 {
            assert!(m("queue_page_reads") > 0.0, "{name}: a flash merge reads pages");
        }
    }
    let late = |name: &str| fig.rows.iter().find(|r| r["variant"] == name).unwrap()["late_to_queue"].clone();
    assert!(
        late("ooo1pct/pmem-indexed").as_f64() < late("ooo10pct/pmem-indexed").as_f64(),
        "more OOO, more queued events"
    );
    let v: Value = serde_json::from_str(&run.report.to_json()).unwrap();
    assert_eq!(v["config"]["figures"]["fig9"]["queue_bytes"], tiny.stream_queue_bytes);
    assert_eq!(v["config"]["figures"]["fig9"]["workloads"].as_array().unwrap().len(), 3);
    let first = &v["results"][0];
    assert_eq!(first["variant"], "fig9/ooo1pct/pmem-indexed");
    for key in super::fig9_stream::COLUMNS {
        assert!(first[key].as_f64().is_some(), "JSON row lacks {key}: {first}");
    }
    let svgs = figures::svgs(&run);
    assert_eq!(svgs.len(), 1);
    crate::svg::check_well_formed(&svgs[0].1).unwrap();
    assert!(svgs[0].1.contains("flash-pure") && svgs[0].1.contains("10 %"), "bars name variant and fraction");
}

#[test]
fn fig9_queue_capacity_scales_with_the_stream() {
    assert_eq!(queue_bytes_for(PAPER_SCALE_EVENTS, 1), PAPER_QUEUE_BYTES, "100 MiB at paper scale");
    assert_eq!(queue_bytes_for(DEFAULT_EVENTS, 1), PAPER_QUEUE_BYTES / 10);
    assert_eq!(queue_bytes_for(1_000, 1), 16 << 10, "at least 16 KiB");
    let quick = EventsBudget::quick();
    assert_eq!(quick.stream_queue_bytes, queue_bytes_for(QUICK_STREAM_EVENTS, QUICK_QUEUE_DIVISOR));
    let more = EventsBudget::quick().with_stream_events(3_000_000);
    assert_eq!(more.stream_queue_bytes, queue_bytes_for(3_000_000, QUICK_QUEUE_DIVISOR));
    let full = EventsBudget::full(DEFAULT_EVENTS);
    assert_eq!(full.stream_events, DEFAULT_EVENTS, "full runs run Fig. 9 at 10^7 events");
    assert_eq!(EventsBudget::full(PAPER_SCALE_EVENTS).stream_events, MAX_STREAM_EVENTS, "and cap it there");
    assert_eq!(full.stream_queue_bytes, queue_bytes_for(MAX_STREAM_EVENTS, 1));
    assert_eq!(EventsBudget::full(50_000).stream_events, 50_000, "smaller runs keep their size");
    let mut b = EventsBudget::tiny();
    b.stream_events = 10;
    assert!(b.check().unwrap_err().to_string().contains("Fig. 9"));
}

#[test]
fn svgs_are_written_and_well_formed() {
    let run = tiny_run(vec![Fig::Fig8]);
    let files = figures::svgs(&run);
    assert_eq!(files.len(), 4);
    for (name, doc) in &files {
        crate::svg::check_well_formed(doc).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(doc.contains("flash"), "{name} names its variants");
    }
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(crate::svg::write_files(dir.path(), &files).unwrap().len(), 4);
    assert!(dir.path().join("events-fig8-write_ms.svg").is_file());
}

#[test]
fn figures_parse_and_bad_budgets_are_rejected() {
    assert_eq!(Fig::parse("5").unwrap(), Fig::Fig5);
    assert_eq!(Fig::parse("fig8").unwrap(), Fig::Fig8);
    assert_eq!(Fig::parse("Fig.9").unwrap(), Fig::Fig9);
    assert!(Fig::parse("4").unwrap_err().to_string().contains("unknown figure"));
    let mut b = EventsBudget::tiny();
    b.rounds = 0;
    assert!(b.check().is_err());
    let mut o = EventsOptions::new(EventsBudget::tiny());
    o.json_path = Some(PathBuf::from("/nonexistent-dir/x.json"));
    o.print = false;
    assert!(run_events_bench(&o).unwrap_err().to_string().contains("not a directory"));
    assert_eq!(EventsBudget::full(DEFAULT_EVENTS).stock_events, 10_000_000);
    assert_eq!(EventsBudget::full(PAPER_SCALE_EVENTS).translation_ops, 10_000_000);
}
