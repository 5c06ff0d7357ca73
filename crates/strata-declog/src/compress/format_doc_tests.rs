//! Keeps the "Key hash table and compressed payloads" section of
//! `docs/format/declog-stream.md` and the code in agreement: every constant
//! with its value, the header and slot field tables, and bytes written where
//! the document says.

use std::sync::Arc;

use strata_pmem::{Region, RegionOffset};

use super::codec::*;
use super::key_table::*;

const DOC: &str = include_str!("../../../../docs/format/declog-stream.md");

fn section() -> &'static str {
    let start = DOC.find("\n## Key hash table and compressed payloads\n").expect("section missing");
    &DOC[start..]
}

fn table(heading: &str) -> Vec<Vec<String>> {
    strata_testkit::doc_table::markdown_table(section(), heading)
}

#[test]
fn every_constant_appears_with_its_value() {
    let rows = table("### Key table constants");
    let consts: &[(&str, String)] = &[
        ("KEY_TABLE_MAGIC", format!("{KEY_TABLE_MAGIC:#018X}").replace("0X", "0x")),
        ("KEY_TABLE_FORMAT_VERSION", KEY_TABLE_FORMAT_VERSION.to_string()),
        ("KEY_TABLE_HEADER_BYTES", KEY_TABLE_HEADER_BYTES.to_string()),
        ("KT_CRC_COVERED_BYTES", KT_CRC_COVERED_BYTES.to_string()),
        ("KEY_TABLE_SLOT_BYTES", KEY_TABLE_SLOT_BYTES.to_string()),
        ("KEY_TABLE_MAX_KEY_BYTES", KEY_TABLE_MAX_KEY_BYTES.to_string()),
        ("KEY_TABLE_MAX_SLOTS", KEY_TABLE_MAX_SLOTS.to_string()),
        ("XOR_NO_WINDOW", XOR_NO_WINDOW.to_string()),
        ("XOR_LEADING_ZEROS_BITS", XOR_LEADING_ZEROS_BITS.to_string()),
        ("XOR_MAX_LEADING_ZEROS", XOR_MAX_LEADING_ZEROS.to_string()),
        ("XOR_MEANINGFUL_BITS_FIELD", XOR_MEANINGFUL_BITS_FIELD.to_string()),
    ];
    for (name, value) in consts {
        let row =
            rows.iter().find(|r| r[0] == *name).unwrap_or_else(|| panic!("{name} missing from the doc"));
        assert_eq!(&row[1], value, "constant {name}");
    }
    assert_eq!(rows.len() - 1, consts.len(), "the doc lists exactly these constants");
    assert_eq!(&KEY_TABLE_MAGIC.to_le_bytes(), b"DLKEYTAB");
    let buckets = table("### Compressed payloads");
    assert_eq!(buckets[0][0], "part", "first table of the payload section");
    for (control, control_bits, value_bits) in DOD_BUCKETS {
        let code = format!("{control:0width$b}", width = control_bits as usize);
        let bits = if value_bits == 64 { String::new() } else { format!(" + {value_bits} bits") };
        assert!(section().contains(&format!("`{code}`{bits}")), "dod bucket {code} missing");
    }
    assert!(section().contains("`11111` + 64 bits"));
}

fn check_fields(heading: &str, fields: &[(&str, u64, u64)], total: u64) {
    let rows = table(heading);
    assert_eq!(rows[0][..4], ["offset", "size", "type", "name"].map(String::from), "{heading}: columns");
    let mut at = 0;
    for &(name, offset, size) in fields {
        let row = rows
            .iter()
            .find(|r| r.get(3).map(String::as_str) == Some(name))
            .unwrap_or_else(|| panic!("{heading}: field {name} missing"));
        assert_eq!(
            (row[0].as_str(), row[1].as_str()),
            (offset.to_string().as_str(), size.to_string().as_str())
        );
        assert_eq!(offset, at, "{heading}: {name} leaves a gap or overlaps");
        at += size;
    }
    assert_eq!(rows.len() - 1, fields.len(), "{heading}: exactly these rows");
    assert_eq!(at, total, "{heading}: fields cover the structure");
}

#[test]
fn field_tables_match_the_code() {
    check_fields(
        "### Key table header",
        &[
            ("magic", KT_OFFSET_MAGIC, 8),
            ("version", KT_OFFSET_VERSION, 4),
            ("slot_count", KT_OFFSET_SLOT_COUNT, 4),
            ("slot_bytes", KT_OFFSET_SLOT_BYTES, 4),
            ("max_key_bytes", KT_OFFSET_MAX_KEY_BYTES, 4),
            ("crc", KT_OFFSET_CRC, 4),
            ("reserved", KT_OFFSET_CRC + 4, KEY_TABLE_HEADER_BYTES - KT_OFFSET_CRC - 4),
        ],
        KEY_TABLE_HEADER_BYTES,
    );
    let o = |x: usize| x as u64;
    check_fields(
        "### Key table slot",
        &[
            ("key_hash", o(SLOT_OFFSET_KEY_HASH), 8),
            ("key_id", o(SLOT_OFFSET_KEY_ID), 4),
            ("key_len", o(SLOT_OFFSET_KEY_LEN), 2),
            ("used", o(SLOT_OFFSET_USED), 1),
            ("reserved_1", o(SLOT_OFFSET_USED + 1), 1),
            ("identity_crc", o(SLOT_OFFSET_IDENTITY_CRC), 4),
            ("state_crc", o(SLOT_OFFSET_STATE_CRC), 4),
            ("last_timestamp", o(SLOT_OFFSET_LAST_TIMESTAMP), 8),
            ("last_delta", o(SLOT_OFFSET_LAST_DELTA), 8),
            ("last_value_bits", o(SLOT_OFFSET_LAST_VALUE_BITS), 8),
            ("first_entry_meta", o(SLOT_OFFSET_FIRST_ENTRY_META), 8),
            ("has_state", o(SLOT_OFFSET_HAS_STATE), 1),
            ("xor_leading", o(SLOT_OFFSET_XOR_LEADING), 1),
            ("xor_trailing", o(SLOT_OFFSET_XOR_TRAILING), 1),
            ("reserved_2", o(SLOT_OFFSET_XOR_TRAILING + 1), 5),
            ("key", o(SLOT_OFFSET_KEY), KEY_TABLE_MAX_KEY_BYTES as u64),
        ],
        KEY_TABLE_SLOT_BYTES,
    );
}

#[test]
fn bytes_written_sit_where_the_doc_says() {
    let region = Arc::new(Region::sim(key_table_area_bytes(4)));
    let mut t = KeyTable::format(region.clone(), RegionOffset(0), 4).unwrap();
    let key = b"m,t=v f";
    let c = compress(&LogPoint { key, timestamp: -7, value: 2.5, rest: b"xy" }, 4242, &mut t).unwrap();
    let mut expect = vec![0u8, key.len() as u8];
    expect.extend_from_slice(key);
    expect.extend_from_slice(&(-7i64).to_le_bytes());
    expect.extend_from_slice(&2.5f64.to_bits().to_le_bytes());
    expect.extend_from_slice(b"xy");
    assert_eq!((c.compressed, c.payload), (false, expect));
    let h = region.read_vec(RegionOffset(0), 28);
    assert_eq!(&h[0..8], b"DLKEYTAB");
    assert_eq!(u32::from_le_bytes(h[12..16].try_into().unwrap()), 4);
    assert_eq!(u32::from_le_bytes(h[24..28].try_into().unwrap()), crc32c::crc32c(&h[..24]));
    let fnv = key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    let slot = KEY_TABLE_HEADER_BYTES + (fnv % 4) * KEY_TABLE_SLOT_BYTES;
    let s = region.read_vec(RegionOffset(slot), KEY_TABLE_SLOT_BYTES as usize);
    let u64_at = |at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap());
    assert_eq!(u64_at(0), fnv);
    assert_eq!((u32::from_le_bytes(s[8..12].try_into().unwrap()), s[12], s[14]), (0, key.len() as u8, 1));
    let mut id_input = s[..16].to_vec();
    id_input.extend_from_slice(key);
    assert_eq!(u32::from_le_bytes(s[16..20].try_into().unwrap()), crc32c::crc32c(&id_input));
    assert_eq!(u32::from_le_bytes(s[20..24].try_into().unwrap()), crc32c::crc32c(&s[24..64]));
    assert_eq!((u64_at(24) as i64, u64_at(32), u64_at(40), u64_at(48)), (-7, 0, 2.5f64.to_bits(), 4242));
    assert_eq!((s[56], s[57], s[58]), (1, XOR_NO_WINDOW, 0));
    assert_eq!(&s[64..64 + key.len()], key);
    // The same value again: id, dod 0 (`0`), XOR 0 (`0`), padded, rest.
    let c = compress(&LogPoint { key, timestamp: -7, value: 2.5, rest: b"xy" }, 1, &mut t).unwrap();
    assert_eq!((c.compressed, c.payload), (true, vec![0, 0b0000_0000, b'x', b'y']));
}

#[test]
fn point_payloads_and_the_reset_bit_match_the_doc() {
    use super::point_payload::{self, POINT_PAYLOAD_FIXED_BYTES};
    use super::COMPRESSION_SLACK_BYTES;
    let rows = table("### Point payloads");
    let got: Vec<(&str, &str)> = rows[1..].iter().map(|r| (r[0].as_str(), r[1].as_str())).collect();
    assert_eq!(
        got,
        [
            ("key_len", "varint"),
            ("key", "key_len"),
            ("timestamp", "8"),
            ("value_bits", "8"),
            ("rest", "to the end")
        ]
    );
    assert!(section().contains(&format!("`POINT_PAYLOAD_FIXED_BYTES` = {POINT_PAYLOAD_FIXED_BYTES}")));
    assert!(section().contains(&format!("`COMPRESSION_SLACK_BYTES` = {COMPRESSION_SLACK_BYTES}")));
    let b = point_payload::encode(b"k", 1, 2, b"r");
    assert_eq!(b, [&[1u8, b'k'][..], &1i64.to_le_bytes(), &2u64.to_le_bytes(), b"r"].concat());
    // After a clear: key_ref = id x 2 + 1, then 64 + 64 raw bits.
    let region = Arc::new(Region::sim(key_table_area_bytes(4)));
    let mut t = KeyTable::format(region, RegionOffset(0), 4).unwrap();
    for key in [&b"a"[..], b"b"] {
        compress(&LogPoint { key, timestamp: 5, value: 1.0, rest: b"" }, 0, &mut t).unwrap();
    }
    t.clear_for_checkpoint();
    let c = compress(&LogPoint { key: b"b", timestamp: 9, value: 2.0, rest: b"" }, 0, &mut t).unwrap();
    let mut expect = vec![3u8]; // id 1, reset bit
    expect.extend_from_slice(&9u64.to_be_bytes());
    expect.extend_from_slice(&2.0f64.to_bits().to_be_bytes());
    assert_eq!((c.compressed, c.payload), (true, expect), "bit streams are most significant bit first");
}

#[test]
fn points_payload_sections_match_the_code() {
    use super::points_codec::{RESTS_PER_POINT, RESTS_SHARED};
    use super::points_payload::{encode, PointItem, POINTS_FIXED_BYTES};
    assert!(section().contains(&format!("`POINTS_FIXED_BYTES` = {POINTS_FIXED_BYTES}")));
    assert!(section().contains(&format!("`RESTS_SHARED` ({RESTS_SHARED})")));
    assert!(section().contains(&format!("`RESTS_PER_POINT` ({RESTS_PER_POINT})")));
    let parts: Vec<String> = table("### Points payloads").iter().skip(1).map(|r| r[0].clone()).collect();
    assert_eq!(parts, ["key_len", "key", "count", "points"]);
    let count_row = table("### Points payloads").into_iter().find(|r| r[0] == "count").unwrap();
    assert_eq!(count_row[1], "4", "count is a u32");
    // Bytes: key_len varint, key, count u32 LE, then ts, bits, rest_len, rest.
    let b = encode(b"k", [PointItem { timestamp: 1, value_bits: 2, rest: b"r" }]);
    assert_eq!(&b[..6], &[1, b'k', 1, 0, 0, 0]);
    assert_eq!(b.len(), 6 + POINTS_FIXED_BYTES + 2);
    let parts: Vec<String> =
        table("### Compressed per-key payloads").iter().skip(1).map(|r| r[0].clone()).collect();
    assert_eq!(parts, ["key_ref", "count", "bits", "rest_form", "rests"]);
}
