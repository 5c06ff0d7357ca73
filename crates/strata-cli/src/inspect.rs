//! `strata inspect`: a readable dump of a data directory without changing
//! it: the PMem pool header and log records, the SSD log records, the
//! manifest (series index) and every block file's index.

use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use strata_log::LogRecord;
use strata_media::fs::{FileSystem, RealFs};
use strata_pmem::{Region, RegionOffset, RegionOptions};
use strata_series::block_file::{describe_block_file, parse_block_file_name, BlockFile};
use strata_series::manifest::{describe_manifest, read_manifest};
use strata_series::wal::WalRecord;

use crate::open_args::OpenArgs;

#[derive(Args)]
pub struct InspectArgs {
    #[command(flatten)]
    open: OpenArgs,
    /// Print at most this many log records per log.
    #[arg(long, default_value_t = 50)]
    max_records: usize,
}

fn describe_record(r: &LogRecord) -> String {
    let body = match WalRecord::decode(&r.payload) {
        Ok(WalRecord::CreateDatabase { db }) => format!("CREATE DATABASE {db}"),
        Ok(WalRecord::Write { db, new_series, points }) => {
            let mut s = format!("WRITE db={db} points={} new_series={}", points.len(), new_series.len());
            for n in new_series.iter().take(3) {
                s += &format!("\n      new {} {} {}", n.id, n.key, n.field_type.influx_name());
            }
            for (id, ts, v) in points.iter().take(3) {
                s += &format!("\n      {id} t={ts} {v:?}");
            }
            s
        }
        Ok(WalRecord::Delete { db, series, range }) => {
            format!("DELETE db={db} series={} range=[{}, {}]", series.len(), range.min_ns, range.max_ns)
        }
        Ok(WalRecord::DropMeasurement { db, measurement }) => {
            format!("DROP MEASUREMENT db={db} {measurement}")
        }
        Err(e) => format!("undecodable payload: {e}"),
    };
    format!("  LSN {:>12} {} {} bytes: {body}", r.lsn.0, r.txn, r.payload.len())
}

fn print_records(title: &str, records: &[LogRecord], max: usize) {
    println!("{title}: {} committed records", records.len());
    for r in records.iter().take(max) {
        println!("{}", describe_record(r));
    }
    if records.len() > max {
        println!("  ... {} more", records.len() - max);
    }
}

pub fn run(args: InspectArgs) -> anyhow::Result<()> {
    let config = args.open.load()?;
    println!("data directory {}", config.data_dir.display());
    // The PMem log: opened from a private copy of the pool, so inspecting never writes.
    let pool = config.pool_path();
    if pool.exists() {
        let image = std::fs::read(&pool).with_context(|| format!("reading {}", pool.display()))?;
        let region = Arc::new(Region::sim_from_image(image));
        let _ = RegionOptions::new(strata_pmem::PmemMode::Sim, region.len());
        let magic = region.load_u64(RegionOffset(strata_engine::pool::POOL_OFFSET_MAGIC));
        println!("\nPMem pool {} ({} bytes, magic {magic:#018x})", pool.display(), region.len());
        match strata_engine::pool::open_pool_log(region, config.pmem.log_bytes) {
            Ok((_, records, _)) => print_records("PMem log", &records, args.max_records),
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
        let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
        match strata_log::SerialLog::open_ssd(fs, scratch.path(), Default::default()) {
            Ok((_, records)) => {
                print_records(&format!("\nSSD log {}", wal.display()), &records, args.max_records)
            }
            Err(e) => println!("\nSSD log {}: cannot open: {e}", wal.display()),
        }
    }
    let fs: Arc<dyn FileSystem> = Arc::new(RealFs::new());
    let series = config.series_dir();
    match read_manifest(fs.as_ref(), &series)? {
        Some(m) => println!("\n{}", describe_manifest(&m)),
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
                Ok(f) => println!("\n{}", describe_block_file(&f)),
                Err(e) => println!("\n{}: {e}", p.display()),
            }
        }
    }
    Ok(())
}
