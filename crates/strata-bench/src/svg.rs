//! The SVG drawing every benchmark's figures share (`ycsb_ts`, `events`):
//! hand-written SVG with no dependency, a bar chart, a line chart (linear or
//! log10 x axis) and a table, as strings, and [`write_files`] to put a
//! benchmark's figures into a directory. Every text is escaped, so a figure
//! is well formed whatever the labels; [`check_well_formed`] verifies the tag
//! structure without an XML parser. What each figure shows stays with its
//! benchmark (`ycsb_ts::figures`, `events::figures`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// Series colors, in order.
pub const PALETTE: [&str; 8] =
    ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];

const WIDTH: f64 = 820.0;
const HEIGHT: f64 = 420.0;
const LEFT: f64 = 80.0;
/// Room for a line chart's legend.
const RIGHT: f64 = 230.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 80.0;

/// Escapes `&`, `<`, `>` and `"` for text and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// An SVG document being written.
struct Doc {
    width: f64,
    height: f64,
    body: String,
}

impl Doc {
    fn new(width: f64, height: f64, title: &str) -> Doc {
        let mut d = Doc { width, height, body: String::new() };
        d.rect(0.0, 0.0, width, height, "#ffffff");
        d.text(width / 2.0, 28.0, "middle", 16.0, title);
        d
    }

    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str) {
        let _ = writeln!(
            self.body,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
            w.max(0.0),
            h.max(0.0),
            escape(fill)
        );
    }

    fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str) {
        let _ = writeln!(
            self.body,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{}" stroke-width="1"/>"#,
            escape(stroke)
        );
    }

    fn text(&mut self, x: f64, y: f64, anchor: &str, size: f64, content: &str) {
        let _ = writeln!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}" text-anchor="{anchor}" font-family="sans-serif" font-size="{size}">{}</text>"#,
            escape(content)
        );
    }

    fn polyline(&mut self, points: &[(f64, f64)], stroke: &str) {
        let coords: Vec<String> = points.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let _ = writeln!(
            self.body,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>"#,
            coords.join(" "),
            escape(stroke)
        );
    }

    fn finish(self) -> String {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\n{}</svg>\n",
            self.body,
            w = self.width,
            h = self.height
        )
    }
}

/// A round axis maximum at or above `v` (1, 2, 2.5, 5 x 10^k).
pub fn nice_max(v: f64) -> f64 {
    if !v.is_finite() || v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * p).find(|m| *m >= v * 0.999_999).unwrap_or(10.0 * p)
}

/// Short number for labels: three significant digits, k/M suffixes.
pub fn short(v: f64) -> String {
    crate::report::format_number(v)
}

/// One bar: label under it (one line per `\n`), value, text above it.
#[derive(Clone, Debug)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub note: String,
}

/// Vertical bars, one color each, value labels above.
pub fn bar_chart(title: &str, y_label: &str, bars: &[Bar]) -> String {
    let mut d = Doc::new(WIDTH, HEIGHT, title);
    let (plot_w, plot_h) = (WIDTH - LEFT - 40.0, HEIGHT - TOP - BOTTOM);
    let max = nice_max(bars.iter().map(|b| b.value).filter(|v| v.is_finite()).fold(0.0, f64::max));
    axes(&mut d, LEFT, TOP, plot_w, plot_h, max, y_label);
    let slot = plot_w / bars.len().max(1) as f64;
    for (i, b) in bars.iter().enumerate() {
        let v = if b.value.is_finite() { b.value.max(0.0) } else { 0.0 };
        let h = plot_h * v / max;
        let x = LEFT + slot * i as f64 + slot * 0.15;
        d.rect(x, TOP + plot_h - h, slot * 0.7, h, PALETTE[i % PALETTE.len()]);
        d.text(x + slot * 0.35, TOP + plot_h - h - 6.0, "middle", 11.0, &b.note);
        for (line, text) in b.label.lines().enumerate() {
            d.text(x + slot * 0.35, TOP + plot_h + 18.0 + 14.0 * line as f64, "middle", 11.0, text);
        }
    }
    d.finish()
}

/// Lines through `(x, y)` points, one per series, legend on the right; a
/// log10 x axis when `log_x` (non-positive x are dropped there).
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
    log_x: bool,
) -> String {
    let mut d = Doc::new(WIDTH, HEIGHT, title);
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let tx = |x: f64| if log_x { x.log10() } else { x };
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(x, _)| *x))
        .filter(|x| !log_x || *x > 0.0)
        .map(tx)
        .collect();
    let (mut x_min, mut x_max) =
        xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(*x), b.max(*x)));
    if !x_min.is_finite() {
        (x_min, x_max) = (0.0, 1.0);
    }
    if log_x {
        (x_min, x_max) = (x_min.floor(), x_max.ceil().max(x_min.floor() + 1.0));
    } else {
        (x_min, x_max) = (0.0, nice_max(x_max));
    }
    let y_max = nice_max(series.iter().flat_map(|(_, p)| p.iter().map(|(_, y)| *y)).fold(0.0, f64::max));
    axes(&mut d, LEFT, TOP, plot_w, plot_h, y_max, y_label);
    let px = |x: f64| LEFT + plot_w * (tx(x) - x_min) / (x_max - x_min);
    let py = |y: f64| TOP + plot_h - plot_h * y / y_max;
    let ticks: Vec<f64> = if log_x {
        (x_min as i32..=x_max as i32).map(|e| 10f64.powi(e)).collect()
    } else {
        (0..=4).map(|i| x_max * i as f64 / 4.0).collect()
    };
    for t in ticks {
        let x = px(t);
        d.line(x, TOP + plot_h, x, TOP + plot_h + 5.0, "#000000");
        d.text(x, TOP + plot_h + 18.0, "middle", 11.0, &short(t));
    }
    d.text(LEFT + plot_w / 2.0, HEIGHT - 30.0, "middle", 12.0, x_label);
    for (i, (name, points)) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let pts: Vec<(f64, f64)> =
            points.iter().filter(|(x, _)| !log_x || *x > 0.0).map(|(x, y)| (px(*x), py(*y))).collect();
        d.polyline(&pts, color);
        let ly = TOP + 14.0 + 20.0 * i as f64;
        d.rect(WIDTH - RIGHT + 15.0, ly - 9.0, 14.0, 10.0, color);
        d.text(WIDTH - RIGHT + 35.0, ly, "start", 12.0, name);
    }
    d.finish()
}

/// Y axis with five ticks from 0 to `max`, and the x axis line.
fn axes(d: &mut Doc, left: f64, top: f64, w: f64, h: f64, max: f64, y_label: &str) {
    d.line(left, top, left, top + h, "#000000");
    d.line(left, top + h, left + w, top + h, "#000000");
    for i in 0..=4 {
        let v = max * i as f64 / 4.0;
        let y = top + h - h * i as f64 / 4.0;
        d.line(left - 5.0, y, left, y, "#000000");
        if i > 0 {
            d.line(left, y, left + w, y, "#e0e0e0");
        }
        d.text(left - 8.0, y + 4.0, "end", 11.0, &short(v));
    }
    d.text(18.0, top - 12.0, "start", 12.0, y_label);
}

/// A table: header row, then rows; columns sized by their longest cell.
pub fn table(title: &str, header: &[String], rows: &[Vec<String>]) -> String {
    let char_w = 7.5;
    let widths: Vec<f64> = (0..header.len())
        .map(|c| {
            let longest = std::iter::once(&header[c])
                .chain(rows.iter().filter_map(|r| r.get(c)))
                .map(|s| s.chars().count())
                .max();
            longest.unwrap_or(0) as f64 * char_w + 24.0
        })
        .collect();
    let row_h = 24.0;
    let width = widths.iter().sum::<f64>() + 40.0;
    let height = TOP + row_h * (rows.len() + 1) as f64 + 30.0;
    let mut d = Doc::new(width.max(300.0), height, title);
    for (r, cells) in std::iter::once(header.to_vec()).chain(rows.iter().cloned()).enumerate() {
        let y = TOP + row_h * r as f64;
        d.rect(
            20.0,
            y,
            widths.iter().sum(),
            row_h,
            if r == 0 {
                "#dde6f0"
            } else if r % 2 == 0 {
                "#f4f4f4"
            } else {
                "#ffffff"
            },
        );
        let mut x = 20.0;
        for (c, w) in widths.iter().enumerate() {
            let cell = cells.get(c).map(String::as_str).unwrap_or("");
            if c == 0 {
                d.text(x + 8.0, y + 16.0, "start", 12.0, cell);
            } else {
                d.text(x + w - 8.0, y + 16.0, "end", 12.0, cell);
            }
            x += w;
        }
    }
    d.finish()
}

/// Writes `(file name, SVG text)` figures into `dir` (created if missing);
/// the paths written, in order.
pub fn write_files(dir: &Path, files: &[(String, String)]) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    files
        .iter()
        .map(|(name, svg)| {
            let path = dir.join(name);
            std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
            Ok(path)
        })
        .collect()
}

/// Checks an SVG string: starts with `<svg`, ends with `</svg>`, and every
/// opening tag is closed in order (self-closing tags aside).
pub fn check_well_formed(svg: &str) -> Result<(), String> {
    let trimmed = svg.trim();
    if !trimmed.starts_with("<svg") || !trimmed.ends_with("</svg>") {
        return Err("does not start with <svg and end with </svg>".into());
    }
    let mut stack: Vec<&str> = Vec::new();
    let mut rest = trimmed;
    while let Some(open) = rest.find('<') {
        let close = rest[open..].find('>').ok_or("a tag is not closed with >")? + open;
        let tag = &rest[open + 1..close];
        let name_of = |t: &'_ str| -> String {
            t.split(|c: char| c.is_whitespace() || c == '/').next().unwrap_or("").to_string()
        };
        if let Some(end) = tag.strip_prefix('/') {
            let top = stack.pop().ok_or_else(|| format!("</{end}> closes nothing"))?;
            if name_of(top) != end.trim() {
                return Err(format!("<{}> closed by </{end}>", name_of(top)));
            }
        } else if !tag.ends_with('/') {
            stack.push(tag);
        }
        if rest[open + 1..close].contains('<') {
            return Err("a < inside a tag".into());
        }
        rest = &rest[close + 1..];
    }
    match stack.last() {
        None => Ok(()),
        Some(t) => Err(format!("<{t}> is never closed")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bars() -> Vec<Bar> {
        vec![
            Bar { label: "declog-pmem".into(), value: 1200.0, note: "0.93x".into() },
            Bar { label: "a<b & \"c\"".into(), value: 300.0, note: "".into() },
        ]
    }

    #[test]
    fn every_figure_kind_is_well_formed() {
        let b = bar_chart("Throughput <B>", "txn/s", &bars());
        let l = line_chart(
            "CDF",
            "latency (us)",
            "fraction",
            &[("x".into(), vec![(1.0, 0.1), (100.0, 1.0)]), ("y & z".into(), vec![(0.0, 0.0), (5.0, 1.0)])],
            true,
        );
        let t = table("Recovery", &["variant".into(), "s".into()], &[vec!["a<b".into(), "1.0".into()]]);
        for svg in [&b, &l, &t] {
            assert!(svg.starts_with("<svg"), "{svg}");
            check_well_formed(svg).unwrap_or_else(|e| panic!("{e}: {svg}"));
            let opens = svg.matches("<text").count();
            assert_eq!(opens, svg.matches("</text>").count());
        }
        assert!(b.contains("a&lt;b &amp; &quot;c&quot;") && b.contains("Throughput &lt;B&gt;"));
        assert!(t.contains("a&lt;b"));
        assert_eq!(l.matches("<polyline").count(), 2);
    }

    #[test]
    fn the_checker_finds_broken_structure() {
        assert!(check_well_formed("<svg><g></svg>").is_err());
        assert!(check_well_formed("<svg><text>a</g></text></svg>").is_err());
        assert!(check_well_formed("<svg><rect/></svg>").is_ok());
        assert!(check_well_formed("<html></html>").is_err());
        assert!(check_well_formed("<svg><rect </svg>").is_err());
    }

    #[test]
    fn figures_are_written_to_a_directory_created_on_demand() {
        let dir = tempfile::tempdir().unwrap();
        let files = vec![
            ("a.svg".to_string(), bar_chart("a", "y", &bars())),
            ("b.svg".to_string(), table("b", &[], &[])),
        ];
        let paths = write_files(&dir.path().join("svg"), &files).unwrap();
        assert_eq!(paths, [dir.path().join("svg/a.svg"), dir.path().join("svg/b.svg")]);
        assert!(paths.iter().all(|p| std::fs::read_to_string(p).unwrap().starts_with("<svg")));
    }

    #[test]
    fn axis_maxima_are_round() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(7.0), 10.0);
        assert_eq!(nice_max(1.2), 2.0);
        assert_eq!(nice_max(2300.0), 2500.0);
        assert_eq!(nice_max(50_000.0), 50_000.0);
        // Empty and degenerate inputs still draw.
        check_well_formed(&bar_chart("t", "y", &[])).unwrap();
        check_well_formed(&line_chart("t", "x", "y", &[], false)).unwrap();
    }
}
