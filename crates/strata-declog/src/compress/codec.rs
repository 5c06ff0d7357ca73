//! The entry codec of DecLog's log compression (declog.txt 4.4.1; format:
//! `docs/format/declog-stream.md`, "Key hash table and compressed payloads").
//!
//! A point (series key, timestamp, float value, remaining bytes) becomes an
//! entry payload and the entry's compression bit:
//! - key not in the table: bit 0, payload = key id (varint) + key length
//!   (varint) + key + timestamp (8 bytes LE) + value bits (8 bytes LE) +
//!   rest; the key is inserted with that id and the state after this point;
//! - key in the table: bit 1, payload = key reference (varint: id x 2 +
//!   reset bit) + a bit stream + rest. With the reset bit clear (the key has
//!   state) the bit stream holds the timestamp's delta-of-delta in Gorilla
//!   buckets and the value's Gorilla XOR code; with it set (the key's state
//!   was cleared, after a checkpoint or a restart) the timestamp and the
//!   value bits raw (64 bits each). The bit stream is zero-padded to a byte.
//!
//! Decompression mirrors compression step by step, so the decompressor's
//! table evolves exactly like the compressor's. A key's first entry since
//! its insert or since a clear is self-describing (bit 0 with the key, or
//! bit 1 with the reset bit) and resets the key's state in the decompressor
//! whatever it was, so a decompressor need not know where a checkpoint cut
//! the log: it needs only the key ids (the active table's slots; ids never
//! change) and the entries of each key in the order they were compressed,
//! from any point where every key's state was cleared. Key-based
//! partitioning (and DecLog's per-stream tables) put every entry of a key in
//! one stream in that order, so parsing each stream in order satisfies it.
//!
//! Uncompressed entries carry their id, so the ids a decompressor learns do
//! not depend on how the parsing interleaves the streams.

use super::bits::{read_varint, write_varint, BitReader, BitWriter};
use super::key_table::{KeyState, KeyTable, KEY_TABLE_MAX_KEY_BYTES, XOR_NO_WINDOW};
use crate::error::{DeclogError, DecodeError};

/// Delta-of-delta buckets after the single bit `0` (delta-of-delta zero):
/// (control code, control bits, value bits), the value in two's complement.
pub const DOD_BUCKETS: [(u64, u32, u32); 5] =
    [(0b10, 2, 7), (0b110, 3, 9), (0b1110, 4, 12), (0b11110, 5, 32), (0b11111, 5, 64)];
/// Width of the leading-zero count of a new XOR window.
pub const XOR_LEADING_ZEROS_BITS: u32 = 5;
/// Leading zero counts above this are stored as this.
pub const XOR_MAX_LEADING_ZEROS: u32 = 31;
/// Width of a new window's meaningful length (64 is stored as 0).
pub const XOR_MEANINGFUL_BITS_FIELD: u32 = 6;

/// A point to log.
#[derive(Copy, Clone, Debug)]
pub struct LogPoint<'a> {
    /// The series key: measurement, tags and field key, as bytes.
    pub key: &'a [u8],
    pub timestamp: i64,
    pub value: f64,
    /// Bytes stored verbatim after the compressed fields (e.g. a string field).
    pub rest: &'a [u8],
}

/// A decompressed point.
#[derive(Clone, Debug)]
pub struct DecodedPoint {
    pub key: Vec<u8>,
    pub timestamp: i64,
    pub value: f64,
    pub rest: Vec<u8>,
}

impl DecodedPoint {
    /// Equality with the float compared bit for bit.
    pub fn same_as(&self, p: &LogPoint<'_>) -> bool {
        self.key == p.key
            && self.timestamp == p.timestamp
            && self.value.to_bits() == p.value.to_bits()
            && self.rest == p.rest
    }
}

/// A compressed entry: the compression bit and the payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compressed {
    pub compressed: bool,
    pub payload: Vec<u8>,
}

fn fits_signed(value: i64, bits: u32) -> bool {
    bits >= 64 || (-(1i64 << (bits - 1))..(1i64 << (bits - 1))).contains(&value)
}

fn write_dod(w: &mut BitWriter, dod: i64) {
    if dod == 0 {
        w.write_bit(false);
        return;
    }
    for &(control, control_bits, value_bits) in &DOD_BUCKETS {
        if fits_signed(dod, value_bits) {
            w.write_bits(control, control_bits);
            let mask = if value_bits == 64 { u64::MAX } else { (1u64 << value_bits) - 1 };
            w.write_bits(dod as u64 & mask, value_bits);
            return;
        }
    }
}

fn read_dod(r: &mut BitReader<'_>) -> Result<i64, DecodeError> {
    if !r.read_bit()? {
        return Ok(0);
    }
    let mut bucket = 0;
    while bucket < DOD_BUCKETS.len() - 1 && r.read_bit()? {
        bucket += 1;
    }
    let bits = DOD_BUCKETS[bucket].2;
    let raw = r.read_bits(bits)?;
    // Sign-extend from `bits`.
    Ok(if bits == 64 { raw as i64 } else { ((raw << (64 - bits)) as i64) >> (64 - bits) })
}

/// Writes `value_bits` XORed against the state; returns the new window.
fn write_xor(w: &mut BitWriter, s: &KeyState, value_bits: u64) -> (u8, u8) {
    let xor = value_bits ^ s.last_value_bits;
    if xor == 0 {
        w.write_bit(false);
        return (s.xor_leading, s.xor_trailing);
    }
    w.write_bit(true);
    let leading = xor.leading_zeros().min(XOR_MAX_LEADING_ZEROS);
    let trailing = xor.trailing_zeros();
    if s.xor_leading != XOR_NO_WINDOW && leading >= s.xor_leading as u32 && trailing >= s.xor_trailing as u32
    {
        w.write_bit(false);
        let meaningful = 64 - s.xor_leading as u32 - s.xor_trailing as u32;
        w.write_bits(xor >> s.xor_trailing, meaningful);
        return (s.xor_leading, s.xor_trailing);
    }
    w.write_bit(true);
    let meaningful = 64 - leading - trailing;
    w.write_bits(leading as u64, XOR_LEADING_ZEROS_BITS);
    w.write_bits((meaningful % 64) as u64, XOR_MEANINGFUL_BITS_FIELD);
    w.write_bits(xor >> trailing, meaningful);
    (leading as u8, trailing as u8)
}

/// Reads a value XORed against the state; returns its bits and the window.
fn read_xor(r: &mut BitReader<'_>, s: &KeyState) -> Result<(u64, u8, u8), DecodeError> {
    if !r.read_bit()? {
        return Ok((s.last_value_bits, s.xor_leading, s.xor_trailing));
    }
    let (leading, trailing) = if !r.read_bit()? {
        if s.xor_leading == XOR_NO_WINDOW {
            return Err(DecodeError::Invalid("XOR value reuses a window that is not open".into()));
        }
        (s.xor_leading as u32, s.xor_trailing as u32)
    } else {
        let leading = r.read_bits(XOR_LEADING_ZEROS_BITS)? as u32;
        let meaningful = match r.read_bits(XOR_MEANINGFUL_BITS_FIELD)? as u32 {
            0 => 64,
            m => m,
        };
        if leading + meaningful > 64 {
            return Err(DecodeError::Invalid(format!(
                "XOR window of {leading} leading zeros and {meaningful} bits exceeds 64"
            )));
        }
        (leading, 64 - leading - meaningful)
    };
    let meaningful = 64 - leading - trailing;
    let xor = r.read_bits(meaningful)? << trailing;
    Ok((s.last_value_bits ^ xor, leading as u8, trailing as u8))
}

/// Writes a point of a key with state `s` as its timestamp's
/// delta-of-delta and its value's XOR code; returns the state after it.
pub(super) fn write_delta_coded(
    w: &mut BitWriter,
    s: &KeyState,
    timestamp: i64,
    value_bits: u64,
) -> KeyState {
    let delta = timestamp.wrapping_sub(s.last_timestamp);
    write_dod(w, delta.wrapping_sub(s.last_delta));
    let window = write_xor(w, s, value_bits);
    s.after(timestamp, delta, value_bits, window)
}

/// Reads what [`write_delta_coded`] wrote: the timestamp, the value bits and
/// the state after them.
pub(super) fn read_delta_coded(
    r: &mut BitReader<'_>,
    s: &KeyState,
) -> Result<(i64, u64, KeyState), DecodeError> {
    let dod = read_dod(r)?;
    let delta = s.last_delta.wrapping_add(dod);
    let timestamp = s.last_timestamp.wrapping_add(delta);
    let (value_bits, xor_leading, xor_trailing) = read_xor(r, s)?;
    Ok((timestamp, value_bits, s.after(timestamp, delta, value_bits, (xor_leading, xor_trailing))))
}

impl KeyState {
    /// The state after a delta-coded point: its timestamp, delta and value
    /// bits, and the XOR window (leading, trailing) in use.
    fn after(
        &self,
        timestamp: i64,
        delta: i64,
        value_bits: u64,
        (xor_leading, xor_trailing): (u8, u8),
    ) -> KeyState {
        KeyState {
            last_timestamp: timestamp,
            last_delta: delta,
            last_value_bits: value_bits,
            xor_leading,
            xor_trailing,
            ..*self
        }
    }
}

/// The state after a key's first point (since insert or clear).
pub(super) fn first_state(timestamp: i64, value_bits: u64, entry_meta: u64) -> KeyState {
    KeyState {
        has_state: true,
        last_timestamp: timestamp,
        last_delta: 0,
        last_value_bits: value_bits,
        xor_leading: XOR_NO_WINDOW,
        xor_trailing: 0,
        first_entry_meta: entry_meta,
    }
}

/// Compresses `point` against `table` and moves the key's state on.
/// `entry_meta` is the log metadata of this entry (e.g. its stream
/// position); the table keeps it when this is the key's first entry.
///
/// A new key is inserted (its slot persisted) before this returns; the
/// caller persists the returned entry. A slot without its entry after a
/// crash is harmless: the key's id is just never referenced.
pub fn compress(
    point: &LogPoint<'_>,
    entry_meta: u64,
    table: &mut KeyTable,
) -> Result<Compressed, DeclogError> {
    let value_bits = point.value.to_bits();
    let Some(record) = table.get(point.key) else {
        KeyTable::check_key(point.key)?;
        let id = table.next_id();
        let mut payload = Vec::with_capacity(point.key.len() + point.rest.len() + 24);
        write_varint(&mut payload, id as u64);
        write_varint(&mut payload, point.key.len() as u64);
        payload.extend_from_slice(point.key);
        payload.extend_from_slice(&point.timestamp.to_le_bytes());
        payload.extend_from_slice(&value_bits.to_le_bytes());
        payload.extend_from_slice(point.rest);
        table.insert(point.key, Some(id), first_state(point.timestamp, value_bits, entry_meta))?;
        return Ok(Compressed { compressed: false, payload });
    };
    let s = record.state;
    let mut payload = Vec::with_capacity(point.rest.len() + 8);
    write_varint(&mut payload, key_ref(record.id, !s.has_state));
    let mut w = BitWriter::default();
    let next = if !s.has_state {
        w.write_bits(point.timestamp as u64, 64);
        w.write_bits(value_bits, 64);
        first_state(point.timestamp, value_bits, entry_meta)
    } else {
        write_delta_coded(&mut w, &s, point.timestamp, value_bits)
    };
    payload.extend_from_slice(&w.into_bytes());
    payload.extend_from_slice(point.rest);
    table.set_state(point.key, next);
    Ok(Compressed { compressed: true, payload })
}

/// The key reference of a compressed entry: the id and the reset bit.
pub(super) fn key_ref(id: u32, reset: bool) -> u64 {
    ((id as u64) << 1) | reset as u64
}

pub(super) fn bad(what: impl std::fmt::Display) -> DeclogError {
    DeclogError::corruption(0, format!("compressed log payload: {what}"))
}

fn u64_at(b: &[u8], at: usize) -> Result<u64, DeclogError> {
    b.get(at..at + 8)
        .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
        .ok_or_else(|| bad("payload ends inside a raw field"))
}

/// Decompresses an entry's payload against `table`, moving the key's state
/// on exactly as [`compress`] did. Bad bytes are `Corruption`, never a
/// panic; on error the table is unchanged.
pub fn decompress(
    compressed: bool,
    payload: &[u8],
    entry_meta: u64,
    table: &mut KeyTable,
) -> Result<DecodedPoint, DeclogError> {
    let mut at = 0;
    let first = read_varint(payload, &mut at).map_err(bad)?;
    let (id, reset) = if compressed { (first >> 1, first & 1 == 1) } else { (first, true) };
    let id = u32::try_from(id).map_err(|_| bad(format!("key id {id} over 32 bits")))?;
    if !compressed {
        let key_len = read_varint(payload, &mut at).map_err(bad)?;
        if key_len > KEY_TABLE_MAX_KEY_BYTES as u64 {
            return Err(bad(format!("key of {key_len} bytes over the limit")));
        }
        let key = payload.get(at..at + key_len as usize).ok_or_else(|| bad("payload ends inside the key"))?;
        at += key_len as usize;
        let timestamp = u64_at(payload, at)? as i64;
        let value_bits = u64_at(payload, at + 8)?;
        let rest = payload[at + 16..].to_vec();
        let state = first_state(timestamp, value_bits, entry_meta);
        match table.get(key) {
            Some(r) if r.id == id => table.set_state(key, state),
            Some(r) => return Err(bad(format!("key's id {id} disagrees with the table's {}", r.id))),
            None => {
                if table.key_of(id).is_some() || id == u32::MAX {
                    return Err(bad(format!("key id {id} belongs to another key")));
                }
                table.insert(key, Some(id), state)?;
            }
        }
        return Ok(DecodedPoint { key: key.to_vec(), timestamp, value: f64::from_bits(value_bits), rest });
    }
    let key = table.key_of(id).ok_or_else(|| bad(format!("unknown key id {id}")))?.to_vec();
    let s = table.get(&key).expect("ids and keys agree").state;
    let mut r = BitReader::new(&payload[at..]);
    let (timestamp, value_bits, next) = if reset {
        let timestamp = r.read_bits(64).map_err(bad)? as i64;
        let value_bits = r.read_bits(64).map_err(bad)?;
        (timestamp, value_bits, first_state(timestamp, value_bits, entry_meta))
    } else if !s.has_state {
        return Err(bad(format!(
            "delta-coded entry of key id {id}, whose state is cleared (the log does not start where \
             every key's state was cleared)"
        )));
    } else {
        read_delta_coded(&mut r, &s).map_err(bad)?
    };
    let rest = payload[at + r.bytes_consumed()..].to_vec();
    table.set_state(&key, next);
    Ok(DecodedPoint { key, timestamp, value: f64::from_bits(value_bits), rest })
}
