//! Measurement helpers shared by benchmarks (DESIGN.md section 6): a timed
//! loop that reads the clock only every few operations, per-variant samples
//! collected over interleaved rounds, and their medians.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};

/// Operations completed in a timed loop and the time they took.
#[derive(Copy, Clone, Debug)]
pub struct Timed {
    pub ops: u64,
    pub elapsed: Duration,
}

impl Timed {
    pub fn ops_per_s(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64()
    }

    pub fn ns_per_op(&self) -> f64 {
        self.elapsed.as_nanos() as f64 / self.ops.max(1) as f64
    }
}

/// How many operations run between two clock reads in [`run_for`].
pub const CLOCK_EVERY_OPS: u64 = 16;

/// Runs `op` repeatedly for at least `window` (in batches of
/// [`CLOCK_EVERY_OPS`], so the clock costs little even for 100 ns operations).
pub fn run_for(window: Duration, mut op: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<Timed> {
    let start = Instant::now();
    let mut ops = 0;
    loop {
        for _ in 0..CLOCK_EVERY_OPS {
            op()?;
        }
        ops += CLOCK_EVERY_OPS;
        let elapsed = start.elapsed();
        if elapsed >= window {
            return Ok(Timed { ops, elapsed });
        }
    }
}

/// The median (mean of the middle two for an even count); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// One variant's figures over all rounds, metric by metric, in first-seen order.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    metrics: Vec<(String, Vec<f64>)>,
}

impl Samples {
    pub fn push(&mut self, metric: &str, value: f64) {
        match self.metrics.iter_mut().find(|(m, _)| m == metric) {
            Some((_, values)) => values.push(value),
            None => self.metrics.push((metric.to_string(), vec![value])),
        }
    }

    pub fn values(&self, metric: &str) -> Option<&[f64]> {
        self.metrics.iter().find(|(m, _)| m == metric).map(|(_, v)| v.as_slice())
    }

    /// Metric names in first-seen order.
    pub fn metric_names(&self) -> impl Iterator<Item = &str> {
        self.metrics.iter().map(|(m, _)| m.as_str())
    }

    /// A result row: `variant` plus the median of every metric.
    pub fn median_row(&self, variant: &str) -> Map<String, Value> {
        let mut row = Map::new();
        row.insert("variant".into(), Value::from(variant));
        for (metric, values) in &self.metrics {
            row.insert(metric.clone(), Value::from(median(values)));
        }
        row
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_unsorted() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn samples_keep_order_and_give_medians() {
        let mut s = Samples::default();
        for (a, b) in [(1.0, 10.0), (5.0, 30.0), (3.0, 20.0)] {
            s.push("b_per_s", a);
            s.push("a_us", b);
        }
        assert_eq!(s.metric_names().collect::<Vec<_>>(), ["b_per_s", "a_us"]);
        let row = s.median_row("x");
        assert_eq!(row["variant"], "x");
        assert_eq!(row["b_per_s"], 3.0);
        assert_eq!(row["a_us"], 20.0);
    }

    #[test]
    fn run_for_counts_whole_batches() {
        let mut n = 0u64;
        let t = run_for(Duration::from_micros(50), || {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(t.ops, n);
        assert_eq!(t.ops % CLOCK_EVERY_OPS, 0);
        assert!(t.elapsed >= Duration::from_micros(50));
    }
}
