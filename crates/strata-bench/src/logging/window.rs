//! One timed window of committers: `threads` threads each open their own
//! handle (untimed), meet at a barrier, then commit one record at a time
//! until the window ends (at least one commit each), timing every commit
//! into an HdrHistogram. The in-process systems (Strata's logs, SQLite) all
//! run through here, so they are timed the same way.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

/// Highest latency the histogram resolves (longer commits saturate).
const MAX_LATENCY_NS: u64 = 60_000_000_000;

pub(super) fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid histogram bounds")
}

/// One thread's commits, its first and last instant, and its latencies.
type ThreadOutcome = (u64, Instant, Instant, Histogram<u64>);

/// What one window measured.
#[derive(Clone, Debug)]
pub struct WindowOutcome {
    /// Commits acknowledged, over all threads.
    pub commits: u64,
    /// From the barrier to the last thread's last acknowledgement.
    pub elapsed: Duration,
    /// Latency of every commit in nanoseconds.
    pub latency_ns: Histogram<u64>,
}

impl WindowOutcome {
    pub fn commits_per_s(&self) -> f64 {
        self.commits as f64 / self.elapsed.as_secs_f64()
    }

    pub fn latency_us(&self, quantile: f64) -> f64 {
        self.latency_ns.value_at_quantile(quantile) as f64 / 1000.0
    }
}

/// Runs `threads` committers for `window`. `open(thread)` makes a thread's
/// handle before the clock starts; `commit(handle, thread, seq)` commits the
/// `seq`-th record of `thread` and returns once it is acknowledged.
pub(super) fn run_window<H>(
    threads: usize,
    window: Duration,
    open: impl Fn(usize) -> anyhow::Result<H> + Sync,
    commit: impl Fn(&mut H, usize, u64) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<WindowOutcome> {
    anyhow::ensure!(threads >= 1, "at least one committer thread");
    let barrier = Barrier::new(threads);
    let per_thread: Vec<anyhow::Result<ThreadOutcome>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, open, commit) = (&barrier, &open, &commit);
                s.spawn(move || {
                    // Every thread reaches the barrier, even when its open fails,
                    // so the others are not left waiting.
                    let handle = open(t);
                    barrier.wait();
                    let mut handle = handle?;
                    let start = Instant::now();
                    let deadline = start + window;
                    let mut hist = new_histogram();
                    let mut seq = 0u64;
                    loop {
                        let t0 = Instant::now();
                        commit(&mut handle, t, seq)?;
                        let t1 = Instant::now();
                        hist.saturating_record((t1 - t0).as_nanos() as u64);
                        seq += 1;
                        if t1 >= deadline {
                            return Ok((seq, start, t1, hist));
                        }
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("committer thread panicked")).collect()
    });
    let mut commits = 0;
    let mut latency_ns = new_histogram();
    let mut first_start: Option<Instant> = None;
    let mut last_end: Option<Instant> = None;
    for r in per_thread {
        let (n, start, end, h) = r?;
        commits += n;
        latency_ns.add(&h).expect("histograms with equal bounds add");
        first_start = Some(first_start.map_or(start, |s| s.min(start)));
        last_end = Some(last_end.map_or(end, |e| e.max(end)));
    }
    let elapsed = match (first_start, last_end) {
        (Some(s), Some(e)) => e - s,
        _ => anyhow::bail!("no committer thread ran"),
    };
    Ok(WindowOutcome { commits, elapsed, latency_ns })
}
