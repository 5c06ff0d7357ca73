//! The machine a benchmark ran on (DESIGN.md section 6: "print the machine"):
//! cores, memory, PMem mode and write-back instruction, plus the file-system
//! type behind a directory (so a report says whether "ext4" really was ext4),
//! and the load average with the report note every benchmark prints on it.
//!
//! Everything is read from `/proc` without `unsafe`; a missing file gives a
//! neutral value rather than an error, because a report without the CPU model
//! is still a report.

use std::path::{Path, PathBuf};

use serde::Serialize;
use strata_pmem::{FlushInstruction, PmemMode};

/// What the JSON `machine` object holds, plus two human-only details.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    pub cores: usize,
    pub memory_gib: f64,
    /// Backend name (`emulated`, `dax`, ...).
    pub pmem_mode: String,
    pub flush_instruction: String,
    /// Printed with the table, not in JSON: e.g. "mapped file on tmpfs /dev/shm".
    #[serde(skip)]
    pub pmem_detail: String,
    /// Printed with the table, not in JSON.
    #[serde(skip)]
    pub cpu_model: String,
}

impl Machine {
    /// Detects cores, memory and CPU model of this machine.
    pub fn detect(pmem_mode: PmemMode, pmem_detail: impl Into<String>, flush: FlushInstruction) -> Machine {
        Machine {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_gib: memory_gib().unwrap_or(0.0),
            pmem_mode: pmem_mode.name().to_string(),
            flush_instruction: flush.name().to_string(),
            pmem_detail: pmem_detail.into(),
            cpu_model: cpu_model().unwrap_or_else(|| "unknown CPU".to_string()),
        }
    }

    /// One line for the top of a table.
    pub fn describe(&self) -> String {
        let pmem = if self.pmem_detail.is_empty() {
            self.pmem_mode.clone()
        } else {
            format!("{} ({})", self.pmem_mode, self.pmem_detail)
        };
        format!(
            "{} cores, {} GiB RAM, {}; pmem {}; flush instruction {}",
            self.cores, self.memory_gib, self.cpu_model, pmem, self.flush_instruction
        )
    }
}

/// `MemTotal` from `/proc/meminfo`, in GiB rounded to one decimal.
pub fn memory_gib() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: f64 =
        text.lines().find_map(|l| l.strip_prefix("MemTotal:"))?.split_whitespace().next()?.parse().ok()?;
    Some((kib / (1024.0 * 1024.0) * 10.0).round() / 10.0)
}

/// The 1-minute load average from `/proc/loadavg`: how busy the machine was
/// with other work, which on a small shared machine moves absolute figures.
pub fn load_average_1m() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

/// A 1-minute load average above this at a run's start means other work was running.
pub const BUSY_LOAD_AVERAGE: f64 = 0.5;

/// The report note on the load average at a run's `[start, end]`:
/// `load average (1 min) 0.10 at start, 1.93 at end[, on N cores][: busy]`.
/// `busy` (what that means for the figures) is added only when the start
/// figure, which does not include the benchmark's own threads, is above
/// [`BUSY_LOAD_AVERAGE`].
pub fn load_note(loads: [Option<f64>; 2], cores: Option<usize>, busy: &str) -> String {
    let fmt = |l: Option<f64>| l.map_or("?".into(), |l| format!("{l:.2}"));
    let cores = cores.map_or(String::new(), |n| format!(", on {n} cores"));
    let busy =
        if loads[0].is_some_and(|l| l > BUSY_LOAD_AVERAGE) { format!(": {busy}") } else { String::new() };
    format!("load average (1 min) {} at start, {} at end{cores}{busy}", fmt(loads[0]), fmt(loads[1]))
}

/// The first `model name` of `/proc/cpuinfo`.
pub fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

/// The file-system type (`tmpfs`, `ext4`, `xfs`, `overlay`, ...) holding `path`,
/// from `/proc/self/mounts`.
pub fn fs_type(path: &Path) -> Option<String> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let path = path.canonicalize().ok()?;
    fs_type_in(&mounts, &path)
}

/// The type of the longest mount point containing `path` (the last one
/// listed wins among equal mount points, as a later mount hides an earlier).
fn fs_type_in(mounts: &str, path: &Path) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for line in mounts.lines() {
        let mut fields = line.split_whitespace();
        let (Some(_dev), Some(mnt), Some(kind)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        let mnt = PathBuf::from(unescape_mount(mnt));
        if !path.starts_with(&mnt) {
            continue;
        }
        let depth = mnt.components().count();
        let deeper = match &best {
            Some((d, _)) => depth >= *d,
            None => true,
        };
        if deeper {
            best = Some((depth, kind.to_string()));
        }
    }
    best.map(|(_, kind)| kind)
}

/// Undoes the octal escapes (`\040` for a space) of `/proc/self/mounts`.
fn unescape_mount(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b))
        {
            let code = (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0');
            out.push(code);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
/dev/vda / ext4 rw,relatime 0 0
tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0
/dev/vdb /mnt/my\\040disk xfs rw 0 0
overlay /mnt/my\\040disk/x overlay rw 0 0
";

    #[test]
    fn longest_mount_point_wins() {
        let t = |p: &str| fs_type_in(MOUNTS, Path::new(p));
        assert_eq!(t("/tmp/a").as_deref(), Some("ext4"));
        assert_eq!(t("/dev/shm").as_deref(), Some("tmpfs"));
        assert_eq!(t("/dev/shm/strata").as_deref(), Some("tmpfs"));
        assert_eq!(t("/dev/shmx").as_deref(), Some("ext4"), "component-wise prefix only");
        assert_eq!(t("/mnt/my disk/y").as_deref(), Some("xfs"));
        assert_eq!(t("/mnt/my disk/x/z").as_deref(), Some("overlay"));
    }

    #[test]
    fn machine_is_detected() {
        let m = Machine::detect(PmemMode::Emulated, "mapped file", FlushInstruction::Clwb);
        assert!(m.cores >= 1);
        assert_eq!(m.pmem_mode, "emulated");
        let json = serde_json::to_value(&m).unwrap();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 4, "JSON machine has exactly cores, memory_gib, pmem_mode, flush_instruction");
        assert!(m.describe().contains("emulated (mapped file)"));
        assert!(load_average_1m().is_some_and(|l| l >= 0.0));
    }

    #[test]
    fn the_load_note_warns_only_when_the_start_was_busy() {
        let quiet = load_note([Some(0.1), Some(1.93)], Some(2), "noise");
        assert_eq!(quiet, "load average (1 min) 0.10 at start, 1.93 at end, on 2 cores");
        let busy = load_note([Some(0.75), None], None, "noise");
        assert_eq!(busy, "load average (1 min) 0.75 at start, ? at end: noise");
        assert_eq!(load_note([None, None], None, "noise"), "load average (1 min) ? at start, ? at end");
    }
}
