//! `strata inspect`: a readable account of a data directory without
//! changing it. By default a summary: per commit log present (the DecLog
//! files of `declog-ssd` and `declog-pmem`, the PMem pool's serial log, the
//! SSD serial log) its records, bytes, points, series and time range, and
//! its first `--max-records` records; the manifest (checkpoint, counts);
//! one line per block file. `--series` adds the per-series lists: the
//! series each log touches, the manifest's series index and every block.

use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use strata_engine::config::{Config, Protocol};
use strata_log::LogRecord;
use strata_media::fs::{FileSystem, RealFs};
use strata_pmem::{Region, RegionOffset};
use strata_series::block_file::{describe_block_file, parse_block_file_name, BlockFile};
use strata_series::manifest::{describe_manifest, read_manifest, Manifest};

use crate::inspect_logs::{describe_wal_record, read_declog, summarize_declog, summarize_wal, LogSummary};
use crate::open_args::OpenArgs;

#[derive(Args)]
pub struct InspectArgs {
    #[command(flatten)]
    open: OpenArgs,
    /// Print at most this many records per log (0: the summaries only).
    #[arg(long, default_value_t = 50)]
    max_records: usize,
    /// Also list every series: per log, in the manifest's index, per block.
    #[arg(long)]
    series: bool,
}

fn print_log(title: &str, summary: &LogSummary, lines: &[String], args: &InspectArgs) {
    println!("{title}: {summary}");
    for line in lines {
        println!("{line}");
    }
    if summary.records > lines.len() && !lines.is_empty() {
        println!("  ... {} more records (--max-records)", summary.records - lines.len());
    }
    if args.series && !summary.series.is_empty() {
        print!("  series in this log:\n{}", summary.series_lines());
    }
}

/// A serial log's records; `manifest` tells which a checkpoint covers.
fn print_wal(
    title: &str,
    protocol: Protocol,
    records: &[LogRecord],
    manifest: Option<&Manifest>,
    args: &InspectArgs,
) {
    let checkpoint_lsn = manifest.filter(|m| m.protocol == protocol.name()).map(|m| m.checkpoint_lsn);
    let lines: Vec<String> = records.iter().take(args.max_records).map(describe_wal_record).collect();
    print_log(title, &summarize_wal(records, checkpoint_lsn), &lines, args);
}

/// The DecLog files of both DecLog protocols, whichever exist.
fn inspect_declog(config: &Config, manifest: Option<&Manifest>, args: &InspectArgs) -> anyhow::Result<()> {
    for protocol in [Protocol::DeclogSsd, Protocol::DeclogPmem] {
        let path = config.declog_path(protocol);
        if !path.exists() {
            continue;
        }
        let title = format!("\nDecLog log ({}) {}", protocol.name(), path.display());
        let log = read_declog(&path)?;
        let Some(parsed) = log.parsed else {
            println!("{title}: {} bytes, never formatted", log.file_bytes);
            continue;
        };
        let cut: Vec<u64> = manifest
            .filter(|m| m.protocol == protocol.name())
            .map(|m| m.declog_cut.clone())
            .unwrap_or_default();
        println!(
            "{title}: {} bytes, {} streams, epoch {}, {} complete transactions, {} incomplete (dropped)",
            log.file_bytes,
            parsed.streams.len(),
            parsed.epoch,
            parsed.complete_txns,
            parsed.discarded_txns.len()
        );
        for (i, s) in parsed.streams.iter().enumerate() {
            println!(
                "  stream {i}: head {} end {} ({} bytes), {} batches, {} torn",
                s.head,
                s.end,
                s.end.saturating_sub(s.head),
                s.batches,
                s.torn_batches
            );
        }
        let (summary, lines) = summarize_declog(&parsed, &cut, args.max_records);
        print_log("  entries", &summary, &lines, args);
    }
    Ok(())
}

pub fn run(args: InspectArgs) -> anyhow::Result<()> {
    let config = args.open.load()?;
    println!("data directory {}", config.data_dir.display());
    let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
    let series = config.series_dir();
    let manifest = read_manifest(fs.as_ref(), &series)?;

    inspect_declog(&config, manifest.as_ref(), &args)?;
    // The PMem log: opened from a private copy of the pool, so inspecting never writes.
    let pool = config.pool_path();
    if pool.exists() {
        let image = std::fs::read(&pool).with_context(|| format!("reading {}", pool.display()))?;
        let region = Arc::new(Region::sim_from_image(image));
        let magic = region.load_u64(RegionOffset(strata_engine::pool::POOL_OFFSET_MAGIC));
        println!("\nPMem pool {} ({} bytes, magic {magic:#018x})", pool.display(), region.len());
        match strata_engine::pool::open_pool_log(region, config.pmem.log_bytes) {
            Ok((_, records, _)) => {
                print_wal("PMem log (serial-pmem)", Protocol::SerialPmem, &records, manifest.as_ref(), &args)
            }
            Err(e) => println!("  cannot open the PMem log: {e}"),
        }
    }
    let wal = config.wal_dir();
    if wal.exists() {
        // Copy the segments so that opening (which may cut a torn tail) changes nothing.
        let scratch = tempfile::tempdir()?;
        for entry in std::fs::read_dir(&wal)? {
            let p = entry?.path();
            std::fs::copy(&p, scratch.path().join(p.file_name().expect("file")))?;
        }
        match strata_log::SerialLog::open_ssd(fs.clone(), scratch.path(), Default::default()) {
            Ok((_, records)) => {
                let title = format!("\nSSD log (serial-ssd) {}", wal.display());
                print_wal(&title, Protocol::SerialSsd, &records, manifest.as_ref(), &args)
            }
            Err(e) => println!("\nSSD log {}: cannot open: {e}", wal.display()),
        }
    }

    match &manifest {
        Some(m) if args.series => println!("\n{}", describe_manifest(m)),
        Some(m) => println!(
            "\nmanifest: checkpoint {} at LSN {}, protocol {:?}, {} databases, {} series, {} block files, {} tombstones (--series lists the series)",
            m.checkpoint_seq,
            m.checkpoint_lsn,
            m.protocol,
            m.databases.len(),
            m.series.len(),
            m.block_files.len(),
            m.tombstones.len()
        ),
        None => println!("\nno manifest in {} (never checkpointed)", series.display()),
    }
    if series.exists() {
        let mut files: Vec<_> = fs
            .list_dir(&series)?
            .into_iter()
            .filter(|p| p.file_name().and_then(|n| n.to_str()).and_then(parse_block_file_name).is_some())
            .collect();
        files.sort();
        for p in files {
            match BlockFile::open(fs.clone(), &p) {
                Ok(f) if args.series => println!("\n{}", describe_block_file(&f)),
                Ok(f) => {
                    let entries = f.entries();
                    let points: u64 = entries.iter().map(|e| u64::from(e.point_count)).sum();
                    let range =
                        entries.iter().map(|e| e.min_ts).min().zip(entries.iter().map(|e| e.max_ts).max());
                    let range =
                        range.map_or("no points".to_string(), |(a, b)| format!("time range [{a}, {b}]"));
                    println!(
                        "block file {}: seq {}, {} bytes, {} blocks, {points} points, {range}",
                        p.display(),
                        f.seq(),
                        f.len_bytes(),
                        entries.len()
                    );
                }
                Err(e) => println!("\n{}: {e}", p.display()),
            }
        }
    }
    Ok(())
}
