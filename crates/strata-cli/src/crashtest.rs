//! `strata crashtest`: runs the crash suite and prints one line per protocol
//! and medium, exactly
//! `CRASHTEST protocol=<name> medium=<pmem|ssd> images=<n> lost=<n> partial=<n> order_violations=<n>`,
//! then exits non-zero if any count other than images is non-zero. A failure
//! is printed with the seed, point and image that reproduce it.

use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;
use strata_crashtest::suite::{reproduce, run_suite};
use strata_crashtest::{SuiteOptions, SuiteTarget};

#[derive(Args)]
pub struct CrashtestArgs {
    /// Seed of every workload and image sample (printed with each failure).
    #[arg(long, default_value_t = 0x5eed)]
    seed: u64,
    /// CI-sized workloads (seconds instead of minutes).
    #[arg(long)]
    quick: bool,
    /// Cap on images per protocol and medium.
    #[arg(long)]
    images: Option<u64>,
    /// Run only these targets (repeatable): serial/pmem, serial/ssd, halloc/pmem.
    #[arg(long = "only")]
    only: Vec<String>,
    /// Replay one failing image: `POINT:IMAGE` from a failure report (needs
    /// exactly one `--only`, and the same --seed and --quick as the failing run).
    #[arg(long)]
    reproduce: Option<String>,
    /// Threads checking images.
    #[arg(long)]
    threads: Option<usize>,
}

fn targets(only: &[String]) -> anyhow::Result<Vec<SuiteTarget>> {
    if only.is_empty() {
        return Ok(SuiteTarget::ALL.to_vec());
    }
    only.iter()
        .map(|l| {
            SuiteTarget::parse(l).with_context(|| {
                let known: Vec<_> = SuiteTarget::ALL.iter().map(|t| t.label()).collect();
                format!("unknown target `{l}`; known: {}", known.join(", "))
            })
        })
        .collect()
}

pub fn run(args: CrashtestArgs) -> anyhow::Result<()> {
    let mut options =
        SuiteOptions { seed: args.seed, quick: args.quick, images: args.images, ..Default::default() };
    if let Some(t) = args.threads {
        options.threads = t.max(1);
    }
    let targets = targets(&args.only)?;
    if let Some(spec) = &args.reproduce {
        let [target] = targets.as_slice() else { bail!("--reproduce needs exactly one --only target") };
        let (point, image) = spec.split_once(':').context("--reproduce takes POINT:IMAGE")?;
        let (counts, why) = reproduce(*target, &options, point.parse()?, image.parse()?);
        println!(
            "{} seed={} point={point} image={image}: {counts:?} {}",
            target.label(),
            args.seed,
            why.unwrap_or_default()
        );
        if !counts.is_clean() {
            std::process::exit(1);
        }
        return Ok(());
    }
    let started = Instant::now();
    let mut total_images = 0;
    let reports = run_suite(&options, &targets, |r| {
        println!("{}", r.line());
        total_images += r.images;
    });
    eprintln!(
        "crashtest: {total_images} images in {:.1} s (seed {}{})",
        started.elapsed().as_secs_f64(),
        args.seed,
        if args.quick { ", quick" } else { "" }
    );
    let mut failed = false;
    for (target, r) in targets.iter().zip(&reports) {
        if let Some(f) = &r.first_failure {
            failed = true;
            eprintln!(
                "FAILED {}: {f}\n  reproduce: strata crashtest --only {} --seed {}{} --reproduce {}:{}",
                target.label(),
                target.label(),
                f.seed,
                if args.quick { " --quick" } else { "" },
                f.point,
                f.image
            );
        }
    }
    if failed {
        std::process::exit(1);
    }
    Ok(())
}
