//! `strata bench events`: the micro-benchmarks of chronicledb-pmem.txt
//! section 5 (Fig. 5-9) on the event store (`strata-events`), on emulated
//! PMem (a mapped file in /dev/shm) and an ext4 directory (DESIGN.md
//! section 6: ratios within one run, medians over interleaved rounds, the
//! machine printed, JSON of the shared shape).
//!
//! - [`generator`]: Stock and Sine streams, the OOO arrival model;
//! - `fig5_flank`: right flank on PMem per flush batch vs DRAM, losses, recovery;
//! - `fig6_placements`: aggregates / index nodes on PMem vs the baseline;
//! - `fig7_translation`: DRAM / PMem array / ATT translation in isolation;
//! - `fig8_ooo`: the OOO queues in isolation;
//! - `fig9_stream`: total insertion time of Stock with 1/5/10 % OOO through
//!   the event stream (tree + queue + merges) per queue variant;
//! - `figures`: what the SVG figures show (`--svg-dir`), drawn with [`crate::svg`].

mod fig5_flank;
mod fig6_placements;
mod fig7_translation;
mod fig8_ooo;
mod fig9_stream;
mod figures;
pub mod generator;
mod media;
mod trees;

use std::path::PathBuf;

use serde_json::{json, Map, Value};
use strata_pmem::PmemMode;

use crate::machine::{load_average_1m, load_note, Machine};
use crate::persist::default_disk_dir;
use crate::report::BenchReport;
use media::EventsMedia;

pub use fig5_flank::{DRAM_FLANK, FLUSH_BATCHES};
pub use fig9_stream::{
    queue_bytes_for, OOO_FRACTIONS_PCT, PAPER_QUEUE_BYTES, QUICK_QUEUE_DIVISOR, REFERENCE_VARIANT,
};

/// Events per stream by default (the paper uses 10^8: `--paper-scale`).
pub const DEFAULT_EVENTS: u64 = 10_000_000;
/// Events per stream with `--paper-scale`.
pub const PAPER_SCALE_EVENTS: u64 = 100_000_000;
/// Fig. 9's Stock events with `--quick`.
pub const QUICK_STREAM_EVENTS: u64 = 50_000;
/// Fig. 9's Stock events at most in a full run: 10^7 (a one-pass merge
/// rewrites each leaf from its first late event to the flank once, so a full
/// run of Fig. 9 takes minutes; `--paper-scale` keeps this size).
pub const MAX_STREAM_EVENTS: u64 = DEFAULT_EVENTS;
/// The variant of the acceptance check: the flank's own cost (leaves on
/// tmpfs; on ext4 the per-leaf fdatasync dominates and the ratio is noise).
pub const ACCEPTANCE_VARIANT: &str = "tmpfs/pmem-flank-k25";
/// The same ratio with the leaves on ext4, printed beside the check.
pub const ACCEPTANCE_EXT4_VARIANT: &str = "ext4/pmem-flank-k25";
/// The acceptance threshold of the check (the paper's 0.95, section 5.2).
pub const ACCEPTANCE_MIN_RATIO: f64 = 0.95;

/// Sizes of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct EventsBudget {
    /// Interleaved rounds of every figure.
    pub rounds: u32,
    /// Stock events inserted per Fig. 5 run.
    pub stock_events: u64,
    /// Sine events per Fig. 6 tree.
    pub sine_events: u64,
    pub point_queries: u32,
    pub aggregate_queries: u32,
    pub filter_queries: u32,
    /// Updates and lookups of Fig. 7.
    pub translation_ops: u64,
    /// Fig. 8 queue capacity.
    pub ooo_queue_bytes: u64,
    /// HIT and MISS queries each of Fig. 8.
    pub ooo_queries: u32,
    /// Stock events per Fig. 9 run (every OOO fraction and queue variant).
    pub stream_events: u64,
    /// Fig. 9 queue capacity: [`queue_bytes_for`]`(stream_events, stream_queue_divisor)`.
    pub stream_queue_bytes: u64,
    /// 1 (the paper's 100 MiB per 10^8 events), [`QUICK_QUEUE_DIVISOR`] for `--quick`.
    pub stream_queue_divisor: u64,
    /// Fig. 6's block file on tmpfs instead of the disk (`--quick`: its
    /// per-leaf fdatasync alone could take the quick run past 2 minutes on a
    /// slow disk; the figure is about queries).
    pub fig6_leaves_on_tmpfs: bool,
    pub seed: u64,
}

impl EventsBudget {
    /// The default run with `events` per stream (10^7; 10^8 at paper scale).
    pub fn full(events: u64) -> EventsBudget {
        EventsBudget {
            rounds: 3,
            stock_events: events,
            sine_events: events,
            point_queries: 2_000,
            aggregate_queries: 600,
            filter_queries: 60,
            translation_ops: events.min(10_000_000),
            ooo_queue_bytes: 100 << 20,
            ooo_queries: 200,
            stream_events: events.min(MAX_STREAM_EVENTS),
            stream_queue_bytes: queue_bytes_for(events.min(MAX_STREAM_EVENTS), 1),
            stream_queue_divisor: 1,
            fig6_leaves_on_tmpfs: false,
            seed: 1,
        }
    }

    /// `--quick`: the whole run in well under 2 minutes on 2 cores.
    pub fn quick() -> EventsBudget {
        EventsBudget {
            rounds: 3,
            stock_events: 300_000,
            sine_events: 200_000,
            point_queries: 1_000,
            aggregate_queries: 300,
            filter_queries: 30,
            translation_ops: 300_000,
            ooo_queue_bytes: 8 << 20,
            ooo_queries: 200,
            stream_events: QUICK_STREAM_EVENTS,
            stream_queue_bytes: queue_bytes_for(QUICK_STREAM_EVENTS, QUICK_QUEUE_DIVISOR),
            stream_queue_divisor: QUICK_QUEUE_DIVISOR,
            fig6_leaves_on_tmpfs: true,
            seed: 1,
        }
    }

    /// Sets Fig. 9's stream to `events` events, keeping the queue divisor.
    pub fn with_stream_events(mut self, events: u64) -> EventsBudget {
        self.stream_events = events;
        self.stream_queue_bytes = queue_bytes_for(events, self.stream_queue_divisor);
        self
    }

    /// For tests of the report's shape: a second or two, figures meaningless.
    pub fn tiny() -> EventsBudget {
        EventsBudget {
            rounds: 1,
            stock_events: 3_000,
            sine_events: 3_000,
            point_queries: 20,
            aggregate_queries: 12,
            filter_queries: 6,
            translation_ops: 3_000,
            ooo_queue_bytes: 64 << 10,
            ooo_queries: 10,
            stream_events: 20_000,
            stream_queue_bytes: 8 << 10,
            stream_queue_divisor: 1,
            fig6_leaves_on_tmpfs: true,
            seed: 1,
        }
    }

    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.rounds >= 1, "at least one round");
        anyhow::ensure!(
            self.stock_events >= 1_000 && self.sine_events >= 1_000,
            "at least 1000 events per stream"
        );
        anyhow::ensure!(self.translation_ops >= 100, "at least 100 translation operations");
        anyhow::ensure!(self.ooo_queue_bytes >= 16 << 10, "an OOO queue of at least 16 KiB");
        anyhow::ensure!(self.stream_events >= 10_000, "at least 10000 events per Fig. 9 stream");
        anyhow::ensure!(self.stream_queue_bytes >= 4 << 10, "a Fig. 9 queue of at least 4 KiB");
        anyhow::ensure!(
            self.point_queries >= 1
                && self.aggregate_queries >= 1
                && self.filter_queries >= 1
                && self.ooo_queries >= 1,
            "at least one query of each kind"
        );
        Ok(())
    }
}

/// Which figures to run.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Fig {
    Fig5,
    Fig6,
    Fig7,
    Fig8,
    Fig9,
}

impl Fig {
    pub const ALL: [Fig; 5] = [Fig::Fig5, Fig::Fig6, Fig::Fig7, Fig::Fig8, Fig::Fig9];

    pub fn key(self) -> &'static str {
        match self {
            Fig::Fig5 => "fig5",
            Fig::Fig6 => "fig6",
            Fig::Fig7 => "fig7",
            Fig::Fig8 => "fig8",
            Fig::Fig9 => "fig9",
        }
    }

    /// `fig5` or `5`.
    pub fn parse(s: &str) -> anyhow::Result<Fig> {
        let key = s.trim().to_ascii_lowercase();
        let key = key.strip_prefix("fig").unwrap_or(&key).trim_start_matches('.').trim();
        Fig::ALL
            .into_iter()
            .find(|f| f.key()[3..] == *key)
            .ok_or_else(|| anyhow::anyhow!("unknown figure `{s}` (expected 5, 6, 7, 8 or 9)"))
    }
}

/// Options of [`run_events_bench`].
#[derive(Clone, Debug)]
pub struct EventsOptions {
    pub budget: EventsBudget,
    pub figures: Vec<Fig>,
    pub json_path: Option<PathBuf>,
    pub svg_dir: Option<PathBuf>,
    /// A tmpfs directory for the emulated PMem file.
    pub pmem_dir: PathBuf,
    /// A directory on a disk file system (ext4).
    pub ssd_dir: PathBuf,
    /// Print progress (stderr) and the tables (stdout).
    pub print: bool,
}

impl EventsOptions {
    /// Every figure with `budget`, media in /dev/shm and a disk temp dir.
    pub fn new(budget: EventsBudget) -> EventsOptions {
        EventsOptions {
            budget,
            figures: Fig::ALL.to_vec(),
            json_path: None,
            svg_dir: None,
            pmem_dir: PathBuf::from("/dev/shm"),
            ssd_dir: default_disk_dir(),
            print: true,
        }
    }
}

/// One figure's results.
#[derive(Clone, Debug)]
pub struct Figure {
    /// `fig5` ...
    pub key: &'static str,
    pub title: String,
    /// Rows with variant names without the figure prefix.
    pub rows: Vec<Map<String, Value>>,
    pub columns: Vec<&'static str>,
    pub notes: Vec<String>,
    pub config: Value,
}

/// What a run produced: one table per figure and the combined report.
#[derive(Clone, Debug)]
pub struct EventsRun {
    pub figures: Vec<Figure>,
    /// Every figure's rows, variants named `figN/variant` (the JSON).
    pub report: BenchReport,
    /// `pmem flank k=25 / dram flank insertion rate` (leaves on tmpfs), if Fig. 5 ran.
    pub acceptance_ratio: Option<f64>,
    /// The same with the leaves on ext4.
    pub acceptance_ratio_ext4: Option<f64>,
}

impl EventsRun {
    /// The table of one figure (no machine line).
    pub fn figure_report(&self, fig: &Figure) -> BenchReport {
        let mut r =
            BenchReport::new(&format!("events {}", fig.key), self.report.machine.clone(), fig.config.clone());
        r.results = fig.rows.clone();
        r.columns = fig.columns.iter().map(|c| c.to_string()).collect();
        r.notes = fig.notes.clone();
        r
    }

    /// The acceptance line.
    pub fn acceptance_line(&self) -> Option<String> {
        self.acceptance_ratio.map(|x| {
            format!(
                "pmem flank k=25 / dram flank insertion rate = {x:.3} (need >= {ACCEPTANCE_MIN_RATIO}): {} [leaves on tmpfs; with leaves fdatasynced on ext4: {}]",
                if x >= ACCEPTANCE_MIN_RATIO { "PASS" } else { "FAIL" },
                self.acceptance_ratio_ext4.map_or("-".to_string(), |r| format!("{r:.3}"))
            )
        })
    }

    /// Everything printed: machine line, a table per figure, the acceptance line.
    pub fn render(&self) -> String {
        let mut out = format!("benchmark events: {}\n", self.report.machine.describe());
        for fig in &self.figures {
            out.push('\n');
            out.push_str(&fig.title);
            out.push('\n');
            let table = self.figure_report(fig).render_table();
            // Drop the per-table machine line: printed once above.
            out.push_str(table.split_once('\n').map_or("", |(_, rest)| rest));
        }
        for note in self.report.notes.iter() {
            out.push_str(&format!("  * {note}\n"));
        }
        if let Some(line) = self.acceptance_line() {
            out.push('\n');
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

fn region_bytes(budget: &EventsBudget, figures: &[Fig]) -> anyhow::Result<u64> {
    let mut most = 1 << 20;
    for f in figures {
        let b = match f {
            Fig::Fig5 => fig5_flank::pmem_bytes_needed(budget)?,
            Fig::Fig6 => fig6_placements::pmem_bytes_needed(budget)?,
            Fig::Fig7 => fig7_translation::pmem_bytes_needed(budget)?,
            Fig::Fig8 => fig8_ooo::pmem_bytes_needed(budget),
            Fig::Fig9 => fig9_stream::pmem_bytes_needed(budget)?,
        };
        most = most.max(b);
    }
    Ok(most)
}

/// Runs the figures, prints the tables (if `print`), writes JSON and SVG on request.
pub fn run_events_bench(opts: &EventsOptions) -> anyhow::Result<EventsRun> {
    let budget = &opts.budget;
    budget.check()?;
    BenchReport::check_json_path(opts.json_path.as_deref())?;
    if let Some(dir) = &opts.svg_dir {
        std::fs::create_dir_all(dir)?;
    }
    let load_at_start = load_average_1m();
    let mut media = EventsMedia::open(&opts.pmem_dir, &opts.ssd_dir, region_bytes(budget, &opts.figures)?)?;
    if opts.print && media.ssd_fs_type == "tmpfs" {
        eprintln!("events bench: warning: {} is on tmpfs, not a disk file system", opts.ssd_dir.display());
    }
    let mut figures = Vec::new();
    for f in &opts.figures {
        let fig = match f {
            Fig::Fig5 => fig5_flank::run(&mut media, budget, opts.print)?,
            Fig::Fig6 => fig6_placements::run(&mut media, budget, opts.print)?,
            Fig::Fig7 => fig7_translation::run(&mut media, budget, opts.print)?,
            Fig::Fig8 => fig8_ooo::run(&mut media, budget, opts.print)?,
            Fig::Fig9 => fig9_stream::run(&mut media, budget, opts.print)?,
        };
        figures.push(fig);
    }
    let detail = format!(
        "PMem emulated on a mapped file in {} ({}); SSD: {} ({})",
        media.pmem_dir.display(),
        media.pmem_fs_type,
        media.ssd_dir.display(),
        media.ssd_fs_type
    );
    let machine = Machine::detect(PmemMode::Emulated, detail, media.region.flush_instruction());
    let loads = [load_at_start, load_average_1m()];
    let mut fig_config = Map::new();
    for f in &figures {
        fig_config.insert(f.key.to_string(), f.config.clone());
    }
    let config = json!({
        "rounds": budget.rounds,
        "order": "interleaved: every round runs every variant of a figure once, in the same order (A B A B ...)",
        "statistic": "median over rounds; ratios are taken within a round",
        "seed": budget.seed,
        "pmem_dir": media.pmem_dir,
        "pmem_fs_type": media.pmem_fs_type,
        "ssd_dir": media.ssd_dir,
        "ssd_fs_type": media.ssd_fs_type,
        "flush_delay_ns_per_line": 0,
        "fence_delay_ns": 0,
        "node_bytes": 8192,
        "block_bytes": 32768,
        "spare_permille": 100,
        "load_average_1m": {"start": loads[0], "end": loads[1]},
        "figures": fig_config,
        "not_measured": Vec::<String>::new(),
    });
    let mut report = BenchReport::new("events", machine, config);
    let mut columns: Vec<String> = Vec::new();
    for f in &figures {
        for row in &f.rows {
            let mut row = row.clone();
            let name = row.get("variant").and_then(Value::as_str).unwrap_or("?").to_string();
            row.insert("variant".into(), Value::from(format!("{}/{name}", f.key)));
            report.results.push(row);
        }
        for c in &f.columns {
            if !columns.iter().any(|x| x == c) {
                columns.push(c.to_string());
            }
        }
    }
    report.columns = columns;
    let busy = "other work was running, so absolute figures are noise; compare ratios";
    report.notes = vec![
        load_note(loads, Some(report.machine.cores), busy),
        "pmem is emulated: real clwb/clflushopt + sfence on a tmpfs mapping, no injected delay".into(),
    ];
    let fig5_ratio = |variant: &str| {
        figures
            .iter()
            .find(|f| f.key == "fig5")
            .and_then(|f| f.rows.iter().find(|r| r.get("variant").and_then(Value::as_str) == Some(variant)))
            .and_then(|r| r.get("ratio_to_dram_flank").and_then(Value::as_f64))
    };
    let acceptance_ratio = fig5_ratio(ACCEPTANCE_VARIANT);
    let acceptance_ratio_ext4 = fig5_ratio(ACCEPTANCE_EXT4_VARIANT);
    let run = EventsRun { figures, report, acceptance_ratio, acceptance_ratio_ext4 };
    if opts.print {
        print!("{}", run.render());
    }
    if let Some(path) = &opts.json_path {
        run.report.write_json(path)?;
        if opts.print {
            eprintln!("events bench: wrote {}", path.display());
        }
    }
    if let Some(dir) = &opts.svg_dir {
        let written = crate::svg::write_files(dir, &figures::svgs(&run))?.len();
        if opts.print {
            eprintln!("events bench: wrote {} SVG figures to {}", written, dir.display());
        }
    }
    Ok(run)
}

#[cfg(test)]
mod tests;
