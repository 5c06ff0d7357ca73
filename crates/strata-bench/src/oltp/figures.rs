//! The sweeps' figures in the shapes of taurus.txt section 5 (Fig. 5, 7,
//! 13(a) and (b), 14) as SVG line charts ([`crate::svg::line_chart_with`]): one line
//! per variant, a dot per point, the x ticks at the sweep's values, the
//! bandwidth limit in the title and the machine under it.

use serde_json::Value;

use super::sweep::{is_serial, Fig, Sweep, SweepOptions};
use crate::report::BenchReport;
use crate::svg::{line_chart_with, LineOptions};

/// File name and SVG text of each of `o.figures` from the report's rows
/// (a variant without points in a figure is left out of it).
pub fn draw(o: &SweepOptions, report: &BenchReport) -> Vec<(String, String)> {
    let m = &report.machine;
    let b = &o.base;
    let setup = format!(
        "{} cores, {}; logs on {}; medians of {} round{} of {:.1} s",
        m.cores,
        m.cpu_model,
        match b.device {
            super::Device::Pmem => "emulated PMem",
            super::Device::Ssd => "files (fdatasync)",
        },
        b.rounds,
        if b.rounds == 1 { "" } else { "s" },
        b.window.as_secs_f64()
    );
    let limit = |mbps: Option<f64>| match mbps {
        Some(m) => format!("{m} MB/s per log"),
        None => "no bandwidth limit".to_string(),
    };
    let workload = b.workload.name().to_uppercase();
    let ycsb_shape = |what: Sweep| {
        let theta = (what != Sweep::Theta).then(|| format!("θ {}", b.shape.theta));
        let acc = (what != Sweep::Accesses).then(|| format!("{} accesses", b.shape.accesses));
        [theta, acc].into_iter().flatten().collect::<Vec<_>>().join(", ")
    };
    o.figures
        .iter()
        .map(|&f| {
            // Log axes where the paper's x spans decades (Fig. 14) or the
            // lines lie an order of magnitude apart (command vs data
            // logging under a bandwidth limit, Fig. 5/7).
            let (title, x_label, y_label, metric, log_xy, subtitle) = match f {
                Fig::ThroughputVsLogs | Fig::RecoveryVsLogs => {
                    let shape = if b.workload == super::Workload::Ycsb {
                        format!("{}; ", ycsb_shape(Sweep::Logs))
                    } else {
                        String::new()
                    };
                    let (what, y, metric) = if f == Fig::ThroughputVsLogs {
                        ("throughput", "throughput (txn/s, log scale)", "throughput_txn_per_s")
                    } else {
                        ("recovery throughput", "recovery (recovered txn/s, log scale)", "recovery_txn_per_s")
                    };
                    (
                        format!(
                            "Fig. {} shape: {workload} {what} by logs, {}",
                            f.label(),
                            limit(o.logs_mbps)
                        ),
                        "logs = worker threads (serial: 1 log)",
                        y,
                        metric,
                        true,
                        format!("{shape}{setup}"),
                    )
                }
                Fig::Theta | Fig::ThetaRecovery => {
                    let (panel, what, y, metric) = if f == Fig::Theta {
                        ("13", "throughput", "throughput (txn/s)", "throughput_txn_per_s")
                    } else {
                        ("13(b)", "recovery throughput", "recovery (recovered txn/s)", "recovery_txn_per_s")
                    };
                    (
                        format!("Fig. {panel} shape: YCSB {what} by Zipf θ, {}", limit(b.log_mbps)),
                        "Zipf θ (contention)",
                        y,
                        metric,
                        false,
                        format!(
                            "{} workers, {} logs; {}; {setup}",
                            b.workers,
                            b.logs,
                            ycsb_shape(Sweep::Theta)
                        ),
                    )
                }
                Fig::Accesses => (
                    format!(
                        "Fig. 14 shape: YCSB throughput by accesses per transaction, {}",
                        limit(b.log_mbps)
                    ),
                    "accesses per transaction",
                    "throughput (txn/s, log scale)",
                    "throughput_txn_per_s",
                    true,
                    format!(
                        "{} workers, {} logs; {}; {setup}",
                        b.workers,
                        b.logs,
                        ycsb_shape(Sweep::Accesses)
                    ),
                ),
            };
            let sweep = f.sweep();
            let series: Vec<(String, Vec<(f64, f64)>)> = o
                .variants
                .iter()
                .map(|v| {
                    let label =
                        if sweep == Sweep::Logs && is_serial(v) { format!("{v} (1 log)") } else { v.clone() };
                    (label, points(report, sweep, v, metric))
                })
                .filter(|(_, pts)| !pts.is_empty())
                .collect();
            let options = LineOptions {
                log_x: log_xy,
                log_y: log_xy,
                x_ticks: Some(o.xs(sweep)),
                markers: true,
                subtitle: Some(subtitle),
            };
            (f.file_name().to_string(), line_chart_with(&title, x_label, y_label, &series, &options))
        })
        .collect()
}

/// `(x, metric)` of `variant` along `sweep`, in x order.
fn points(report: &BenchReport, sweep: Sweep, variant: &str, metric: &str) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = report
        .results
        .iter()
        .filter(|r| r.get("sweep").and_then(Value::as_str) == Some(sweep.name()))
        .filter(|r| r.get("variant").and_then(Value::as_str) == Some(variant))
        .filter_map(|r| Some((r.get(sweep.name())?.as_f64()?, r.get(metric)?.as_f64()?)))
        .filter(|(_, y)| y.is_finite())
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Map};

    use super::*;
    use crate::machine::Machine;
    use crate::oltp::{parse_variants, OltpOptions};
    use crate::svg::check_well_formed;

    /// A report as the sweeps leave it: every variant at every point, with
    /// made-up medians (recovery only for the logged variants).
    fn report(o: &SweepOptions) -> BenchReport {
        let mut machine = Machine::detect(
            strata_pmem::PmemMode::Emulated,
            "test",
            strata_pmem::detected_flush_instruction(),
        );
        machine.cpu_model = "Test CPU <9000>".into();
        machine.cores = 2;
        let mut r = BenchReport::new("oltp-figures", machine, json!({}));
        for p in o.points().unwrap() {
            for (i, v) in o.variants.iter().enumerate() {
                let mut row = Map::new();
                row.insert("variant".into(), json!(v));
                row.insert("sweep".into(), json!(p.sweep.name()));
                row.insert("logs".into(), json!(p.options.logs));
                row.insert("theta".into(), json!(p.options.shape.theta));
                row.insert("accesses".into(), json!(p.options.shape.accesses));
                row.insert("throughput_txn_per_s".into(), json!(1000.0 * (i + 1) as f64 * p.x));
                if v != "none" {
                    row.insert("recovery_txn_per_s".into(), json!(500.0 * (i + 1) as f64));
                }
                r.results.push(row);
            }
        }
        r
    }

    fn options() -> SweepOptions {
        let base = OltpOptions::quick(parse_variants("none", 2).unwrap(), 2, 2);
        let mut o = SweepOptions::new(base, "unused".into());
        o.variants.push("none".into());
        o
    }

    #[test]
    fn each_figure_has_its_series_axis_labels_and_title() {
        let o = options();
        let figs = draw(&o, &report(&o));
        let names: Vec<&str> = figs.iter().map(|(n, _)| n.as_str()).collect();
        // Every figure, in order, by the names `Fig::file_name` gives (its
        // own test spells them out).
        let want: Vec<&str> = Fig::ALL.iter().map(|f| f.file_name()).collect();
        assert_eq!(names, want);
        for (name, svg) in &figs {
            check_well_formed(svg).unwrap_or_else(|e| panic!("{name}: {e}"));
            // The machine (escaped) and the setup under the title.
            assert!(svg.contains("2 cores, Test CPU &lt;9000&gt;; logs on emulated PMem"), "{name}");
            for v in ["silo-r", "taurus-data", "taurus-command"] {
                assert!(svg.contains(&format!(">{v}</text>")), "{name} lacks {v}");
            }
        }
        let [(_, fig5), (_, fig7), (_, fig13), (_, fig13b), (_, fig14)] = &figs[..] else {
            panic!("five figures")
        };
        // Fig. 5: five lines (none included), serial marked as one log, the bandwidth limit in the title.
        assert!(fig5.contains("Fig. 5 shape: YCSB throughput by logs, 10 MB/s per log"));
        assert!(fig5.contains(">serial-data (1 log)</text>"));
        assert!(fig5.contains(">none</text>"));
        assert!(fig5.contains(">logs = worker threads (serial: 1 log)</text>"));
        assert!(fig5.contains(">throughput (txn/s, log scale)</text>"));
        assert_eq!(fig5.matches("<polyline").count(), 5);
        assert_eq!(fig5.matches("<circle").count(), 5 * 4, "a dot per point");
        for tick in ["1", "2", "4", "8"] {
            assert!(fig5.contains(&format!(">{tick}</text>")), "x tick {tick}");
        }
        // Fig. 7: recovery, `none` (nothing to recover) left out.
        assert!(fig7.contains("Fig. 7 shape: YCSB recovery throughput by logs, 10 MB/s per log"));
        assert!(fig7.contains(">recovery (recovered txn/s, log scale)</text>"));
        assert!(!fig7.contains(">none</text>"));
        assert_eq!(fig7.matches("<polyline").count(), 4);
        // Fig. 13 and 14: no limit, their x axes and ticks.
        assert!(fig13.contains("Fig. 13 shape: YCSB throughput by Zipf θ, no bandwidth limit"));
        assert!(fig13.contains(">Zipf θ (contention)</text>"));
        assert!(fig13.contains(">throughput (txn/s)</text>"), "Fig. 13: linear, as the paper's");
        assert!(fig13.contains("2 workers, 2 logs; 2 accesses;"));
        for tick in ["0.1", "0.3", "0.6", "0.9", "1.2"] {
            assert!(fig13.contains(&format!(">{tick}</text>")), "θ tick {tick}");
        }
        // Fig. 13(b): recovery by θ, linear, without `none`, a dot per logged variant and θ.
        assert!(fig13b.contains("Fig. 13(b) shape: YCSB recovery throughput by Zipf θ, no bandwidth limit"));
        assert!(fig13b.contains(">recovery (recovered txn/s)</text>"));
        assert!(!fig13b.contains(">none</text>"));
        let logged = o.variants.iter().filter(|v| *v != "none").count();
        assert_eq!(fig13b.matches("<polyline").count(), logged);
        assert_eq!(fig13b.matches("<circle").count(), logged * 5);
        assert!(fig14.contains("Fig. 14 shape: YCSB throughput by accesses per transaction"));
        assert!(fig14.contains(">accesses per transaction</text>"));
        assert!(fig14.contains(">16</text>"));
        assert_eq!(fig14.matches("<circle").count(), 5 * 5);
    }

    #[test]
    fn only_the_asked_figures_are_drawn_and_missing_points_are_skipped() {
        let mut o = options();
        o.figures = vec![Fig::Accesses];
        let mut r = report(&o);
        // taurus-command failed to report at one point, and has no throughput at another.
        r.results.retain(|row| !(row["variant"] == "taurus-command" && row["accesses"] == 4));
        for row in &mut r.results {
            if row["variant"] == "taurus-command" && row["accesses"] == 8 {
                row.insert("throughput_txn_per_s".into(), serde_json::Value::Null);
            }
        }
        let figs = draw(&o, &r);
        assert_eq!(figs.len(), 1);
        assert_eq!(figs[0].0, "fig14_accesses.svg");
        let pts = points(&r, Sweep::Accesses, "taurus-command", "throughput_txn_per_s");
        assert_eq!(pts.iter().map(|p| p.0).collect::<Vec<_>>(), [1.0, 2.0, 16.0]);
        assert_eq!(figs[0].1.matches("<circle").count(), 4 * 5 + 3);
    }
}
