//! Keeps `docs/format/manifest.md` and the code in agreement: constants,
//! the header's field table, the body's field order, and a hand-assembled
//! example checked byte for byte against `encode_manifest`.

use super::*;
use strata_testkit::{check_fields, constant, markdown_table as table};

const DOC: &str = include_str!("../../../../docs/format/manifest.md");

#[test]
fn constants_agree_with_the_doc() {
    assert_eq!(constant(DOC, "MANIFEST_MAGIC"), format!("{MANIFEST_MAGIC:#018x}"));
    assert_eq!(&MANIFEST_MAGIC.to_le_bytes(), b"STRATAMF");
    assert!(DOC.contains("`STRATAMF`"), "the doc spells the magic in ASCII");
    assert_eq!(constant(DOC, "MANIFEST_FORMAT_VERSION"), MANIFEST_FORMAT_VERSION.to_string());
    assert_eq!(constant(DOC, "MANIFEST_HEADER_BYTES"), MANIFEST_HEADER_BYTES.to_string());
    assert_eq!(constant(DOC, "MANIFEST_FILE"), MANIFEST_FILE);
    assert_eq!(constant(DOC, "MANIFEST_TMP_FILE"), MANIFEST_TMP_FILE);
}

#[test]
fn header_table_agrees_with_the_code() {
    check_fields(
        DOC,
        "### Header",
        &[
            ("magic", MF_OFFSET_MAGIC, 8),
            ("version", MF_OFFSET_VERSION, 4),
            ("body_crc", MF_OFFSET_BODY_CRC, 4),
            ("body_len", MF_OFFSET_BODY_LEN, 8),
        ],
        MANIFEST_HEADER_BYTES,
    );
}

#[test]
fn body_tables_list_the_fields_in_encoding_order() {
    let names =
        |heading: &str| -> Vec<String> { table(DOC, heading)[1..].iter().map(|r| r[0].clone()).collect() };
    assert_eq!(
        names("### Body"),
        [
            "checkpoint_seq",
            "checkpoint_lsn",
            "protocol",
            "next_series_id",
            "next_file_seq",
            "databases",
            "series",
            "block_files",
            "tombstones",
            "declog_cut"
        ]
    );
    assert_eq!(names("A **series** is:"), ["id", "db", "measurement", "tags", "field", "field_type"]);
    assert_eq!(names("A **tombstone** (32 bytes) is:"), ["series", "min_ts", "max_ts", "upto_file_seq"]);
}

/// The example is assembled from the document's tables alone.
#[test]
fn hand_assembled_example_matches_the_encoder() {
    let m = Manifest {
        checkpoint_seq: 3,
        checkpoint_lsn: 0x1000,
        protocol: "none".into(),
        next_series_id: 8,
        next_file_seq: 2,
        databases: vec!["db".into()],
        series: vec![ManifestSeries {
            id: SeriesId(7),
            db: "db".into(),
            key: SeriesKey {
                measurement: "m".into(),
                tags: vec![("k".into(), "v".into())],
                field: "f".into(),
            },
            field_type: FieldType::Integer,
        }],
        block_files: vec![1],
        tombstones: vec![ManifestTombstone { series: SeriesId(7), min_ts: -1, max_ts: 5, upto_file_seq: 1 }],
        declog_cut: vec![0x300],
    };
    let mut body = Vec::new();
    let u32s = |b: &mut Vec<u8>, v: u32| b.extend_from_slice(&v.to_le_bytes());
    let u64s = |b: &mut Vec<u8>, v: u64| b.extend_from_slice(&v.to_le_bytes());
    let strs = |b: &mut Vec<u8>, s: &str| {
        b.extend_from_slice(&(s.len() as u32).to_le_bytes());
        b.extend_from_slice(s.as_bytes());
    };
    u64s(&mut body, 3);
    u64s(&mut body, 0x1000);
    strs(&mut body, "none");
    u64s(&mut body, 8);
    u64s(&mut body, 2);
    u32s(&mut body, 1);
    strs(&mut body, "db");
    u32s(&mut body, 1);
    u64s(&mut body, 7);
    strs(&mut body, "db");
    strs(&mut body, "m");
    u32s(&mut body, 1);
    strs(&mut body, "k");
    strs(&mut body, "v");
    strs(&mut body, "f");
    body.push(2);
    u32s(&mut body, 1);
    u64s(&mut body, 1);
    u32s(&mut body, 1);
    u64s(&mut body, 7);
    u64s(&mut body, (-1i64) as u64);
    u64s(&mut body, 5);
    u64s(&mut body, 1);
    u32s(&mut body, 1);
    u64s(&mut body, 0x300);
    let mut file = b"STRATAMF".to_vec();
    u32s(&mut file, 2);
    u32s(&mut file, crc32c::crc32c(&body));
    u64s(&mut file, body.len() as u64);
    file.extend_from_slice(&body);
    assert_eq!(encode_manifest(&m), file);
    assert_eq!(decode_manifest(&file), Ok(m.clone()));
    // A version-1 file (no declog_cut list) still reads, as an empty cut.
    let v1_body = &body[..body.len() - 12];
    let mut v1 = b"STRATAMF".to_vec();
    u32s(&mut v1, 1);
    u32s(&mut v1, crc32c::crc32c(v1_body));
    u64s(&mut v1, v1_body.len() as u64);
    v1.extend_from_slice(v1_body);
    assert_eq!(decode_manifest(&v1), Ok(Manifest { declog_cut: Vec::new(), ..m }));
}
