//! Letting the machine settle between two loads: what one load leaves
//! behind (a peer's dirty pages being written back, its data directory
//! being removed, a JVM exiting) must not run during the next one, or the
//! variant that follows the heaviest always pays for it.
//!
//! Before each load: `sync`, then wait until the CPUs have been idle for a
//! short window (from `/proc/stat`), or a time limit passes.

use std::time::{Duration, Instant};

/// The idle share of CPU time a window must reach.
pub const SETTLED_IDLE_FRACTION: f64 = 0.9;
/// The window the idle share is measured over.
pub const SETTLE_WINDOW: Duration = Duration::from_millis(200);
/// Waiting stops after this long even if the machine stays busy.
pub const SETTLE_LIMIT: Duration = Duration::from_secs(5);

/// Flushes dirty pages, then waits for an idle window (at most
/// [`SETTLE_LIMIT`]). Returns how long it took and whether the machine
/// settled.
pub fn settle() -> (Duration, bool) {
    let started = Instant::now();
    // Dirty pages of the previous load reach the disk now, not during the next.
    let _ = std::process::Command::new("sync").status();
    loop {
        let Some(before) = cpu_times() else { return (started.elapsed(), false) };
        std::thread::sleep(SETTLE_WINDOW);
        let Some(after) = cpu_times() else { return (started.elapsed(), false) };
        if idle_fraction(before, after) >= SETTLED_IDLE_FRACTION {
            return (started.elapsed(), true);
        }
        if started.elapsed() >= SETTLE_LIMIT {
            return (started.elapsed(), false);
        }
    }
}

/// (idle, total) jiffies of all CPUs: the first line of `/proc/stat`.
pub fn cpu_times() -> Option<(u64, u64)> {
    parse_cpu_line(std::fs::read_to_string("/proc/stat").ok()?.lines().next()?)
}

/// `cpu  user nice system idle iowait irq softirq steal ...` -> (idle +
/// iowait, sum of all).
fn parse_cpu_line(line: &str) -> Option<(u64, u64)> {
    let mut fields = line.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let values: Vec<u64> = fields.map(|f| f.parse().ok()).collect::<Option<_>>()?;
    let idle = values.get(3)? + values.get(4).copied().unwrap_or(0);
    Some((idle, values.iter().sum()))
}

pub fn idle_fraction(before: (u64, u64), after: (u64, u64)) -> f64 {
    let total = after.1.saturating_sub(before.1);
    if total == 0 {
        return 1.0;
    }
    after.0.saturating_sub(before.0) as f64 / total as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_line_gives_idle_and_total_jiffies() {
        let line = "cpu  100 5 50 800 20 0 5 20 0 0";
        assert_eq!(parse_cpu_line(line), Some((820, 1000)));
        assert_eq!(parse_cpu_line("cpu0 1 2 3 4"), None, "only the all-CPU line");
        assert_eq!(parse_cpu_line("cpu  1 x 3"), None);
    }

    #[test]
    fn the_idle_fraction_is_of_the_window() {
        assert_eq!(idle_fraction((820, 1000), (1000, 1200)), 0.9);
        assert_eq!(idle_fraction((5, 5), (5, 5)), 1.0, "no time passed: nothing was busy");
    }

    #[test]
    fn settling_returns_within_its_limit() {
        let (took, _) = settle();
        assert!(took <= SETTLE_LIMIT + SETTLE_WINDOW * 3, "{took:?}");
    }
}
