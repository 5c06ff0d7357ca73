//! `strata bench oltp --figures DIR`: the sweeps behind taurus.txt section
//! 5's figures, each point a whole [`super::run`] (the variants alternating
//! within each round, medians of the rounds), drawn by [`super::figures`]:
//!
//! - Fig. 5 and 7 (throughput and recovery throughput by worker threads):
//!   here by number of logs, one worker per log, every log device behind
//!   the same bandwidth limit (10 MB/s by default), so the devices and not
//!   the 2 cores bound logging. Serial logging keeps its one log at every
//!   point: the flat baseline of the paper's figures.
//! - Fig. 13 (throughput by Zipf θ) and Fig. 14 (by accesses per
//!   transaction): YCSB with the run's workers and logs, no limit unless
//!   `--log-mbps` asks for one.
//!
//! Every point's rows go into one report (`oltp_figures.json`, rewritten
//! after each point so an interrupted sweep keeps what it measured).

use std::path::PathBuf;

use anyhow::Context;
use serde_json::{json, Map, Value};
use strata_txn::{LoggingKind, MAX_LOGS};

use super::figures;
use super::{parse_variants, OltpOptions, Workload};
use crate::machine::Machine;
use crate::report::BenchReport;
use crate::ycsb_ts::zipf::ZipfianGenerator;

/// The sweeps' variants unless `--variants` names others: the paper's
/// Fig. 5-8 lines we have (Plover aside).
pub const SWEEP_VARIANTS: &str = "serial-data,silo-r,taurus-data,taurus-command";
/// Fig. 5/7's x values: logs (and workers, one per log).
pub const DEFAULT_SWEEP_LOGS: [usize; 4] = [1, 2, 4, 8];
/// Fig. 5/7's bandwidth limit of every log device, MB/s.
pub const DEFAULT_SWEEP_LOGS_MBPS: f64 = 10.0;
/// Fig. 13's x values. The Zipf generator (Gray et al.'s method) takes
/// θ > 0 and θ != 1 (its pole): 0.1 stands in for uniform.
pub const DEFAULT_SWEEP_THETAS: [f64; 5] = [0.1, 0.3, 0.6, 0.9, 1.2];
/// Fig. 14's x values.
pub const DEFAULT_SWEEP_ACCESSES: [usize; 5] = [1, 2, 4, 8, 16];
/// The report of every point, in the figures' directory.
pub const JSON_FILE: &str = "oltp_figures.json";
/// The quick sweep's window per run (`--quick --figures`).
pub const QUICK_SWEEP_WINDOW_MS: u64 = 500;
/// The quick sweep's rounds: the default figures take 4 x 4 + 2 x 5 x 4 = 56
/// runs a round, and a run costs about 1 s (bandwidth-limited) to 3 s
/// (unlimited: 2 GiB of regions touched, hundreds of thousands of
/// transactions recovered) besides its window, so one round takes about
/// 4 minutes on 2 cores; `--rounds 3` gives medians in about 13.
pub const QUICK_SWEEP_ROUNDS: usize = 1;

/// One figure of taurus.txt section 5 the sweeps draw.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Fig {
    /// Fig. 5: throughput by logs (workers).
    ThroughputVsLogs,
    /// Fig. 7: recovery throughput by logs (workers).
    RecoveryVsLogs,
    /// Fig. 13(a): throughput by Zipf θ.
    Theta,
    /// Fig. 13(b): recovery throughput by Zipf θ.
    ThetaRecovery,
    /// Fig. 14: throughput by accesses per transaction.
    Accesses,
}

impl Fig {
    pub const ALL: [Fig; 5] =
        [Fig::ThroughputVsLogs, Fig::RecoveryVsLogs, Fig::Theta, Fig::ThetaRecovery, Fig::Accesses];

    /// The paper's figure: its number, and the panel where it has two.
    pub fn label(self) -> &'static str {
        match self {
            Fig::ThroughputVsLogs => "5",
            Fig::RecoveryVsLogs => "7",
            Fig::Theta => "13",
            Fig::ThetaRecovery => "13b",
            Fig::Accesses => "14",
        }
    }

    pub fn file_name(self) -> &'static str {
        match self {
            Fig::ThroughputVsLogs => "fig5_throughput_vs_logs.svg",
            Fig::RecoveryVsLogs => "fig7_recovery_vs_logs.svg",
            Fig::Theta => "fig13_theta.svg",
            Fig::ThetaRecovery => "fig13b_theta_recovery.svg",
            Fig::Accesses => "fig14_accesses.svg",
        }
    }

    /// The sweep whose points it draws (Fig. 5 and 7 share one).
    pub fn sweep(self) -> Sweep {
        match self {
            Fig::ThroughputVsLogs | Fig::RecoveryVsLogs => Sweep::Logs,
            Fig::Theta | Fig::ThetaRecovery => Sweep::Theta,
            Fig::Accesses => Sweep::Accesses,
        }
    }

    /// `5`, `7`, `13` (its panel a), `13b` or `14` (a `fig` prefix allowed).
    pub fn parse(name: &str) -> anyhow::Result<Fig> {
        let n = name.trim();
        let n = n.strip_prefix("fig").unwrap_or(n).trim_start_matches(['.', ' ']);
        let n = if n == "13a" { "13" } else { n };
        Fig::ALL.into_iter().find(|f| f.label() == n).with_context(|| {
            format!("unknown figure `{name}` (5: throughput by logs, 7: recovery by logs, 13: throughput by Zipf theta, 13b: recovery by Zipf theta, 14: by accesses per transaction)")
        })
    }

    /// A comma-separated list, each figure once, in the order given.
    pub fn parse_list(list: &str) -> anyhow::Result<Vec<Fig>> {
        let mut out = Vec::new();
        for name in list.split(',').filter(|s| !s.trim().is_empty()) {
            let f = Fig::parse(name)?;
            if !out.contains(&f) {
                out.push(f);
            }
        }
        anyhow::ensure!(!out.is_empty(), "no figure named in `{list}`");
        Ok(out)
    }
}

/// What a sweep varies.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Sweep {
    /// Logs, and workers with them (Fig. 5, 7).
    Logs,
    /// YCSB's Zipf θ (Fig. 13).
    Theta,
    /// YCSB's accesses per transaction (Fig. 14).
    Accesses,
}

impl Sweep {
    /// The name in the report's rows (`sweep`) and the row field holding x.
    pub fn name(self) -> &'static str {
        match self {
            Sweep::Logs => "logs",
            Sweep::Theta => "theta",
            Sweep::Accesses => "accesses",
        }
    }
}

/// What `--figures` runs.
#[derive(Clone, Debug)]
pub struct SweepOptions {
    /// What every run shares (workload shape, concurrency control, device,
    /// window, rounds, directories, the child command), and Fig. 13/14's
    /// workers, logs and bandwidth limit. Its variants are replaced at each
    /// point by [`SweepOptions::variants`] with the point's log count.
    pub base: OltpOptions,
    /// Variant names.
    pub variants: Vec<String>,
    /// The figures to draw (the sweeps they need run, each once).
    pub figures: Vec<Fig>,
    /// Fig. 5/7's x values (logs = workers).
    pub logs: Vec<usize>,
    /// Fig. 5/7's bandwidth limit per log device (MB/s; `None`: none).
    pub logs_mbps: Option<f64>,
    /// TPC-C warehouses at Fig. 5/7's points (`None`: one per worker).
    pub warehouses: Option<u32>,
    /// Fig. 13's x values.
    pub thetas: Vec<f64>,
    /// Fig. 14's x values.
    pub accesses: Vec<usize>,
    /// Where the SVG files and [`JSON_FILE`] go.
    pub dir: PathBuf,
}

/// One point of a sweep: its x and the options of its run.
#[derive(Clone, Debug)]
pub struct Point {
    pub sweep: Sweep,
    pub x: f64,
    pub options: OltpOptions,
}

impl SweepOptions {
    /// Every figure with the defaults above, over `base`.
    pub fn new(base: OltpOptions, dir: PathBuf) -> SweepOptions {
        SweepOptions {
            base,
            variants: SWEEP_VARIANTS.split(',').map(String::from).collect(),
            figures: Fig::ALL.to_vec(),
            logs: DEFAULT_SWEEP_LOGS.to_vec(),
            logs_mbps: Some(DEFAULT_SWEEP_LOGS_MBPS),
            warehouses: None,
            thetas: DEFAULT_SWEEP_THETAS.to_vec(),
            accesses: DEFAULT_SWEEP_ACCESSES.to_vec(),
            dir,
        }
    }

    /// The sweeps the figures need, each once, in figure order.
    pub fn sweeps(&self) -> Vec<Sweep> {
        let mut out = Vec::new();
        for f in &self.figures {
            if !out.contains(&f.sweep()) {
                out.push(f.sweep());
            }
        }
        out
    }

    /// A sweep's x values.
    pub fn xs(&self, sweep: Sweep) -> Vec<f64> {
        match sweep {
            Sweep::Logs => self.logs.iter().map(|n| *n as f64).collect(),
            Sweep::Theta => self.thetas.clone(),
            Sweep::Accesses => self.accesses.iter().map(|n| *n as f64).collect(),
        }
    }

    /// Refuses what no run could do, before any runs.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(!self.figures.is_empty(), "no figure to draw");
        anyhow::ensure!(!self.variants.is_empty(), "no variant to run");
        parse_variants(&self.variants.join(","), 1)?;
        anyhow::ensure!(self.base.rounds >= 1 && self.base.workers >= 1, "rounds and workers are at least 1");
        let ycsb = self.base.workload == Workload::Ycsb;
        for sweep in self.sweeps() {
            anyhow::ensure!(!self.xs(sweep).is_empty(), "the {} sweep has no x values", sweep.name());
            match sweep {
                Sweep::Logs => {
                    for n in &self.logs {
                        anyhow::ensure!(
                            (1..=MAX_LOGS).contains(n),
                            "--sweep-logs: {n} logs (1 to {MAX_LOGS})"
                        );
                    }
                    if let Some(m) = self.logs_mbps {
                        anyhow::ensure!(m > 0.0 && m.is_finite(), "--sweep-logs-mbps: {m} MB/s");
                    }
                }
                Sweep::Theta | Sweep::Accesses => {
                    anyhow::ensure!(
                        ycsb,
                        "Fig. 13 and 14 vary YCSB's θ and accesses: not with --workload {}",
                        self.base.workload.name()
                    );
                }
            }
            if sweep == Sweep::Theta {
                for t in &self.thetas {
                    ZipfianGenerator::new(self.base.shape.rows, *t)
                        .map_err(|e| anyhow::anyhow!("--sweep-theta {t}: {e}"))?;
                }
            }
            if sweep == Sweep::Accesses {
                for a in &self.accesses {
                    anyhow::ensure!(
                        *a >= 1 && *a as u64 <= self.base.shape.rows,
                        "--sweep-accesses: {a} accesses (1 to the {} rows)",
                        self.base.shape.rows
                    );
                }
            }
        }
        if let Some(m) = self.base.log_mbps {
            anyhow::ensure!(m > 0.0 && m.is_finite(), "--log-mbps: {m} MB/s");
        }
        Ok(())
    }

    /// Every point of the chosen sweeps, in run order.
    pub fn points(&self) -> anyhow::Result<Vec<Point>> {
        let mut out = Vec::new();
        for sweep in self.sweeps() {
            for x in self.xs(sweep) {
                out.push(Point { sweep, x, options: self.point_options(sweep, x)? });
            }
        }
        Ok(out)
    }

    fn point_options(&self, sweep: Sweep, x: f64) -> anyhow::Result<OltpOptions> {
        let mut o = self.base.clone();
        match sweep {
            Sweep::Logs => {
                let n = x as usize;
                (o.workers, o.logs, o.log_mbps) = (n, n, self.logs_mbps);
                o.tpcc.warehouses = self.warehouses.unwrap_or(n as u32);
            }
            Sweep::Theta => o.shape.theta = x,
            Sweep::Accesses => o.shape.accesses = x as usize,
        }
        o.variants = parse_variants(&self.variants.join(","), o.logs)?;
        if let Some(m) = o.log_mbps {
            let run_s = (o.warmup + o.window).as_secs_f64();
            o.log_capacity_bytes = o.log_capacity_bytes.min(capacity_under_limit(m, run_s));
        }
        Ok(o)
    }
}

/// Bytes per log a device limited to `mbps` can need in one run: what it
/// can write in the warm-up and window (`window_s`) and the time after
/// it, twice over, at least
/// 16 MiB, in whole MiB. (Regions are touched whole before a run: 1 GiB
/// per log would cost more than the run.)
pub fn capacity_under_limit(mbps: f64, window_s: f64) -> u64 {
    const MIB: f64 = (1u64 << 20) as f64;
    let bytes = 2.0 * mbps * 1e6 * (window_s + 2.0);
    (bytes / MIB).ceil().max(16.0) as u64 * (1 << 20)
}

/// Fields of a row that say where the point lies, besides `variant`.
const POINT_FIELDS: [&str; 7] = ["sweep", "workers", "logs", "log_mbps", "theta", "accesses", "warehouses"];

/// Runs every point, writing the JSON after each and the figures after
/// each sweep; the report of all points.
pub fn run_sweeps(o: &SweepOptions) -> anyhow::Result<BenchReport> {
    o.validate()?;
    let points = o.points()?;
    std::fs::create_dir_all(&o.dir).with_context(|| format!("creating {}", o.dir.display()))?;
    let json_path = o.dir.join(JSON_FILE);
    let machine = Machine::detect(
        strata_pmem::PmemMode::Emulated,
        "mapped files (the log regions)",
        strata_pmem::detected_flush_instruction(),
    );
    let mut report = BenchReport::new("oltp-figures", machine, config(o));
    report.columns = POINT_FIELDS.iter().map(|s| s.to_string()).collect();
    report.columns.extend(TABLE_METRICS.iter().map(|s| s.to_string()));
    let started = std::time::Instant::now();
    for (i, p) in points.iter().enumerate() {
        if o.base.print {
            eprintln!(
                "oltp figures: point {}/{} ({:.0} s so far): {} = {}, {} workers, {} logs, {}",
                i + 1,
                points.len(),
                started.elapsed().as_secs_f64(),
                p.sweep.name(),
                p.x,
                p.options.workers,
                p.options.logs,
                match p.options.log_mbps {
                    Some(m) => format!("{m} MB/s per log"),
                    None => "no bandwidth limit".into(),
                }
            );
        }
        let r = super::run(&p.options).with_context(|| format!("the {} sweep at {}", p.sweep.name(), p.x))?;
        for row in r.results {
            report.results.push(point_row(p, row));
        }
        report.write_json(&json_path)?;
        let last_of_sweep = points.get(i + 1).is_none_or(|next| next.sweep != p.sweep);
        if last_of_sweep {
            let files: Vec<_> = figures::draw(o, &report)
                .into_iter()
                .filter(|(name, _)| o.figures.iter().any(|f| f.sweep() == p.sweep && f.file_name() == name))
                .collect();
            for path in crate::svg::write_files(&o.dir, &files)? {
                if o.base.print {
                    eprintln!("oltp figures: wrote {}", path.display());
                }
            }
        }
    }
    report.notes.push(format!(
        "{} points in {:.0} s; every point: the variants alternating within each of {} rounds of {:.1} s, medians",
        points.len(),
        started.elapsed().as_secs_f64(),
        o.base.rounds,
        o.base.window.as_secs_f64()
    ));
    if o.base.print {
        eprintln!("oltp figures: wrote {}", json_path.display());
    }
    Ok(report)
}

/// A variant's medians at a point, with the point's coordinates.
fn point_row(p: &Point, mut row: Map<String, Value>) -> Map<String, Value> {
    let o = &p.options;
    row.insert("sweep".into(), json!(p.sweep.name()));
    row.insert("workers".into(), json!(o.workers));
    row.insert("logs".into(), json!(o.logs));
    if let Some(m) = o.log_mbps {
        row.insert("log_mbps".into(), json!(m));
    }
    if o.workload == Workload::Ycsb {
        row.insert("theta".into(), json!(o.shape.theta));
        row.insert("accesses".into(), json!(o.shape.accesses));
    } else {
        row.insert("warehouses".into(), json!(o.tpcc.warehouses));
    }
    row
}

/// The sweeps as the report's config.
fn config(o: &SweepOptions) -> Value {
    let b = &o.base;
    let mut sweeps = Map::new();
    for s in o.sweeps() {
        let (workers, logs, mbps) = match s {
            Sweep::Logs => (json!("= logs"), json!(o.logs), o.logs_mbps),
            _ => (json!(b.workers), json!(b.logs), b.log_mbps),
        };
        sweeps.insert(
            s.name().into(),
            json!({
                "x": o.xs(s),
                "workers": workers,
                "logs": logs,
                "log_mbps": mbps,
                "figures": o.figures.iter().filter(|f| f.sweep() == s).map(|f| f.label()).collect::<Vec<_>>(),
            }),
        );
    }
    json!({
        "workload": b.workload.name(),
        "variants": o.variants,
        "rows": b.shape.rows,
        "theta": b.shape.theta,
        "accesses": b.shape.accesses,
        "read_ratio": b.shape.read_ratio,
        "cc": b.cc.name(),
        "device": format!("{:?}", b.device).to_lowercase(),
        "window_s": b.window.as_secs_f64(),
        "rounds": b.rounds,
        "sweeps": sweeps,
    })
}

/// The metrics the printed tables show (the JSON has all).
const TABLE_METRICS: [&str; 9] = [
    "throughput_txn_per_s",
    "ratio_to_serial_data",
    "latency_us_p99",
    "abort_ratio",
    "log_bytes_per_txn",
    "cpu_busy_pct",
    "recovery_txn_per_s",
    "recovery_rate_to_serial_data",
    "recovery_parallelism",
];

/// One table per sweep: the point's x, then [`TABLE_METRICS`].
pub fn sweep_tables(report: &BenchReport) -> Vec<BenchReport> {
    [Sweep::Logs, Sweep::Theta, Sweep::Accesses]
        .into_iter()
        .filter_map(|s| {
            let rows: Vec<Map<String, Value>> = report
                .results
                .iter()
                .filter(|r| r.get("sweep").and_then(Value::as_str) == Some(s.name()))
                .map(|r| {
                    let keep =
                        |k: &String| k == "variant" || k == s.name() || TABLE_METRICS.contains(&k.as_str());
                    r.iter().filter(|(k, _)| keep(k)).map(|(k, v)| (k.clone(), v.clone())).collect()
                })
                .collect();
            if rows.is_empty() {
                return None;
            }
            let mut t = BenchReport::new(
                &format!("oltp-figures ({} sweep)", s.name()),
                report.machine.clone(),
                report.config.clone(),
            );
            t.columns = std::iter::once(s.name()).chain(TABLE_METRICS).map(String::from).collect();
            t.results = rows;
            Some(t)
        })
        .collect()
}

/// Whether a variant name is a serial scheme (one log at every point).
pub(crate) fn is_serial(name: &str) -> bool {
    parse_variants(name, 1).ok().and_then(|v| v.first().map(|v| v.kind)) == Some(LoggingKind::Serial)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> SweepOptions {
        let base = OltpOptions::quick(parse_variants("none", 2).unwrap(), 2, 2);
        SweepOptions::new(base, "figs".into())
    }

    #[test]
    fn figure_lists_parse_once_each_in_order() {
        assert_eq!(
            Fig::parse_list("14, fig5,13,5,13b,13a").unwrap(),
            [Fig::Accesses, Fig::ThroughputVsLogs, Fig::Theta, Fig::ThetaRecovery]
        );
        assert_eq!(Fig::parse("fig. 7").unwrap(), Fig::RecoveryVsLogs);
        assert!(Fig::parse_list("").is_err());
        assert!(Fig::parse_list("5,8").unwrap_err().to_string().contains("unknown figure `8`"));
        let names: Vec<_> = Fig::ALL.iter().map(|f| f.file_name()).collect();
        assert_eq!(
            names,
            [
                "fig5_throughput_vs_logs.svg",
                "fig7_recovery_vs_logs.svg",
                "fig13_theta.svg",
                "fig13b_theta_recovery.svg",
                "fig14_accesses.svg"
            ]
        );
    }

    #[test]
    fn the_default_sweeps_are_valid_and_figs_5_and_7_share_one() {
        let mut o = options();
        o.validate().unwrap();
        assert_eq!(o.sweeps(), [Sweep::Logs, Sweep::Theta, Sweep::Accesses]);
        let points = o.points().unwrap();
        assert_eq!(points.len(), 14);
        for p in &points[..4] {
            let n = p.x as usize;
            assert_eq!((p.options.workers, p.options.logs, p.options.log_mbps), (n, n, Some(10.0)));
            // Limited logs need little room: no 1 GiB region touched per log.
            let run_s = (o.base.warmup + o.base.window).as_secs_f64();
            assert_eq!(p.options.log_capacity_bytes, capacity_under_limit(10.0, run_s));
            assert_eq!(p.options.variants.len(), 4);
        }
        for p in &points[4..] {
            assert_eq!((p.options.workers, p.options.logs, p.options.log_mbps), (2, 2, None));
            assert_eq!(p.options.log_capacity_bytes, o.base.log_capacity_bytes);
        }
        o.figures = vec![Fig::RecoveryVsLogs, Fig::ThroughputVsLogs];
        assert_eq!(o.sweeps(), [Sweep::Logs]);
        assert_eq!(o.points().unwrap().len(), 4);
        o.thetas = vec![1.0];
        o.validate().expect("the θ sweep is not run");
        o.figures.push(Fig::Theta);
        assert!(o.validate().is_err(), "θ 1 is the generator's pole");
    }

    #[test]
    fn capacity_under_a_limit_covers_the_run_twice() {
        // 10 MB/s for a 1 s window and 2 s after: 60 MB, in whole MiB.
        assert_eq!(capacity_under_limit(10.0, 1.0), 58 << 20);
        assert!(capacity_under_limit(10.0, 1.0) as f64 >= 2.0 * 10e6 * 3.0);
        assert_eq!(capacity_under_limit(0.5, 0.1), 16 << 20, "at least 16 MiB");
    }
}
