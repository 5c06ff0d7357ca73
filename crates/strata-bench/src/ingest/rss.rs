//! Peak resident memory of a system's server process during a load: its
//! high-water mark (`VmHWM` in `/proc/PID/status`), reset before the counted
//! load by writing `5` to `/proc/PID/clear_refs` (Linux 4.0+, same user).
//! Where the reset is refused the mark is the peak since the process
//! started, and [`PeakRss::since_reset`] says so. Strata's server runs inside
//! the benchmark process, so its figure is that process's (the loader's few
//! bodies in flight and, for the PMem protocols, the mapped pages of the
//! emulated PMem pool included); each peer's is its own process's.

use std::path::PathBuf;

/// Why a peak could not be read.
#[derive(Debug)]
pub enum RssError {
    Read { path: PathBuf, source: std::io::Error },
    NoHighWaterMark { path: PathBuf },
}

impl std::fmt::Display for RssError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RssError::Read { path, source } => write!(f, "reading {}: {source}", path.display()),
            RssError::NoHighWaterMark { path } => write!(f, "no VmHWM line in {}", path.display()),
        }
    }
}

impl std::error::Error for RssError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RssError::Read { source, .. } => Some(source),
            RssError::NoHighWaterMark { .. } => None,
        }
    }
}

/// A process watched from just before a load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RssWatch {
    pub pid: u32,
    /// Whether the high-water mark was reset when the watch began.
    pub since_reset: bool,
}

/// What [`RssWatch::peak`] read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeakRss {
    pub bytes: u64,
    /// False: the peak since the process started (the reset was refused).
    pub since_reset: bool,
}

impl RssWatch {
    /// Resets `pid`'s high-water mark if the kernel lets us.
    pub fn start(pid: u32) -> RssWatch {
        let since_reset = std::fs::write(format!("/proc/{pid}/clear_refs"), b"5").is_ok();
        RssWatch { pid, since_reset }
    }

    /// The benchmark process itself (where Strata's server runs).
    pub fn this_process() -> RssWatch {
        RssWatch::start(std::process::id())
    }

    /// The high-water mark now.
    pub fn peak(&self) -> Result<PeakRss, RssError> {
        let path = PathBuf::from(format!("/proc/{}/status", self.pid));
        let status =
            std::fs::read_to_string(&path).map_err(|source| RssError::Read { path: path.clone(), source })?;
        let bytes = high_water_mark(&status).ok_or(RssError::NoHighWaterMark { path })?;
        Ok(PeakRss { bytes, since_reset: self.since_reset })
    }
}

/// Bytes of the `VmHWM:  1234 kB` line of a `/proc/PID/status` text.
pub fn high_water_mark(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let mut words = line["VmHWM:".len()..].split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => Some(n * 1024),
        _ => None,
    }
}

/// The metric of a peak: `peak_rss_mib`.
pub fn peak_rss_metric(peak: &PeakRss) -> (&'static str, f64) {
    ("peak_rss_mib", peak.bytes as f64 / (1u64 << 20) as f64)
}

impl RssWatch {
    /// The peak as a metric, and a note when it is not the load's own
    /// (`who` names the process in the note).
    pub fn finish(&self, who: &str) -> (Option<(&'static str, f64)>, Option<String>) {
        match self.peak() {
            Ok(p) if p.since_reset => (Some(peak_rss_metric(&p)), None),
            Ok(p) => (
                Some(peak_rss_metric(&p)),
                Some(format!(
                    "{who}: peak RSS since the process started (writing /proc/{}/clear_refs was refused)",
                    self.pid
                )),
            ),
            Err(e) => (None, Some(format!("{who}: no peak RSS: {e}"))),
        }
    }
}
