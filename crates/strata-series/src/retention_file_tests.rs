//! The `RETENTION` file: round trip, refusal of damaged bytes, and
//! agreement with `docs/format/retention.md`.

use super::*;
use strata_testkit::{check_fields, constant};

const DOC: &str = include_str!("../../../docs/format/retention.md");

fn sample() -> BTreeMap<String, DbRetention> {
    let mut r = DbRetention::autogen();
    r.policies.push(RetentionPolicy {
        name: "week".into(),
        duration_ns: 168 * 3_600_000_000_000,
        shard_group_duration_ns: 24 * 3_600_000_000_000,
        replication: 2,
    });
    r.default = Some("week".into());
    let dropped = DbRetention { policies: vec![], default: None };
    BTreeMap::from([("db".to_string(), r), ("other".to_string(), dropped)])
}

#[test]
fn entries_round_trip_and_damage_is_refused() {
    let bytes = encode_retention(&sample());
    assert_eq!(decode_retention(&bytes).unwrap(), sample());
    for cut in [0, 10, RETENTION_HEADER_BYTES, bytes.len() - 1] {
        assert!(decode_retention(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    let mut flipped = bytes.clone();
    flipped[RETENTION_HEADER_BYTES + 5] ^= 1;
    assert!(matches!(decode_retention(&flipped), Err(FormatError::BadChecksum { .. })));
}

#[test]
fn the_file_is_replaced_atomically_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let fs = strata_media::fs::RealFs::new();
    assert_eq!(read_retention(&fs, dir.path()).unwrap(), None);
    write_retention(&fs, dir.path(), &sample()).unwrap();
    write_retention(&fs, dir.path(), &sample()).unwrap();
    assert_eq!(read_retention(&fs, dir.path()).unwrap(), Some(sample()));
    std::fs::write(dir.path().join(RETENTION_FILE), b"garbage").unwrap();
    assert!(matches!(read_retention(&fs, dir.path()), Err(EngineError::Corruption { .. })));
}

#[test]
fn format_doc_agrees_with_the_code() {
    assert_eq!(constant(DOC, "RETENTION_MAGIC"), format!("{RETENTION_MAGIC:#018x}"));
    assert_eq!(&RETENTION_MAGIC.to_le_bytes(), b"STRATARP");
    assert_eq!(constant(DOC, "RETENTION_FORMAT_VERSION"), RETENTION_FORMAT_VERSION.to_string());
    assert_eq!(constant(DOC, "RETENTION_HEADER_BYTES"), RETENTION_HEADER_BYTES.to_string());
    assert_eq!(constant(DOC, "RETENTION_FILE"), RETENTION_FILE);
    assert_eq!(constant(DOC, "RETENTION_TMP_FILE"), RETENTION_TMP_FILE);
    check_fields(
        DOC,
        "### Header",
        &[
            ("magic", RP_OFFSET_MAGIC, 8),
            ("version", RP_OFFSET_VERSION, 4),
            ("body_crc", RP_OFFSET_BODY_CRC, 4),
            ("body_len", RP_OFFSET_BODY_LEN, 8),
        ],
        RETENTION_HEADER_BYTES,
    );
}
