//! Deterministic sample events shared by the crash workloads of
//! `strata-crashtest`, the fuzz entries and this crate's unit tests: the
//! wide crash schema and its numbered events, the out-of-order queue's
//! `ts | id | filler` events, and the small seeded generator they draw from.
//!
//! Test scaffolding, not part of the product: compiled only for tests and
//! under the `crashtest` or `fuzz` feature (issue 13 item 5). It stays in
//! this crate, not in `strata-testkit`, because the fuzz entries compiled
//! under `fuzz` (not as tests) use it and a library cannot use a
//! dev-dependency.

use crate::event::{self, Event, Value};
use crate::schema::{Attr, AttrType, StreamSchema};

/// Numeric attributes of the crash schema (the first is the sequence number).
pub const CRASH_NUMERIC_ATTRS: usize = 40;

/// The wide schema of the crash workload: `seq` (i64), 39 f64 values, two
/// 255-byte strings; 838-byte events.
pub fn crash_schema() -> StreamSchema {
    let mut attrs = vec![Attr::new("seq", AttrType::I64)];
    attrs.extend((1..CRASH_NUMERIC_ATTRS).map(|i| Attr::new(format!("v{i}"), AttrType::F64)));
    attrs.push(Attr::new("label", AttrType::FixedStr(255)));
    attrs.push(Attr::new("note", AttrType::FixedStr(255)));
    StreamSchema::new(attrs).expect("the crash schema is valid")
}

/// Event number `seq` of the crash workload: timestamps in runs of up to
/// three equal values, small integral values (exact sums).
pub fn crash_event(schema: &StreamSchema, seed: u64, seq: u64) -> Vec<u8> {
    let ts = 1_000 + (seq / 3) as i64 * 10 + ((seq % 3 == 2) as i64);
    let shape = CrashValues { mul: 31, step: 7, pad: 'x', pad_mod: 200 };
    crash_event_shaped(schema, seed, seq, ts, shape)
}

/// How the attribute values of a crash event vary with its number.
#[derive(Copy, Clone)]
pub struct CrashValues {
    pub mul: u64,
    pub step: u64,
    pub pad: char,
    pub pad_mod: u64,
}

/// Event `seq` at `ts`: its number, numeric attributes that are small
/// integers (exact sums), a text naming it and a padding of varying length.
pub fn crash_event_shaped(
    schema: &StreamSchema,
    seed: u64,
    seq: u64,
    ts: i64,
    shape: CrashValues,
) -> Vec<u8> {
    let mut values = vec![Value::I64(seq as i64)];
    values.extend(
        (1..CRASH_NUMERIC_ATTRS as u64).map(|i| {
            Value::F64(((seq.wrapping_mul(shape.mul) + i * shape.step + seed) % 1000) as f64 - 500.0)
        }),
    );
    values.push(Value::Str(format!("event {seq} of seed {seed}")));
    values.push(Value::Str(shape.pad.to_string().repeat((seq % shape.pad_mod) as usize)));
    event::encode(schema, &Event::new(ts, values)).expect("crash events fit the schema")
}

/// The sequence number an event of the crash workload carries.
pub fn seq_of(schema: &StreamSchema, bytes: &[u8]) -> Option<u64> {
    event::attr_as_f64(schema, bytes, 0).map(|v| v as u64)
}

/// SplitMix64: a small seeded generator (no RNG dependency outside tests).
#[derive(Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0; the modulo bias is irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// The out-of-order queue's event of transaction `id` with timestamp `ts`:
/// `ts | id | filler`, `event_bytes` long.
pub fn workload_event(ts: i64, id: u64, event_bytes: usize, rng: &mut SplitMix64) -> Vec<u8> {
    let mut e = Vec::with_capacity(event_bytes);
    e.extend_from_slice(&ts.to_le_bytes());
    e.extend_from_slice(&id.to_le_bytes());
    while e.len() < event_bytes {
        e.push(rng.next_u64() as u8);
    }
    e.truncate(event_bytes);
    e
}
