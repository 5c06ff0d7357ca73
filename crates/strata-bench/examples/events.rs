//! `strata bench events` without the CLI: the micro-benchmarks of
//! chronicledb-pmem.txt section 5 (Fig. 5-9).
//!
//! cargo run --release -p strata-bench --example events -- [--quick] [--paper-scale]
//!     [--events N] [--rounds N] [--figures 5,6,7,8,9] [--json PATH] [--svg-dir DIR]
//!     [--pmem-dir /dev/shm] [--ssd-dir DIR]

use std::path::PathBuf;

use strata_bench::events::{
    run_events_bench, EventsBudget, EventsOptions, Fig, DEFAULT_EVENTS, PAPER_SCALE_EVENTS,
};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().any(|a| a == name);
    let value = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let events = match value("--events") {
        Some(v) => v.parse()?,
        None if flag("--paper-scale") => PAPER_SCALE_EVENTS,
        None => DEFAULT_EVENTS,
    };
    let mut budget = if flag("--quick") { EventsBudget::quick() } else { EventsBudget::full(events) };
    if flag("--quick") && value("--events").is_some() {
        budget.stock_events = events;
        budget.sine_events = events;
        budget = budget.with_stream_events(events);
    }
    if let Some(r) = value("--rounds") {
        budget.rounds = r.parse()?;
    }
    let mut o = EventsOptions::new(budget);
    if let Some(f) = value("--figures") {
        o.figures = f.split(',').map(Fig::parse).collect::<anyhow::Result<_>>()?;
    }
    o.json_path = value("--json").map(PathBuf::from);
    o.svg_dir = value("--svg-dir").map(PathBuf::from);
    if let Some(d) = value("--pmem-dir") {
        o.pmem_dir = d.into();
    }
    if let Some(d) = value("--ssd-dir") {
        o.ssd_dir = d.into();
    }
    run_events_bench(&o)?;
    Ok(())
}
