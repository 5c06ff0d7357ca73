//! The workloads of `strata bench events` (chronicledb-pmem.txt section 5.1
//! and 5.4): the Stock and Sine streams with increasing timestamps
//! (`e_i.t = i`), encoded with the event store's own encoder, and the
//! out-of-order arrival model of Fig. 9.
//!
//! - Stock: sequence, symbol, price, volume (+ timestamp): 28 bytes. Symbol,
//!   price and volume are a seeded hash of the timestamp, so an event is the
//!   same whatever order it arrives in.
//! - Sine: six f64, all `sin(((i mod 1M) / 1M) * 2 pi)`: 56 bytes.
//! - OOO model: of `N` events a fraction `x` arrives late; of those 10 % have
//!   timestamps uniform over the span (each arrives after a uniformly drawn
//!   later in-order event), 90 % form `B` equi-distant bursts of consecutive
//!   timestamps, each burst arriving `len` events late as one run. The paper
//!   uses `B = 10,000` for 10^8 events; [`paper_bursts`] scales `B` with `N`.

use anyhow::ensure;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_events::event::{encode_into, Event, Value};
use strata_events::schema::StreamSchema;

/// Period of the Sine stream, in events.
pub const SINE_PERIOD_EVENTS: u64 = 1_000_000;
/// Share of the OOO events spread uniformly over the span (the rest are bursts).
pub const OOO_UNIFORM_SHARE: f64 = 0.1;
/// Bursts of the paper's OOO workload (for 10^8 events).
pub const PAPER_BURSTS: u64 = 10_000;
/// Events of the paper's OOO workload.
pub const PAPER_EVENTS: u64 = 100_000_000;

/// Which synthetic stream.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Stream {
    Stock,
    Sine,
}

impl Stream {
    pub fn schema(self) -> StreamSchema {
        match self {
            Stream::Stock => StreamSchema::stock(),
            Stream::Sine => StreamSchema::sine(),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Stream::Stock => "stock",
            Stream::Sine => "sine",
        }
    }
}

/// The Sine attribute value of event `i`.
pub fn sine_value(i: u64) -> f64 {
    ((i % SINE_PERIOD_EVENTS) as f64 / SINE_PERIOD_EVENTS as f64 * std::f64::consts::TAU).sin()
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Encoded events, fixed size, packed in one buffer (no allocation per event).
#[derive(Clone, Debug)]
pub struct EventBatch {
    pub event_bytes: usize,
    pub bytes: Vec<u8>,
}

impl EventBatch {
    pub fn len(&self) -> usize {
        self.bytes.len() / self.event_bytes
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn iter(&self) -> std::slice::ChunksExact<'_, u8> {
        self.bytes.chunks_exact(self.event_bytes)
    }
}

/// Builds events of one stream by timestamp.
pub struct EventMaker {
    stream: Stream,
    schema: StreamSchema,
    seed: u64,
    event: Event,
}

impl EventMaker {
    pub fn new(stream: Stream, seed: u64) -> EventMaker {
        let values = match stream {
            Stream::Stock => vec![Value::I32(0), Value::I32(0), Value::F64(0.0), Value::I32(0)],
            Stream::Sine => vec![Value::F64(0.0); 6],
        };
        EventMaker { stream, schema: stream.schema(), seed, event: Event::new(0, values) }
    }

    pub fn event_bytes(&self) -> usize {
        self.schema.event_bytes()
    }

    /// Writes the event with timestamp `ts` (= its index `i`) into `out`.
    pub fn write(&mut self, ts: i64, out: &mut [u8]) -> anyhow::Result<()> {
        let i = ts as u64;
        self.event.ts = ts;
        match self.stream {
            Stream::Stock => {
                let h = splitmix64(self.seed ^ i);
                self.event.values[0] = Value::I32(i as i32);
                self.event.values[1] = Value::I32((h % 500) as i32);
                self.event.values[2] = Value::F64(10.0 + ((h >> 16) % 9_000) as f64 / 100.0);
                self.event.values[3] = Value::I32(1 + ((h >> 40) % 10_000) as i32);
            }
            Stream::Sine => {
                let v = sine_value(i);
                for value in &mut self.event.values {
                    *value = Value::F64(v);
                }
            }
        }
        encode_into(&self.schema, &self.event, out)?;
        Ok(())
    }

    /// The events with the given timestamps, in that order.
    pub fn batch(&mut self, timestamps: impl IntoIterator<Item = i64>) -> anyhow::Result<EventBatch> {
        let event_bytes = self.event_bytes();
        let mut bytes = Vec::new();
        for ts in timestamps {
            let at = bytes.len();
            bytes.resize(at + event_bytes, 0);
            self.write(ts, &mut bytes[at..])?;
        }
        Ok(EventBatch { event_bytes, bytes })
    }
}

/// `events` events of `stream` with timestamps `0..events`, in order.
pub fn in_order(stream: Stream, events: u64, seed: u64) -> anyhow::Result<EventBatch> {
    EventMaker::new(stream, seed).batch(0..events as i64)
}

/// The paper's burst count scaled to `events` (10,000 bursts for 10^8
/// events; at least 1, at most 10,000).
pub fn paper_bursts(events: u64) -> u64 {
    ((PAPER_BURSTS as f64 * events as f64 / PAPER_EVENTS as f64).round() as u64).clamp(1, PAPER_BURSTS)
}

/// The OOO workload's parameters.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct OooModel {
    /// Fraction of events that arrive late (0.01 = 1 %).
    pub fraction: f64,
    /// Bursts the burst share is split into.
    pub bursts: u64,
}

/// Timestamps in arrival order and what the model put where.
#[derive(Clone, Debug)]
pub struct ArrivalOrder {
    pub timestamps: Vec<i64>,
    /// Events that arrive after a newer one (uniform + burst).
    pub ooo_events: u64,
    pub uniform_events: u64,
    pub burst_events: u64,
    pub bursts: u64,
    /// Timestamp ranges `[start, end)` of the bursts.
    pub burst_ranges: Vec<(i64, i64)>,
}

/// The arrival order of `events` events under `model` (module comment).
pub fn arrival_order(events: u64, model: &OooModel, seed: u64) -> anyhow::Result<ArrivalOrder> {
    ensure!((0.0..=0.5).contains(&model.fraction), "OOO fraction {} outside 0..=0.5", model.fraction);
    ensure!(events >= 2, "at least 2 events");
    let n = events;
    let ooo = (model.fraction * n as f64).round() as u64;
    let uniform = (ooo as f64 * OOO_UNIFORM_SHARE).round() as u64;
    let burst_total = ooo - uniform;
    let bursts = if burst_total == 0 { 0 } else { model.bursts.clamp(1, burst_total) };
    let mut is_ooo = vec![false; n as usize];
    // (anchor, order of creation, ts): emitted after the first in-order event >= anchor.
    let mut pending: Vec<(u64, u64, u64)> = Vec::with_capacity(ooo as usize);
    let mut burst_ranges = Vec::with_capacity(bursts as usize);
    if bursts > 0 {
        let spacing = n / (bursts + 1);
        let longest = burst_total.div_ceil(bursts);
        ensure!(
            spacing > 2 * longest + 1,
            "{burst_total} burst events in {bursts} bursts do not fit {n} events (spacing {spacing})"
        );
        for b in 0..bursts {
            let len = burst_total / bursts + u64::from(b < burst_total % bursts);
            let anchor = (b + 1) * spacing;
            let (start, end) = (anchor - 2 * len, anchor - len);
            for ts in start..end {
                is_ooo[ts as usize] = true;
                pending.push((anchor, pending.len() as u64, ts));
            }
            burst_ranges.push((start as i64, end as i64));
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let free = n - 1 - burst_total;
    ensure!(uniform <= free / 2, "{uniform} uniform OOO events do not fit {n} events");
    let mut placed = 0;
    while placed < uniform {
        let ts = rng.gen_range(0..n - 1);
        if is_ooo[ts as usize] {
            continue;
        }
        is_ooo[ts as usize] = true;
        let anchor = rng.gen_range(ts + 1..n);
        pending.push((anchor, pending.len() as u64, ts));
        placed += 1;
    }
    pending.sort_unstable();
    let mut timestamps = Vec::with_capacity(n as usize);
    let mut next = 0;
    for ts in 0..n {
        if is_ooo[ts as usize] {
            continue;
        }
        timestamps.push(ts as i64);
        while next < pending.len() && pending[next].0 <= ts {
            timestamps.push(pending[next].2 as i64);
            next += 1;
        }
    }
    timestamps.extend(pending[next..].iter().map(|p| p.2 as i64));
    Ok(ArrivalOrder {
        timestamps,
        ooo_events: ooo,
        uniform_events: uniform,
        burst_events: burst_total,
        bursts,
        burst_ranges,
    })
}

/// Events that arrive after a newer one (what a tree reports as late).
pub fn late_events(timestamps: &[i64]) -> u64 {
    let mut newest = i64::MIN;
    let mut late = 0;
    for &t in timestamps {
        if t < newest {
            late += 1;
        } else {
            newest = t;
        }
    }
    late
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_events::event::{decode, encode};

    #[test]
    fn streams_have_the_papers_event_sizes_and_values() {
        let stock = in_order(Stream::Stock, 10, 7).unwrap();
        assert_eq!(stock.event_bytes, 28);
        assert_eq!(stock.len(), 10);
        let sine = in_order(Stream::Sine, 300_000, 7).unwrap();
        assert_eq!(sine.event_bytes, 56);
        let e = decode(&StreamSchema::sine(), sine.iter().nth(250_000).unwrap()).unwrap();
        assert_eq!(e.ts, 250_000);
        for v in &e.values {
            assert!((v.as_f64().unwrap() - 1.0).abs() < 1e-12, "sin(pi/2) = 1, got {v:?}");
        }
        let s = decode(&StreamSchema::stock(), stock.iter().nth(3).unwrap()).unwrap();
        assert_eq!(s.ts, 3);
        assert_eq!(s.values[0], Value::I32(3));
        assert_eq!(encode(&StreamSchema::stock(), &s).unwrap(), stock.iter().nth(3).unwrap());
    }

    #[test]
    fn an_event_does_not_depend_on_its_arrival_position() {
        let mut maker = EventMaker::new(Stream::Stock, 11);
        let forward = maker.batch([5, 6, 7]).unwrap();
        let backward = maker.batch([7, 6, 5]).unwrap();
        assert_eq!(forward.iter().next().unwrap(), backward.iter().nth(2).unwrap());
        let other_seed = EventMaker::new(Stream::Stock, 12).batch([5]).unwrap();
        assert_ne!(forward.iter().next().unwrap(), other_seed.iter().next().unwrap());
    }

    #[test]
    fn ooo_fraction_and_split_follow_the_model() {
        for (seed, fraction) in [(1u64, 0.01), (2, 0.05), (3, 0.10)] {
            let n = 200_000;
            let model = OooModel { fraction, bursts: paper_bursts(n).max(20) };
            let order = arrival_order(n, &model, seed).unwrap();
            assert_eq!(order.timestamps.len(), n as usize, "seed {seed}");
            let mut sorted = order.timestamps.clone();
            sorted.sort_unstable();
            assert!(sorted.iter().enumerate().all(|(i, t)| *t == i as i64), "a permutation, seed {seed}");
            let expect = (fraction * n as f64).round() as u64;
            assert_eq!(order.ooo_events, expect, "seed {seed}");
            assert_eq!(late_events(&order.timestamps), expect, "every OOO event arrives late, seed {seed}");
            assert_eq!(order.uniform_events, (expect as f64 * 0.1).round() as u64);
            assert_eq!(order.burst_events + order.uniform_events, expect);
        }
    }

    #[test]
    fn bursts_are_equidistant_runs_of_close_timestamps() {
        let n = 100_000;
        let model = OooModel { fraction: 0.10, bursts: 50 };
        let order = arrival_order(n, &model, 9).unwrap();
        assert_eq!(order.bursts, 50);
        assert_eq!(order.burst_ranges.len(), 50);
        let lens: Vec<i64> = order.burst_ranges.iter().map(|(s, e)| e - s).collect();
        assert_eq!(lens.iter().sum::<i64>() as u64, order.burst_events);
        assert!(lens.iter().max().unwrap() - lens.iter().min().unwrap() <= 1, "equal shares: {lens:?}");
        let gaps: Vec<i64> = order.burst_ranges.windows(2).map(|w| w[1].0 - w[0].0).collect();
        assert!(gaps.iter().max().unwrap() - gaps.iter().min().unwrap() <= 2, "equi-distant: {gaps:?}");
        // Each burst arrives as one contiguous run, in timestamp order.
        let (start, end) = order.burst_ranges[10];
        let at = order.timestamps.iter().position(|t| *t == start).unwrap();
        let run: Vec<i64> = order.timestamps[at..at + (end - start) as usize].to_vec();
        assert_eq!(run, (start..end).collect::<Vec<_>>());
        assert!(order.timestamps[..at].iter().any(|t| *t >= end), "the burst arrives late");
    }

    #[test]
    fn arrival_order_is_deterministic_per_seed() {
        let model = OooModel { fraction: 0.05, bursts: 20 };
        let a = arrival_order(50_000, &model, 42).unwrap();
        let b = arrival_order(50_000, &model, 42).unwrap();
        let c = arrival_order(50_000, &model, 43).unwrap();
        assert_eq!(a.timestamps, b.timestamps);
        assert_ne!(a.timestamps, c.timestamps, "the uniform share depends on the seed");
    }

    #[test]
    fn burst_counts_scale_and_bad_models_are_rejected() {
        assert_eq!(paper_bursts(100_000_000), 10_000);
        assert_eq!(paper_bursts(10_000_000), 1_000);
        assert_eq!(paper_bursts(1_000), 1);
        assert_eq!(paper_bursts(1_000_000_000), 10_000);
        assert!(arrival_order(1000, &OooModel { fraction: 0.9, bursts: 1 }, 1).is_err());
        assert!(
            arrival_order(1000, &OooModel { fraction: 0.4, bursts: 1 }, 1).is_err(),
            "one burst too long"
        );
        let none = arrival_order(1000, &OooModel { fraction: 0.0, bursts: 5 }, 1).unwrap();
        assert_eq!(late_events(&none.timestamps), 0);
    }
}
