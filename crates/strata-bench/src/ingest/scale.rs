//! `--scale quick|default|large`: the size of an ingest run, and the large
//! loads of `--scale large`. A large run is the `--quick` run (its rounds
//! over every variant, queries and all; its bodies streamed as well, so
//! both sides of the ratio pay for generation) followed by one load per variant of
//! 1,000 hosts x 1 day at 10 s (8.64 M rows, 86.4 M values): a fresh
//! instance, an uncounted warm-up of the `--quick` size, the counted load
//! streamed batch by batch from the generator (memory does not grow with
//! the load; [`super::dataset`]), flush, count, the five queries with
//! answers compared across systems (answers of this data set, not the
//! rounds'), peak RSS and the data directory at rest. The rounds' figures
//! and these end up side by side ([`super::scale_report`]).

use std::time::{Duration, Instant};

use super::checks::{Checks, ReferenceAnswers};
use super::dataset::Dataset;
use super::generator::CpuSpec;
use super::queries::{tsbs_queries, TsbsQuery};
use super::runner::{run_variant, IngestOptions, Variant};
use super::warmup::warmup_dataset;
use crate::machine::load_average_1m;

/// The large load's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScaleLoad {
    pub hosts: u32,
    pub rows_per_host: u64,
}

impl ScaleLoad {
    /// 1,000 hosts x 1 day at 10 s: 8.64 M rows, 86.4 M values.
    pub const LARGE: ScaleLoad = ScaleLoad { hosts: 1000, rows_per_host: 8640 };

    pub fn spec(&self, seed: u64) -> CpuSpec {
        CpuSpec::new(seed, self.hosts, self.rows_per_host)
    }
}

/// `--scale`: the run's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// 100 hosts x 1 h (`--quick`).
    Quick,
    /// 100 hosts x 6 h.
    Default,
    /// The quick run, then one [`ScaleLoad::LARGE`] load per variant.
    Large,
}

/// A `--scale` value that is not one of the names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownScale(pub String);

impl std::fmt::Display for UnknownScale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown scale {:?}: expected quick, default or large", self.0)
    }
}

impl std::error::Error for UnknownScale {}

impl std::str::FromStr for Scale {
    type Err = UnknownScale;

    fn from_str(s: &str) -> Result<Scale, UnknownScale> {
        match s.trim() {
            "quick" => Ok(Scale::Quick),
            "default" => Ok(Scale::Default),
            "large" => Ok(Scale::Large),
            other => Err(UnknownScale(other.to_string())),
        }
    }
}

impl IngestOptions {
    /// The preset of `--scale`.
    pub fn at_scale(scale: Scale) -> IngestOptions {
        match scale {
            Scale::Quick => IngestOptions::quick(),
            Scale::Default => IngestOptions::full(),
            Scale::Large => IngestOptions { scale: Some(ScaleLoad::LARGE), ..IngestOptions::quick() },
        }
    }
}

/// What the large loads gave.
pub(super) struct ScaleRun {
    pub spec: CpuSpec,
    pub requests_per_load: u64,
    /// The warm-up before each large load (`None`: no warm-up).
    pub warmup: Option<CpuSpec>,
    /// Per variant, in the rounds' variant order: its large load's figures.
    pub figures: Vec<Vec<(&'static str, f64)>>,
    /// `--queries`: the statements run at scale.
    pub queries: Vec<TsbsQuery>,
    /// Rows in each query's reference answer at scale, and whose it is.
    pub answer_rows: Vec<(&'static str, usize, String)>,
    pub checkpoints_during_load: u64,
    pub notes: Vec<String>,
    pub run_time: Duration,
    pub load_average_1m: [Option<f64>; 2],
}

/// One large load per variant, in the rounds' variant order; failures go
/// to `checks` like the rounds'.
pub(super) fn run_scale_loads(
    variants: &[Variant],
    spec: &CpuSpec,
    opts: &IngestOptions,
    checks: &mut Checks,
    unsettled_loads: &mut u32,
) -> anyhow::Result<ScaleRun> {
    let load_at_start = load_average_1m();
    let started = Instant::now();
    let dataset = Dataset::streamed(spec, opts.batch_lines)?;
    let warmup = warmup_dataset(opts, spec)?;
    if opts.print {
        eprintln!(
            "ingest bench: scale: {} rows ({} hosts x {} rows, {} values) streamed in {} requests of {} lines, one load per system after a warm-up of {} rows",
            dataset.rows(),
            spec.hosts,
            spec.rows_per_host,
            dataset.values(),
            dataset.requests(),
            opts.batch_lines,
            warmup.as_ref().map_or(0, Dataset::rows)
        );
    }
    let mut answers = ReferenceAnswers::default();
    let mut run = ScaleRun {
        spec: spec.clone(),
        requests_per_load: dataset.requests(),
        warmup: warmup.as_ref().map(|w| w.spec.clone()),
        figures: Vec::with_capacity(variants.len()),
        queries: if opts.queries { tsbs_queries(spec, opts.seed) } else { Vec::new() },
        answer_rows: Vec::new(),
        checkpoints_during_load: 0,
        notes: Vec::new(),
        run_time: Duration::ZERO,
        load_average_1m: [load_at_start, None],
    };
    for v in variants {
        if !crate::settle::settle().1 {
            *unsettled_loads += 1;
        }
        let label = format!("scale {}", v.name());
        let result = run_variant(v, &dataset, warmup.as_ref(), opts, &label)?;
        run.figures.push(checks.check(v, &label, &result, dataset.rows(), &mut answers, opts.print));
        run.checkpoints_during_load += result.checkpoints_during_load;
        run.notes.extend(result.notes);
    }
    run.answer_rows = answers.rows();
    run.run_time = started.elapsed();
    run.load_average_1m[1] = load_average_1m();
    Ok(run)
}
