//! `strata bench events`: the event store micro-benchmarks of
//! chronicledb-pmem.txt section 5 (Fig. 5-9): arguments and the call into
//! `strata_bench::events`.

use std::path::PathBuf;

use clap::Args;
use strata_bench::events::{
    run_events_bench, EventsBudget, EventsOptions, Fig, DEFAULT_EVENTS, PAPER_SCALE_EVENTS,
};

#[derive(Args)]
pub struct EventsArgs {
    /// A short run: 3*10^5 Stock / 2*10^5 Sine events, 3*10^5 translation
    /// operations, an 8 MiB OOO queue (Fig. 8); Fig. 9 streams of 5*10^4 Stock
    /// events with a queue of 100 MiB per 10^8 events / 2 (so it merges).
    #[arg(long)]
    quick: bool,
    /// Events per stream (default 10^7; 10^8 with --paper-scale).
    #[arg(long)]
    events: Option<u64>,
    /// The paper's 10^8 events per stream.
    #[arg(long)]
    paper_scale: bool,
    /// Interleaved rounds per figure (default 3).
    #[arg(long)]
    rounds: Option<u32>,
    /// Figures to run (default 5,6,7,8,9).
    #[arg(long, value_delimiter = ',')]
    figures: Vec<String>,
    /// Write the JSON report here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write SVG figures into this directory.
    #[arg(long)]
    svg_dir: Option<PathBuf>,
    /// A tmpfs directory for the emulated PMem file.
    #[arg(long, default_value = "/dev/shm")]
    pmem_dir: PathBuf,
    /// A directory on a disk file system (ext4); default: a temporary directory on disk.
    #[arg(long)]
    ssd_dir: Option<PathBuf>,
}

impl EventsArgs {
    pub fn options(self) -> anyhow::Result<EventsOptions> {
        let events = match self.events {
            Some(n) => n,
            None if self.paper_scale => PAPER_SCALE_EVENTS,
            None => DEFAULT_EVENTS,
        };
        let mut budget = if self.quick { EventsBudget::quick() } else { EventsBudget::full(events) };
        if self.quick && self.events.is_some() {
            budget.stock_events = events;
            budget.sine_events = events;
            budget = budget.with_stream_events(events);
        }
        if let Some(r) = self.rounds {
            budget.rounds = r;
        }
        let mut o = EventsOptions::new(budget);
        if !self.figures.is_empty() {
            o.figures = self.figures.iter().map(|f| Fig::parse(f)).collect::<anyhow::Result<_>>()?;
        }
        o.json_path = self.json;
        o.svg_dir = self.svg_dir;
        o.pmem_dir = self.pmem_dir;
        if let Some(d) = self.ssd_dir {
            o.ssd_dir = d;
        }
        Ok(o)
    }
}

/// Runs the benchmark: prints the tables, writes JSON and SVG on request.
pub fn run(args: EventsArgs) -> anyhow::Result<()> {
    run_events_bench(&args.options()?)?;
    Ok(())
}
