//! How much of a DecLog stream a request may take (declog.txt section 4.2:
//! each logging thread owns a stream of bounded size; section 4.5: a
//! checkpoint frees it). A transaction's entries must fit in one stream
//! with room to spare, since a stream that runs full stops the log. A
//! request that can never fit is refused before it is planned, so it leaves
//! no series or field types behind; the exact check after encoding is a
//! safety net.
//!
//! The limit is one stream less the framing of two batches: the write path
//! checkpoints when a stream has less than twice a group's bound free, and
//! an emptied stream takes any transaction within the limit (its entries
//! are placed batch by batch, each batch at most a queue's entries).

use std::collections::HashSet;

/// A series as a request names it: (measurement, tags, field).
type SeriesOfPoint<'p> = (&'p str, &'p [(String, String)], &'p str);

use strata_declog::batch::BATCH_HEADER_BYTES;
use strata_declog::compress::key_table::KEY_TABLE_MAX_KEY_BYTES;
use strata_declog::entry::ENTRY_HEADER_BYTES;
use strata_declog::DecLog;

use crate::error::EngineError;
use crate::model::{FieldValue, Point};

/// Stream bytes one value may take besides its key and string bytes when
/// it is alone in its entry (an entry's header, tail and padding, timestamp,
/// value bits, rest length).
pub(crate) const ENTRY_ESTIMATE_BYTES: u64 = 128;
/// Stream bytes a value may take inside a per-key entry with others (a
/// timestamp delta and a value, uncompressed: 8 + 9 bytes, and a byte of
/// framing).
const VALUE_BOUND_BYTES: u64 = 18;
/// Bytes of a log key besides its strings (lengths, separators, type).
const KEY_FRAMING_BYTES: u64 = 16;

fn string_bytes(v: &FieldValue) -> u64 {
    if let FieldValue::String(s) = v {
        s.len() as u64
    } else {
        0
    }
}

/// Bytes of a point's log keys besides the field name.
fn key_bytes_but_field(db: &str, p: &Point) -> u64 {
    let tags: usize = p.tags.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
    (db.len() + p.measurement.len() + tags) as u64 + KEY_FRAMING_BYTES
}

fn key_bytes(db: &str, p: &Point, field: &str) -> u64 {
    key_bytes_but_field(db, p) + field.len() as u64
}

/// A bound on the stream bytes of `points` if every value were an entry
/// of its own with its key (cheap: no hashing, the tags summed once per point).
pub(crate) fn per_value_bound<'p>(db: &str, points: impl Iterator<Item = &'p Point>) -> u64 {
    points
        .map(|p| {
            let fields: u64 =
                p.fields.iter().map(|(f, v)| ENTRY_ESTIMATE_BYTES + f.len() as u64 + string_bytes(v)).sum();
            fields + key_bytes_but_field(db, p) * p.fields.len() as u64
        })
        .sum()
}

/// Bounds on the stream bytes of `points` as the write path logs them (one
/// entry per series): `(lower, upper)`. The lower bound counts each
/// series' entry header, and its key only when the key is too long for the
/// key table (a registered key is not repeated in compressed entries); the
/// upper bound counts a header and the key per series and every value's
/// bytes.
pub(crate) fn per_key_bounds<'p>(db: &str, points: impl Iterator<Item = &'p Point>) -> (u64, u64) {
    let mut series: HashSet<SeriesOfPoint<'_>> = HashSet::new();
    let (mut lower, mut upper) = (0, 0);
    for p in points {
        for (f, v) in &p.fields {
            if series.insert((&p.measurement, &p.tags, f)) {
                let key = key_bytes(db, p, f);
                upper += ENTRY_ESTIMATE_BYTES + key;
                lower += ENTRY_HEADER_BYTES + if key > KEY_TABLE_MAX_KEY_BYTES as u64 { key } else { 0 };
            }
            upper += VALUE_BOUND_BYTES + string_bytes(v);
            lower += string_bytes(v);
        }
    }
    (lower, upper)
}

/// The most stream bytes one transaction may take (module comment).
pub(crate) fn txn_limit_bytes(log: &DecLog) -> u64 {
    let layout = log.layout();
    layout.stream_capacity_bytes.saturating_sub(2 * (BATCH_HEADER_BYTES + layout.align_bytes))
}

/// Refuses a request whose log entries cannot fit in a stream (even the
/// lower bound is over the limit), before it is planned, so it leaves no trace;
/// returns a bound to make room for (at most the limit). The cheap
/// per-value bound decides most requests; only a large one pays for the
/// per-key bounds. One whose lower bound fits but whose entries do not is
/// refused by [`check_entries`] after planning.
pub(crate) fn check_request<'p>(
    log: &DecLog,
    db: &str,
    points: impl Iterator<Item = &'p Point> + Clone,
) -> Result<u64, EngineError> {
    let limit = txn_limit_bytes(log);
    let bound = per_value_bound(db, points.clone());
    if bound <= limit {
        return Ok(bound);
    }
    let (lower, upper) = per_key_bounds(db, points);
    if lower > limit {
        return Err(EngineError::RequestTooLarge { record_bytes: lower, max_bytes: limit });
    }
    Ok(upper.min(limit))
}

/// The exact check after encoding: the bytes each stream gets (entry
/// headers, payloads, a batch header and alignment per queue's worth of
/// entries) within the limit.
pub(crate) fn check_entries(
    log: &DecLog,
    entries: impl Iterator<Item = (u64, u64)>,
) -> Result<(), EngineError> {
    let layout = log.layout();
    let mut per_stream = vec![(0u64, 0u64); layout.threads];
    for (key_hash, payload_len) in entries {
        let s = &mut per_stream[log.stream_of(key_hash)];
        s.0 += ENTRY_HEADER_BYTES + payload_len.next_multiple_of(8);
        s.1 += 1;
    }
    let limit = txn_limit_bytes(log);
    for (bytes, count) in per_stream {
        let batches = count.div_ceil(layout.queue_len as u64);
        let needed = bytes + batches * (BATCH_HEADER_BYTES + layout.align_bytes);
        if needed > limit {
            return Err(EngineError::RequestTooLarge { record_bytes: needed, max_bytes: limit });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(m: &str, tag: &str, fields: usize) -> Point {
        Point {
            measurement: m.into(),
            tags: vec![("host".into(), tag.into())],
            fields: (0..fields).map(|i| (format!("f{i}"), FieldValue::Float(i as f64))).collect(),
            timestamp_ns: 1,
        }
    }

    #[test]
    fn per_key_bound_counts_each_series_key_once() {
        let points: Vec<Point> = (0..100).map(|_| point("cpu", "a", 2)).collect();
        let per_value = per_value_bound("db", points.iter());
        let (lower, upper) = per_key_bounds("db", points.iter());
        let key = key_bytes("db", &points[0], "f0");
        assert_eq!(per_value, 200 * (ENTRY_ESTIMATE_BYTES + key));
        assert_eq!(upper, 2 * (ENTRY_ESTIMATE_BYTES + key) + 200 * VALUE_BOUND_BYTES);
        assert_eq!(lower, 2 * ENTRY_HEADER_BYTES, "short keys: registered, not repeated");
        let distinct: Vec<Point> = (0..100).map(|i| point("cpu", &format!("h{i}"), 1)).collect();
        assert!(per_key_bounds("db", distinct.iter()).1 > 100 * ENTRY_ESTIMATE_BYTES);
        let long = point("cpu", &"x".repeat(KEY_TABLE_MAX_KEY_BYTES), 1);
        assert!(
            per_key_bounds("db", [&long].into_iter()).0 > KEY_TABLE_MAX_KEY_BYTES as u64,
            "a long key counts"
        );
    }

    #[test]
    fn a_string_counts_its_bytes_in_both_bounds() {
        let mut p = point("m", "t", 0);
        p.fields.push(("s".into(), FieldValue::String("x".repeat(1000))));
        assert!(per_value_bound("db", [&p].into_iter()) >= 1000 + ENTRY_ESTIMATE_BYTES);
        let (lower, upper) = per_key_bounds("db", [&p].into_iter());
        assert!(upper >= 1000 + ENTRY_ESTIMATE_BYTES && lower >= 1000);
    }
}
