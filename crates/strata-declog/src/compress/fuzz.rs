//! The fuzz entries of the compression decoders, each with a seeded smoke
//! test in `tests.rs` that runs it on stable Rust:
//! - [`fuzz_decompress`] (`fuzz/fuzz_targets/declog_decompress.rs`):
//!   decompressing arbitrary payloads must never panic, and on error the
//!   table must be unchanged;
//! - [`fuzz_point_payload`] (`fuzz/fuzz_targets/declog_point_payload.rs`):
//!   decoding arbitrary bytes as a point payload must never panic, and what
//!   decodes must encode back to the same bytes.
//!
//! - [`fuzz_points_payload`] (`fuzz/fuzz_targets/declog_points_payload.rs`):
//!   the same for points payloads (per-key entries, format version 3).
//!
//! Input: `flags (1) | payload...`. Bit 0 of `flags` is the compression bit;
//! bit 1 picks the per-key form (then only compressed payloads are decoded).
//! The table is primed with four keys: with an open XOR window, with state
//! but no window, and cleared, so every decoding path is reachable.

use std::sync::Arc;

use strata_pmem::{Region, RegionOffset};

use super::codec::{compress, decompress, LogPoint};
use super::key_table::{key_table_area_bytes, KeyState, KeyTable};
use super::points_codec::decompress_points;
use super::{point_payload, points_payload};

const FUZZ_SLOTS: u32 = 8;

/// A table in a fresh simulated region, primed with three keys.
pub fn primed_table() -> KeyTable {
    let region = Arc::new(Region::sim(key_table_area_bytes(FUZZ_SLOTS)));
    let mut table = KeyTable::format(region, RegionOffset(0), FUZZ_SLOTS).expect("fits");
    let points: [(&[u8], i64, f64); 5] = [
        (b"cpu,host=a usage", 1_000, 1.5),
        (b"cpu,host=a usage", 2_000, 1.75),
        (b"cpu,host=a usage", 3_000, 1.25),
        (b"mem,host=b free", 10, 8.0),
        (b"disk,host=c used", -5, f64::NAN),
    ];
    for (i, (key, timestamp, value)) in points.into_iter().enumerate() {
        compress(&LogPoint { key, timestamp, value, rest: b"" }, i as u64, &mut table).expect("primes");
    }
    table.insert(b"net,host=d rx", None, KeyState::CLEARED).expect("primes");
    table
}

pub fn fuzz_decompress(data: &[u8]) {
    let Some((&flags, payload)) = data.split_first() else { return };
    let mut table = primed_table();
    let before: Vec<_> =
        [&b"cpu,host=a usage"[..], b"mem,host=b free", b"disk,host=c used", b"net,host=d rx"]
            .map(|k| table.get(k).cloned())
            .into();
    let keys_before = table.len();
    let result = if flags & 2 == 2 {
        decompress_points(payload, 99, &mut table).map(|b| {
            let p = points_payload::decode(&b).expect("decompression yields a valid points payload");
            p.key.to_vec()
        })
    } else {
        decompress(flags & 1 == 1, payload, 99, &mut table).map(|p| p.key)
    };
    match result {
        Ok(key) => {
            assert!(table.get(&key).is_some(), "a decoded key is in the table");
        }
        Err(_) => {
            let after: Vec<_> =
                [&b"cpu,host=a usage"[..], b"mem,host=b free", b"disk,host=c used", b"net,host=d rx"]
                    .map(|k| table.get(k).cloned())
                    .into();
            assert_eq!(before, after, "a failed decompression changed the table");
            assert_eq!(table.len(), keys_before);
        }
    }
}

/// Decodes `data` as a point payload; panics only on a bug.
pub fn fuzz_point_payload(data: &[u8]) {
    if let Ok(p) = point_payload::decode(data) {
        assert_eq!(p.encode(), data, "a decoded point payload encodes to other bytes");
        assert_eq!(point_payload::encoded_len(p.key.len(), p.rest.len()), data.len());
    }
}

/// Decodes `data` as a points payload; panics only on a bug.
pub fn fuzz_points_payload(data: &[u8]) {
    if let Ok(p) = points_payload::decode(data) {
        assert_eq!(
            points_payload::encode(p.key, p.points()),
            data,
            "a decoded points payload encodes to other bytes"
        );
        assert_eq!(p.points().count(), p.count as usize);
    }
}
