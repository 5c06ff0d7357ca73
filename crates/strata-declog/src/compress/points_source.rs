//! A per-key entry handed to DecLog as its points rather than as encoded
//! bytes ([`crate::DecLog::submit_points`]): the engine already holds each
//! key's run of operations, so DecLog compresses straight from them under
//! the stream's key-table lock (declog.txt 4.4.1) instead of the engine
//! encoding a points payload that DecLog then validates, parses for its key
//! and decodes again. What reaches the log is byte for byte what the
//! payload route writes: the compressed per-key form, or the points payload
//! itself (compression off, or a key the table cannot take).
//!
//! A [`PointsPayloadRef`] is a source too, so one codec
//! ([`super::points_codec`]) serves both routes.

use super::points_payload::{PointItem, PointsPayloadBuilder, PointsPayloadRef};

/// The points of one key of one transaction, in the transaction's order.
pub trait PointsSource: Send {
    /// The key, as a points payload would carry it.
    fn key(&self) -> &[u8];
    /// Points, at least 1.
    fn count(&self) -> u32;
    /// Calls `f` with every point, in order (may be called more than once,
    /// with the same points each time).
    fn for_each_point(&self, f: &mut dyn FnMut(PointItem<'_>));
    /// Bytes of the points payload of these points ([`encode_source`]).
    fn payload_len(&self) -> usize;
}

/// A per-key entry given by its points ([`crate::DecLog::submit_points`]).
pub struct PointsEntry {
    /// Hash of the key: picks the stream (`compress::key_hash` of the key).
    pub key_hash: u64,
    pub lsn: u32,
    pub points: Box<dyn PointsSource>,
}

impl std::fmt::Debug for PointsEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PointsEntry")
            .field("key_hash", &self.key_hash)
            .field("lsn", &self.lsn)
            .field("points", &self.points.count())
            .field("payload_len", &self.points.payload_len())
            .finish()
    }
}

/// The points payload of `source` (`docs/format/declog-stream.md`, "Points
/// payloads").
pub fn encode_source(source: &dyn PointsSource) -> Vec<u8> {
    let mut b = PointsPayloadBuilder::new(source.key(), source.count() as usize);
    source.for_each_point(&mut |p| b.push(p.timestamp, p.value_bits, p.rest));
    let payload = b.finish();
    debug_assert_eq!(payload.len(), source.payload_len(), "a source's payload_len is its encoding's");
    payload
}

impl PointsSource for PointsPayloadRef<'_> {
    fn key(&self) -> &[u8] {
        self.key
    }

    fn count(&self) -> u32 {
        self.count
    }

    fn for_each_point(&self, f: &mut dyn FnMut(PointItem<'_>)) {
        self.points().for_each(f);
    }

    fn payload_len(&self) -> usize {
        self.encoded_len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::points_payload;

    #[test]
    fn a_payload_is_a_source_of_itself() {
        let items = [
            PointItem { timestamp: 5, value_bits: 7, rest: b"\x01" },
            PointItem { timestamp: -1, value_bits: u64::MAX, rest: b"" },
        ];
        let bytes = points_payload::encode(b"key", items);
        let p = points_payload::decode(&bytes).unwrap();
        assert_eq!(p.payload_len(), bytes.len());
        assert_eq!(encode_source(&p), bytes);
        let mut seen = Vec::new();
        p.for_each_point(&mut |i| seen.push((i.timestamp, i.value_bits, i.rest.to_vec())));
        assert_eq!(seen, vec![(5, 7, b"\x01".to_vec()), (-1, u64::MAX, Vec::new())]);
    }
}
