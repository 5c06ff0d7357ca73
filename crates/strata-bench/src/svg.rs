//! The SVG drawing every benchmark's figures share (`ycsb_ts`, `events`,
//! `oltp`): hand-written SVG with no dependency, a bar chart, a line chart
//! (linear or log10 x axis; [`line_chart_with`] adds ticks at given x values,
//! point markers and a second title line) and a table, as strings, and
//! [`write_files`] to put a
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

    fn circle(&mut self, x: f64, y: f64, r: f64, fill: &str) {
        let _ =
            writeln!(self.body, r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r:.1}" fill="{}"/>"#, escape(fill));
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
    line_chart_with(title, x_label, y_label, series, &LineOptions { log_x, ..LineOptions::default() })
}

/// How [`line_chart_with`] draws beyond [`line_chart`]'s defaults.
#[derive(Clone, Debug, Default)]
pub struct LineOptions {
    /// A log10 x axis (non-positive x are dropped).
    pub log_x: bool,
    /// Ticks of the x axis at exactly these values (a sweep's x values),
    /// the axis spanning them; otherwise round ticks from 0 (decades on a
    /// log axis).
    pub x_ticks: Option<Vec<f64>>,
    /// A log10 y axis (non-positive y are dropped): series an order of
    /// magnitude apart stay readable.
    pub log_y: bool,
    /// A dot at every point (sweeps of a few points).
    pub markers: bool,
    /// A second, smaller title line (the machine, the setup).
    pub subtitle: Option<String>,
}

/// [`line_chart`] with [`LineOptions`].
pub fn line_chart_with(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
    o: &LineOptions,
) -> String {
    let (log_x, log_y) = (o.log_x, o.log_y);
    let mut d = Doc::new(WIDTH, HEIGHT, title);
    let top = match &o.subtitle {
        Some(sub) => {
            d.text(WIDTH / 2.0, 46.0, "middle", 12.0, sub);
            TOP + 20.0
        }
        None => TOP,
    };
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - top - BOTTOM);
    let tx = |x: f64| if log_x { x.log10() } else { x };
    let usable = |x: &f64| x.is_finite() && (!log_x || *x > 0.0);
    let xs: Vec<f64> = series.iter().flat_map(|(_, p)| p.iter().map(|(x, _)| *x)).filter(usable).collect();
    let given: Option<Vec<f64>> = o
        .x_ticks
        .as_ref()
        .map(|t| t.iter().copied().filter(usable).collect())
        .filter(|t: &Vec<f64>| !t.is_empty());
    let (mut x_min, mut x_max) = xs
        .iter()
        .chain(given.iter().flatten())
        .map(|x| tx(*x))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
    if !x_min.is_finite() {
        (x_min, x_max) = (0.0, 1.0);
    }
    if given.is_some() {
        // The ticks are the points: a margin so the first and last are off the axes.
        let margin = if x_max > x_min { (x_max - x_min) * 0.05 } else { 0.5 };
        (x_min, x_max) = (x_min - margin, x_max + margin);
    } else if log_x {
        (x_min, x_max) = (x_min.floor(), x_max.ceil().max(x_min.floor() + 1.0));
    } else {
        (x_min, x_max) = (0.0, nice_max(x_max));
    }
    let usable_y = |y: &f64| y.is_finite() && (!log_y || *y > 0.0);
    let ys = || series.iter().flat_map(|(_, p)| p.iter().map(|(_, y)| *y)).filter(usable_y);
    // The y axis as (bottom, top) in drawn units (log10 of y on a log axis).
    let (y_lo, y_hi, y_ticks) = if log_y {
        let lo = ys().map(f64::log10).fold(f64::INFINITY, f64::min);
        let hi = ys().map(f64::log10).fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) =
            if lo.is_finite() { (lo.floor(), hi.ceil().max(lo.floor() + 1.0)) } else { (0.0, 1.0) };
        // Decades; 2 and 5 between them too when there are few.
        let steps: &[f64] = if hi - lo <= 3.0 { &[1.0, 2.0, 5.0] } else { &[1.0] };
        let ticks: Vec<f64> = (lo as i32..=hi as i32)
            .flat_map(|e| steps.iter().map(move |m| m * 10f64.powi(e)))
            .filter(|t| t.log10() <= hi + 1e-9)
            .collect();
        (lo, hi, ticks)
    } else {
        let max = nice_max(ys().fold(0.0, f64::max));
        (0.0, max, (0..=4).map(|i| max * i as f64 / 4.0).collect())
    };
    let ty = |y: f64| if log_y { y.log10() } else { y };
    let label = |t: f64| if log_y { tick_label(t) } else { short(t) };
    let y_ticks: Vec<(f64, String)> =
        y_ticks.into_iter().map(|t| ((ty(t) - y_lo) / (y_hi - y_lo), label(t))).collect();
    axes_at(&mut d, LEFT, top, plot_w, plot_h, &y_ticks, y_label);
    let px = |x: f64| LEFT + plot_w * (tx(x) - x_min) / (x_max - x_min);
    let py = |y: f64| top + plot_h - plot_h * (ty(y) - y_lo) / (y_hi - y_lo);
    let ticks: Vec<(f64, String)> = match &given {
        Some(t) => t.iter().map(|x| (*x, tick_label(*x))).collect(),
        None if log_x => {
            (x_min as i32..=x_max as i32).map(|e| 10f64.powi(e)).map(|t| (t, short(t))).collect()
        }
        None => (0..=4).map(|i| x_max * i as f64 / 4.0).map(|t| (t, short(t))).collect(),
    };
    for (t, label) in ticks {
        let x = px(t);
        d.line(x, top + plot_h, x, top + plot_h + 5.0, "#000000");
        d.text(x, top + plot_h + 18.0, "middle", 11.0, &label);
    }
    d.text(LEFT + plot_w / 2.0, HEIGHT - 30.0, "middle", 12.0, x_label);
    for (i, (name, points)) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let pts: Vec<(f64, f64)> =
            points.iter().filter(|(x, y)| usable(x) && usable_y(y)).map(|(x, y)| (px(*x), py(*y))).collect();
        d.polyline(&pts, color);
        if o.markers {
            for (x, y) in &pts {
                d.circle(*x, *y, 3.5, color);
            }
        }
        let ly = top + 14.0 + 20.0 * i as f64;
        d.rect(WIDTH - RIGHT + 15.0, ly - 9.0, 14.0, 10.0, color);
        d.text(WIDTH - RIGHT + 35.0, ly, "start", 12.0, name);
    }
    d.finish()
}

/// A label for a tick at a given value: integers as integers, others with
/// [`short`]'s digits less trailing zeros (`0.3`, `50k`, `2.5M`; not
/// `0.30`, `50.0k`, `2.50M`).
pub fn tick_label(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e4 {
        return format!("{v:.0}");
    }
    let s = short(v);
    let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &s[digits.len()..];
    if digits.contains('.') {
        format!("{}{suffix}", digits.trim_end_matches('0').trim_end_matches('.'))
    } else {
        s
    }
}

/// Y axis with five ticks from 0 to `max`, and the x axis line.
fn axes(d: &mut Doc, left: f64, top: f64, w: f64, h: f64, max: f64, y_label: &str) {
    let ticks: Vec<(f64, String)> = (0..=4).map(|i| (i as f64 / 4.0, short(max * i as f64 / 4.0))).collect();
    axes_at(d, left, top, w, h, &ticks, y_label);
}

/// Y axis with ticks at `(fraction of the height, label)`, grid lines
/// above the bottom, and the x axis line.
fn axes_at(d: &mut Doc, left: f64, top: f64, w: f64, h: f64, ticks: &[(f64, String)], y_label: &str) {
    d.line(left, top, left, top + h, "#000000");
    d.line(left, top + h, left + w, top + h, "#000000");
    for (f, label) in ticks {
        let y = top + h - h * f;
        d.line(left - 5.0, y, left, y, "#000000");
        if *f > 1e-9 {
            d.line(left, y, left + w, y, "#e0e0e0");
        }
        d.text(left - 8.0, y + 4.0, "end", 11.0, label);
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
    fn a_sweep_chart_has_ticks_at_its_points_markers_and_a_subtitle() {
        let series = vec![
            ("serial-data (1 log)".to_string(), vec![(1.0, 9e3), (2.0, 9.1e3), (4.0, 9e3), (8.0, f64::NAN)]),
            ("taurus-data".to_string(), vec![(1.0, 9e3), (2.0, 18e3), (4.0, 35e3), (8.0, 70e3)]),
        ];
        let o = LineOptions {
            log_x: true,
            log_y: false,
            x_ticks: Some(vec![1.0, 2.0, 4.0, 8.0]),
            markers: true,
            subtitle: Some("2 cores, CPU <x>".into()),
        };
        let svg = line_chart_with("Fig. 5", "logs", "throughput (txn/s)", &series, &o);
        check_well_formed(&svg).unwrap_or_else(|e| panic!("{e}: {svg}"));
        for text in ["Fig. 5", "2 cores, CPU &lt;x&gt;", "logs", "throughput (txn/s)", "serial-data (1 log)"]
        {
            assert!(svg.contains(&format!(">{text}</text>")), "{text}");
        }
        for tick in ["1", "2", "4", "8", "100k"] {
            assert!(svg.contains(&format!(">{tick}</text>")), "tick {tick}");
        }
        assert!(!svg.contains(">10</text>"), "no decade ticks when the ticks are given");
        // The NaN point is skipped, not drawn.
        assert_eq!(svg.matches("<circle").count(), 3 + 4);
        assert!(!svg.contains("NaN"));
        assert_eq!(tick_label(0.3), "0.3");
        assert_eq!(tick_label(1.2), "1.2");
        assert_eq!(tick_label(16.0), "16");
        assert_eq!(tick_label(25_000.0), "25k");
        assert_eq!(tick_label(2.5e6), "2.5M");
        assert_eq!(tick_label(123_000.0), "123k");
        assert_eq!(tick_label(0.125), "0.125");
    }

    #[test]
    fn a_log_y_axis_has_decades_and_drops_what_it_cannot_place() {
        let series = vec![
            ("data".to_string(), vec![(1.0, 8e3), (2.0, 0.0), (4.0, 30e3)]),
            ("command".to_string(), vec![(1.0, 130e3), (2.0, 220e3), (4.0, 300e3)]),
        ];
        let o = LineOptions { log_y: true, markers: true, ..LineOptions::default() };
        let svg = line_chart_with("t", "x", "txn/s (log scale)", &series, &o);
        check_well_formed(&svg).unwrap_or_else(|e| panic!("{e}: {svg}"));
        // 8k to 300k: 1k to 1M, with 2 and 5 between the decades.
        for tick in [">1000<", ">2000<", ">5000<", ">10k<", ">100k<", ">500k<", ">1M<"] {
            assert!(svg.contains(tick), "tick {tick}");
        }
        assert!(!svg.contains(">2M<"), "nothing above the top decade");
        assert_eq!(svg.matches("<circle").count(), 2 + 3, "y = 0 has no place on a log axis");
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
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
