//! Variant (d) of the persist benchmark: the SSD log device (one file,
//! group commit with `fdatasync`) with N appender threads for one timed
//! window; throughput and commit latency percentiles (HdrHistogram).

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use strata_log::ssd_log::SsdLog;
use strata_log::{RecordKind, TxnId};

use super::pmem::payload_bytes;
use super::Metrics;

/// Highest latency the histogram resolves (longer commits saturate).
const MAX_LATENCY_NS: u64 = 60_000_000_000;

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid histogram bounds")
}

/// `threads` appenders each commit `entry_bytes` records until the window ends.
pub(super) fn ssd_round(
    log: &SsdLog,
    threads: usize,
    entry_bytes: u64,
    window: Duration,
) -> anyhow::Result<Metrics> {
    let payload = vec![0xc3_u8; payload_bytes(entry_bytes) as usize];
    let start = Instant::now();
    let deadline = start + window;
    let per_thread: Vec<anyhow::Result<(u64, Histogram<u64>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads as u64)
            .map(|t| {
                let payload = &payload;
                s.spawn(move || -> anyhow::Result<(u64, Histogram<u64>)> {
                    let mut hist = new_histogram();
                    let mut n = 0u64;
                    // At least one append per thread, however short the window.
                    loop {
                        let t0 = Instant::now();
                        log.append(RecordKind::Txn, TxnId((t << 40) | n), payload)?;
                        let t1 = Instant::now();
                        hist.saturating_record((t1 - t0).as_nanos() as u64);
                        n += 1;
                        if t1 >= deadline {
                            return Ok((n, hist));
                        }
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("appender thread panicked")).collect()
    });
    let elapsed = start.elapsed();
    let mut entries = 0;
    let mut hist = new_histogram();
    for r in per_thread {
        let (n, h) = r?;
        entries += n;
        hist.add(&h).expect("histograms with equal bounds add");
    }
    let entries_per_s = entries as f64 / elapsed.as_secs_f64();
    Ok(vec![
        ("throughput_entries_per_s", entries_per_s),
        ("throughput_bytes_per_s", entries_per_s * entry_bytes as f64),
        ("latency_us_p50", hist.value_at_quantile(0.50) as f64 / 1000.0),
        ("latency_us_p99", hist.value_at_quantile(0.99) as f64 / 1000.0),
    ])
}
