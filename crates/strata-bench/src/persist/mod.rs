//! `strata bench persist`: what making bytes durable costs on this machine,
//! as ratios to the memcpy limit of the same medium (DESIGN.md sections 1, 6).
//!
//! On an emulated PMem region (a shared file mapping) on tmpfs and on a disk
//! file system (ext4 here), it measures
//! - (a) `memcpy-noflush`: copying into the mapping, no write-back: the limit;
//! - (b) `persist-{64B,256B,4KiB}`: append a chunk, flush its lines, fence;
//! - (c) `serial-pmem-{64B,256B}`: the serial PMem log (strict ordering), with
//!   fences, lines, bytes and 256-byte media blocks per entry;
//! - (d) `ssd-log-{1thread,4threads}`: the SSD log with fdatasync group
//!   commit, throughput and commit latency p50/p99.
//!
//! Every round runs every variant once for a short window, in the same order
//! (A B A B ...); each figure is the median over rounds, and
//! `ratio_to_memcpy` is the median of per-round ratios to the memcpy of the
//! same medium in the same round. One untimed warm-up round comes first.

mod media;
mod pmem;
mod ssd;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use strata_pmem::PmemMode;

use crate::machine::{fs_type, load_average_1m, load_note, Machine};
use crate::measure::Samples;
use crate::report::BenchReport;
use media::{Medium, SERIAL_ALIGN_BYTES, SSD_MAX_BATCH_BYTES};

/// Metric name and value, as one timed window produced them.
type Metrics = Vec<(&'static str, f64)>;

/// Chunk sizes of variant (b).
pub const PERSIST_CHUNK_BYTES: [u64; 3] = [64, 256, 4096];
/// Whole-record sizes (header + payload + tail) of variant (c).
pub const SERIAL_ENTRY_BYTES: [u64; 2] = [64, 256];
/// Whole-record size of variant (d).
pub const SSD_ENTRY_BYTES: u64 = 64;
/// Appender threads of variant (d).
pub const SSD_THREADS: [usize; 2] = [1, 4];

/// Table and JSON column order.
const COLUMNS: [&str; 10] = [
    "throughput_bytes_per_s",
    "ratio_to_memcpy",
    "throughput_entries_per_s",
    "ns_per_persist",
    "latency_us_p50",
    "latency_us_p99",
    "fences_per_entry",
    "lines_flushed_per_entry",
    "bytes_per_entry",
    "media_blocks_per_entry",
];

/// How long and how big the benchmark runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PersistBudget {
    /// Timed rounds (each runs every variant once).
    pub rounds: u32,
    /// Window of each PMem variant per round.
    pub pmem_window: Duration,
    /// Window of each SSD-log variant per round.
    pub ssd_window: Duration,
    /// Raw area the memcpy and persist streams cycle through (per medium);
    /// several times the last-level cache, so streams reach memory.
    pub raw_area_bytes: u64,
    /// Data capacity of each serial PMem log ring.
    pub log_capacity_bytes: u64,
    /// Space each SSD log segment reserves up front.
    pub ssd_preallocate_bytes: u64,
}

impl PersistBudget {
    /// The default run: about 45 s on a 2-core machine.
    pub fn full() -> PersistBudget {
        PersistBudget {
            rounds: 9,
            pmem_window: Duration::from_millis(250),
            ssd_window: Duration::from_millis(400),
            raw_area_bytes: 128 << 20,
            log_capacity_bytes: 64 << 20,
            ssd_preallocate_bytes: 64 << 20,
        }
    }

    /// `--quick`: about 5 s.
    pub fn quick() -> PersistBudget {
        PersistBudget {
            rounds: 3,
            pmem_window: Duration::from_millis(60),
            ssd_window: Duration::from_millis(120),
            raw_area_bytes: 128 << 20,
            log_capacity_bytes: 16 << 20,
            ssd_preallocate_bytes: 8 << 20,
        }
    }

    /// For tests of the report's shape: well under a second, figures meaningless.
    pub fn tiny() -> PersistBudget {
        PersistBudget {
            rounds: 1,
            pmem_window: Duration::from_millis(2),
            ssd_window: Duration::from_millis(5),
            raw_area_bytes: 1 << 20,
            log_capacity_bytes: 64 << 10,
            ssd_preallocate_bytes: 1 << 20,
        }
    }

    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.rounds >= 1, "at least one round");
        anyhow::ensure!(
            self.raw_area_bytes >= pmem::MEMCPY_CHUNK_BYTES && self.raw_area_bytes.is_multiple_of(4096),
            "raw area must be a multiple of 4096 bytes and hold a memcpy chunk of {} bytes",
            pmem::MEMCPY_CHUNK_BYTES
        );
        anyhow::ensure!(
            self.log_capacity_bytes >= 4096 && self.log_capacity_bytes.is_multiple_of(256),
            "log capacity must be a multiple of 256 bytes, at least 4096"
        );
        Ok(())
    }
}

/// Options of [`run_persist_bench`].
#[derive(Clone, Debug)]
pub struct PersistBenchOptions {
    /// Where to write the JSON report, if anywhere.
    pub json_path: Option<PathBuf>,
    /// Use [`PersistBudget::quick`] (ignored when `budget` is set).
    pub quick: bool,
    /// A tmpfs directory (default `/dev/shm`).
    pub tmpfs_dir: PathBuf,
    /// A directory on a disk file system (default: [`default_disk_dir`]).
    pub ext4_dir: PathBuf,
    /// Explicit budget; `None`: full or quick.
    pub budget: Option<PersistBudget>,
    /// Print progress (stderr) and the table (stdout).
    pub print: bool,
}

impl Default for PersistBenchOptions {
    fn default() -> Self {
        PersistBenchOptions {
            json_path: None,
            quick: false,
            tmpfs_dir: PathBuf::from("/dev/shm"),
            ext4_dir: default_disk_dir(),
            budget: None,
            print: true,
        }
    }
}

/// `std::env::temp_dir()` unless it is memory-backed, else the current directory.
pub fn default_disk_dir() -> PathBuf {
    let tmp = std::env::temp_dir();
    match fs_type(&tmp).as_deref() {
        Some("tmpfs" | "ramfs") | None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        Some(_) => tmp,
    }
}

enum Kind {
    Memcpy,
    Persist { chunk_bytes: u64 },
    SerialPmem { log_index: usize },
    SsdLog { threads: usize },
}

struct Variant {
    name: String,
    medium: usize,
    kind: Kind,
    samples: Samples,
}

fn size_label(bytes: u64) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{}KiB", bytes / 1024)
    } else {
        format!("{bytes}B")
    }
}

fn variants_of(medium: usize, label: &str) -> Vec<Variant> {
    let mut kinds = vec![(format!("memcpy-noflush/{label}"), Kind::Memcpy)];
    for chunk_bytes in PERSIST_CHUNK_BYTES {
        kinds.push((format!("persist-{}/{label}", size_label(chunk_bytes)), Kind::Persist { chunk_bytes }));
    }
    for (log_index, entry) in SERIAL_ENTRY_BYTES.into_iter().enumerate() {
        kinds.push((format!("serial-pmem-{}/{label}", size_label(entry)), Kind::SerialPmem { log_index }));
    }
    for threads in SSD_THREADS {
        let t = if threads == 1 { "1thread".to_string() } else { format!("{threads}threads") };
        kinds.push((format!("ssd-log-{t}/{label}"), Kind::SsdLog { threads }));
    }
    kinds
        .into_iter()
        .map(|(name, kind)| Variant { name, medium, kind, samples: Samples::default() })
        .collect()
}

fn run_variant(v: &Variant, m: &mut Medium, budget: &PersistBudget, scale: u32) -> anyhow::Result<Metrics> {
    let pmem_window = budget.pmem_window / scale;
    match v.kind {
        Kind::Memcpy => pmem::memcpy_round(m, pmem_window),
        Kind::Persist { chunk_bytes } => pmem::persist_round(m, chunk_bytes, pmem_window),
        Kind::SerialPmem { log_index } => {
            let (entry_bytes, log) = &m.serial_logs[log_index];
            pmem::serial_round(log, *entry_bytes, pmem_window)
        }
        Kind::SsdLog { threads } => {
            let metrics = ssd::ssd_round(&m.ssd_log, threads, SSD_ENTRY_BYTES, budget.ssd_window / scale)?;
            // Untimed: every window starts on a fresh segment, and tmpfs does not fill up.
            m.ssd_log.truncate_all()?;
            Ok(metrics)
        }
    }
}

/// Labels media by their detected file-system type (`tmpfs`, `ext4`), falling
/// back to the role name; two media never share a label.
fn media_labels(dirs: &[(&str, &Path)]) -> Vec<String> {
    let mut labels: Vec<String> = Vec::new();
    for (role, dir) in dirs {
        let mut label = fs_type(dir).unwrap_or_else(|| role.to_string());
        if labels.contains(&label) {
            label = format!("{label}-{}", labels.len() + 1);
        }
        labels.push(label);
    }
    labels
}

/// Runs the persist benchmark, prints its table (if `print`), writes its JSON
/// (if `json_path`) and returns the report.
pub fn run_persist_bench(opts: &PersistBenchOptions) -> anyhow::Result<BenchReport> {
    let load_at_start = load_average_1m();
    let budget = opts.budget.clone().unwrap_or_else(|| {
        if opts.quick {
            PersistBudget::quick()
        } else {
            PersistBudget::full()
        }
    });
    budget.check()?;
    BenchReport::check_json_path(opts.json_path.as_deref())?;
    let dirs = [("tmpfs", opts.tmpfs_dir.as_path()), ("ext4", opts.ext4_dir.as_path())];
    let labels = media_labels(&dirs);
    let mut media = Vec::new();
    for ((role, dir), label) in dirs.iter().zip(labels) {
        if opts.print && label != *role {
            eprintln!("persist bench: warning: {} is on {label}, not {role}", dir.display());
        }
        media.push(Medium::open(label, dir, &budget, &SERIAL_ENTRY_BYTES)?);
    }
    let mut variants: Vec<Variant> =
        media.iter().enumerate().flat_map(|(i, m)| variants_of(i, &m.label)).collect();

    if opts.print {
        eprintln!("persist bench: warm-up, then {} rounds of {} variants", budget.rounds, variants.len());
    }
    for v in &variants {
        run_variant(v, &mut media[v.medium], &budget, 4)?;
    }
    for round in 0..budget.rounds {
        if opts.print {
            eprintln!("persist bench: round {}/{}", round + 1, budget.rounds);
        }
        let mut memcpy_bytes_per_s = vec![f64::NAN; media.len()];
        let mut round_throughput = Vec::with_capacity(variants.len());
        for v in &mut variants {
            let metrics = run_variant(v, &mut media[v.medium], &budget, 1)?;
            let bytes_per_s = metrics.iter().find(|(k, _)| *k == "throughput_bytes_per_s").map(|(_, x)| *x);
            if matches!(v.kind, Kind::Memcpy) {
                memcpy_bytes_per_s[v.medium] = bytes_per_s.unwrap_or(f64::NAN);
            }
            round_throughput.push(bytes_per_s);
            for (metric, value) in metrics {
                v.samples.push(metric, value);
            }
        }
        for (v, bytes_per_s) in variants.iter_mut().zip(round_throughput) {
            if let Some(b) = bytes_per_s {
                v.samples.push("ratio_to_memcpy", b / memcpy_bytes_per_s[v.medium]);
            }
        }
    }

    let loads = [load_at_start, load_average_1m()];
    let report = build_report(&media, &variants, &budget, loads);
    if opts.print {
        report.print_table();
    }
    if let Some(path) = &opts.json_path {
        report.write_json(path)?;
        if opts.print {
            eprintln!("persist bench: wrote {}", path.display());
        }
    }
    Ok(report)
}

fn build_report(
    media: &[Medium],
    variants: &[Variant],
    budget: &PersistBudget,
    loads: [Option<f64>; 2],
) -> BenchReport {
    let on: Vec<String> = media.iter().map(|m| format!("{} {}", m.label, m.dir.display())).collect();
    let detail = format!("mapped file on {}; no real PMem", on.join(" | "));
    let machine = Machine::detect(PmemMode::Emulated, detail, media[0].region.flush_instruction());
    let config = json!({
        "rounds": budget.rounds,
        "warmup_rounds": 1,
        "order": "interleaved: every round runs every variant once, in the same order (A B A B ...)",
        "statistic": "median over rounds; ratio_to_memcpy is the median of per-round ratios to memcpy-noflush on the same medium",
        "pmem_window_ms": budget.pmem_window.as_secs_f64() * 1e3,
        "ssd_window_ms": budget.ssd_window.as_secs_f64() * 1e3,
        "media": media.iter().map(|m| json!({"label": m.label, "dir": m.dir, "fs_type": m.fs_type})).collect::<Vec<_>>(),
        "load_average_1m": {"start": loads[0], "end": loads[1]},
        "flush_delay_ns_per_line": 0,
        "fence_delay_ns": 0,
        "raw_area_bytes": budget.raw_area_bytes,
        "memcpy_chunk_bytes": pmem::MEMCPY_CHUNK_BYTES,
        "persist_chunk_bytes": PERSIST_CHUNK_BYTES,
        "serial_entry_bytes": SERIAL_ENTRY_BYTES,
        "serial_payload_bytes": SERIAL_ENTRY_BYTES.map(pmem::payload_bytes),
        "serial_align_bytes": SERIAL_ALIGN_BYTES,
        "serial_log_capacity_bytes": budget.log_capacity_bytes,
        "ssd_entry_bytes": SSD_ENTRY_BYTES,
        "ssd_payload_bytes": pmem::payload_bytes(SSD_ENTRY_BYTES),
        "ssd_threads": SSD_THREADS,
        "ssd_max_batch_bytes": SSD_MAX_BATCH_BYTES,
        "ssd_max_wait_us": 0,
        "ssd_preallocate_bytes": budget.ssd_preallocate_bytes,
    });
    let mut report = BenchReport::new("persist", machine, config);
    report.results = variants.iter().map(|v| v.samples.median_row(&v.name)).collect();
    report.columns = COLUMNS.iter().map(|c| c.to_string()).collect();
    // The end figure includes this benchmark's own threads; the start one does not.
    let busy = "other work was running, so absolute figures (fdatasync above all) are noise";
    report.notes = vec![
        load_note(loads, Some(report.machine.cores), busy),
        format!(
            "medians of {} interleaved rounds (A B A B ...); ratio to memcpy = bytes/s over memcpy-noflush bytes/s, same medium, same round",
            budget.rounds
        ),
        "pmem is emulated: a shared file mapping; flush = real clwb/clflushopt per 64-byte line, fence = sfence, no injected delay".into(),
        "entry sizes are whole log records: 24-byte header + payload + 16-byte tail; serial-pmem packs entries 8-byte aligned".into(),
        "ssd-log: one pwrite + fdatasync per group-commit batch, no added wait; latency = append call to durable".into(),
    ];
    report
}

#[cfg(test)]
mod tests;
