//! The `strata` binary: one subcommand per job. Each subcommand lives in its
//! own module; this file only parses arguments and dispatches.

#![forbid(unsafe_code)]

mod backup;
mod bench;
mod bench_events;
mod bench_logging;
mod bench_oltp;
mod crashtest;
mod engine_hooks;
mod inspect;
mod inspect_logs;
mod open_args;
mod recover;
mod serve;

use clap::{Parser, Subcommand};

/// mimalloc instead of glibc malloc: per-thread free lists without arena
/// growth and trimming syscalls on the write paths.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "strata", version, about = "Strata: a storage engine for DRAM + persistent memory + SSD")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the InfluxDB-compatible HTTP API (127.0.0.1:8086 by default) over
    /// the data directory (./strata-data by default), recovering it first.
    Serve(serve::ServeArgs),
    /// Recover the data directory, print what was found and the time per phase.
    Recover(recover::RecoverArgs),
    /// Dump the logs, the manifest (series index) and the block files readably.
    Inspect(inspect::InspectArgs),
    /// Copy the latest checkpoint (manifest and block files, with CRC32Cs)
    /// into DIR; asks the running server when one holds the data directory.
    Backup(backup::BackupArgs),
    /// Restore a backup into a stopped server's data directory (empty, or --force).
    Restore(backup::RestoreArgs),
    /// Crash-test every commit protocol against the PMem crash simulator and
    /// the fault-injecting file system; exits non-zero on any violation.
    Crashtest(crashtest::CrashtestArgs),
    /// Run a benchmark; prints a table and writes JSON.
    Bench(bench::BenchArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Recover(args) => recover::run(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Backup(args) => backup::run_backup(args),
        Command::Restore(args) => backup::run_restore(args),
        Command::Crashtest(args) => crashtest::run(args),
        Command::Bench(args) => bench::run(args),
    }
}
