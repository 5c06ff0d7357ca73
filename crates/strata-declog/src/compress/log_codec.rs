//! How DecLog uses the compression codec (declog.txt 4.4.1, 4.5, 4.6):
//! point payloads in, compressed entry payloads on media, point payloads
//! back out of parsing.
//!
//! - Each stream has its own key table (active area in PMem, DRAM mirror).
//!   A key is registered in its stream's table (slot persisted, state
//!   cleared) when a transaction logging it is submitted, before anything of
//!   that transaction is queued, so a full table fails the submit cleanly
//!   and the slot is durable before any entry naming the key's id is written.
//!   An entry given by its points (`points_source`) has its key registered
//!   when it is pushed, under the key-table lock, and the new slots fenced
//!   before it is queued (a key the table cannot take is logged raw).
//! - Entries are compressed when they are pushed into the stream's log
//!   queues, under the queue lock, so compression order is stream order. A
//!   push that finds no free queue undoes the compression (the key's state
//!   goes back) and retries later with the original point payload.
//! - A writer never trusts the states in PMem: `open` clears them in the
//!   mirror, `cut` and `truncate_all` clear them (`cut` in PMem too, after
//!   copying the table). After a clear, a key's next entry is
//!   self-describing (`codec`: the reset bit), so a decompressor needs only
//!   the key ids of the active table and the stream from a point where every
//!   state was cleared: a head (format, `truncate_all`, or a cut position)
//!   is always such a point, and a cut or a restart passed on the way resets
//!   each key by itself.
//! - The metadata kept for a key's first entry is the entry's transaction id.

use super::codec::{compress, decompress, Compressed, LogPoint};
use super::key_table::{KeyState, KeyTable};
use super::points_codec::{compress_points, compress_points_of, decompress_points};
use super::{point_payload, points_payload};
use crate::entry::PayloadForm;
use crate::error::DeclogError;

/// Most bytes compression can add to a point payload (the key reference and
/// the worst-case bit stream against the length varint and the 16 raw
/// bytes): with compression on, a point payload may be this much shorter
/// than the largest entry payload.
pub const COMPRESSION_SLACK_BYTES: u64 = 8;

/// Validates a submitted payload of `form`.
pub(crate) fn check_payload(form: PayloadForm, payload: &[u8]) -> Result<(), DeclogError> {
    match form {
        PayloadForm::Single => point_payload::decode(payload).map(|_| ()),
        PayloadForm::PerKey => points_payload::decode(payload).map(|_| ()),
    }
    .map_err(|e| DeclogError::InvalidInput(e.to_string()))
}

/// The key of a submitted payload of `form` that [`check_payload`] accepted
/// (only the key is parsed again).
pub(crate) fn payload_key(form: PayloadForm, payload: &[u8]) -> Result<&[u8], DeclogError> {
    match form {
        PayloadForm::Single => point_payload::decode(payload).map(|p| p.key),
        PayloadForm::PerKey => points_payload::key_of(payload),
    }
    .map_err(|e| DeclogError::InvalidInput(e.to_string()))
}

/// Registers `key` in `table` (a new key gets the next id, a cleared state
/// and its slot written and flushed, not fenced: the caller fences once for
/// all keys it registers); a known key is left alone. True when inserted.
pub(crate) fn register_key(table: &mut KeyTable, key: &[u8]) -> Result<bool, DeclogError> {
    if table.get(key).is_some() {
        return Ok(false);
    }
    table.insert_unfenced(key, None, KeyState::CLEARED)?;
    Ok(true)
}

/// [`compress_entry`] when the payload's key is in `table`; `Ok(None)` when
/// it is not (the entry is logged raw). Per-key payloads take one key
/// lookup for the check, the state and its update.
pub(crate) fn compress_if_registered(
    table: &mut KeyTable,
    form: PayloadForm,
    payload: &[u8],
    entry_meta: u64,
) -> Result<Option<(Compressed, KeyState)>, DeclogError> {
    match form {
        PayloadForm::PerKey => {
            let points = points_payload::decode_accepted(payload);
            let Some(record) = table.record_mut(points.key) else { return Ok(None) };
            let before = record.state;
            Ok(Some((compress_points_of(&points, entry_meta, record), before)))
        }
        PayloadForm::Single => {
            let key = payload_key(form, payload)?;
            if table.get(key).is_none() {
                return Ok(None);
            }
            compress_entry(table, form, payload, entry_meta).map(Some)
        }
    }
}

/// Compresses a submitted payload of `form` against `table`; returns the
/// entry's compression bit and payload, and the key's state before (for
/// [`undo_compression`]).
pub(crate) fn compress_entry(
    table: &mut KeyTable,
    form: PayloadForm,
    payload: &[u8],
    entry_meta: u64,
) -> Result<(Compressed, KeyState), DeclogError> {
    let key = payload_key(form, payload)?;
    let before = table.get(key).map_or(KeyState::CLEARED, |r| r.state);
    let compressed = match form {
        PayloadForm::Single => {
            let p = point_payload::decode(payload).expect("decoded above");
            let point = LogPoint {
                key: p.key,
                timestamp: p.timestamp,
                value: f64::from_bits(p.value_bits),
                rest: p.rest,
            };
            compress(&point, entry_meta, table)?
        }
        PayloadForm::PerKey => compress_points(&points_payload::decode_accepted(payload), entry_meta, table)?,
    };
    Ok((compressed, before))
}

/// Puts the key of a submitted payload back to `state` (its state before a
/// compression whose entry was not queued).
pub(crate) fn undo_compression(table: &mut KeyTable, form: PayloadForm, payload: &[u8], state: KeyState) {
    if let Ok(key) = payload_key(form, payload) {
        table.set_state(key, state);
    }
}

/// Decompresses an entry's payload of `form` against `table` back to the
/// payload that was submitted.
pub(crate) fn decompress_entry(
    table: &mut KeyTable,
    form: PayloadForm,
    compressed: bool,
    payload: &[u8],
    entry_meta: u64,
) -> Result<Vec<u8>, DeclogError> {
    match form {
        PayloadForm::Single => {
            let p = decompress(compressed, payload, entry_meta, table)?;
            Ok(point_payload::encode(&p.key, p.timestamp, p.value.to_bits(), &p.rest))
        }
        PayloadForm::PerKey if compressed => decompress_points(payload, entry_meta, table),
        PayloadForm::PerKey => Err(super::codec::bad("a per-key entry is either compressed or raw")),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use strata_pmem::{Region, RegionOffset};

    use super::*;
    use crate::compress::key_table::key_table_area_bytes;

    fn table() -> KeyTable {
        KeyTable::format(Arc::new(Region::sim(key_table_area_bytes(8))), RegionOffset(0), 8).unwrap()
    }

    /// Worst cases of every form stay within the slack.
    #[test]
    fn compressed_payloads_never_exceed_the_point_payload_by_more_than_the_slack() {
        let (mut enc, mut dec) = (table(), table());
        let worst = [(0i64, 0u64), (i64::MIN, u64::MAX), (i64::MAX, 1), (-1, 0x8000_0000_0000_0001), (7, 3)];
        for key in [&b""[..], b"k", &[b'x'; 192][..]] {
            register_key(&mut enc, key).unwrap();
            register_key(&mut dec, key).unwrap();
            for &(ts, bits) in &worst {
                let point = point_payload::encode(key, ts, bits, b"");
                let (c, _) = compress_entry(&mut enc, PayloadForm::Single, &point, 1).unwrap();
                assert!(
                    c.payload.len() as u64 <= point.len() as u64 + COMPRESSION_SLACK_BYTES,
                    "{} vs {}",
                    c.payload.len(),
                    point.len()
                );
                assert_eq!(
                    decompress_entry(&mut dec, PayloadForm::Single, c.compressed, &c.payload, 1).unwrap(),
                    point
                );
            }
        }
    }

    #[test]
    fn undo_restores_the_state_so_the_retry_compresses_identically() {
        let mut t = table();
        register_key(&mut t, b"k").unwrap();
        let id = t.get(b"k").unwrap().id;
        register_key(&mut t, b"k").unwrap();
        assert_eq!(t.get(b"k").unwrap().id, id, "registering twice keeps the id");
        let a = point_payload::encode(b"k", 10, 1.0f64.to_bits(), b"");
        compress_entry(&mut t, PayloadForm::Single, &a, 1).unwrap();
        let b = point_payload::encode(b"k", 20, 2.0f64.to_bits(), b"r");
        let (first, before) = compress_entry(&mut t, PayloadForm::Single, &b, 2).unwrap();
        undo_compression(&mut t, PayloadForm::Single, &b, before);
        let (again, _) = compress_entry(&mut t, PayloadForm::Single, &b, 2).unwrap();
        assert_eq!(first, again);
        assert!(matches!(
            compress_entry(&mut t, PayloadForm::Single, b"\x05ab", 3),
            Err(DeclogError::InvalidInput(_))
        ));
    }
}
