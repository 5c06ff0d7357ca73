//! Unit tests of the manifest: proptest round trips, write/read on `FaultFs`
//! and `RealFs`, damage and truncation, each validity rule, `describe`, and
//! the fuzz smoke test of `fuzz_manifest_decode`.

use std::path::PathBuf;

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_media::fs::{FaultFs, FileSystem, RealFs};

use super::*;
use crate::error::{EngineError, FormatError};
use strata_testkit::fuzz_smoke_flagged_entry;

fn key(measurement: &str, tags: &[(&str, &str)], field: &str) -> SeriesKey {
    SeriesKey {
        measurement: measurement.into(),
        tags: tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        field: field.into(),
    }
}

/// A small valid manifest; `n` varies it.
pub(super) fn sample(n: u64) -> Manifest {
    Manifest {
        checkpoint_seq: n,
        checkpoint_lsn: 4096 * n,
        protocol: "serial-ssd".into(),
        next_series_id: 10 + n,
        next_file_seq: 5 + n,
        databases: vec!["telegraf".into(), "düsseldorf".into()],
        series: vec![
            ManifestSeries {
                id: SeriesId(1),
                db: "telegraf".into(),
                key: key("cpu", &[("host", "a"), ("region", "eu")], "usage"),
                field_type: FieldType::Float,
            },
            ManifestSeries {
                id: SeriesId(4 + n),
                db: "düsseldorf".into(),
                key: key("temp", &[], "v"),
                field_type: FieldType::String,
            },
        ],
        block_files: (0..n).map(|i| i * 2).filter(|s| *s < 5 + n).collect(),
        tombstones: vec![ManifestTombstone {
            series: SeriesId(1),
            min_ts: -10,
            max_ts: 99,
            upto_file_seq: n,
        }],
        declog_cut: vec![512, 0],
    }
}

fn fault_dir() -> (FaultFs, PathBuf) {
    let fs = FaultFs::new();
    let dir = PathBuf::from("data");
    fs.create_dir_all(&dir).unwrap();
    (fs, dir)
}

/// Valid manifests with arbitrary strings, tags and ids.
fn arb_manifest() -> impl Strategy<Value = Manifest> {
    let series_key =
        (".*", prop::collection::btree_map(".*", ".*", 0..4), ".*").prop_map(|(measurement, tags, field)| {
            SeriesKey { measurement, tags: tags.into_iter().collect(), field }
        });
    let series = prop::collection::btree_map(
        any::<u64>().prop_map(|id| id >> 1),
        (any::<prop::sample::Index>(), series_key, 1..=5u8),
        0..8,
    );
    let databases = prop::collection::btree_set(".*", 1..4);
    let block_files = prop::collection::btree_set(0..u64::MAX / 2, 0..6);
    let tombstone = (any::<prop::sample::Index>(), any::<i64>(), any::<i64>(), any::<u64>());
    (
        (any::<u64>(), any::<u64>(), ".*", 0..1000u64, 0..1000u64),
        databases,
        series,
        block_files,
        prop::collection::vec(tombstone, 0..5),
    )
        .prop_map(
            |((ck_seq, ck_lsn, protocol, id_slack, seq_slack), dbs, series, block_files, tombstones)| {
                let databases: Vec<String> = dbs.into_iter().collect();
                let mut keys = std::collections::HashSet::new();
                let series: Vec<ManifestSeries> = series
                    .into_iter()
                    .map(|(id, (db, key, code))| ManifestSeries {
                        id: SeriesId(id),
                        db: databases[db.index(databases.len())].clone(),
                        key,
                        field_type: FieldType::from_code(code).unwrap(),
                    })
                    .filter(|s| keys.insert((s.db.clone(), s.key.clone())))
                    .collect();
                let next_series_id = series.last().map_or(0, |s| s.id.0 + 1) + id_slack + 1;
                let block_files: Vec<u64> = block_files.into_iter().collect();
                let next_file_seq = block_files.last().map_or(0, |s| s + 1) + seq_slack;
                let tombstones = tombstones
                    .into_iter()
                    .map(|(series, a, b, upto)| ManifestTombstone {
                        series: SeriesId(series.index(next_series_id.min(usize::MAX as u64) as usize) as u64),
                        min_ts: a.min(b),
                        max_ts: a.max(b),
                        upto_file_seq: upto,
                    })
                    .collect();
                Manifest {
                    checkpoint_seq: ck_seq,
                    checkpoint_lsn: ck_lsn,
                    protocol,
                    next_series_id,
                    next_file_seq,
                    databases,
                    series,
                    block_files,
                    tombstones,
                    declog_cut: vec![ck_lsn, ck_lsn + 256],
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn proptest_encode_decode_round_trip(m in arb_manifest()) {
        prop_assert_eq!(validate_manifest(&m), Ok(()));
        let bytes = encode_manifest(&m);
        prop_assert_eq!(decode_manifest(&bytes), Ok(m.clone()));
        // Deterministic: encoding again gives the same bytes.
        prop_assert_eq!(encode_manifest(&m), bytes);
    }

    #[test]
    fn proptest_write_read_round_trip(m in arb_manifest()) {
        let (fs, dir) = fault_dir();
        write_manifest(&fs, &dir, &m).unwrap();
        prop_assert_eq!(read_manifest(&fs, &dir).unwrap(), Some(m));
        prop_assert!(!fs.exists(&dir.join(MANIFEST_TMP_FILE)), "the temporary file was renamed");
    }
}

#[test]
fn read_without_manifest_is_none_even_with_a_leftover_tmp() {
    let (fs, dir) = fault_dir();
    assert_eq!(read_manifest(&fs, &dir).unwrap(), None);
    let tmp = dir.join(MANIFEST_TMP_FILE);
    fs.create(&tmp).unwrap().write_at(0, &encode_manifest(&sample(1))[..30]).unwrap();
    assert_eq!(read_manifest(&fs, &dir).unwrap(), None, "a partial MANIFEST.tmp is not a manifest");
    write_manifest(&fs, &dir, &sample(2)).unwrap();
    fs.create(&tmp).unwrap().write_at(0, b"garbage").unwrap();
    assert_eq!(read_manifest(&fs, &dir).unwrap(), Some(sample(2)), "a leftover tmp is ignored");
    assert!(fs.exists(&tmp), "read_manifest leaves the tmp file alone");
    write_manifest(&fs, &dir, &sample(3)).unwrap();
    assert_eq!(read_manifest(&fs, &dir).unwrap(), Some(sample(3)), "write truncates a leftover tmp");
}

#[test]
fn write_replaces_and_real_fs_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = RealFs::new();
    assert_eq!(read_manifest(&fs, tmp.path()).unwrap(), None);
    for n in 0..4 {
        write_manifest(&fs, tmp.path(), &sample(n)).unwrap();
        assert_eq!(read_manifest(&fs, tmp.path()).unwrap(), Some(sample(n)));
    }
    let names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, [MANIFEST_FILE], "only MANIFEST remains");
}

#[test]
fn every_damaged_byte_and_every_truncation_is_rejected() {
    let bytes = encode_manifest(&sample(3));
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for at in 0..bytes.len() {
        for xor in [1u8, 0x80, rng.gen_range(1..=255)] {
            let mut damaged = bytes.clone();
            damaged[at] ^= xor;
            assert!(decode_manifest(&damaged).is_err(), "byte {at} xor {xor:#04x} accepted");
        }
    }
    for len in 0..bytes.len() {
        assert!(decode_manifest(&bytes[..len]).is_err(), "prefix of {len} bytes accepted");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(decode_manifest(&longer).is_err(), "a trailing byte is rejected");
}

#[test]
fn damaged_file_is_corruption_naming_the_file() {
    let (fs, dir) = fault_dir();
    write_manifest(&fs, &dir, &sample(1)).unwrap();
    let path = dir.join(MANIFEST_FILE);
    let file = fs.open(&path).unwrap();
    file.write_at(40, &[0xFF]).unwrap();
    match read_manifest(&fs, &dir) {
        Err(EngineError::Corruption { file, what }) => {
            assert_eq!(file, path.display().to_string());
            assert!(what.contains("CRC"), "{what}");
        }
        other => panic!("expected Corruption, got {other:?}"),
    }
}

#[test]
fn each_validity_rule_is_enforced_by_write_and_decode() {
    type Breaker = (&'static str, fn(&mut Manifest));
    let breakers: Vec<Breaker> = vec![
        ("duplicate database", |m| m.databases.push("telegraf".into())),
        ("ids not ascending", |m| m.series.swap(0, 1)),
        ("duplicate id", |m| m.series[1].id = m.series[0].id),
        ("id not below next_series_id", |m| m.next_series_id = m.series[1].id.0),
        ("unlisted database", |m| m.series[0].db = "nope".into()),
        ("unsorted tags", |m| m.series[0].key.tags.reverse()),
        ("duplicate tag key", |m| m.series[0].key.tags[1].0 = "host".into()),
        ("duplicate key", |m| {
            m.series[1].db = m.series[0].db.clone();
            m.series[1].key = m.series[0].key.clone();
        }),
        ("block files not ascending", |m| m.block_files = vec![3, 3]),
        ("block file not below next_file_seq", |m| m.block_files = vec![m.next_file_seq]),
        ("tombstone min > max", |m| m.tombstones[0].min_ts = 100),
        ("tombstone series not below next_series_id", |m| {
            m.tombstones[0].series = SeriesId(m.next_series_id)
        }),
    ];
    for (what, breaker) in breakers {
        let mut m = sample(2);
        breaker(&mut m);
        assert!(validate_manifest(&m).is_err(), "{what}: validate");
        assert!(decode_manifest(&encode_manifest(&m)).is_err(), "{what}: decode");
        let (fs, dir) = fault_dir();
        let ops_before = fs.ops();
        let err = write_manifest(&fs, &dir, &m).unwrap_err();
        assert!(matches!(err, EngineError::InvalidArgument(_)), "{what}: {err}");
        assert_eq!(fs.ops(), ops_before, "{what}: nothing written");
    }
}

#[test]
fn unknown_field_type_code_and_bad_utf8_are_rejected() {
    let m = sample(1);
    let bytes = encode_manifest(&m);
    let recrc = |mut b: Vec<u8>| {
        let crc = crc32c::crc32c(&b[MANIFEST_HEADER_BYTES..]);
        b[MF_OFFSET_BODY_CRC..MF_OFFSET_BODY_CRC + 4].copy_from_slice(&crc.to_le_bytes());
        b
    };
    // The first series' field type is the byte after its field key "usage".
    let at = bytes.windows(5).position(|w| w == b"usage").unwrap() + 5;
    assert_eq!(bytes[at], FieldType::Float.code());
    let mut bad = bytes.clone();
    bad[at] = 9;
    assert!(decode_manifest(&recrc(bad)).unwrap_err().to_string().contains("field type code 9"));
    let at = bytes.windows(4).position(|w| w == b"host").unwrap();
    let mut bad = bytes.clone();
    bad[at] = 0xFF;
    assert!(matches!(decode_manifest(&recrc(bad)), Err(FormatError::NotUtf8 { .. })));
}

#[test]
fn huge_counts_fail_without_allocating() {
    // A body claiming u32::MAX databases in a few bytes.
    let mut m = sample(0);
    m.databases.clear();
    m.series.clear();
    m.tombstones.clear();
    let mut bytes = encode_manifest(&m);
    let count_at = MANIFEST_HEADER_BYTES + 8 + 8 + 4 + m.protocol.len() + 8 + 8;
    bytes[count_at..count_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let crc = crc32c::crc32c(&bytes[MANIFEST_HEADER_BYTES..]);
    bytes[MF_OFFSET_BODY_CRC..MF_OFFSET_BODY_CRC + 4].copy_from_slice(&crc.to_le_bytes());
    let err = decode_manifest(&bytes).unwrap_err();
    assert!(matches!(err, FormatError::BadCount { count: 4294967295, what: "databases", .. }), "{err}");
    assert!(err.to_string().contains("4294967295 databases cannot fit"), "{err}");
}

#[test]
fn describe_shows_every_part() {
    let text = describe_manifest(&sample(2));
    for needle in [
        "checkpoint 2 at LSN 8192, protocol \"serial-ssd\"",
        "next series id 12, next block file seq 7",
        "databases (2): \"telegraf\", \"düsseldorf\"",
        "S1 db \"telegraf\" cpu,host=a,region=eu#usage float",
        "S6 db \"düsseldorf\" temp#v string",
        "block files (2): blocks-0000000000.blk blocks-0000000002.blk",
        "S1 ts [-10, 99] in block files with seq <= 2",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}

/// Fuzz smoke: the `manifest_decode` target's entry function on 20,000
/// seeded inputs (random bytes, damaged, truncated and valid manifests, and
/// recipes), on the stable toolchain.
#[test]
fn fuzz_smoke_manifest_decode() {
    let valid: Vec<Vec<u8>> = (0..6).map(|n| encode_manifest(&sample(n))).collect();
    let check_valid = |n: usize, file: &[u8], context: &str| {
        assert_eq!(decode_manifest(file), Ok(sample(n as u64)), "{context}");
    };
    fuzz_smoke_flagged_entry(0x5eed_3a1f, &valid, 120, 400, check_valid, fuzz_manifest_decode);
}
