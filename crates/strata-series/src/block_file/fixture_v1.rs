//! The points of the committed version-1 block file fixture
//! (`tests/fixtures/blocks-v1.blk`), written by the format-1 writer of commit
//! ecd4064 before summaries existed: newer readers must still open it.

use crate::model::{FieldType, FieldValue, SeriesId, TimestampNs};

/// One block of the fixture: its series, field type and points.
pub(crate) type FixtureBlock = (SeriesId, FieldType, Vec<(TimestampNs, FieldValue)>);

/// The blocks of the fixture, in append order.
pub(crate) fn fixture_v1_blocks() -> Vec<FixtureBlock> {
    let floats = (0..20).map(|i| (1_000 + i * 10, FieldValue::Float(i as f64 * 0.5))).collect();
    let later = (20..30).map(|i| (1_000 + i * 10, FieldValue::Float(-(i as f64)))).collect();
    let ints = (0..12).map(|i| (5_000 + i * 7, FieldValue::Integer(i * i - 40))).collect();
    let strings = (0..3).map(|i| (9_000 + i, FieldValue::String(format!("s{i}")))).collect();
    vec![
        (SeriesId(1), FieldType::Float, floats),
        (SeriesId(1), FieldType::Float, later),
        (SeriesId(2), FieldType::Integer, ints),
        (SeriesId(3), FieldType::String, strings),
    ]
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use strata_media::fs::RealFs;

    use super::*;
    use crate::block_file::BlockFile;

    /// The fixture opens, its index says what was appended, and every block
    /// decodes to its points (version-1 entries carry no summary).
    #[test]
    fn the_version_1_fixture_opens_and_reads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/blocks-0000000007.blk");
        let file = BlockFile::open(Arc::new(RealFs::new()), &path).unwrap();
        assert_eq!(file.seq(), 7);
        let blocks = fixture_v1_blocks();
        assert_eq!(file.entries().len(), blocks.len());
        for (entry, (series, field_type, points)) in file.entries().iter().zip(&blocks) {
            assert_eq!(entry.series, *series);
            assert_eq!((entry.min_ts, entry.max_ts), (points[0].0, points[points.len() - 1].0));
            assert_eq!(entry.point_count as usize, points.len());
            let decoded = crate::gorilla::decode_block(&file.read_block(entry).unwrap()).unwrap();
            assert_eq!(decoded.field_type, *field_type);
            assert_eq!(&decoded.into_points(), points);
        }
    }
}
