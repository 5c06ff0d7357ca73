//! Peak resident memory of a system's server process during a load: its
//! high-water mark (`VmHWM` in `/proc/PID/status`), reset before the counted
//! load by writing `5` to `/proc/PID/clear_refs` (Linux 4.0+, same user).
//! Where the reset is refused the mark is the peak since the process
//! started, and [`PeakRss::since_reset`] says so. Strata's server runs inside
//! the benchmark process, so its figure is that process's (the loader's few
//! bodies in flight, for the PMem protocols the mapped pages of the emulated
//! PMem pool, and what the allocator kept from earlier loads included); each
//! peer's is its own process's. The resident size at the reset (`VmRSS`) is
//! kept too, so the growth during the load is known apart from what the
//! process held before it.

use std::path::PathBuf;

/// Why a peak could not be read.
#[derive(Debug)]
pub enum RssError {
    Read { path: PathBuf, source: std::io::Error },
    Missing { path: PathBuf, line: &'static str },
}

impl std::fmt::Display for RssError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RssError::Read { path, source } => write!(f, "reading {}: {source}", path.display()),
            RssError::Missing { path, line } => write!(f, "no {line} line in kB in {}", path.display()),
        }
    }
}

impl std::error::Error for RssError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RssError::Read { source, .. } => Some(source),
            RssError::Missing { .. } => None,
        }
    }
}

/// A process watched from just before a load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RssWatch {
    pub pid: u32,
    /// Whether the high-water mark was reset when the watch began.
    pub since_reset: bool,
    /// Resident bytes right after the reset (`None`: not readable).
    pub start_bytes: Option<u64>,
}

/// What [`RssWatch::peak`] read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeakRss {
    pub bytes: u64,
    /// False: the peak since the process started (the reset was refused).
    pub since_reset: bool,
    /// Resident bytes when the watch began.
    pub start_bytes: Option<u64>,
}

/// A `Vm...:  1234 kB` line of `pid`'s `/proc/PID/status`, in bytes.
fn status_bytes(pid: u32, line: &'static str) -> Result<u64, RssError> {
    let path = PathBuf::from(format!("/proc/{pid}/status"));
    let status =
        std::fs::read_to_string(&path).map_err(|source| RssError::Read { path: path.clone(), source })?;
    status_line_bytes(&status, line).ok_or(RssError::Missing { path, line })
}

impl RssWatch {
    /// Resets `pid`'s high-water mark if the kernel lets us.
    pub fn start(pid: u32) -> RssWatch {
        let since_reset = std::fs::write(format!("/proc/{pid}/clear_refs"), b"5").is_ok();
        RssWatch { pid, since_reset, start_bytes: status_bytes(pid, "VmRSS:").ok() }
    }

    /// The benchmark process itself (where Strata's server runs).
    pub fn this_process() -> RssWatch {
        RssWatch::start(std::process::id())
    }

    /// The high-water mark now.
    pub fn peak(&self) -> Result<PeakRss, RssError> {
        let bytes = status_bytes(self.pid, "VmHWM:")?;
        Ok(PeakRss { bytes, since_reset: self.since_reset, start_bytes: self.start_bytes })
    }

    /// The peak as metrics (`peak_rss_mib`, and `peak_rss_growth_mib` over
    /// the resident size at the start), and a note when it is not the
    /// load's own (`who` names the process in the note).
    pub fn finish(&self, who: &str) -> (Vec<(&'static str, f64)>, Option<String>) {
        match self.peak() {
            Ok(p) => {
                let note = (!p.since_reset).then(|| {
                    format!(
                        "{who}: peak RSS since the process started (writing /proc/{}/clear_refs was refused)",
                        self.pid
                    )
                });
                (peak_rss_metrics(&p), note)
            }
            Err(e) => (Vec::new(), Some(format!("{who}: no peak RSS: {e}"))),
        }
    }
}

/// Bytes of the `<line>  1234 kB` line (`line` is `VmHWM:`, `VmRSS:`, ...)
/// of a `/proc/PID/status` text.
pub fn status_line_bytes(status: &str, line: &str) -> Option<u64> {
    let found = status.lines().find(|l| l.starts_with(line))?;
    let mut words = found[line.len()..].split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => Some(n * 1024),
        _ => None,
    }
}

/// `peak_rss_mib`, and `peak_rss_growth_mib` when the start is known and
/// the peak was reset.
pub fn peak_rss_metrics(peak: &PeakRss) -> Vec<(&'static str, f64)> {
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let mut m = vec![("peak_rss_mib", mib(peak.bytes))];
    if let (true, Some(start)) = (peak.since_reset, peak.start_bytes) {
        m.push(("peak_rss_growth_mib", mib(peak.bytes.saturating_sub(start))));
    }
    m
}
