//! SVG drawings of `strata bench events` in the shape of the paper's
//! figures, drawn with [`crate::svg`]: Fig. 5 as a line
//! (ratio to the DRAM flank over the flush batch size, log x), Fig. 6-8 as
//! bar charts of their main metrics, Fig. 9 as bars of the total time per
//! OOO fraction and queue variant (the paper's grouped bars).

use serde_json::Value;

use super::{EventsRun, Figure};
use crate::svg::{bar_chart, line_chart, short, Bar};

fn metric(row: &serde_json::Map<String, Value>, m: &str) -> Option<f64> {
    row.get(m).and_then(Value::as_f64)
}

fn variant(row: &serde_json::Map<String, Value>) -> String {
    row.get("variant").and_then(Value::as_str).unwrap_or("?").to_string()
}

/// Bars of `metric` per variant (rows without it are skipped).
fn bars(fig: &Figure, m: &str) -> Vec<Bar> {
    fig.rows
        .iter()
        .filter_map(|r| {
            metric(r, m).map(|v| Bar { label: variant(r).replace('-', "-\n"), value: v, note: short(v) })
        })
        .collect()
}

/// The SVG files of `run`, as (file name, document).
pub(super) fn svgs(run: &EventsRun) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for fig in &run.figures {
        match fig.key {
            "fig5" => {
                let points = |medium: &str| -> Vec<(f64, f64)> {
                    fig.rows
                        .iter()
                        .filter_map(|r| {
                            let name = variant(r);
                            let k = name
                                .strip_prefix(medium)?
                                .strip_prefix("/pmem-flank-k")?
                                .parse::<f64>()
                                .ok()?;
                            Some((k, metric(r, "ratio_to_dram_flank")?))
                        })
                        .collect()
                };
                let tmpfs = points("tmpfs");
                let series = vec![
                    ("pmem flank, leaves on tmpfs".to_string(), tmpfs.clone()),
                    ("pmem flank, leaves on ext4".to_string(), points("ext4")),
                    ("dram flank (1.0)".to_string(), tmpfs.iter().map(|(k, _)| (*k, 1.0)).collect()),
                ];
                let title = "Fig. 5: insertion rate, PMem flank relative to DRAM flank";
                out.push((
                    "events-fig5.svg".into(),
                    line_chart(title, "flush batch size k (events)", "ratio", &series, true),
                ));
            }
            "fig6" => {
                let mut all = Vec::new();
                for (m, label) in [
                    ("insert_ratio_to_baseline", "insert"),
                    ("point_ratio_to_baseline", "point"),
                    ("aggregate_ratio_to_baseline", "aggregate"),
                    ("filter_ratio_to_baseline", "filter"),
                ] {
                    for r in &fig.rows {
                        if let Some(v) = metric(r, m) {
                            all.push(Bar {
                                label: format!("{}\n{label}", variant(r)),
                                value: v,
                                note: short(v),
                            });
                        }
                    }
                }
                let title = "Fig. 6: time relative to the baseline (aggs inline, index on SSD)";
                out.push(("events-fig6.svg".into(), bar_chart(title, "ratio", &all)));
            }
            "fig7" => {
                for (m, unit) in [("update_ns", "ns"), ("lookup_ns", "ns"), ("recovery_ms", "ms")] {
                    let title = format!("Fig. 7: address translation, {m}");
                    out.push((format!("events-fig7-{m}.svg"), bar_chart(&title, unit, &bars(fig, m))));
                }
            }
            "fig8" => {
                for (m, unit) in [
                    ("write_ms", "ms"),
                    ("recovery_ms", "ms"),
                    ("hit_query_us", "us"),
                    ("miss_query_us", "us"),
                ] {
                    let title = format!("Fig. 8: OOO queue, {m}");
                    out.push((format!("events-fig8-{m}.svg"), bar_chart(&title, unit, &bars(fig, m))));
                }
            }
            "fig9" => {
                let mut all = Vec::new();
                for r in &fig.rows {
                    let name = variant(r);
                    let Some((fraction, queue)) = name.split_once('/') else { continue };
                    let pct = fraction.trim_start_matches("ooo").trim_end_matches("pct");
                    if let Some(v) = metric(r, "total_s") {
                        all.push(Bar { label: format!("{queue}\n{pct} %"), value: v, note: short(v) });
                    }
                }
                let title = "Fig. 9: total insertion time per OOO fraction and queue variant";
                out.push(("events-fig9-total_s.svg".into(), bar_chart(title, "s", &all)));
            }
            _ => {}
        }
    }
    out
}
