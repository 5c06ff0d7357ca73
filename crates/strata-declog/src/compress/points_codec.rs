//! The per-key entry codec (format version 3; `docs/format/declog-stream.md`,
//! "Compressed per-key payloads"): every point one transaction writes to one
//! key, compressed together against the key's running state (declog.txt
//! 4.4.1 applied to a run of points instead of one).
//!
//! Compressed form (the key is always in the table: DecLog registers every
//! key before its entries are queued, and logs a key the table cannot take
//! raw): key reference (varint: id x 2 + reset bit), point count (varint),
//! one bit stream for all points, zero-padded to a byte (a point of a key
//! whose state is cleared, which only the first can be, as 64 raw timestamp
//! bits and 64 raw value bits, every other as the timestamp's delta-of-delta
//! and the value's XOR code, exactly as [`super::codec`] codes one point),
//! then the rests: a form byte, 1 when every point has the same rest (then
//! one rest length varint and its bytes), 0 otherwise (a length varint and
//! the bytes per point).

use smallvec::SmallVec;

use super::bits::{read_varint, write_varint, BitReader, BitWriter};
use super::codec::{bad, first_state, key_ref, read_delta_coded, write_delta_coded, Compressed};
use super::key_table::{KeyRecord, KeyState, KeyTable};
use super::points_payload::{PointsPayloadBuilder, PointsPayloadRef};
use super::points_source::PointsSource;
use crate::error::DeclogError;

/// Rest form byte: one rest length and rest per point.
pub const RESTS_PER_POINT: u8 = 0;
/// Rest form byte: every point has the one rest that follows.
pub const RESTS_SHARED: u8 = 1;

/// Compresses a points payload whose key is in `table`, moving the key's
/// state past its last point. `entry_meta` is kept as the key's first entry
/// metadata when its state was cleared.
pub fn compress_points(
    points: &PointsPayloadRef<'_>,
    entry_meta: u64,
    table: &mut KeyTable,
) -> Result<Compressed, DeclogError> {
    let record = table.record_mut(points.key).ok_or_else(|| {
        DeclogError::InvalidInput("a per-key entry's key must be registered in its stream's key table".into())
    })?;
    Ok(compress_points_of(points, entry_meta, record))
}

/// [`compress_points`] against the key's record, found by the caller (one
/// lookup for the registration check, the state read and its update), for
/// any [`PointsSource`] (a points payload, or the engine's points).
pub(crate) fn compress_points_of(
    points: &dyn PointsSource,
    entry_meta: u64,
    record: &mut KeyRecord,
) -> Compressed {
    let count = points.count();
    assert!(count > 0, "a per-key entry has at least one point");
    let mut s = record.state;
    let mut out = Vec::with_capacity(16 + count as usize * 4);
    write_varint(&mut out, key_ref(record.id, !s.has_state));
    write_varint(&mut out, u64::from(count));
    let mut w = BitWriter::appending_to(out);
    // The first point's rest, and whether every other point has the same.
    let mut shared: Option<SmallVec<[u8; 16]>> = None;
    let mut all_same = true;
    points.for_each_point(&mut |p| {
        s = if s.has_state {
            write_delta_coded(&mut w, &s, p.timestamp, p.value_bits)
        } else {
            w.write_bits(p.timestamp as u64, 64);
            w.write_bits(p.value_bits, 64);
            first_state(p.timestamp, p.value_bits, entry_meta)
        };
        match &shared {
            None => shared = Some(SmallVec::from_slice(p.rest)),
            Some(r) => all_same &= r[..] == *p.rest,
        }
    });
    let mut out = w.into_bytes();
    if all_same {
        let rest = shared.expect("a per-key entry has a point");
        out.push(RESTS_SHARED);
        write_varint(&mut out, rest.len() as u64);
        out.extend_from_slice(&rest);
    } else {
        out.push(RESTS_PER_POINT);
        points.for_each_point(&mut |p| {
            write_varint(&mut out, p.rest.len() as u64);
            out.extend_from_slice(p.rest);
        });
    }
    record.state = s;
    Compressed { compressed: true, payload: out }
}

/// Decompresses a per-key entry's payload against `table` back to its
/// points payload, moving the key's state on exactly as
/// [`compress_points`] did. Bad bytes are `Corruption`, never a panic; on
/// error the table is unchanged.
pub fn decompress_points(
    payload: &[u8],
    entry_meta: u64,
    table: &mut KeyTable,
) -> Result<Vec<u8>, DeclogError> {
    let mut at = 0;
    let first = read_varint(payload, &mut at).map_err(bad)?;
    let (id, reset) = (first >> 1, first & 1 == 1);
    let id = u32::try_from(id).map_err(|_| bad(format!("key id {id} over 32 bits")))?;
    let count = read_varint(payload, &mut at).map_err(bad)?;
    // Every point takes at least two bits (delta-of-delta 0, XOR 0).
    if count == 0 || count > (payload.len() as u64) * 4 || count > u64::from(u32::MAX) {
        return Err(bad(format!("per-key entry of {count} points in {} bytes", payload.len())));
    }
    let key = table.key_of(id).ok_or_else(|| bad(format!("unknown key id {id}")))?.to_vec();
    let mut s = if reset { KeyState::CLEARED } else { table.get(&key).expect("ids and keys agree").state };
    if !s.has_state && !reset {
        return Err(bad(format!(
            "delta-coded entry of key id {id}, whose state is cleared (the log does not start where \
             every key's state was cleared)"
        )));
    }
    let mut r = BitReader::new(&payload[at..]);
    let mut values = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let (timestamp, value_bits, next) = if s.has_state {
            read_delta_coded(&mut r, &s).map_err(bad)?
        } else {
            let timestamp = r.read_bits(64).map_err(bad)? as i64;
            let value_bits = r.read_bits(64).map_err(bad)?;
            (timestamp, value_bits, first_state(timestamp, value_bits, entry_meta))
        };
        values.push((timestamp, value_bits));
        s = next;
    }
    at += r.bytes_consumed();
    let form = *payload.get(at).ok_or_else(|| bad("per-key entry ends before its rests"))?;
    at += 1;
    let read_rest = |at: &mut usize| -> Result<&[u8], DeclogError> {
        let len = read_varint(payload, at).map_err(bad)?;
        let rest = payload
            .get(*at..)
            .and_then(|tail| tail.get(..usize::try_from(len).ok()?))
            .ok_or_else(|| bad(format!("rest of {len} bytes overruns the entry")))?;
        *at += rest.len();
        Ok(rest)
    };
    let mut out = PointsPayloadBuilder::new(&key, values.len());
    match form {
        RESTS_SHARED => {
            let rest = read_rest(&mut at)?;
            for (timestamp, value_bits) in values {
                out.push(timestamp, value_bits, rest);
            }
        }
        RESTS_PER_POINT => {
            for (timestamp, value_bits) in values {
                let rest = read_rest(&mut at)?;
                out.push(timestamp, value_bits, rest);
            }
        }
        other => return Err(bad(format!("unknown rest form {other}"))),
    }
    if at != payload.len() {
        return Err(bad(format!("{} bytes after the rests", payload.len() - at)));
    }
    table.set_state(&key, s);
    Ok(out.finish())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use strata_pmem::{Region, RegionOffset};

    use super::*;
    use crate::compress::key_table::key_table_area_bytes;
    use crate::compress::points_payload;
    use crate::compress::points_payload::{encode, PointItem};

    fn table() -> KeyTable {
        KeyTable::format(Arc::new(Region::sim(key_table_area_bytes(8))), RegionOffset(0), 8).unwrap()
    }

    fn regular(key: &[u8], from: i64, n: usize, rest: &[u8]) -> Vec<u8> {
        let pts: Vec<PointItem<'_>> = (0..n)
            .map(|i| PointItem {
                timestamp: from + i as i64 * 10,
                value_bits: (i as f64 * 0.5).to_bits(),
                rest,
            })
            .collect();
        encode(key, pts)
    }

    #[test]
    fn runs_round_trip_across_entries_and_resets() {
        let (mut enc, mut dec) = (table(), table());
        for t in [&mut enc, &mut dec] {
            t.insert(b"k", None, KeyState::CLEARED).unwrap();
        }
        let a = regular(b"k", 1_000, 50, b"\x01");
        let b = regular(b"k", 1_500, 3, b"\x01");
        let mixed = encode(
            b"k",
            [
                PointItem { timestamp: 7, value_bits: u64::MAX, rest: b"" },
                PointItem { timestamp: i64::MIN, value_bits: 0, rest: b"long rest" },
            ],
        );
        for (i, p) in [&a, &b, &mixed].into_iter().enumerate() {
            let c = compress_points(&points_payload::decode(p).unwrap(), i as u64, &mut enc).unwrap();
            assert!(c.compressed);
            assert_eq!(&decompress_points(&c.payload, i as u64, &mut dec).unwrap(), p);
        }
        assert_eq!(enc.get(b"k").unwrap().state, dec.get(b"k").unwrap().state);
        // 50 regular points with one shared rest: about a byte each, far
        // below the 16 raw bytes.
        let mut fresh = table();
        fresh.insert(b"k", None, KeyState::CLEARED).unwrap();
        let c = compress_points(&points_payload::decode(&a).unwrap(), 1, &mut fresh).unwrap();
        assert!(c.payload.len() < 50 * 4, "{} bytes for 50 points", c.payload.len());
    }

    #[test]
    fn an_unregistered_key_is_invalid_input_and_bad_bytes_are_corruption() {
        let mut t = table();
        let p = regular(b"k", 0, 2, b"");
        assert!(matches!(
            compress_points(&points_payload::decode(&p).unwrap(), 0, &mut t),
            Err(DeclogError::InvalidInput(_))
        ));
        t.insert(b"k", None, KeyState::CLEARED).unwrap();
        let c = compress_points(&points_payload::decode(&p).unwrap(), 0, &mut t).unwrap();
        let before = t.get(b"k").unwrap().state;
        for cut in 0..c.payload.len() {
            let err = decompress_points(&c.payload[..cut], 0, &mut t).unwrap_err();
            assert!(err.is_corruption(), "cut at {cut}: {err}");
            assert_eq!(t.get(b"k").unwrap().state, before, "an error leaves the table unchanged");
        }
        let mut extra = c.payload.clone();
        extra.push(0);
        assert!(decompress_points(&extra, 0, &mut t).is_err());
    }
}
