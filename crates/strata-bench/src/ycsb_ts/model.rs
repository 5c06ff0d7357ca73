//! The YCSB-TS data model (DecLog section 5.1): series keys, 50-byte data
//! points, operations and 10-operation transactions. Types of the benchmark's
//! own, independent of the engine.
//!
//! - Key `k` (an index in `0..num_keys`) is the series
//!   `usermetric,tag0=<k % 100>,tag1=<(k / 100) % 100>,tag2=<k / 10000>` with
//!   field `value`: YCSB-TS's measurement name, tags that are a mixed-radix
//!   spelling of `k` (so each key has its own tag set), tags sorted by key.
//! - A data point is 50 bytes by the paper's accounting: an 8-byte timestamp,
//!   an 8-byte f64 value and a 34-byte ASCII string ([`DataPoint::encode`]).
//!   In line protocol it is `<series> value=<f64>,note="<34 chars>" <ts ns>`.
//! - The value and note of every inserted point are a pure function of
//!   `(seed, key, point index)` ([`point_payload`]), so anyone can recompute
//!   what a point held before any update.

use std::fmt::{self, Write as _};

/// YCSB-TS's measurement.
pub const MEASUREMENT: &str = "usermetric";
/// The field the series key names (the point's float value).
pub const VALUE_FIELD: &str = "value";
/// The string field carrying the 34-byte character field.
pub const NOTE_FIELD: &str = "note";
/// Tag keys of every series, in sorted order.
pub const TAG_KEYS: [&str; 3] = ["tag0", "tag1", "tag2"];
/// Radix of the key's spelling in tags: tag0 and tag1 take 100 values each.
pub const TAG_RADIX: u64 = 100;
/// Bytes of the timestamp, of the value and of the character field.
pub const TIMESTAMP_BYTES: usize = 8;
pub const VALUE_BYTES: usize = 8;
pub const NOTE_BYTES: usize = 34;
/// A data point's size in the paper's accounting.
pub const POINT_BYTES: usize = TIMESTAMP_BYTES + VALUE_BYTES + NOTE_BYTES;
/// Operations in every transaction.
pub const OPS_PER_TXN: usize = 10;
/// Inserted values are uniform in `[0, MAX_VALUE)`.
pub const MAX_VALUE: f64 = 1000.0;

/// The characters of a note: 64 symbols, none of which line protocol escapes.
const NOTE_ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The three tag values of key `key`.
pub fn tag_values(key: u64) -> [u64; 3] {
    [key % TAG_RADIX, (key / TAG_RADIX) % TAG_RADIX, key / (TAG_RADIX * TAG_RADIX)]
}

/// The key's tags as (key, value) strings, sorted by key.
pub fn series_tags(key: u64) -> Vec<(String, String)> {
    TAG_KEYS.iter().zip(tag_values(key)).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// Appends `usermetric,tag0=..,tag1=..,tag2=..` (no trailing space).
pub fn write_series(key: u64, out: &mut String) {
    out.push_str(MEASUREMENT);
    for (tag, value) in TAG_KEYS.iter().zip(tag_values(key)) {
        // Writing to a String cannot fail.
        let _ = write!(out, ",{tag}={value}");
    }
}

/// The 34-byte character field: ASCII letters, digits, `-` and `_`.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct Note([u8; NOTE_BYTES]);

impl Note {
    /// `None` unless every byte is a note character.
    pub fn from_bytes(bytes: [u8; NOTE_BYTES]) -> Option<Note> {
        bytes.iter().all(|b| NOTE_ALPHABET.contains(b)).then_some(Note(bytes))
    }

    pub fn as_bytes(&self) -> &[u8; NOTE_BYTES] {
        &self.0
    }

    pub fn as_str(&self) -> &str {
        // Only built from NOTE_ALPHABET, which is ASCII.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl fmt::Debug for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Note({:?})", self.as_str())
    }
}

/// One YCSB-TS data point (its series is the key it belongs to).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct DataPoint {
    pub timestamp_ns: i64,
    pub value: f64,
    pub note: Note,
}

impl DataPoint {
    /// The paper's 50 bytes: timestamp, value bits, note; little-endian.
    pub fn encode(&self) -> [u8; POINT_BYTES] {
        let mut bytes = [0u8; POINT_BYTES];
        bytes[..TIMESTAMP_BYTES].copy_from_slice(&self.timestamp_ns.to_le_bytes());
        bytes[TIMESTAMP_BYTES..TIMESTAMP_BYTES + VALUE_BYTES].copy_from_slice(&self.value.to_le_bytes());
        bytes[TIMESTAMP_BYTES + VALUE_BYTES..].copy_from_slice(&self.note.0);
        bytes
    }

    /// Inverse of [`Self::encode`]; `None` if `bytes` is not 50 bytes or the
    /// note holds a character outside the note alphabet.
    pub fn decode(bytes: &[u8]) -> Option<DataPoint> {
        let bytes: &[u8; POINT_BYTES] = bytes.try_into().ok()?;
        let (ts, rest) = bytes.split_at(TIMESTAMP_BYTES);
        let (value, note) = rest.split_at(VALUE_BYTES);
        Some(DataPoint {
            timestamp_ns: i64::from_le_bytes(ts.try_into().ok()?),
            value: f64::from_le_bytes(value.try_into().ok()?),
            note: Note::from_bytes(note.try_into().ok()?)?,
        })
    }

    /// One line of line protocol for this point of series `key`, without a
    /// newline: `usermetric,tag0=..,tag1=..,tag2=.. value=<f64>,note="<34>" <ns>`.
    pub fn to_line_protocol(&self, key: u64) -> String {
        let mut line = String::with_capacity(128);
        self.write_line_protocol(key, &mut line);
        line
    }

    /// Appends [`Self::to_line_protocol`]'s line (no newline) to `out`.
    pub fn write_line_protocol(&self, key: u64, out: &mut String) {
        write_series(key, out);
        // `{}` prints the shortest decimal that reads back to the same f64,
        // never in exponent form; the note needs no escaping.
        let _ = write!(
            out,
            " {VALUE_FIELD}={},{NOTE_FIELD}=\"{}\" {}",
            self.value,
            self.note.as_str(),
            self.timestamp_ns
        );
    }
}

/// SplitMix64's output function: a bijective 64-bit mix.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The value and note of point `point_index` of key `key` as first inserted:
/// SplitMix64 words keyed by `(seed, key, point_index)`; the value is uniform
/// in `[0, MAX_VALUE)`, the note takes 6 bits per character.
pub fn point_payload(seed: u64, key: u64, point_index: u64) -> (f64, Note) {
    const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;
    let base = mix64(mix64(seed ^ mix64(key.wrapping_add(GOLDEN))) ^ point_index);
    let word = |i: u64| mix64(base.wrapping_add(i.wrapping_mul(GOLDEN)));
    let value = (word(0) >> 11) as f64 / (1u64 << 53) as f64 * MAX_VALUE;
    let mut note = [0u8; NOTE_BYTES];
    for (chunk_index, chunk) in note.chunks_mut(10).enumerate() {
        let mut bits = word(1 + chunk_index as u64);
        for byte in chunk {
            *byte = NOTE_ALPHABET[(bits & 63) as usize];
            bits >>= 6;
        }
    }
    (value, Note(note))
}

/// What an operation does.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    Insert,
    Read,
    Update,
}

impl OpKind {
    pub const ALL: [OpKind; 3] = [OpKind::Insert, OpKind::Read, OpKind::Update];

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Insert => "insert",
            OpKind::Read => "read",
            OpKind::Update => "update",
        }
    }
}

/// One operation of a transaction or of the load phase.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Op {
    /// A new point; per key, inserts come in timestamp order, one interval apart.
    Insert { key: u64, ts_ns: i64, value: f64, note: Note },
    /// Read an existing point.
    Read { key: u64, ts_ns: i64 },
    /// Overwrite an existing point's value (its note is kept).
    Update { key: u64, ts_ns: i64, value: f64 },
}

impl Op {
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Insert { .. } => OpKind::Insert,
            Op::Read { .. } => OpKind::Read,
            Op::Update { .. } => OpKind::Update,
        }
    }

    pub fn key(&self) -> u64 {
        match *self {
            Op::Insert { key, .. } | Op::Read { key, .. } | Op::Update { key, .. } => key,
        }
    }

    pub fn ts_ns(&self) -> i64 {
        match *self {
            Op::Insert { ts_ns, .. } | Op::Read { ts_ns, .. } | Op::Update { ts_ns, .. } => ts_ns,
        }
    }

    /// The inserted point, for an insert.
    pub fn inserted_point(&self) -> Option<DataPoint> {
        match *self {
            Op::Insert { ts_ns, value, note, .. } => Some(DataPoint { timestamp_ns: ts_ns, value, note }),
            _ => None,
        }
    }
}

/// One transaction: exactly [`OPS_PER_TXN`] operations.
#[derive(Clone, Debug, PartialEq)]
pub struct Txn {
    /// Unique across all workers of one spec: `local index * workers + worker`.
    pub id: u64,
    pub ops: [Op; OPS_PER_TXN],
}

impl Txn {
    /// No inserts and no updates: nothing to log.
    pub fn is_read_only(&self) -> bool {
        self.ops.iter().all(|op| op.kind() == OpKind::Read)
    }

    pub fn count(&self, kind: OpKind) -> usize {
        self.ops.iter().filter(|op| op.kind() == kind).count()
    }
}
