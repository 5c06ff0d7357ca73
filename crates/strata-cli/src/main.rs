//! The `strata` binary: one subcommand per job. Each subcommand lives in its
//! own module; this file only parses arguments and dispatches.

mod bench;
mod crashtest;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "strata", version, about = "Strata: a storage engine for DRAM + persistent memory + SSD")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Crash-test every commit protocol against the PMem crash simulator and
    /// the fault-injecting file system; exits non-zero on any violation.
    Crashtest(crashtest::CrashtestArgs),
    /// Run a benchmark; prints a table and writes JSON.
    Bench(bench::BenchArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Crashtest(args) => crashtest::run(args),
        Command::Bench(args) => bench::run(args),
    }
}
