//! The entry point of the `manifest_decode` fuzz target
//! (`fuzz/fuzz_targets/manifest_decode.rs`), kept in the crate so that a
//! stable-toolchain smoke test runs the same checks.

use std::collections::HashSet;

use super::codec::{decode_manifest, encode_manifest};
use super::{Manifest, ManifestSeries, ManifestTombstone};
use crate::model::{FieldType, SeriesId, SeriesKey};
use strata_media::fuzz_input::FuzzInput as Recipe;

/// Feeds `data` to [`decode_manifest`] and panics if a property of
/// `docs/format/manifest.md` fails.
///
/// Input: `flags (1) | rest`. Flag bit 0 clear: `rest` is a file image;
/// whatever decodes must re-encode to exactly the same bytes. Flag bit 0 set:
/// `rest` is `at (4) | xor (1) | recipe...`; a valid manifest is built from
/// the recipe and must round-trip, the image with the byte at `at % len`
/// xored with a non-zero `xor` must be rejected, and (flag bit 1) so must its
/// prefix of `at % len` bytes.
pub fn fuzz_manifest_decode(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    if flags & 1 == 0 {
        if let Ok(m) = decode_manifest(rest) {
            assert!(encode_manifest(&m) == rest, "an accepted manifest does not re-encode to the same bytes");
        }
        return;
    }
    let mut recipe = Recipe(rest);
    let at = recipe.u32() as usize;
    let xor = recipe.u8();
    let m = recipe_manifest(&mut recipe);
    let image = encode_manifest(&m);
    assert_eq!(decode_manifest(&image).as_ref(), Ok(&m), "a valid manifest does not round-trip");
    let at = at % image.len();
    if xor != 0 {
        let mut damaged = image.clone();
        damaged[at] ^= xor;
        assert!(decode_manifest(&damaged).is_err(), "damage at offset {at} (xor {xor:#04x}) was accepted");
    }
    if flags & 2 != 0 {
        assert!(decode_manifest(&image[..at]).is_err(), "a {at}-byte prefix was accepted");
    }
}

/// Up to 11 bytes made UTF-8 (invalid sequences become U+FFFD).
fn recipe_text(recipe: &mut Recipe<'_>) -> String {
    let len = usize::from(recipe.u8() % 12);
    let bytes: Vec<u8> = (0..len).map(|_| recipe.u8()).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A manifest that passes `validate_manifest`.
fn recipe_manifest(recipe: &mut Recipe<'_>) -> Manifest {
    let checkpoint_seq = recipe.u64();
    let checkpoint_lsn = recipe.u64();
    let protocol = match recipe.u8() % 4 {
        0 => "none".to_string(),
        1 => "serial-pmem".to_string(),
        2 => "serial-ssd".to_string(),
        _ => recipe_text(recipe),
    };
    let databases: Vec<String> =
        (0..recipe.u8() % 4).map(|i| format!("db{i}{}", recipe_text(recipe))).collect();
    let mut series = Vec::new();
    let mut keys = HashSet::new();
    let mut next_id = u64::from(recipe.u8());
    for _ in 0..if databases.is_empty() { 0 } else { recipe.u8() % 12 } {
        let db = databases[usize::from(recipe.u8()) % databases.len()].clone();
        let measurement = recipe_text(recipe);
        let tags = (0..recipe.u8() % 4)
            .map(|j| (format!("k{j}{}", recipe_text(recipe)), recipe_text(recipe)))
            .collect();
        let key = SeriesKey { measurement, tags, field: recipe_text(recipe) };
        let field_type = FieldType::from_code(recipe.u8() % 5 + 1).expect("codes 1..=5");
        if keys.insert((db.clone(), key.clone())) {
            series.push(ManifestSeries { id: SeriesId(next_id), db, key, field_type });
        }
        next_id += 1 + u64::from(recipe.u8());
    }
    let mut block_files = Vec::new();
    let mut next_file_seq = u64::from(recipe.u8());
    for _ in 0..recipe.u8() % 6 {
        block_files.push(next_file_seq);
        next_file_seq += 1 + u64::from(recipe.u8());
    }
    let tombstones = (0..recipe.u8() % 5)
        .map(|_| {
            let min_ts = recipe.u64() as i64;
            ManifestTombstone {
                series: SeriesId(u64::from(recipe.u8()) % next_id.max(1)),
                min_ts,
                max_ts: min_ts.saturating_add(i64::from(recipe.u32())),
                upto_file_seq: recipe.u64(),
            }
        })
        .collect();
    Manifest {
        checkpoint_seq,
        checkpoint_lsn,
        protocol,
        next_series_id: next_id.max(1),
        next_file_seq,
        databases,
        series,
        block_files,
        tombstones,
        declog_cut: (0..recipe.u8() % 3).map(|_| recipe.u8() as u64 * 256).collect(),
    }
}
