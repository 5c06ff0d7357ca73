//! Property test without crashes: whatever is committed (or submitted and
//! then drained) is recovered, exactly, across random mixes of insert and
//! update transactions, partial pipeline steps, truncations (all streams, or
//! to the last checkpoint cut), cuts and reopens, for both alignments,
//! several stream/queue geometries, and with log compression (point
//! payloads) on and off. A reference model holds the transactions since the
//! last truncation.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use strata_declog::compress::point_payload;
use strata_declog::{DecLog, DeclogConfig, EntryIn, FlushMode, Recovered, TxnId};
use strata_pmem::{Region, RegionOffset};

#[derive(Clone, Debug)]
enum Op {
    /// (key hash, payload length) per entry; update transactions get the next LSN.
    Commit {
        entries: Vec<(u64, usize)>,
        update: bool,
        wait: bool,
    },
    Step(usize),
    Truncate,
    Reopen,
    /// `DecLog::cut`.
    Cut,
    /// `DecLog::truncate_to` the last cut.
    TruncateToCut,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (prop::collection::vec((0u64..64, 0usize..120), 1..5), any::<bool>(), any::<bool>())
            .prop_map(|(entries, update, wait)| Op::Commit { entries, update, wait }),
        2 => (0usize..3).prop_map(Op::Step),
        1 => Just(Op::Truncate),
        1 => Just(Op::Reopen),
        1 => Just(Op::Cut),
        1 => Just(Op::TruncateToCut),
    ]
}

type Model = BTreeMap<TxnId, (u32, Vec<(u64, Vec<u8>)>)>;

fn check(recovered: &Recovered, model: &Model) -> Result<(), TestCaseError> {
    let got: Model = recovered
        .txns()
        .into_iter()
        .map(|(t, es)| (t, (es[0].lsn, es.iter().map(|e| (e.key_hash, e.payload.clone())).collect())))
        .collect();
    prop_assert_eq!(&got, model);
    prop_assert!(recovered.discarded_txns.is_empty());
    for (lsn, bucket) in &recovered.updates {
        prop_assert!(*lsn > 0 && bucket.iter().all(|e| e.lsn == *lsn));
    }
    prop_assert!(recovered.inserts.iter().all(|e| e.lsn == 0));
    Ok(())
}

/// The payload of entry `k` of `txn`: with compression a point payload of
/// one of a few series keys, else opaque bytes.
fn entry_payload(compression: bool, k: u64, len: usize, txn: TxnId) -> Vec<u8> {
    let bytes: Vec<u8> = (0..len).map(|i| (i as u64 ^ txn.0) as u8).collect();
    if compression {
        let key = format!("m,host=h{} f", k % 5);
        point_payload::encode(
            key.as_bytes(),
            txn.0 as i64 * 10,
            (len as f64 / 8.0).to_bits(),
            &bytes[..len / 3],
        )
    } else {
        bytes
    }
}

fn run(
    ops: Vec<Op>,
    threads: usize,
    queue_len: usize,
    align_bytes: u64,
    compression: bool,
) -> Result<(Recovered, Model), TestCaseError> {
    let cfg = DeclogConfig {
        threads,
        queues_per_thread: 2,
        queue_len,
        align_bytes,
        flush_mode: FlushMode::Inline,
        compression,
        key_slots: 8,
        ..Default::default()
    };
    let bytes = DecLog::footprint_bytes_for(&cfg, 8192);
    let region = Arc::new(Region::sim(bytes));
    let base = RegionOffset(0);
    let mut log = DecLog::format(region.clone(), base, bytes, cfg).unwrap();
    let mut model = Model::new();
    // Transactions since the last cut: what a truncation to it keeps.
    let mut since_cut = Model::new();
    let mut next_txn = 1;
    let mut next_lsn = 1;
    for op in ops {
        match op {
            Op::Commit { entries, update, wait } => {
                let txn = TxnId(next_txn);
                next_txn += 1;
                let lsn = if update { next_lsn } else { 0 };
                next_lsn += update as u32;
                let payloads: Vec<(u64, Vec<u8>)> =
                    entries.iter().map(|&(k, len)| (k, entry_payload(compression, k, len, txn))).collect();
                let ins: Vec<EntryIn<'_>> = payloads
                    .iter()
                    .map(|(k, p)| EntryIn {
                        key_hash: *k,
                        lsn,
                        compressed: !compression && k % 2 == 0,
                        payload: p,
                    })
                    .collect();
                let used: u64 = log.stream_positions().iter().map(|(h, e)| e - h).max().unwrap();
                if used > 8192 / 2 {
                    // Stay clear of a full stream: checkpoint first.
                    log.truncate_all().unwrap();
                    model.clear();
                    since_cut.clear();
                }
                if wait {
                    log.commit(txn, &ins).unwrap();
                } else {
                    log.submit(txn, &ins).unwrap();
                }
                model.insert(txn, (lsn, payloads.clone()));
                since_cut.insert(txn, (lsn, payloads));
            }
            Op::Step(s) => {
                log.step(s % threads);
            }
            Op::Truncate => {
                log.truncate_all().unwrap();
                model.clear();
                since_cut.clear();
            }
            Op::Cut => {
                let cut = log.cut().unwrap();
                prop_assert_eq!(cut.ends, log.stream_positions().iter().map(|p| p.1).collect::<Vec<_>>());
                since_cut.clear();
            }
            Op::TruncateToCut => {
                // Refused when there is no cut or the heads are past it (then nothing moves).
                if let Some(cut) = log.last_cut() {
                    if log.truncate_to(&cut.ends).is_ok() {
                        model = since_cut.clone();
                    }
                }
            }
            Op::Reopen => {
                drop(log);
                let (l, recovered) = DecLog::open_with_mode(region.clone(), base, FlushMode::Inline).unwrap();
                check(&recovered, &model)?;
                log = l;
            }
        }
    }
    drop(log);
    Ok((strata_declog::parse(&region, base).unwrap(), model))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn committed_is_recovered_aligned(ops in prop::collection::vec(op(), 1..80), threads in 1usize..4, queue_len in 1usize..6) {
        let (recovered, model) = run(ops, threads, queue_len, 256, false)?;
        prop_assert_eq!(recovered.discarded_txns.len(), 0, "nothing committed is discarded");
        check(&recovered, &model)?;
    }

    #[test]
    fn committed_is_recovered_compressed(ops in prop::collection::vec(op(), 1..80), threads in 1usize..4, queue_len in 1usize..6) {
        let (recovered, model) = run(ops, threads, queue_len, 256, true)?;
        prop_assert_eq!(recovered.discarded_txns.len(), 0, "nothing committed is discarded");
        check(&recovered, &model)?;
    }

    #[test]
    fn committed_is_recovered_unaligned(ops in prop::collection::vec(op(), 1..80), threads in 1usize..4, queue_len in 1usize..6) {
        let (recovered, model) = run(ops, threads, queue_len, 8, false)?;
        prop_assert_eq!(recovered.discarded_txns.len(), 0, "nothing committed is discarded");
        check(&recovered, &model)?;
    }
}
