//! `strata bench oltp`: transactional tables per logging scheme (issue 16,
//! taurus.txt section 5; YCSB and TPC-C, 5.1 and 5.5): arguments and the
//! call into `strata_bench::oltp`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use strata_bench::oltp::{self, Device, OltpOptions, Workload, DEFAULT_VARIANTS};

#[derive(Args)]
pub struct OltpArgs {
    /// A short run: a 20,000-row YCSB table, TPC-C at a tenth of the spec's
    /// population, 1 s windows, 3 rounds.
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
    /// Variants in round order: none, serial-data, serial-command, taurus-data, taurus-command, silo-r.
    #[arg(long, default_value = DEFAULT_VARIANTS)]
    variants: String,
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
    /// Bandwidth limit of every log device in MB/s (recovery reads included).
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
    /// Rounds; medians are reported.
    #[arg(long)]
    rounds: Option<usize>,
    /// Window of each run in milliseconds (default 3000; 1000 with --quick).
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
}

pub fn run(a: OltpArgs) -> anyhow::Result<()> {
    if a.lv_micro {
        strata_bench::report::BenchReport::check_json_path(a.json.as_deref())?;
        let report = oltp::lv_micro::run(true)?;
        report.print_table();
        if let Some(p) = &a.json {
            report.write_json(p)?;
        }
        return Ok(());
    }
    let workload = Workload::parse(&a.workload)?;
    let cc = oltp::parse_cc(&a.cc)?;
    let logs = a.logs.unwrap_or(a.workers).max(1);
    let variants = oltp::parse_variants(&a.variants, logs)?;
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
    o.pmem_dir = a.pmem_dir;
    o.dir = a.dir;
    strata_bench::report::BenchReport::check_json_path(a.json.as_deref())?;
    let report = oltp::run(&o)?;
    report.print_table();
    if let Some(p) = &a.json {
        report.write_json(p)?;
        eprintln!("oltp bench: wrote {}", p.display());
    }
    Ok(())
}
