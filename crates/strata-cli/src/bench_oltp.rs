//! `strata bench oltp`: transactional tables per logging scheme (issue 16,
//! taurus.txt section 5; YCSB and TPC-C, 5.1 and 5.5): arguments and the
//! call into `strata_bench::oltp` (one comparison, or with `--figures DIR`
//! the sweeps of Fig. 5, 7, 13 and 14).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use strata_bench::oltp::sweep::{self, SWEEP_VARIANTS};
use strata_bench::oltp::{self, Device, Fig, OltpOptions, SweepOptions, Workload, DEFAULT_VARIANTS};

#[derive(Args)]
pub struct OltpArgs {
    /// A short run: a 20,000-row YCSB table, TPC-C at a tenth of the spec's
    /// population, 1 s windows, 3 rounds (with --figures: 0.5 s windows, 1 round).
    #[arg(long)]
    quick: bool,
    /// Write the JSON report here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// The workload: ycsb, tpcc-payment, tpcc-neworder or tpcc-mix (45 %
    /// New-Order, 43 % Payment, 4 % each Order-Status, Delivery, Stock-Level).
    #[arg(long, default_value = "ycsb")]
    workload: String,
    /// TPC-C warehouses (default: one per worker).
    #[arg(long)]
    warehouses: Option<u32>,
    /// Variants (engines) in round order: none, serial-data, serial-command,
    /// taurus-data, taurus-command, silo-r; fir.txt's engines: dram-nolog
    /// (= none), dram-log (= serial-data), dram-log-ssd (its log on SSD),
    /// fir, fir-full, zen
    /// [default: none,serial-data,serial-command,taurus-data,taurus-command;
    /// with --figures: serial-data,silo-r,taurus-data,taurus-command].
    #[arg(long, alias = "engine")]
    variants: Option<String>,
    /// FIR's checkpoint period in ms (fir, fir-full). fir.txt leaves it
    /// open; at 1 s a checkpoint of the quick TPC-C population takes a few
    /// per cent of one core and recovery scans about a second of versions.
    #[arg(long, default_value_t = 1_000)]
    fir_checkpoint_ms: u64,
    /// Worker threads (each maps to log `worker % logs`; may exceed the cores
    /// when the devices are the bottleneck).
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Logs of the Taurus variants (default: one per worker).
    #[arg(long)]
    logs: Option<usize>,
    /// Where the logs live: pmem (emulated) or ssd.
    #[arg(long, default_value = "pmem")]
    device: String,
    /// Bandwidth limit of every log device in MB/s (recovery reads included;
    /// with --figures: of Fig. 13 and 14's runs).
    #[arg(long)]
    log_mbps: Option<f64>,
    /// YCSB: Zipf theta of the key choice.
    #[arg(long, default_value_t = 0.6)]
    theta: f64,
    /// YCSB: accesses per transaction.
    #[arg(long, default_value_t = 2)]
    accesses: usize,
    /// YCSB: share of accesses that read.
    #[arg(long, default_value_t = 0.5)]
    read_ratio: f64,
    /// YCSB: rows of the table (default 200,000; 20,000 with --quick).
    #[arg(long)]
    rows: Option<u64>,
    /// Rounds; medians are reported (default 3; 1 with --quick --figures).
    #[arg(long)]
    rounds: Option<usize>,
    /// Window of each run in milliseconds (default 3000; 1000 with --quick;
    /// 500 with --quick --figures).
    #[arg(long)]
    window_ms: Option<u64>,
    /// Warm-up before each run's window in milliseconds, not counted
    /// (default 1000; 500 with --quick).
    #[arg(long)]
    warmup_ms: Option<u64>,
    /// Concurrency control of every variant but silo-r (which runs Silo's
    /// OCC): `2pl` (NO_WAIT, Algorithm 1) or `occ` (Algorithm 6).
    #[arg(long, default_value = "2pl")]
    cc: String,
    /// Directory for the emulated PMem regions (default /dev/shm).
    #[arg(long)]
    pmem_dir: Option<PathBuf>,
    /// Directory for the SSD logs (default: the temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Instead: the LV micro-benchmark of Fig. 16 (LV work per transaction
    /// by number of logs, vectorised and element by element).
    #[arg(long)]
    lv_micro: bool,
    /// Instead: sweeps in the shapes of the paper's figures, one whole run per
    /// point, written to DIR as SVG (fig5_throughput_vs_logs.svg,
    /// fig7_recovery_vs_logs.svg, fig13_theta.svg, fig13b_theta_recovery.svg,
    /// fig14_accesses.svg) and all points as oltp_figures.json. Fig. 13 and 14 use --workers, --logs
    /// and --log-mbps; Fig. 5 and 7 their own (below).
    #[arg(long, value_name = "DIR")]
    figures: Option<PathBuf>,
    /// With --figures: which to draw, of 5 (throughput by logs), 7 (recovery
    /// by logs; one sweep serves 5 and 7), 13 (throughput by Zipf theta), 13b
    /// (recovery by Zipf theta; one sweep serves 13 and 13b), 14 (by accesses
    /// per transaction).
    #[arg(long, default_value = "5,7,13,13b,14")]
    draw: String,
    /// With --figures: Fig. 5/7's log counts, one worker per log (serial
    /// variants keep one log).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8")]
    sweep_logs: Vec<usize>,
    /// With --figures: Fig. 5/7's bandwidth limit of every log device in MB/s
    /// (0: none).
    #[arg(long, default_value_t = sweep::DEFAULT_SWEEP_LOGS_MBPS)]
    sweep_logs_mbps: f64,
    /// With --figures: Fig. 13's Zipf thetas (positive, not 1).
    #[arg(long, value_delimiter = ',', default_value = "0.1,0.3,0.6,0.9,1.2")]
    sweep_theta: Vec<f64>,
    /// With --figures: Fig. 14's accesses per transaction.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16")]
    sweep_accesses: Vec<usize>,
}

pub fn run(a: OltpArgs) -> anyhow::Result<()> {
    if a.lv_micro {
        anyhow::ensure!(a.figures.is_none(), "--lv-micro or --figures, not both");
        strata_bench::report::BenchReport::check_json_path(a.json.as_deref())?;
        let report = oltp::lv_micro::run(true)?;
        report.print_table();
        if let Some(p) = &a.json {
            report.write_json(p)?;
        }
        return Ok(());
    }
    strata_bench::report::BenchReport::check_json_path(a.json.as_deref())?;
    if a.figures.is_some() {
        let o = sweep_options(&a)?;
        let report = oltp::run_sweeps(&o)?;
        for table in sweep::sweep_tables(&report) {
            table.print_table();
        }
        if let Some(p) = &a.json {
            report.write_json(p)?;
            eprintln!("oltp figures: wrote {}", p.display());
        }
        return Ok(());
    }
    let o = options(&a, DEFAULT_VARIANTS)?;
    let report = oltp::run(&o)?;
    report.print_table();
    if let Some(p) = &a.json {
        report.write_json(p)?;
        eprintln!("oltp bench: wrote {}", p.display());
    }
    Ok(())
}

/// The options of one comparison (and the sweeps' base), `default_variants`
/// unless `--variants` names others.
fn options(a: &OltpArgs, default_variants: &str) -> anyhow::Result<OltpOptions> {
    let workload = Workload::parse(&a.workload)?;
    let cc = oltp::parse_cc(&a.cc)?;
    let logs = a.logs.unwrap_or(a.workers).max(1);
    let variants = oltp::parse_variants(a.variants.as_deref().unwrap_or(default_variants), logs)?;
    let mut o = if a.quick {
        OltpOptions::quick(variants, a.workers, logs)
    } else {
        OltpOptions::full(variants, a.workers, logs)
    };
    o.cc = cc;
    o.device = match a.device.as_str() {
        "pmem" => Device::Pmem,
        "ssd" => Device::Ssd,
        other => anyhow::bail!("device `{other}` (pmem or ssd)"),
    };
    o.workload = workload;
    if let Some(w) = a.warehouses {
        o.tpcc.warehouses = w;
    }
    o.log_mbps = a.log_mbps;
    o.shape.theta = a.theta;
    o.shape.accesses = a.accesses;
    o.shape.read_ratio = a.read_ratio;
    if let Some(r) = a.rows {
        o.shape.rows = r;
    }
    if let Some(r) = a.rounds {
        o.rounds = r;
    }
    if let Some(ms) = a.window_ms {
        o.window = Duration::from_millis(ms);
    }
    if let Some(ms) = a.warmup_ms {
        o.warmup = Duration::from_millis(ms);
    }
    o.pmem_dir = a.pmem_dir.clone();
    o.dir = a.dir.clone();
    o.fir_checkpoint_every = Duration::from_millis(a.fir_checkpoint_ms);
    Ok(o)
}

/// `--figures DIR` and the sweep options.
fn sweep_options(a: &OltpArgs) -> anyhow::Result<SweepOptions> {
    let dir = a.figures.clone().context("--figures DIR")?;
    let mut base = options(a, SWEEP_VARIANTS)?;
    if a.quick && a.window_ms.is_none() {
        base.window = Duration::from_millis(sweep::QUICK_SWEEP_WINDOW_MS);
    }
    if a.quick && a.rounds.is_none() {
        base.rounds = sweep::QUICK_SWEEP_ROUNDS;
    }
    let mut o = SweepOptions::new(base, dir);
    o.variants = o.base.variants.iter().map(|v| v.name.clone()).collect();
    o.figures = Fig::parse_list(&a.draw)?;
    o.logs = a.sweep_logs.clone();
    o.logs_mbps = (a.sweep_logs_mbps != 0.0).then_some(a.sweep_logs_mbps);
    o.warehouses = a.warehouses;
    o.thetas = a.sweep_theta.clone();
    o.accesses = a.sweep_accesses.clone();
    o.validate()?;
    Ok(o)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        oltp: OltpArgs,
    }

    fn parse(args: &[&str]) -> anyhow::Result<SweepOptions> {
        let cli = Cli::try_parse_from(std::iter::once("oltp").chain(args.iter().copied()))?;
        sweep_options(&cli.oltp)
    }

    #[test]
    fn figures_take_the_sweep_defaults() {
        let o = parse(&["--figures", "/tmp/figs", "--quick"]).unwrap();
        assert_eq!(o.dir, PathBuf::from("/tmp/figs"));
        assert_eq!(o.figures, Fig::ALL);
        assert_eq!(o.variants, ["serial-data", "silo-r", "taurus-data", "taurus-command"]);
        assert_eq!(o.logs, [1, 2, 4, 8]);
        assert_eq!(o.logs_mbps, Some(10.0));
        assert_eq!(o.thetas, [0.1, 0.3, 0.6, 0.9, 1.2]);
        assert_eq!(o.accesses, [1, 2, 4, 8, 16]);
        assert_eq!(o.base.window, Duration::from_millis(sweep::QUICK_SWEEP_WINDOW_MS));
        assert_eq!(o.base.rounds, 1, "the quick sweep: one round");
        let full = parse(&["--figures", "/tmp/figs", "--rounds", "3"]).unwrap();
        assert_eq!(
            (full.base.window, full.base.rounds, full.base.shape.rows),
            (Duration::from_secs(3), 3, 200_000)
        );
        assert_eq!((o.base.workers, o.base.logs, o.base.log_mbps), (2, 2, None));
        // Fig. 5/7: one worker per log, each log limited; serial keeps one log.
        let points = o.points().unwrap();
        assert_eq!(points.len(), 4 + 5 + 5);
        let p8 = &points[3].options;
        assert_eq!((p8.workers, p8.logs, p8.log_mbps), (8, 8, Some(10.0)));
        assert_eq!(p8.variants[0].kind.logs(), 1, "serial-data: one log");
        assert_eq!(p8.variants[2].kind.logs(), 8, "taurus-data: one per worker");
        let theta = &points[4 + 4].options;
        assert_eq!((theta.workers, theta.logs, theta.log_mbps, theta.shape.theta), (2, 2, None, 1.2));
        assert_eq!(points.last().unwrap().options.shape.accesses, 16);
    }

    #[test]
    fn sweep_options_follow_the_flags() {
        let o = parse(&[
            "--figures",
            "out",
            "--draw",
            "13,fig7",
            "--variants",
            "none,taurus-command",
            "--sweep-logs",
            "2,4",
            "--sweep-logs-mbps",
            "0",
            "--sweep-theta",
            "0.5,0.99",
            "--workers",
            "3",
            "--log-mbps",
            "20",
            "--window-ms",
            "100",
            "--rounds",
            "1",
        ])
        .unwrap();
        assert_eq!(o.figures, [Fig::Theta, Fig::RecoveryVsLogs]);
        assert_eq!(o.variants, ["none", "taurus-command"]);
        assert_eq!((o.logs.as_slice(), o.logs_mbps), (&[2, 4][..], None));
        assert_eq!(o.thetas, [0.5, 0.99]);
        assert_eq!((o.base.workers, o.base.logs, o.base.log_mbps), (3, 3, Some(20.0)));
        assert_eq!((o.base.window, o.base.rounds), (Duration::from_millis(100), 1));
        // Fig. 13 first (the order asked), then the logs sweep Fig. 7 needs; no Fig. 14 sweep.
        let points = o.points().unwrap();
        let xs: Vec<(&str, f64)> = points.iter().map(|p| (p.sweep.name(), p.x)).collect();
        assert_eq!(xs, [("theta", 0.5), ("theta", 0.99), ("logs", 2.0), ("logs", 4.0)]);
        assert_eq!(points[2].options.log_mbps, None);
    }

    #[test]
    fn impossible_sweeps_are_refused_before_any_run() {
        for (args, what) in [
            (&["--figures", "d", "--draw", "6"][..], "unknown figure"),
            (&["--figures", "d", "--sweep-theta", "1.0"][..], "theta"),
            (&["--figures", "d", "--sweep-theta=-0.5"][..], "theta"),
            (&["--figures", "d", "--sweep-logs", "0"][..], "logs"),
            (&["--figures", "d", "--sweep-logs", "17"][..], "logs"),
            (&["--figures", "d", "--sweep-accesses", "0"][..], "accesses"),
            (&["--figures", "d", "--workload", "tpcc-payment"][..], "YCSB"),
            (&["--figures", "d", "--variants", "plover"][..], "variant"),
        ] {
            let e = parse(args).expect_err(what).to_string();
            assert!(e.contains(what), "{args:?}: {e}");
        }
        // TPC-C is fine for Fig. 5/7 alone.
        let o = parse(&["--figures", "d", "--workload", "tpcc-payment", "--draw", "5,7"]).unwrap();
        assert_eq!(o.points().unwrap()[2].options.tpcc.warehouses, 4, "one warehouse per worker");
    }
}
