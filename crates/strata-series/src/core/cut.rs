//! How a series' sorted points become sealed blocks, for a checkpoint's
//! seal and a compaction's merge alike: cut at the edges of aligned time
//! spans (`EngineOptions::block_span_ns`, default one hour from the Unix
//! epoch) and at most [`BLOCK_POINTS_MAX`] points, each block encoded with
//! Gorilla and given its summary (`crate::block_file::BlockSummary`). A
//! block inside one span is wholly inside every `GROUP BY time` window that
//! is a whole number of spans and starts on a span edge (1h, 6h, 1d, ...),
//! so those windows are answered from summaries without decoding.

use crate::block_file::BlockSummary;
use crate::error::EngineError;
use crate::gorilla::encode_points;
use crate::model::{FieldType, FieldValue, TimestampNs};
use crate::series_data::SealInput;

/// Default of `EngineOptions::block_span_ns`: one hour.
pub const BLOCK_SPAN_NS_DEFAULT: i64 = 3_600_000_000_000;

/// A block holds at most this many points, so a read of a short range
/// decodes a bounded block.
pub const BLOCK_POINTS_MAX: usize = 1 << 16;

/// The start of the span of `span_ns` holding `t` (aligned to the epoch).
pub fn span_start(t: TimestampNs, span_ns: i64) -> i128 {
    let t = i128::from(t);
    t - t.rem_euclid(i128::from(span_ns))
}

/// `points` (sorted by time, unique timestamps, of `field_type`) cut into
/// blocks: a new block starts at every span edge (`span_ns`: None or
/// non-positive, no edges) and after [`BLOCK_POINTS_MAX`] points.
pub fn cut_blocks(
    field_type: FieldType,
    points: &[(TimestampNs, FieldValue)],
    span_ns: Option<i64>,
) -> Result<Vec<SealInput>, EngineError> {
    let span_ns = span_ns.filter(|s| *s > 0);
    let mut out = Vec::new();
    let mut rest = points;
    while let Some(&(first, _)) = rest.first() {
        let mut len = rest.len().min(BLOCK_POINTS_MAX);
        if let Some(span) = span_ns {
            let end = span_start(first, span) + i128::from(span);
            len = rest[..len].partition_point(|(t, _)| i128::from(*t) < end);
        }
        let (chunk, tail) = rest.split_at(len);
        out.push(seal_chunk(field_type, chunk)?);
        rest = tail;
    }
    Ok(out)
}

/// One block of `chunk` (at least one point) with its summary.
fn seal_chunk(field_type: FieldType, chunk: &[(TimestampNs, FieldValue)]) -> Result<SealInput, EngineError> {
    let point_count =
        u32::try_from(chunk.len()).map_err(|_| EngineError::BlockTooLarge { points: chunk.len() })?;
    Ok(SealInput {
        min_ts: chunk[0].0,
        max_ts: chunk[chunk.len() - 1].0,
        point_count,
        block: encode_points(field_type, chunk).map_err(EngineError::Encode)?,
        summary: BlockSummary::of_points(field_type, chunk),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floats(ts: &[i64]) -> Vec<(TimestampNs, FieldValue)> {
        ts.iter().map(|t| (*t, FieldValue::Float(*t as f64))).collect()
    }

    #[test]
    fn blocks_end_at_span_edges() {
        let blocks = cut_blocks(FieldType::Float, &floats(&[-5, -1, 0, 3, 9, 10, 25]), Some(10)).unwrap();
        let ranges: Vec<(i64, i64, u32)> =
            blocks.iter().map(|b| (b.min_ts, b.max_ts, b.point_count)).collect();
        assert_eq!(ranges, vec![(-5, -1, 2), (0, 9, 3), (10, 10, 1), (25, 25, 1)]);
        let sum = blocks[1].summary.expect("floats are summarized").sum();
        assert_eq!(sum, FieldValue::Float(12.0));
        let whole = cut_blocks(FieldType::Float, &floats(&[-5, 25]), None).unwrap();
        assert_eq!(whole.len(), 1, "no span: one block");
        assert!(cut_blocks(FieldType::Float, &[], Some(10)).unwrap().is_empty());
    }

    /// The cost of the span cut in bytes per point, on a day of TSBS-like
    /// data (a point every 10 s, a random walk of percentages): blocks and
    /// index entries cut at 1 h with 88-byte entries, against blocks only
    /// capped at the point limit with version-1 44-byte entries (what a
    /// compaction wrote before). docs/format/block-file.md cites it.
    #[test]
    fn span_cut_bytes_per_point() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(21);
        let mut v = 50.0f64;
        let points: Vec<(TimestampNs, FieldValue)> = (0..8640i64)
            .map(|i| {
                v = (v + rng.gen_range(-1.0..1.0)).clamp(0.0, 100.0);
                (1_700_000_000_000_000_000 + i * 10_000_000_000, FieldValue::Float(v))
            })
            .collect();
        let bytes = |span: Option<i64>, entry: usize| -> f64 {
            let blocks = cut_blocks(FieldType::Float, &points, span).unwrap();
            let total: usize = blocks.iter().map(|b| b.block.len() + entry).sum();
            total as f64 / points.len() as f64
        };
        let uncut = bytes(None, 44);
        let cut = bytes(Some(BLOCK_SPAN_NS_DEFAULT), 88);
        println!("bytes/point: uncut {uncut:.3}, cut at 1 h {cut:.3}, change {:+.3}", cut - uncut);
        // Measured: 7.601 uncut, 7.322 cut (Gorilla's XOR windows restart
        // with each block, which suits a random walk); either way small.
        assert!((cut - uncut).abs() < 0.5, "{uncut:.3} -> {cut:.3} bytes per point");
    }

    #[test]
    fn blocks_hold_at_most_the_point_cap() {
        let ts: Vec<i64> = (0..BLOCK_POINTS_MAX as i64 + 3).collect();
        let blocks = cut_blocks(FieldType::Float, &floats(&ts), Some(i64::MAX)).unwrap();
        assert_eq!(
            blocks.iter().map(|b| b.point_count as usize).collect::<Vec<_>>(),
            vec![BLOCK_POINTS_MAX, 3]
        );
    }
}
