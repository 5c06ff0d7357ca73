//! Tests of [`crate::DecLog::hold_flush`]: while a producer holds the flush,
//! the logging threads leave the open queues open, so several transactions
//! queued one after the other share one batch (and one fence) per stream;
//! dropping the hold flushes them; a queue that fills still closes.

use std::sync::Arc;
use std::time::Duration;

use strata_media::TxnId;
use strata_pmem::{Region, RegionOffset};

use crate::config::DeclogConfig;
use crate::entry::{EntryIn, EntryOwned};
use crate::layout::Layout;
use crate::ticket::TicketStatus;
use crate::DecLog;

const BASE: RegionOffset = RegionOffset(0);

/// Two streams with logging threads; opaque payloads (no compression).
fn threaded_log(queue_len: usize) -> (Arc<Region>, DecLog) {
    let cfg = DeclogConfig { threads: 2, queue_len, compression: false, ..Default::default() };
    let bytes = Layout::footprint_bytes(2, 256 << 10);
    let region = Arc::new(Region::sim(bytes));
    let log = DecLog::format(region.clone(), BASE, bytes, cfg).unwrap();
    (region, log)
}

/// One insert-only transaction with an entry in each of the 2 streams.
fn two_stream_txn(txn: u64) -> Vec<EntryOwned> {
    (0..2u64)
        .map(|s| EntryOwned {
            key_hash: txn * 2 + s,
            lsn: 0,
            compressed: false,
            payload: txn.to_le_bytes().to_vec(),
        })
        .collect()
}

#[test]
fn held_transactions_wait_for_the_hold_and_then_share_one_batch_per_stream() {
    let (region, log) = threaded_log(300);
    let fences_before = region.stats().fences;
    let batches_before = log.stats().batches;
    let hold = log.hold_flush();
    let tickets: Vec<_> =
        (1..=8u64).map(|t| log.submit_owned(TxnId(t), two_stream_txn(t)).unwrap()).collect();
    // Give the logging threads every chance to flush early (they must not).
    std::thread::sleep(Duration::from_millis(50));
    for t in &tickets {
        assert_eq!(
            t.status(),
            TicketStatus::Pending,
            "txn {:?} was flushed while the flush was held",
            t.txn()
        );
    }
    assert_eq!(log.stats().batches, batches_before, "no batch is written while held");
    drop(hold);
    for t in &tickets {
        t.wait().unwrap();
    }
    let batches = log.stats().batches - batches_before;
    assert_eq!(batches, 2, "8 held transactions over 2 streams: one batch per stream");
    let fences = region.stats().fences - fences_before;
    assert!(fences <= 2, "one fence per stream's batch, got {fences}");
    let r = {
        let image = region.as_sim().unwrap().persistent_image();
        DecLog::open(Arc::new(Region::sim_from_image(image)), BASE).unwrap().1
    };
    assert_eq!(r.complete_txns, 8, "every acknowledged transaction is recovered");
}

#[test]
fn a_queue_that_fills_is_flushed_even_while_held() {
    // Queues of 4 entries: the 5th entry of a stream closes the first queue.
    let (_region, log) = threaded_log(4);
    let hold = log.hold_flush();
    let first: Vec<_> = (1..=4u64).map(|t| log.submit_owned(TxnId(t), two_stream_txn(t)).unwrap()).collect();
    // The full queues closed: their transactions become durable despite the hold.
    for t in &first {
        t.wait().unwrap();
    }
    let last = log.submit_owned(TxnId(5), two_stream_txn(5)).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(last.status(), TicketStatus::Pending, "the open queue stays open while held");
    drop(hold);
    last.wait().unwrap();
}

#[test]
fn nested_holds_flush_when_the_last_one_drops() {
    let (_region, log) = threaded_log(300);
    let a = log.hold_flush();
    let b = log.hold_flush();
    let ticket = log.submit_owned(TxnId(1), two_stream_txn(1)).unwrap();
    drop(a);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(ticket.status(), TicketStatus::Pending, "another hold is still alive");
    drop(b);
    ticket.wait().unwrap();
}

#[test]
fn submit_owned_rejects_what_submit_rejects_and_logs_the_same() {
    let (region, log) = threaded_log(300);
    let mixed = vec![
        EntryOwned { key_hash: 0, lsn: 0, compressed: false, payload: b"a".to_vec() },
        EntryOwned { key_hash: 1, lsn: 1, compressed: false, payload: b"b".to_vec() },
    ];
    assert!(log.submit_owned(TxnId(1), mixed).is_err(), "entries of one transaction share its LSN");
    log.submit_owned(TxnId(2), two_stream_txn(2)).unwrap().wait().unwrap();
    let borrowed = two_stream_txn(3);
    let entries: Vec<EntryIn<'_>> = borrowed.iter().map(EntryOwned::as_entry_in).collect();
    log.submit(TxnId(3), &entries).unwrap().wait().unwrap();
    let image = region.as_sim().unwrap().persistent_image();
    let r = DecLog::open(Arc::new(Region::sim_from_image(image)), BASE).unwrap().1;
    assert_eq!(r.complete_txns, 2, "the rejected transaction left nothing");
}
