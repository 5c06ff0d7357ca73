//! Tests of [`crate::DecLog`] as a whole: commit and recovery, relaxed
//! ordering, group commit costs, truncation, a full stream, bad input, torn
//! batches across two crashes, and logging threads under concurrent workers.

use std::collections::BTreeMap;
use std::sync::Arc;

use strata_media::TxnId;
use strata_pmem::{Region, RegionOffset};

use crate::config::{DeclogConfig, FlushMode};
use crate::entry::EntryIn;
use crate::error::DeclogError;
use crate::layout::Layout;
use crate::pipeline::StepOutcome;
use crate::ticket::TicketStatus;
use crate::DecLog;

const BASE: RegionOffset = RegionOffset(0);

/// Opaque payloads: these tests are about logging, not compression
/// (`compress/log_tests.rs` covers that).
fn inline_cfg() -> DeclogConfig {
    DeclogConfig { flush_mode: FlushMode::Inline, compression: false, ..Default::default() }
}

fn sim_log(stream_bytes: u64, cfg: DeclogConfig) -> (Arc<Region>, DecLog) {
    let bytes = Layout::footprint_bytes(cfg.threads, stream_bytes);
    let region = Arc::new(Region::sim(bytes));
    let log = DecLog::format(region.clone(), BASE, bytes, cfg).unwrap();
    (region, log)
}

/// A key hash that lands in stream `s` of 2.
fn key_in(s: u64, k: u64) -> u64 {
    k * 2 + s
}

fn ins(key_hash: u64, payload: &[u8]) -> EntryIn<'_> {
    EntryIn { key_hash, lsn: 0, compressed: false, payload }
}

fn upd(key_hash: u64, lsn: u32, payload: &[u8]) -> EntryIn<'_> {
    EntryIn { key_hash, lsn, compressed: false, payload }
}

fn reopen_parse(region: &Arc<Region>) -> crate::Recovered {
    let image = region.as_sim().unwrap().persistent_image();
    DecLog::open_with_mode(Arc::new(Region::sim_from_image(image)), BASE, FlushMode::Inline).unwrap().1
}

#[test]
fn committed_transactions_come_back_with_updates_bucketed_by_lsn() {
    let (region, log) = sim_log(8192, inline_cfg());
    log.commit(TxnId(1), &[ins(key_in(0, 1), b"a0"), ins(key_in(1, 2), b"a1")]).unwrap();
    log.commit(TxnId(2), &[upd(key_in(0, 1), 1, b"b0"), upd(key_in(1, 3), 1, b"b1")]).unwrap();
    log.commit(TxnId(3), &[EntryIn { key_hash: key_in(1, 2), lsn: 2, compressed: true, payload: b"c" }])
        .unwrap();
    let r = reopen_parse(&region);
    assert_eq!(r.complete_txns, 3);
    assert!(r.discarded_txns.is_empty());
    assert_eq!(r.max_txn_id, Some(TxnId(3)));
    assert_eq!(
        r.inserts.iter().map(|e| (e.txn, e.stream)).collect::<Vec<_>>(),
        vec![(TxnId(1), 0), (TxnId(1), 1)]
    );
    let order: Vec<(u32, TxnId, u32)> =
        r.updates_in_lsn_order().map(|e| (e.lsn, e.txn, e.op_index)).collect();
    assert_eq!(order, vec![(1, TxnId(2), 0), (1, TxnId(2), 1), (2, TxnId(3), 0)]);
    let t3 = &r.txns()[&TxnId(3)];
    assert!(t3[0].compressed && t3[0].payload == b"c" && t3[0].entry_count == 1);
}

/// Section 4.2 with 4.3.2: an update whose dependency in the other stream is
/// not yet persisted waits, while an insert queued after it in its own
/// stream is persisted and acknowledged first.
#[test]
fn a_blocked_update_does_not_hold_back_a_later_insert() {
    let (region, log) = sim_log(8192, inline_cfg());
    let u1 = log.submit(TxnId(1), &[upd(key_in(1, 1), 1, b"u1")]).unwrap();
    let u2 = log.submit(TxnId(2), &[upd(key_in(0, 2), 2, b"u2")]).unwrap();
    let i3 = log.submit(TxnId(3), &[ins(key_in(0, 3), b"i3")]).unwrap();
    assert_eq!(log.snapshot_arrays().1, vec![vec![2, 0], vec![1, 0]], "S holds both pending LSNs");
    assert_eq!(log.step(0), StepOutcome::Progress, "U2's body");
    assert_eq!(log.step(0), StepOutcome::Progress, "U2's tail waits; I3's body is persisted");
    assert_eq!(i3.status(), TicketStatus::Durable);
    assert_eq!(u2.status(), TicketStatus::Pending);
    assert_eq!(log.step(0), StepOutcome::Blocked);
    assert_eq!(log.stats().snapshot_waits, 1);
    let r = reopen_parse(&region);
    assert_eq!(r.txns().keys().copied().collect::<Vec<_>>(), vec![TxnId(3)], "U2's tail never persisted");
    assert_eq!(r.streams[0].uncommitted_updates, 1);
    assert_eq!(log.step(1), StepOutcome::Progress, "U1's body");
    assert_eq!(log.step(1), StepOutcome::Progress, "U1's tail");
    assert!(u1.is_durable());
    assert_eq!(log.snapshot_arrays().0[1], vec![1, 0], "N of U1's queue advanced");
    assert_eq!(log.step(0), StepOutcome::Progress, "U2's tail");
    assert!(u2.is_durable());
    assert_eq!(log.step(0), StepOutcome::Idle);
    assert_eq!(reopen_parse(&region).complete_txns, 3);
}

#[test]
fn group_commit_persists_a_whole_aligned_batch_with_one_fence() {
    let (region, log) = sim_log(16384, inline_cfg());
    let payload = [7u8; 50];
    let tickets: Vec<_> =
        (1..=20).map(|t| log.submit(TxnId(t), &[ins(key_in(0, t), &payload)]).unwrap()).collect();
    let before = region.stats();
    log.pump().unwrap();
    let d = region.stats() - before;
    assert!(tickets.iter().all(|t| t.is_durable()));
    let batch_bytes = log.stats().batch_bytes;
    assert_eq!(log.stats().batches, 1);
    assert_eq!(batch_bytes % 256, 0);
    assert_eq!(d.fences, 1, "no fence between insert entries");
    assert_eq!(d.media_blocks_written, batch_bytes / 256);
    assert_eq!(d.lines_flushed, batch_bytes / 64);
}

/// The pipeline of Fig. 7: the fence that persists the next queue's body
/// also persists the update's tail.
#[test]
fn an_update_tail_rides_on_the_next_queue_fence() {
    let (region, log) = sim_log(8192, inline_cfg());
    let before = region.stats();
    log.submit(TxnId(1), &[upd(key_in(0, 1), 1, b"u")]).unwrap();
    log.submit(TxnId(2), &[ins(key_in(0, 2), b"i")]).unwrap();
    log.pump().unwrap();
    let d = region.stats() - before;
    assert_eq!((d.fences, log.stats().batches, log.stats().update_tails), (2, 2, 1));
    // Alone, an update costs a body fence and a tail fence.
    let before = region.stats();
    log.commit(TxnId(3), &[upd(key_in(0, 1), 2, b"u")]).unwrap();
    assert_eq!((region.stats() - before).fences, 2);
}

#[test]
fn truncate_all_frees_every_stream_at_once() {
    let (region, log) = sim_log(8192, inline_cfg());
    for t in 1..=5 {
        log.commit(TxnId(t), &[ins(key_in(t % 2, t), b"before")]).unwrap();
    }
    let ends: Vec<u64> = log.stream_positions().iter().map(|p| p.1).collect();
    log.truncate_all().unwrap();
    assert_eq!(log.stream_positions().iter().map(|p| p.0).collect::<Vec<_>>(), ends);
    log.commit(TxnId(6), &[ins(key_in(0, 6), b"after"), ins(key_in(1, 7), b"after")]).unwrap();
    let r = reopen_parse(&region);
    assert_eq!(r.txns().keys().copied().collect::<Vec<_>>(), vec![TxnId(6)]);
    assert_eq!(r.generation, 1);
    assert_eq!(r.streams.iter().map(|s| s.head).collect::<Vec<_>>(), ends);
}

#[test]
fn a_full_stream_fails_commits_until_reopened_and_loses_nothing_acknowledged() {
    let (region, log) = sim_log(4096, inline_cfg());
    let mut acked = Vec::new();
    let mut t = 0;
    let err = loop {
        t += 1;
        match log.commit(TxnId(t), &[ins(key_in(0, t), &[1; 100])]) {
            Ok(()) => acked.push(TxnId(t)),
            Err(e) => break e,
        }
    };
    assert!(matches!(err, DeclogError::Full { stream: 0, .. }), "{err}");
    let again = log.commit(TxnId(t + 1), &[ins(key_in(1, 1), b"x")]).unwrap_err();
    assert!(matches!(again, DeclogError::Poisoned(_)), "{again}");
    drop(log);
    let (log, r) = DecLog::open_with_mode(region, BASE, FlushMode::Inline).unwrap();
    assert_eq!(r.txns().keys().copied().collect::<Vec<_>>(), acked);
    log.truncate_all().unwrap();
    log.commit(TxnId(1000), &[ins(key_in(0, 1), b"room again")]).unwrap();
}

#[test]
fn a_full_stream_with_logging_threads_fails_waiters_instead_of_hanging() {
    let cfg = DeclogConfig { queue_len: 2, compression: false, ..Default::default() };
    let (region, log) = sim_log(4096, cfg);
    let log = Arc::new(log);
    let results: Vec<Result<(), DeclogError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..3u64)
            .map(|w| {
                let log = log.clone();
                s.spawn(move || {
                    for i in 0..200u64 {
                        let t = w * 1000 + i + 1;
                        log.commit(TxnId(t), &[ins(key_in(0, t), &[7; 120]), ins(key_in(1, t), &[8; 120])])?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(results.iter().all(|r| matches!(r, Err(DeclogError::Full { .. } | DeclogError::Poisoned(_)))));
    drop(Arc::try_unwrap(log).ok().expect("workers are done"));
    let r = reopen_parse(&region);
    assert!(r.complete_txns > 0 && r.complete_txns < 600, "{} complete", r.complete_txns);
}

#[test]
fn bad_input_is_rejected_before_anything_is_queued() {
    let (_region, log) = sim_log(4096, inline_cfg());
    let e = log.commit(TxnId(1), &[]).unwrap_err();
    assert!(matches!(e, DeclogError::InvalidInput(_)), "{e}");
    let e = log.commit(TxnId(1), &[ins(1, b"a"), upd(2, 3, b"b")]).unwrap_err();
    assert!(e.to_string().contains("same") || e.to_string().contains("LSN"), "{e}");
    let big = vec![0u8; log.max_payload_bytes() as usize + 1];
    assert!(matches!(log.commit(TxnId(1), &[ins(1, &big)]), Err(DeclogError::TooLarge { .. })));
    let max = vec![0u8; log.max_payload_bytes() as usize];
    log.commit(TxnId(1), &[ins(1, &max)]).unwrap();
    assert_eq!(log.stats().txns_submitted, 1);
}

#[test]
fn rings_wrap_and_replay_across_laps_with_both_alignments() {
    for align in [8, 256] {
        let cfg = DeclogConfig { align_bytes: align, queue_len: 3, ..inline_cfg() };
        let (region, log) = sim_log(4096, cfg);
        let mut expect = BTreeMap::new();
        for t in 1..=300u64 {
            if t % 12 == 0 {
                log.truncate_all().unwrap();
                expect.clear();
            }
            let payload = vec![t as u8; (t % 70) as usize];
            log.commit(TxnId(t), &[ins(key_in(t % 2, t), &payload)]).unwrap();
            expect.insert(TxnId(t), payload);
        }
        assert!(log.stream_positions().iter().all(|p| p.1 > 2 * 4096), "align {align}: wrapped twice");
        let r = reopen_parse(&region);
        let got: BTreeMap<TxnId, Vec<u8>> =
            r.txns().into_iter().map(|(t, e)| (t, e[0].payload.clone())).collect();
        assert_eq!(got, expect, "align {align}");
    }
}

/// Found while designing the end-of-stream rule: after a crash tore the last
/// batch, the writer resumes behind it; the torn batch is sealed so the next
/// parse, with batches after it, neither fails nor changes its answer.
#[test]
fn a_torn_last_batch_is_sealed_and_parsing_stays_stable_across_a_second_crash() {
    let (region, log) = sim_log(8192, inline_cfg());
    log.commit(TxnId(1), &[ins(key_in(0, 1), &[1; 40])]).unwrap();
    // Queue three entries and write their batch without the fence.
    for t in 2..=4 {
        log.submit(TxnId(t), &[ins(key_in(0, t), &[t as u8; 90])]).unwrap();
    }
    let sim = region.as_sim().unwrap();
    sim.set_capture(true);
    log.step(0);
    let points = sim.take_crash_points();
    let flushed = points.iter().find(|p| p.kind == strata_pmem::SimOpKind::Flush).unwrap();
    // Every word of the batch new except the second entry's first line.
    let mut image = flushed.image(0, 1, 1);
    let batch_at = (crate::layout::STREAMS_OFFSET + 256) as usize;
    let second_entry = batch_at + 32 + (48 + 96);
    image[second_entry..second_entry + 8].fill(0);
    drop(log);
    let region2 = Arc::new(Region::sim_from_image(image));
    let (log2, r1) = DecLog::open_with_mode(region2.clone(), BASE, FlushMode::Inline).unwrap();
    assert_eq!(r1.streams[0].torn_batches, 1);
    let first: Vec<TxnId> = r1.txns().keys().copied().collect();
    assert_eq!(first, vec![TxnId(1), TxnId(2)], "the entry before the torn one is intact");
    log2.commit(TxnId(10), &[ins(key_in(0, 10), b"after the crash")]).unwrap();
    drop(log2);
    let r2 = reopen_parse(&region2);
    let second: Vec<TxnId> = r2.txns().keys().copied().collect();
    assert_eq!(second, vec![TxnId(1), TxnId(2), TxnId(10)]);
    assert_eq!(r2.epoch, 2, "format wrote epoch 1, the first open 2");
}

/// An unsealed torn batch with a valid batch after it cannot come from a
/// crash: corruption.
#[test]
fn a_torn_batch_followed_by_a_batch_is_corruption() {
    let (region, log) = sim_log(8192, inline_cfg());
    log.commit(TxnId(1), &[ins(key_in(0, 1), &[1; 40])]).unwrap();
    log.commit(TxnId(2), &[ins(key_in(0, 2), &[2; 40])]).unwrap();
    drop(log);
    let entry_payload = crate::layout::STREAMS_OFFSET + 32 + 40 + 8;
    region.write(RegionOffset(entry_payload), &[0xEE]);
    let err = crate::recovery::parse(&region, BASE).unwrap_err();
    assert!(err.is_corruption() && err.to_string().contains("followed by a valid batch"), "{err}");
}

/// The paper's setting with real logging threads: workers commit
/// concurrently, updates computed as the data-driven LSN protocol does under
/// a lock, everything committed comes back complete.
#[test]
fn concurrent_workers_with_logging_threads_recover_everything_committed() {
    let cfg = DeclogConfig {
        threads: 2,
        queues_per_thread: 2,
        queue_len: 16,
        compression: false,
        ..Default::default()
    };
    let bytes = Layout::footprint_bytes(2, 256 << 10);
    let region = Arc::new(Region::anonymous(bytes).unwrap());
    let log = DecLog::format(region.clone(), BASE, bytes, cfg).unwrap();
    // key -> uts, shared by the workers (the extended timestamps).
    let uts = parking_lot::Mutex::new(BTreeMap::<u64, u32>::new());
    let workers = 4u64;
    let per_worker = 150u64;
    std::thread::scope(|s| {
        for w in 0..workers {
            let (log, uts) = (&log, &uts);
            s.spawn(move || {
                for i in 0..per_worker {
                    let txn = TxnId(w * 10_000 + i + 1);
                    let payload = txn.0.to_le_bytes();
                    if i % 5 == 4 {
                        // Update two hot keys: LSN under the lock, submit before
                        // releasing it, wait after (early lock release).
                        let keys = [(i % 7) * 2, (i % 7) * 2 + 1];
                        let ticket = {
                            let mut m = uts.lock();
                            let lsn = keys.iter().map(|k| *m.get(k).unwrap_or(&0)).max().unwrap() + 1;
                            for k in keys {
                                m.insert(k, lsn);
                            }
                            let e: Vec<_> = keys.iter().map(|&k| upd(k, lsn, &payload)).collect();
                            log.submit(txn, &e).unwrap()
                        };
                        ticket.wait().unwrap();
                    } else {
                        // Two entries in one stream (queued under one lock, so
                        // their batch merges them whatever the scheduling), one
                        // in the other.
                        let k = 1000 + 2 * txn.0;
                        let e = [ins(k, &payload), ins(k + 1, &payload), ins(k + 2, &payload)];
                        log.commit(txn, &e).unwrap();
                    }
                }
            });
        }
    });
    let stats = log.stats();
    drop(log);
    let (_, r) = DecLog::open_with_mode(region, BASE, FlushMode::Inline).unwrap();
    assert_eq!(r.complete_txns, workers * per_worker, "stats {stats:?}");
    assert!(r.discarded_txns.is_empty());
    for (t, entries) in r.txns() {
        assert_eq!(entries.len(), if entries[0].lsn > 0 { 2 } else { 3 }, "{t}");
        assert!(entries.iter().all(|e| e.payload == t.0.to_le_bytes()), "{t}");
    }
    // Per key, update LSNs are distinct: the LSN order is the commit order.
    let mut per_key: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
    for e in r.updates_in_lsn_order() {
        per_key.entry(e.key_hash).or_default().push(e.lsn);
    }
    for (k, lsns) in per_key {
        assert!(lsns.windows(2).all(|w| w[0] < w[1]), "key {k}: {lsns:?}");
    }
    assert!(stats.batches < stats.entries, "group commit merged entries: {stats:?}");
}

/// Fig. 12(a)'s baseline: under strict ordering every entry is its own batch
/// with a body fence and a tail fence; relaxed ordering with group commit
/// shares one fence among many insert entries.
#[test]
fn strict_ordering_fences_every_entry_and_relaxed_shares_fences() {
    let run = |strict: bool| {
        let cfg = DeclogConfig { strict_ordering: strict, ..inline_cfg() };
        let (region, log) = sim_log(64 << 10, cfg);
        assert_eq!(log.config().strict_ordering, strict);
        let before = region.stats();
        for t in 1..=100u64 {
            log.submit(TxnId(t), &[ins(key_in(0, t), &[1; 40]), ins(key_in(1, t), &[2; 40])]).unwrap();
            if t % 10 == 0 {
                log.pump().unwrap();
            }
        }
        log.pump().unwrap();
        let fences = (region.stats() - before).fences;
        let stats = log.stats();
        assert_eq!(stats.fences, fences, "only the pipelines fence here");
        let r = reopen_parse(&region);
        assert_eq!((r.complete_txns, r.streams[0].uncommitted_inserts), (100, 0));
        (fences, stats)
    };
    let entries = 200;
    let (strict, strict_stats) = run(true);
    let (relaxed, relaxed_stats) = run(false);
    println!("insert-only, {entries} entries: strict {strict} fences, relaxed {relaxed} fences");
    assert!(strict >= entries, "strict ordering: at least one fence per entry ({strict})");
    assert_eq!(strict, 2 * entries, "a body fence and a tail fence per entry");
    assert_eq!((strict_stats.batches, strict_stats.update_tails), (entries, entries));
    assert!(relaxed * 4 < entries, "relaxed ordering shares fences: {relaxed}");
    assert_eq!(relaxed_stats.update_tails, 0);
}

/// Strict ordering: a crash between an insert entry's body fence and its
/// tail leaves it valid but uncommitted (not torn), and nothing after it is
/// written before its tail is persisted.
#[test]
fn strict_ordering_crash_between_body_and_tail_leaves_an_uncommitted_insert() {
    let cfg = DeclogConfig { strict_ordering: true, ..inline_cfg() };
    let (region, log) = sim_log(8192, cfg);
    log.commit(TxnId(1), &[ins(key_in(0, 1), b"one")]).unwrap();
    let t2 = log.submit(TxnId(2), &[ins(key_in(0, 2), b"two")]).unwrap();
    let t3 = log.submit(TxnId(3), &[ins(key_in(0, 3), b"three")]).unwrap();
    assert_eq!(log.step(0), StepOutcome::Progress, "T2's body");
    assert_eq!((t2.status(), log.stats().batches), (TicketStatus::Pending, 2));
    let image = region.as_sim().unwrap().persistent_image();
    assert_eq!(log.step(0), StepOutcome::Progress, "T2's tail, and no body with it");
    assert!(t2.is_durable() && !t3.is_durable());
    assert_eq!(log.stats().batches, 2, "T3's body waits for T2's tail");
    let crashed = Arc::new(Region::sim_from_image(image));
    let (log2, r) = DecLog::open_with_mode(crashed.clone(), BASE, FlushMode::Inline).unwrap();
    assert_eq!(r.txns().keys().copied().collect::<Vec<_>>(), vec![TxnId(1)]);
    assert_eq!((r.streams[0].uncommitted_inserts, r.streams[0].torn_batches), (1, 0));
    log2.commit(TxnId(4), &[ins(key_in(0, 4), b"four")]).unwrap();
    drop(log2);
    let again = crate::recovery::parse(&crashed, BASE).unwrap();
    assert_eq!(again.txns().keys().copied().collect::<Vec<_>>(), vec![TxnId(1), TxnId(4)]);
    log.pump().unwrap();
    assert!(t3.is_durable());
}

/// Without compression `truncate_to` takes any batch boundary in
/// `[head, end]`, moves all heads in one generation, and refuses the rest
/// without moving anything.
#[test]
fn truncate_to_moves_heads_to_batch_boundaries_only() {
    let (region, log) = sim_log(8192, inline_cfg());
    for t in 1..=3 {
        log.commit(TxnId(t), &[ins(key_in(0, t), &[t as u8; 100]), ins(key_in(1, t), b"x")]).unwrap();
    }
    let mid: Vec<u64> = log.stream_positions().iter().map(|p| p.1).collect();
    for t in 4..=6 {
        // 512-byte batches: mid + 256 is aligned but inside T4's batch.
        log.commit(TxnId(t), &[ins(key_in(0, t), &[t as u8; 300]), ins(key_in(1, t), b"y")]).unwrap();
    }
    let ends: Vec<u64> = log.stream_positions().iter().map(|p| p.1).collect();
    for bad in
        [vec![mid[0]], vec![mid[0] + 8, mid[1]], vec![ends[0] + 256, mid[1]], vec![mid[0] + 256, mid[1]]]
    {
        let err = log.truncate_to(&bad).unwrap_err();
        assert!(matches!(err, DeclogError::InvalidInput(_)), "{bad:?}: {err}");
    }
    assert_eq!(reopen_parse(&region).generation, 0, "refusals move nothing");
    log.truncate_to(&mid).unwrap();
    assert_eq!(log.stream_positions().iter().map(|p| p.0).collect::<Vec<_>>(), mid);
    let r = reopen_parse(&region);
    assert_eq!(r.generation, 1);
    assert_eq!(r.txns().keys().map(|t| t.0).collect::<Vec<_>>(), vec![4, 5, 6]);
    assert!(log.truncate_to(&[0, 0]).is_err(), "heads never move back");
    log.truncate_to(&[ends[0], mid[1]]).unwrap();
    let r = reopen_parse(&region);
    assert_eq!(r.streams.iter().map(|s| s.head).collect::<Vec<_>>(), vec![ends[0], mid[1]]);
    assert!(r.txns().is_empty(), "every transaction lost its stream-0 entry");
}
