//! The entry point of the `block_file_open` fuzz target
//! (`fuzz/fuzz_targets/block_file_open.rs`), kept in the crate so that a
//! stable-toolchain smoke test runs the same checks.

use super::format::{
    check_block, encode_block_file, encode_block_file_version, parse_bytes, BlockIndexEntry, BlockSpec,
    BLOCK_FILE_HEADER_BYTES,
};
use super::summary::BlockSummary;
use crate::model::{FieldType, FieldValue, SeriesId};
use strata_media::fuzz_input::FuzzInput as Recipe;

/// Feeds `data` to [`BlockFile::parse`] and panics if a property of
/// `docs/format/block-file.md` fails.
///
/// Input: `flags (1) | rest`. Flag bit 0 clear: `rest` is a file image.
/// Flag bit 0 set: `rest` is `seq (8) | at (4) | xor (1) | recipe...`; a
/// valid file is built from the recipe, must parse to its blocks, and one
/// byte at `at % len` is xored with `xor`: the damaged file must be rejected
/// unless the byte lies in a block, in which case the index is unchanged and
/// that block's CRC fails. Flag bit 1 (with bit 0) also parses the prefix of
/// `at % len` bytes.
///
/// Whatever `parse` accepts must re-encode to exactly the same bytes (in
/// the version it was read in, 1 or 2); the recipe's blocks may carry
/// summaries, which must parse back as they were.
pub fn fuzz_block_file_parse(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    if flags & 1 == 0 {
        let _ = check_parse(rest);
        return;
    }
    let mut recipe = Recipe(rest);
    let seq = recipe.u64();
    let at = recipe.u32() as usize;
    let xor = recipe.u8();
    let recipe_blocks = recipe_blocks(&mut recipe);
    let owned: Vec<OwnedBlock> = recipe_blocks.iter().map(|(b, _)| b.clone()).collect();
    let mut specs = block_specs(&owned);
    for (spec, (_, summary)) in specs.iter_mut().zip(&recipe_blocks) {
        spec.summary = *summary;
    }
    let image = encode_block_file(seq, &specs).expect("recipe blocks are valid");
    let entries = check_parse(&image).expect("a freshly encoded file parses");
    assert_eq!(entries.len(), specs.len());
    for spec in &specs {
        let found = entries.iter().any(|e| {
            e.series == spec.series
                && (e.min_ts, e.max_ts, e.point_count) == (spec.min_ts, spec.max_ts, spec.point_count)
                && e.summary == spec.summary
                && block_of(&image, e) == Some(spec.bytes)
        });
        assert!(found, "block {spec:?} missing from the parsed index");
    }
    let at = at % image.len();
    if xor != 0 {
        let mut damaged = image.clone();
        damaged[at] ^= xor;
        let index_offset = entries.iter().filter_map(|e| e.end()).max().unwrap_or(BLOCK_FILE_HEADER_BYTES);
        let in_data = (BLOCK_FILE_HEADER_BYTES..index_offset).contains(&(at as u64));
        match check_parse(&damaged) {
            Ok(damaged_entries) => {
                assert!(in_data, "a damaged byte at offset {at} outside every block was accepted");
                assert_eq!(damaged_entries, entries, "damage in a block changed the index");
                let hit = entries
                    .iter()
                    .find(|e| e.offset <= at as u64 && (at as u64) < e.offset + u64::from(e.len_bytes));
                let hit = hit.expect("the damaged byte lies in a block");
                let block = block_of(&damaged, hit).expect("block within the file");
                assert!(check_block(hit, block).is_err(), "damaged block at offset {at} passes its CRC");
            }
            Err(_) => assert!(!in_data, "damage at offset {at} inside a block failed the parse"),
        }
    }
    if flags & 2 != 0 {
        let _ = check_parse(&image[..at]);
    }
}

/// Parses `bytes`; if accepted and every block passes its CRC, checks that
/// re-encoding the parsed blocks in file order gives the same bytes.
fn check_parse(bytes: &[u8]) -> Result<Vec<BlockIndexEntry>, crate::error::FormatError> {
    let parsed = parse_bytes(bytes)?;
    let blocks_valid = parsed.entries.iter().all(|e| {
        let block = block_of(bytes, e).expect("accepted entries lie within the file");
        check_block(e, block).is_ok()
    });
    if !blocks_valid {
        return Ok(parsed.entries);
    }
    let specs = parsed.block_specs(bytes);
    let again =
        encode_block_file_version(parsed.version, parsed.seq, &specs).expect("accepted entries re-encode");
    assert!(again == bytes, "an accepted file does not re-encode to the same bytes");
    Ok(parsed.entries)
}

fn block_of<'a>(bytes: &'a [u8], e: &BlockIndexEntry) -> Option<&'a [u8]> {
    let start = usize::try_from(e.offset).ok()?;
    bytes.get(start..start.checked_add(e.len_bytes as usize)?)
}

/// A block to encode: series, min_ts, max_ts, point count, bytes.
pub(super) type OwnedBlock = (u64, i64, i64, u32, Vec<u8>);

/// The specs that encode `blocks` (without summaries).
pub(super) fn block_specs(blocks: &[OwnedBlock]) -> Vec<BlockSpec<'_>> {
    blocks
        .iter()
        .map(|(series, min_ts, max_ts, point_count, bytes)| BlockSpec {
            series: SeriesId(*series),
            min_ts: *min_ts,
            max_ts: *max_ts,
            point_count: *point_count,
            bytes,
            summary: None,
        })
        .collect()
}

/// A valid summary from the recipe, or none (about half the time).
fn recipe_summary(recipe: &mut Recipe<'_>) -> Option<BlockSummary> {
    let pick = recipe.u8();
    let values: Vec<(i64, FieldValue)> = (0..(pick % 4) + 1)
        .map(|i| {
            let raw = recipe.u8();
            let v = match pick % 8 {
                0 => FieldValue::Float(f64::from(raw as i8) / 4.0),
                1 => FieldValue::Integer(i64::from(raw as i8) << 40),
                2 => FieldValue::Unsigned(u64::from(raw) << 56),
                3 => FieldValue::Boolean(raw & 1 == 1),
                _ => return None,
            };
            Some((i64::from(i), v))
        })
        .collect::<Option<_>>()?;
    let field_type = values[0].1.field_type();
    (field_type != FieldType::String).then_some(())?;
    BlockSummary::of_points(field_type, &values)
}

/// Up to 23 blocks over 5 series, with colliding `min_ts` likely, each
/// with a summary or not.
fn recipe_blocks(recipe: &mut Recipe<'_>) -> Vec<(OwnedBlock, Option<BlockSummary>)> {
    let count = recipe.u8() % 24;
    (0..count)
        .map(|i| {
            let series = u64::from(recipe.u8() % 5);
            let min_ts = i64::from(recipe.u8() as i8) * 1000;
            let max_ts = min_ts + i64::from(recipe.u8()) * 10;
            // At least the summary's (up to 4) values.
            let point_count = u32::from(recipe.u8()) + 4;
            let len = usize::from(recipe.u8() % 40) + 1;
            let bytes = (0..len).map(|j| recipe.u8() ^ (i.wrapping_mul(31) ^ j as u8)).collect();
            ((series, min_ts, max_ts, point_count, bytes), recipe_summary(recipe))
        })
        .collect()
}
