//! Backup manifest round trip, damage detection, and agreement with
//! `docs/format/backup-manifest.md` (constants, field tables, the example).

use super::format::*;
use super::*;
use strata_testkit::{check_fields, constant, markdown_table};

const DOC: &str = include_str!("../../../../docs/format/backup-manifest.md");

fn example() -> BackupManifest {
    BackupManifest {
        checkpoint_seq: 3,
        checkpoint_lsn: 4096,
        created_unix_ns: 7,
        files: vec![BackupFile {
            path: "series/MANIFEST".into(),
            len_bytes: 5,
            crc32c: crc32c::crc32c(b"hello"),
        }],
    }
}

#[test]
fn constants_agree_with_the_doc() {
    assert_eq!(constant(DOC, "BACKUP_MAGIC"), format!("{BACKUP_MAGIC:#018x}"));
    assert_eq!(constant(DOC, "BACKUP_FORMAT_VERSION"), BACKUP_FORMAT_VERSION.to_string());
    assert_eq!(constant(DOC, "BACKUP_HEADER_BYTES"), BACKUP_HEADER_BYTES.to_string());
    assert_eq!(constant(DOC, "BACKUP_FILE"), BACKUP_FILE);
}

#[test]
fn field_tables_agree_with_the_encoder() {
    check_fields(
        DOC,
        "### Header",
        &[("magic", 0, 8), ("version", 8, 4), ("body_crc", 12, 4), ("body_len", 16, 8)],
        BACKUP_HEADER_BYTES,
    );
    check_fields(
        DOC,
        "### Body",
        &[
            ("checkpoint_seq", 0, 8),
            ("checkpoint_lsn", 8, 8),
            ("created_unix_ns", 16, 8),
            ("file_count", 24, 4),
        ],
        28,
    );
    let names: Vec<String> =
        markdown_table(DOC, "### File entry")[1..].iter().map(|r| r[3].clone()).collect();
    assert_eq!(names, ["path_len", "path", "len_bytes", "crc32c"]);
}

/// The example's hex dump, read from the document, is the encoder's body.
#[test]
fn the_documented_example_is_what_the_encoder_writes() {
    let block = DOC.split("```").nth(1).expect("the example block");
    let body: Vec<u8> = block
        .lines()
        .skip_while(|l| !l.starts_with("body"))
        .skip(1)
        .flat_map(|l| {
            l.split_whitespace()
                .take_while(|t| t.len() == 2 && t.bytes().all(|b| b.is_ascii_hexdigit()))
                .map(|t| u8::from_str_radix(t, 16).unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    let encoded = encode_backup_manifest(&example());
    assert_eq!(&encoded[BACKUP_HEADER_BYTES..], &body[..]);
    assert!(DOC.contains(&format!("body ({} bytes)", body.len())));
    assert!(DOC.contains(&format!("`{:#010x}`", crc32c::crc32c(b"hello"))));
}

#[test]
fn decode_inverts_encode_and_rejects_damage() {
    let bytes = encode_backup_manifest(&example());
    assert_eq!(decode_backup_manifest(&bytes), Ok(example()));
    let mut flipped = bytes.clone();
    *flipped.last_mut().unwrap() ^= 1;
    assert!(matches!(decode_backup_manifest(&flipped), Err(BackupFormatError::Crc { .. })));
    assert!(matches!(decode_backup_manifest(&bytes[..10]), Err(BackupFormatError::Short(10))));
    let mut long = bytes.clone();
    long.push(0);
    assert!(matches!(decode_backup_manifest(&long), Err(BackupFormatError::Length { .. })));
}

#[test]
fn restore_refuses_a_damaged_file_and_a_non_empty_target_without_force() {
    let backup = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(backup.path().join("series")).unwrap();
    std::fs::write(backup.path().join("series/MANIFEST"), b"hello").unwrap();
    std::fs::write(backup.path().join(BACKUP_FILE), encode_backup_manifest(&example())).unwrap();
    let target = tempfile::tempdir().unwrap();
    std::fs::write(target.path().join("stale"), b"x").unwrap();
    assert!(matches!(
        restore_backup(backup.path(), target.path(), false),
        Err(BackupError::TargetNotEmpty(_))
    ));
    restore_backup(backup.path(), target.path(), true).unwrap();
    assert!(!target.path().join("stale").exists());
    assert_eq!(std::fs::read(target.path().join("series/MANIFEST")).unwrap(), b"hello");
    std::fs::write(backup.path().join("series/MANIFEST"), b"jello").unwrap();
    let fresh = tempfile::tempdir().unwrap();
    assert!(matches!(restore_backup(backup.path(), fresh.path(), false), Err(BackupError::Damaged { .. })));
}
