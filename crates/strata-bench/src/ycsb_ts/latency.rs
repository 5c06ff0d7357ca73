//! Commit latency statistics of one run (DecLog section 5.2, "Commit
//! Latency" and Fig. 11): the paper ranks transactions by commit latency and
//! averages the fastest 95 %; we report that mean, nearest-rank percentiles
//! and the cumulative distribution as points for the figure.
//!
//! Latencies are exact (every transaction's nanoseconds, sorted), not
//! bucketed: a run holds at most a few million transactions.

use serde::{Deserialize, Serialize};

/// Share of the fastest transactions the paper's mean covers.
pub const FASTEST_SHARE: f64 = 0.95;
/// Points of the cumulative distribution kept for the figure.
pub const CDF_POINTS: usize = 100;

/// One run's latency figures, in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_fastest95_us: f64,
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// `(latency_us, fraction of transactions at or below it)`, ascending.
    pub cdf: Vec<(f64, f64)>,
}

impl LatencySummary {
    /// Summarizes latencies in nanoseconds (any order); all zero when empty.
    pub fn from_ns(mut latencies_ns: Vec<u64>) -> LatencySummary {
        latencies_ns.sort_unstable();
        let n = latencies_ns.len();
        if n == 0 {
            return LatencySummary::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        let kept = fastest_count(n);
        let sum_ns: u128 = latencies_ns[..kept].iter().map(|&v| u128::from(v)).sum();
        let cdf = (1..=CDF_POINTS.min(n))
            .map(|i| {
                let fraction = i as f64 / CDF_POINTS.min(n) as f64;
                (us(latencies_ns[rank_index(n, fraction)]), fraction)
            })
            .collect();
        LatencySummary {
            count: n as u64,
            mean_fastest95_us: sum_ns as f64 / kept as f64 / 1000.0,
            p50_us: us(latencies_ns[rank_index(n, 0.50)]),
            p95_us: us(latencies_ns[rank_index(n, 0.95)]),
            p99_us: us(latencies_ns[rank_index(n, 0.99)]),
            max_us: us(latencies_ns[n - 1]),
            cdf,
        }
    }
}

/// How many of `n` transactions the fastest-95 % mean covers (at least one).
pub fn fastest_count(n: usize) -> usize {
    ((n as f64 * FASTEST_SHARE).ceil() as usize).clamp(1.min(n), n)
}

/// Nearest-rank index of quantile `q` in `n` sorted values (`n > 0`).
pub fn rank_index(n: usize, q: f64) -> usize {
    ((q * n as f64).ceil() as usize).clamp(1, n) - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_of_the_fastest_95_percent_drops_the_slowest_twentieth() {
        // 1..=100 us: the fastest 95 are 1..=95 us, mean 48 us.
        let ns: Vec<u64> = (1..=100).rev().map(|u| u * 1000).collect();
        let s = LatencySummary::from_ns(ns);
        assert_eq!(s.count, 100);
        assert_eq!(s.mean_fastest95_us, 48.0);
        assert_eq!((s.p50_us, s.p95_us, s.p99_us, s.max_us), (50.0, 95.0, 99.0, 100.0));
        // One huge outlier in twenty does not move the paper's mean.
        let mut with_outlier: Vec<u64> = vec![10_000; 19];
        with_outlier.push(1_000_000_000);
        assert_eq!(LatencySummary::from_ns(with_outlier).mean_fastest95_us, 10.0);
    }

    #[test]
    fn small_and_empty_runs() {
        assert_eq!(LatencySummary::from_ns(vec![]), LatencySummary::default());
        let one = LatencySummary::from_ns(vec![2500]);
        assert_eq!((one.mean_fastest95_us, one.p50_us, one.p99_us), (2.5, 2.5, 2.5));
        assert_eq!(one.cdf, vec![(2.5, 1.0)]);
        assert_eq!(fastest_count(1), 1);
        assert_eq!(fastest_count(21), 20);
        assert_eq!(rank_index(10, 0.0), 0);
        assert_eq!(rank_index(10, 1.0), 9);
    }

    #[test]
    fn cdf_is_monotone_and_ends_at_one() {
        let ns: Vec<u64> = (0..10_000u64).map(|i| (i * 7919) % 10_007 + 1).collect();
        let s = LatencySummary::from_ns(ns);
        assert_eq!(s.cdf.len(), CDF_POINTS);
        assert!(s.cdf.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1), "{:?}", &s.cdf[..5]);
        assert_eq!(s.cdf.last().map(|p| p.1), Some(1.0));
        assert_eq!(s.cdf.last().map(|p| p.0), Some(s.max_us));
    }
}
