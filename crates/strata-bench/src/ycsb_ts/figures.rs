//! The benchmark's figures in the shape of the paper's (declog.txt 5.2-5.3),
//! as SVG files: Fig. 10(a) throughput bars per variant, Fig. 11 latency
//! CDF (one line per variant), Table 2 recovery times as a table (ours and
//! the paper's), and Fig. 12(a) bars of the ablation steps when they ran.

use super::paper::table2_recovery_s;
use super::report::metric;
use super::spec::Workload;
use super::variants::Variant;
use crate::report::BenchReport;
use crate::svg::{bar_chart, line_chart, short, table, Bar};

/// File name and SVG text of every figure this report can draw.
pub fn figures(
    report: &BenchReport,
    cdfs: &[(String, Vec<(f64, f64)>)],
    workload: Workload,
) -> Vec<(String, String)> {
    let variants: Vec<Variant> = report
        .results
        .iter()
        .filter_map(|r| r.get("variant")?.as_str())
        .filter_map(|n| Variant::parse(n).ok())
        .collect();
    let competitors: Vec<Variant> = variants.iter().filter(|v| !v.is_ablation()).copied().collect();
    let ablation: Vec<Variant> = variants.iter().filter(|v| v.is_ablation()).copied().collect();
    let mut out = Vec::new();
    if !competitors.is_empty() {
        out.push(("fig10a_throughput.svg".to_string(), throughput(report, &competitors, workload)));
        out.push(("table2_recovery.svg".to_string(), recovery(report, &competitors, workload)));
    }
    if !cdfs.is_empty() {
        let series: Vec<(String, Vec<(f64, f64)>)> = cdfs
            .iter()
            .map(|(name, pts)| {
                let label =
                    Variant::parse(name).map_or(name.clone(), |v| format!("{} ({})", v.name, v.paper_name));
                (label, pts.clone())
            })
            .collect();
        let title = format!("Fig. 11 shape: CDF of commit latency, workload {workload}");
        out.push((
            "fig11_latency_cdf.svg".to_string(),
            line_chart(&title, "commit latency (us, log scale)", "fraction of transactions", &series, true),
        ));
    }
    if !ablation.is_empty() {
        out.push(("fig12a_ablation.svg".to_string(), ablation_bars(report, &ablation, workload)));
    }
    out
}

fn throughput(report: &BenchReport, variants: &[Variant], workload: Workload) -> String {
    let bars: Vec<Bar> = variants
        .iter()
        .map(|v| {
            let value = metric(report, v.name, "throughput_txn_per_s").unwrap_or(0.0);
            let note = match metric(report, v.name, "ratio_to_none") {
                Some(r) => format!("{} ({r:.2}x none)", short(value)),
                None => short(value),
            };
            Bar { label: format!("{}\n{}", v.name, v.paper_name), value, note }
        })
        .collect();
    bar_chart(&format!("Fig. 10(a) shape: transaction throughput, workload {workload}"), "txn/s", &bars)
}

fn ablation_bars(report: &BenchReport, variants: &[Variant], workload: Workload) -> String {
    let base = metric(report, variants[0].name, "throughput_txn_per_s").filter(|b| *b > 0.0);
    let bars: Vec<Bar> = variants
        .iter()
        .map(|v| {
            let value = metric(report, v.name, "throughput_txn_per_s").unwrap_or(0.0);
            let note = match base {
                Some(b) => format!("{} ({:.2}x {})", short(value), value / b, variants[0].name),
                None => short(value),
            };
            Bar { label: v.name.to_string(), value, note }
        })
        .collect();
    bar_chart(
        &format!("Fig. 12(a) shape: DecLog components step by step, workload {workload}"),
        "txn/s",
        &bars,
    )
}

fn recovery(report: &BenchReport, variants: &[Variant], workload: Workload) -> String {
    let cell = |v: Option<f64>| v.map_or("-".to_string(), |s| format!("{s:.3}"));
    let paper = |name: &str, with: bool| {
        table2_recovery_s(name, with, workload).map_or("-".to_string(), |s| format!("{s:.1}"))
    };
    let header: Vec<String> = [
        "variant (paper)",
        "recovery s",
        "CPU s",
        "with checkpoint s",
        "with checkpoint CPU s",
        "paper s",
        "paper with checkpoint s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rows: Vec<Vec<String>> = variants
        .iter()
        .map(|v| {
            vec![
                format!("{} ({})", v.name, v.paper_name),
                cell(metric(report, v.name, "recovery_s")),
                cell(metric(report, v.name, "recovery_cpu_s")),
                cell(metric(report, v.name, "recovery_with_checkpoint_s")),
                cell(metric(report, v.name, "recovery_with_checkpoint_cpu_s")),
                paper(v.paper_name, false),
                paper(v.paper_name, true),
            ]
        })
        .collect();
    table(&format!("Table 2 shape: recovery time after SIGKILL, workload {workload}"), &header, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Machine;
    use crate::svg::{check_well_formed, write_files};
    use serde_json::{json, Map, Value};
    use strata_pmem::{FlushInstruction, PmemMode};

    fn report(names: &[&str]) -> BenchReport {
        let machine = Machine::detect(PmemMode::Emulated, "test", FlushInstruction::Clwb);
        let mut r = BenchReport::new("ycsb-ts", machine, json!({}));
        r.results = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let mut row = Map::new();
                row.insert("variant".into(), Value::from(*n));
                row.insert("throughput_txn_per_s".into(), Value::from(1000.0 * (i + 1) as f64));
                row.insert("recovery_s".into(), Value::from(0.5));
                row.insert("recovery_with_checkpoint_s".into(), Value::Null);
                row
            })
            .collect();
        r
    }

    #[test]
    fn competitors_give_three_figures_and_ablation_a_fourth() {
        let cdf = vec![("none".to_string(), vec![(10.0, 0.5), (20.0, 1.0)])];
        let figs = figures(&report(&["declog-pmem", "none"]), &cdf, Workload::B);
        let names: Vec<&str> = figs.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["fig10a_throughput.svg", "table2_recovery.svg", "fig11_latency_cdf.svg"]);
        for (name, svg) in &figs {
            check_well_formed(svg).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert!(figs[1].1.contains("72.5"), "Table 2 shows the paper's DecLog figure for B");
        assert!(figs[0].1.contains(">DecLog<") && figs[0].1.contains(">No-logging<"), "{}", figs[0].1);

        let figs = figures(&report(&["strict", "+relaxed", "none"]), &[], Workload::A);
        let last = figs.last().unwrap();
        assert_eq!(last.0, "fig12a_ablation.svg");
        assert!(last.1.contains("2.00x strict"), "{}", last.1);
        check_well_formed(&last.1).unwrap();
    }

    #[test]
    fn figures_are_written_to_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let figs = figures(&report(&["none"]), &[], Workload::C);
        let paths = write_files(&dir.path().join("svg"), &figs).unwrap();
        assert_eq!(paths.len(), 2);
        assert!(paths.iter().all(|p| std::fs::read_to_string(p).unwrap().starts_with("<svg")));
    }
}
