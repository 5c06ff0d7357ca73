//! Entries given by their points ([`crate::DecLog::submit_points`]) log the
//! same bytes as the same points submitted as points payloads: with
//! compression on and off, with a key table too small for every key (those
//! keys logged raw), and through a crash.

use std::sync::Arc;

use strata_media::TxnId;
use strata_pmem::{Region, RegionOffset};

use super::points_payload::{self, PointItem};
use super::{key_hash, PointsEntry, PointsSource};
use crate::{DecLog, DeclogConfig, EntryOwned, FlushMode, PayloadForm};

const BASE: RegionOffset = RegionOffset(0);

/// The points of one key, owned.
struct OwnedPoints {
    key: Vec<u8>,
    points: Vec<(i64, u64, Vec<u8>)>,
}

impl PointsSource for OwnedPoints {
    fn key(&self) -> &[u8] {
        &self.key
    }
    fn count(&self) -> u32 {
        self.points.len() as u32
    }
    fn for_each_point(&self, f: &mut dyn FnMut(PointItem<'_>)) {
        for (timestamp, value_bits, rest) in &self.points {
            f(PointItem { timestamp: *timestamp, value_bits: *value_bits, rest });
        }
    }
    fn payload_len(&self) -> usize {
        points_payload::encode(&self.key, self.items()).len()
    }
}

impl OwnedPoints {
    fn items(&self) -> impl Iterator<Item = PointItem<'_>> {
        self.points.iter().map(|(timestamp, value_bits, rest)| PointItem {
            timestamp: *timestamp,
            value_bits: *value_bits,
            rest,
        })
    }
}

/// What recovery parses: each transaction's entry payloads.
type Parsed = Vec<(TxnId, Vec<Vec<u8>>)>;

/// Transaction `t`'s run on series `i`: 1 to 9 points, a note now and then,
/// every 10 s.
fn run(i: u64, t: u64) -> OwnedPoints {
    let key = format!("cpu,host=server{i:02},dc=eu-west usage_user").into_bytes();
    let points = (0..1 + (t + i) % 9)
        .map(|k| {
            let ts = 1_700_000_000_000 + (t * 10 + k) as i64 * 10_000;
            let rest = if (t + k).is_multiple_of(7) { b"\x01note".to_vec() } else { vec![1] };
            (ts, (40.0 + ((t * k + i) % 5) as f64).to_bits(), rest)
        })
        .collect();
    OwnedPoints { key, points }
}

/// The region's whole persistent image after `txns` transactions, each
/// writing series `t % 7` and `(t + 3) % 7`, submitted by points or as
/// payloads; and what recovery parses from it.
fn log_image(compression: bool, by_points: bool, txns: u64) -> (Vec<u8>, Parsed) {
    // 4 key slots for 7 series: the table fills and later keys go raw.
    let cfg = DeclogConfig { flush_mode: FlushMode::Inline, compression, key_slots: 4, ..Default::default() };
    let bytes = DecLog::footprint_bytes_for(&cfg, 64 << 10);
    let region = Arc::new(Region::sim(bytes));
    let log = DecLog::format(region.clone(), BASE, bytes, cfg).unwrap();
    for t in 1..=txns {
        let runs = [run(t % 7, t), run((t + 3) % 7, t)];
        let ticket = if by_points {
            let entries = runs
                .into_iter()
                .map(|r| PointsEntry { key_hash: key_hash(&r.key), lsn: 0, points: Box::new(r) })
                .collect();
            log.submit_points(TxnId(t), entries).unwrap()
        } else {
            let entries = runs
                .iter()
                .map(|r| EntryOwned {
                    key_hash: key_hash(&r.key),
                    lsn: 0,
                    compressed: false,
                    payload: points_payload::encode(&r.key, r.items()),
                })
                .collect();
            log.submit_owned_as(TxnId(t), entries, PayloadForm::PerKey).unwrap()
        };
        log.pump().unwrap();
        assert!(ticket.is_durable(), "txn {t}");
    }
    let image = region.as_sim().unwrap().persistent_image();
    let crashed = Arc::new(Region::sim_from_image(image.clone()));
    let (_, recovered) = DecLog::open_with_mode(crashed, BASE, FlushMode::Inline).unwrap();
    let txns = recovered
        .txns()
        .into_iter()
        .map(|(t, es)| (t, es.iter().map(|e| e.payload.clone()).collect()))
        .collect();
    (image, txns)
}

#[test]
fn points_and_payloads_log_the_same_bytes() {
    for compression in [false, true] {
        let (by_points, parsed_points) = log_image(compression, true, 60);
        let (by_payloads, parsed_payloads) = log_image(compression, false, 60);
        assert!(by_points == by_payloads, "compression {compression}: the images differ");
        assert_eq!(parsed_points, parsed_payloads, "compression {compression}");
        assert_eq!(parsed_points.len(), 60, "compression {compression}: every transaction recovered");
        // What parsing gives back is each run's points payload.
        let (t, payloads) = &parsed_points[10];
        let want: Vec<Vec<u8>> = [run(t.0 % 7, t.0), run((t.0 + 3) % 7, t.0)]
            .iter()
            .map(|r| points_payload::encode(&r.key, r.items()))
            .collect();
        let (mut got, mut want) = (payloads.clone(), want);
        got.sort();
        want.sort();
        assert_eq!(got, want, "compression {compression}, txn {t}");
    }
}

#[test]
fn a_source_without_points_or_over_the_limit_is_refused_before_anything_is_queued() {
    let cfg = DeclogConfig { flush_mode: FlushMode::Inline, ..Default::default() };
    let bytes = DecLog::footprint_bytes_for(&cfg, 64 << 10);
    let log = DecLog::format(Arc::new(Region::sim(bytes)), BASE, bytes, cfg).unwrap();
    let empty = OwnedPoints { key: b"k".to_vec(), points: Vec::new() };
    let err = log
        .submit_points(TxnId(1), vec![PointsEntry { key_hash: 1, lsn: 0, points: Box::new(empty) }])
        .unwrap_err();
    assert!(matches!(err, crate::DeclogError::InvalidInput(_)), "{err:?}");
    let huge_rest = vec![7u8; log.max_payload_bytes() as usize];
    let huge = OwnedPoints { key: b"k".to_vec(), points: vec![(1, 2, huge_rest)] };
    let err = log
        .submit_points(TxnId(2), vec![PointsEntry { key_hash: 1, lsn: 0, points: Box::new(huge) }])
        .unwrap_err();
    assert!(matches!(err, crate::DeclogError::TooLarge { .. }), "{err:?}");
    assert_eq!(log.stats().txns_submitted, 0, "nothing was queued");
}

/// One transaction with more entries of one key than the queues hold,
/// given by its points: the push that finds no free queue takes the
/// compression back and compresses again from the points on its retry, so
/// the entries still decompress in order.
#[test]
fn a_points_push_that_finds_no_free_queue_compresses_again_on_retry() {
    let cfg =
        DeclogConfig { flush_mode: FlushMode::Inline, queue_len: 1, key_slots: 8, ..Default::default() };
    let bytes = DecLog::footprint_bytes_for(&cfg, 16 << 10);
    let region = Arc::new(Region::sim(bytes));
    let log = DecLog::format(region.clone(), BASE, bytes, cfg).unwrap();
    let runs: Vec<OwnedPoints> = (0..12).map(|t| run(3, t * 7 % 5)).collect();
    let want: Vec<Vec<u8>> = runs.iter().map(|r| points_payload::encode(&r.key, r.items())).collect();
    let entries = runs
        .into_iter()
        .map(|r| PointsEntry { key_hash: key_hash(&r.key), lsn: 0, points: Box::new(r) })
        .collect();
    let ticket = log.submit_points(TxnId(1), entries).unwrap();
    log.pump().unwrap();
    assert!(ticket.is_durable());
    assert!(log.stats().batches >= 12, "one entry per queue, so one batch each");
    drop(log);
    let r = crate::recovery::parse(&region, BASE).unwrap();
    let got: Vec<Vec<u8>> = r.txns()[&TxnId(1)].iter().map(|e| e.payload.clone()).collect();
    assert_eq!(got, want);
}
