//! Tests of compression wired into DecLog (declog.txt 4.4.1, 4.5, 4.6):
//! point payloads round trip through `open`/`parse` with compression on and
//! off; fewer bytes on media; ids stable across a restart; a checkpoint cut
//! then a crash before or after `truncate_to` (parsing passes the cut);
//! `truncate_to` after a restart by the cut record, concurrently with
//! commits, and refusing non-cut positions; the checkpoint copy of the key
//! table; input checks and a full key table failing before anything is
//! queued; undoing a compression when the queues are full; strict ordering.

use std::collections::BTreeMap;
use std::sync::Arc;

use strata_media::TxnId;
use strata_pmem::{Region, RegionOffset};

use super::key_table::KeyTable;
use super::{key_hash, point_payload};
use crate::{DecLog, DeclogConfig, DeclogError, EntryIn, FlushMode, Recovered};

const BASE: RegionOffset = RegionOffset(0);

fn cfg(compression: bool) -> DeclogConfig {
    DeclogConfig { flush_mode: FlushMode::Inline, compression, key_slots: 32, ..Default::default() }
}

fn sim_log(cfg: DeclogConfig, stream_bytes: u64) -> (Arc<Region>, DecLog) {
    let bytes = DecLog::footprint_bytes_for(&cfg, stream_bytes);
    let region = Arc::new(Region::sim(bytes));
    let log = DecLog::format(region.clone(), BASE, bytes, cfg).unwrap();
    (region, log)
}

fn series(i: u64) -> Vec<u8> {
    format!("cpu,host=server{i:02},dc=eu-west usage_user").into_bytes()
}

/// Series `i` at step `t`: every 10 s, a slowly moving value, a note now and then.
fn point(i: u64, t: u64) -> Vec<u8> {
    let value = 50.0 + ((t + i) % 4) as f64 * 0.5;
    let rest: &[u8] = if t.is_multiple_of(5) { b"note" } else { b"" };
    point_payload::encode(&series(i), 1_700_000_000_000 + t as i64 * 10_000, value.to_bits(), rest)
}

fn entry(i: u64, payload: &[u8], lsn: u32) -> EntryIn<'_> {
    EntryIn { key_hash: key_hash(&series(i)), lsn, compressed: false, payload }
}

/// Commits transaction `t`: points of two of six series.
fn commit_two(log: &DecLog, t: u64) -> Vec<Vec<u8>> {
    let payloads = vec![point(t % 6, t), point((t + 1) % 6, t)];
    let e = [entry(t % 6, &payloads[0], 0), entry((t + 1) % 6, &payloads[1], 0)];
    log.commit(TxnId(t), &e).unwrap();
    payloads
}

type Contents = BTreeMap<u64, Vec<Vec<u8>>>;

fn contents(r: &Recovered) -> Contents {
    r.txns().into_iter().map(|(t, es)| (t.0, es.iter().map(|e| e.payload.clone()).collect())).collect()
}

fn crash_image(region: &Region) -> Arc<Region> {
    Arc::new(Region::sim_from_image(region.as_sim().unwrap().persistent_image()))
}

fn open_crashed(region: &Region) -> (Arc<Region>, DecLog, Recovered) {
    let crashed = crash_image(region);
    let (log, r) = DecLog::open_with_mode(crashed.clone(), BASE, FlushMode::Inline).unwrap();
    (crashed, log, r)
}

#[test]
fn point_payloads_round_trip_with_compression_on_and_off_and_take_less_space_on() {
    let mut results = Vec::new();
    for compression in [false, true] {
        let (region, log) = sim_log(cfg(compression), 64 << 10);
        let mut expect = Contents::new();
        for t in 1..=120 {
            expect.insert(t, commit_two(&log, t));
        }
        let stats = log.stats();
        drop(log);
        let r = crate::recovery::parse(&region, BASE).unwrap();
        assert_eq!(contents(&r), expect, "compression {compression}");
        assert!(r.inserts.iter().all(|e| !e.compressed), "payloads come back decompressed");
        let compressed: u64 = r.streams.iter().map(|s| s.compressed_entries).sum();
        results.push((stats, compressed));
    }
    let ((off, off_compressed), (on, on_compressed)) = (results[0], results[1]);
    println!("entry bytes: {} uncompressed, {} compressed", off.entry_bytes, on.entry_bytes);
    assert_eq!((off_compressed, off.compressed_entries), (0, 0));
    assert_eq!(on_compressed, on.compressed_entries);
    assert_eq!(on.compressed_entries, on.entries, "after registration every entry goes by key id");
    assert_eq!(on.payload_bytes_submitted, off.payload_bytes_submitted);
    assert!(on.payload_bytes_logged * 4 < on.payload_bytes_submitted, "{on:?}");
    // The 48-byte entry header and tail stay: entries shrink by a third or more.
    assert!(on.entry_bytes * 10 < off.entry_bytes * 7, "{} vs {}", on.entry_bytes, off.entry_bytes);
}

#[test]
fn a_restart_keeps_key_ids_and_later_entries_still_decompress() {
    let (region, log) = sim_log(cfg(true), 32 << 10);
    let mut expect = Contents::new();
    for t in 1..=30 {
        expect.insert(t, commit_two(&log, t));
    }
    let layout = log.layout();
    let ids = |r: &Region| -> Vec<Option<u32>> {
        (0..2)
            .flat_map(|s| {
                let t = KeyTable::open_detached(r, layout.key_table(s)).unwrap();
                (0..6).map(move |i| t.get(&series(i)).map(|k| k.id)).collect::<Vec<_>>()
            })
            .collect()
    };
    let before = ids(&region);
    assert_eq!(before.iter().flatten().count(), 6, "each series in exactly one stream's table");
    drop(log);
    let (log, r) = DecLog::open_with_mode(region.clone(), BASE, FlushMode::Inline).unwrap();
    assert_eq!(contents(&r), expect);
    for t in 31..=60 {
        expect.insert(t, commit_two(&log, t));
    }
    drop(log);
    assert_eq!(ids(&region), before, "ids are stable across the restart");
    assert_eq!(contents(&crate::recovery::parse(&region, BASE).unwrap()), expect);
}

/// Section 4.5/4.6: a crash after the cut but before `truncate_to` parses
/// from the older heads straight through the cut.
#[test]
fn a_crash_between_cut_and_truncate_parses_across_the_cut() {
    let (region, log) = sim_log(cfg(true), 32 << 10);
    let mut expect = Contents::new();
    for t in 1..=20 {
        expect.insert(t, commit_two(&log, t));
    }
    let cut = log.cut().unwrap();
    assert_eq!(cut.ends, log.stream_positions().iter().map(|p| p.1).collect::<Vec<_>>());
    assert_eq!(log.last_cut(), Some(cut.clone()));
    for t in 21..=40 {
        expect.insert(t, commit_two(&log, t));
    }
    let (_, _, r) = open_crashed(&region);
    assert_eq!(contents(&r), expect);
    assert_eq!(r.streams.iter().map(|s| s.head).collect::<Vec<_>>(), vec![0, 0], "older heads");
    assert_eq!(r.last_cut, Some(cut));
    for (t, entries) in r.txns() {
        assert!(entries.iter().all(|e| r.before_last_cut(e) == (t.0 <= 20)), "{t}");
    }
}

#[test]
fn after_truncate_to_the_cut_a_crash_parses_from_it() {
    let (region, log) = sim_log(cfg(true), 32 << 10);
    for t in 1..=20 {
        commit_two(&log, t);
    }
    let cut = log.cut().unwrap();
    let mut expect = Contents::new();
    for t in 21..=30 {
        expect.insert(t, commit_two(&log, t));
    }
    log.truncate_to(&cut.ends).unwrap();
    assert_eq!(log.stream_positions().iter().map(|p| p.0).collect::<Vec<_>>(), cut.ends);
    for t in 31..=40 {
        expect.insert(t, commit_two(&log, t));
    }
    let (crashed, log2, r) = open_crashed(&region);
    assert_eq!(contents(&r), expect);
    assert_eq!(r.streams.iter().map(|s| s.head).collect::<Vec<_>>(), cut.ends);
    assert_eq!(r.generation, 1);
    // And the writer goes on after the restart, compressing again.
    expect.insert(41, commit_two(&log2, 41));
    drop(log2);
    assert_eq!(contents(&crate::recovery::parse(&crashed, BASE).unwrap()), expect);
}

/// The engine's checkpoint finished before a crash, the truncation did not:
/// after the restart `truncate_to` finds the cut in the cut record.
#[test]
fn truncate_to_after_a_restart_uses_the_cut_record() {
    let (region, log) = sim_log(cfg(true), 32 << 10);
    for t in 1..=10 {
        commit_two(&log, t);
    }
    let cut = log.cut().unwrap();
    let mut expect = Contents::new();
    for t in 11..=20 {
        expect.insert(t, commit_two(&log, t));
    }
    let (crashed, log2, r) = open_crashed(&region);
    assert_eq!(r.txns().len(), 20);
    assert_eq!(log2.last_cut(), Some(cut.clone()));
    log2.truncate_to(&cut.ends).unwrap();
    drop(log2);
    assert_eq!(contents(&crate::recovery::parse(&crashed, BASE).unwrap()), expect);
}

#[test]
fn with_compression_truncate_to_refuses_positions_that_are_not_the_cut() {
    let (region, log) = sim_log(cfg(true), 32 << 10);
    for t in 1..=6 {
        commit_two(&log, t);
    }
    let mid: Vec<u64> = log.stream_positions().iter().map(|p| p.1).collect();
    for t in 7..=12 {
        commit_two(&log, t);
    }
    let err = log.truncate_to(&mid).unwrap_err();
    assert!(matches!(err, DeclogError::InvalidInput(_)) && err.to_string().contains("cut"), "{err}");
    let cut = log.cut().unwrap();
    assert!(log.truncate_to(&mid).is_err(), "only the last cut");
    assert!(log.truncate_to(&cut.ends[..1]).is_err(), "one position per stream");
    assert!(log.truncate_to(&[cut.ends[0] + 256, cut.ends[1]]).is_err(), "past the end");
    log.truncate_to(&[0, cut.ends[1]]).unwrap();
    let r = crate::recovery::parse(&region, BASE).unwrap();
    assert_eq!(r.streams.iter().map(|s| s.head).collect::<Vec<_>>(), vec![0, cut.ends[1]]);
    assert_eq!(r.generation, 1, "the refusals moved nothing");
}

/// The checkpoint log's hash table (4.5 step 4): the copy keeps the states
/// of the cut, the active table's states are cleared and persisted.
#[test]
fn the_cut_copies_the_key_tables_then_clears_their_states() {
    let (region, log) = sim_log(cfg(true), 32 << 10);
    for t in 1..=12 {
        commit_two(&log, t);
    }
    assert!(log.checkpoint_key_table(0).unwrap().is_empty(), "no cut yet: an empty copy");
    log.cut().unwrap();
    let layout = log.layout();
    let mut keys_seen = 0;
    for s in 0..2 {
        let copy = log.checkpoint_key_table(s).unwrap();
        let active = KeyTable::open_detached(&crash_image(&region), layout.key_table(s)).unwrap();
        assert_eq!(copy.len(), active.len());
        for i in 0..6 {
            if let Some(k) = copy.get(&series(i)) {
                keys_seen += 1;
                assert!(k.state.has_state, "series {i}: the copy keeps the state at the cut");
                let a = active.get(&series(i)).unwrap();
                assert_eq!((a.id, a.state.has_state), (k.id, false), "series {i}: cleared, id kept");
            }
        }
    }
    assert_eq!(keys_seen, 6);
    assert!(log.checkpoint_key_table(2).is_err());
}

#[test]
fn bad_payloads_fail_and_keys_the_table_cannot_take_are_logged_raw() {
    let (region, log) = sim_log(DeclogConfig { key_slots: 2, ..cfg(true) }, 16 << 10);
    let p = point(0, 1);
    let e = |payload| EntryIn { key_hash: 0, lsn: 0, compressed: false, payload };
    let err = log.commit(TxnId(1), &[e(b"\x09not a point")]).unwrap_err();
    assert!(
        matches!(err, DeclogError::InvalidInput(_)) && err.to_string().contains("point payload"),
        "{err}"
    );
    let err = log.commit(TxnId(1), &[EntryIn { compressed: true, ..e(&p) }]).unwrap_err();
    assert!(err.to_string().contains("compressed = false"), "{err}");
    let big = point_payload::encode(b"k", 0, 0, &vec![0; log.max_payload_bytes() as usize]);
    assert!(matches!(log.commit(TxnId(1), &[e(&big)]), Err(DeclogError::TooLarge { .. })));
    // Stream 0's table holds two keys: a third key, and a key longer than a
    // slot takes, are logged raw (ENTRY_FLAG_RAW_POINT) and come back intact.
    let points: Vec<Vec<u8>> = (0..3).map(|i| point_payload::encode(&series(i), 5, 0, b"")).collect();
    let long = point_payload::encode(&[b'k'; 300], 9, 1.5f64.to_bits(), b"rest");
    log.commit(TxnId(1), &[e(&points[0]), e(&points[1])]).unwrap();
    log.commit(TxnId(2), &[e(&points[0]), e(&points[2]), e(&long)]).unwrap();
    log.commit(TxnId(3), &[e(&points[2]), e(&long)]).unwrap();
    assert_eq!(log.stats().txns_submitted, 3);
    drop(log);
    let r = crate::recovery::parse(&region, BASE).unwrap();
    let got = contents(&r);
    assert_eq!(got.keys().copied().collect::<Vec<_>>(), vec![1, 2, 3]);
    assert_eq!(got[&2], vec![points[0].clone(), points[2].clone(), long.clone()]);
    assert_eq!(got[&3], vec![points[2].clone(), long]);
    assert!(r.discarded_txns.is_empty());
}

/// One transaction with more entries of one key than the queues hold: the
/// push that finds no free queue undoes its compression and retries, so the
/// entries still decompress in order.
#[test]
fn a_push_that_finds_no_free_queue_undoes_its_compression() {
    let (region, log) = sim_log(DeclogConfig { queue_len: 1, ..cfg(true) }, 16 << 10);
    let payloads: Vec<Vec<u8>> = (0..12).map(|t| point(3, t * 7 % 5)).collect();
    let entries: Vec<EntryIn<'_>> = payloads.iter().map(|p| entry(3, p, 0)).collect();
    log.commit(TxnId(1), &entries).unwrap();
    assert!(log.stats().batches >= 12);
    drop(log);
    let r = crate::recovery::parse(&region, BASE).unwrap();
    assert_eq!(contents(&r)[&1], payloads);
}

#[test]
fn strict_ordering_with_compression_round_trips_updates_and_inserts() {
    let (region, log) = sim_log(DeclogConfig { strict_ordering: true, ..cfg(true) }, 32 << 10);
    let mut expect = Contents::new();
    for t in 1..=20u64 {
        let p = point(t % 3, t);
        log.commit(TxnId(t), &[entry(t % 3, &p, (t % 4 == 0) as u32 * t as u32)]).unwrap();
        expect.insert(t, vec![p]);
    }
    assert_eq!(log.stats().fences, 2 * 20, "a body fence and a tail fence per entry");
    drop(log);
    let (_, _, r) = open_crashed(&region);
    assert_eq!(contents(&r), expect);
    assert_eq!(r.updates.len(), 5);
}

/// `truncate_to` with logging threads while workers keep committing points
/// of the same series: nothing after the cut is lost.
#[test]
fn truncate_to_runs_safely_alongside_commits() {
    let cfg = DeclogConfig { key_slots: 32, queue_len: 8, ..Default::default() };
    let bytes = DecLog::footprint_bytes_for(&cfg, 256 << 10);
    let region = Arc::new(Region::anonymous(bytes).unwrap());
    let log = DecLog::format(region.clone(), BASE, bytes, cfg).unwrap();
    for t in 1..=50 {
        commit_two(&log, t);
    }
    let cut = log.cut().unwrap();
    let expect = std::sync::Mutex::new(Contents::new());
    std::thread::scope(|s| {
        for w in 1..=3u64 {
            let (log, expect) = (&log, &expect);
            s.spawn(move || {
                for i in 0..100 {
                    let t = w * 1000 + i;
                    let payloads = commit_two(log, t);
                    expect.lock().unwrap().insert(t, payloads);
                }
            });
        }
        log.truncate_to(&cut.ends).unwrap();
    });
    drop(log);
    let (_, r) = DecLog::open_with_mode(region, BASE, FlushMode::Inline).unwrap();
    assert_eq!(contents(&r), expect.into_inner().unwrap());
    assert_eq!(r.streams.iter().map(|s| s.head).collect::<Vec<_>>(), cut.ends);
}

/// Per-key entries (format version 3): a run of points of one key per
/// entry, mixed with single-point entries in the same streams, round trip
/// through a crash with compression on and off, across a cut, and take a
/// few bytes per point with compression.
#[test]
fn per_key_entries_round_trip_mixed_with_single_ones_and_across_a_cut() {
    use super::points_payload::{self, PointItem};
    use crate::{EntryOwned, PayloadForm};
    let run = |i: u64, t: u64| {
        let key = series(i);
        let pts: Vec<PointItem<'_>> = (0..20)
            .map(|k| PointItem {
                timestamp: 1_700_000_000_000 + (t * 20 + k) as i64 * 10_000,
                value_bits: (50.0 + ((t + k) % 3) as f64).to_bits(),
                rest: if k == 7 { b"note" } else { b"" },
            })
            .collect();
        points_payload::encode(&key, pts)
    };
    let mut bytes_per_point = Vec::new();
    for compression in [false, true] {
        let (region, log) = sim_log(cfg(compression), 128 << 10);
        let mut per_key: BTreeMap<u64, Vec<Vec<u8>>> = BTreeMap::new();
        let mut single = Contents::new();
        for t in 1..=40u64 {
            if t % 4 == 0 {
                single.insert(t, commit_two(&log, t));
                continue;
            }
            let payloads = vec![run(t % 6, t), run((t + 2) % 6, t)];
            let entries: Vec<EntryOwned> = payloads
                .iter()
                .zip([t % 6, (t + 2) % 6])
                .map(|(p, i)| EntryOwned {
                    key_hash: key_hash(&series(i)),
                    lsn: 0,
                    compressed: false,
                    payload: p.clone(),
                })
                .collect();
            let ticket = log.submit_owned_as(TxnId(t), entries, PayloadForm::PerKey).unwrap();
            log.pump().unwrap();
            assert!(ticket.is_durable());
            per_key.insert(t, payloads);
            if t == 20 {
                log.cut().unwrap();
            }
        }
        let (_, _, r) = open_crashed(&region);
        for (t, es) in r.txns() {
            let got: Vec<Vec<u8>> = es.iter().map(|e| e.payload.clone()).collect();
            let form = es[0].form;
            match per_key.get(&t.0) {
                Some(want) => assert_eq!((form, &got), (PayloadForm::PerKey, want), "txn {t}"),
                None => assert_eq!((form, &got), (PayloadForm::Single, &single[&t.0]), "txn {t}"),
            }
        }
        assert_eq!(r.txns().len(), 40);
        let logged = log.stats().payload_bytes_logged;
        bytes_per_point.push(logged as f64 / (30.0 * 40.0 + 20.0));
    }
    assert!(
        bytes_per_point[1] < bytes_per_point[0] / 4.0,
        "compressed per-key runs take {:.1} payload bytes per point against {:.1} raw",
        bytes_per_point[1],
        bytes_per_point[0]
    );
}
