//! Recovery (taurus.txt 3.3): each log is decoded up to its end (`ELV`),
//! the records that committed before the crash are kept, and worker threads
//! apply them in an order that respects every LV (Algorithms 3 and 4).
//!
//! Kept records: Algorithm 3 keeps a log's records while `T.LV ≤ ELV`.
//! Strata commits a record only once its LV is at most the committed vector
//! (see `log`), so the records that committed form a prefix of each log
//! whose LVs point inside those prefixes. The kept prefixes are computed as
//! a fixed point: `ELV[i]` starts at the end of log i's valid records, each
//! log keeps records while `T.LV ≤ ELV`, `ELV[i]` becomes the end of what
//! log i kept, until nothing changes. Every committed record survives
//! (its LV is below the committed ends, which never exceed the kept ones).
//!
//! Serial logging's records carry no LV: each waits for every record
//! before it in the (one) log, so they replay one at a time in log order.
//!
//! Replay: one pool per log; a worker takes a record with `T.LV ≤ RLV`
//! from the first few of any pool, applies it, and moves `RLV[i]` to just
//! below the oldest record of log i still in the pool or being applied
//! (Algorithm 4; tracking records in progress keeps `RLV` from passing one
//! another worker is still applying). A record's LV copy holds its own
//! log's element as it was before its LSN was set, so within a log it
//! waits only for the records it depends on.

use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use strata_sync::{Condvar, Mutex};

use crate::error::TxnError;
use crate::lv::Lv;
use crate::record::{decode, DecodeError, Record};

/// Records a worker looks at in each pool for one that is ready.
const POOL_WINDOW: usize = 8;

/// One decoded log.
pub struct DecodedLog {
    /// (LSN = end position, record), in log order.
    pub records: Vec<(u64, Record)>,
    /// Where each record starts (an anchor may lie between two records).
    pub starts: Vec<u64>,
    /// End of the valid records.
    pub valid_end: u64,
    /// Why decoding stopped before the bytes' end, if it did (a torn or corrupt tail).
    pub stopped_by: Option<DecodeError>,
    /// Anchors read (Algorithm 5).
    pub anchors: u64,
}

/// Decodes `bytes` (a log from position 0) up to its first invalid record;
/// anchors update the LV that compressed records' left-out elements take,
/// and are not returned.
pub fn decode_log(bytes: &[u8]) -> DecodedLog {
    let mut records = Vec::new();
    let mut starts = Vec::new();
    let mut at = 0usize;
    let mut stopped_by = None;
    // The last anchor read (Algorithm 5): what left-out LV elements become.
    let mut anchor = Lv::ZERO;
    let mut anchors = 0;
    while at < bytes.len() {
        match decode(&bytes[at..], at as u64) {
            Ok(Some((mut rec, len))) => {
                let start = at as u64;
                at += len;
                if rec.anchor {
                    anchor = rec.lv;
                    anchors += 1;
                    continue;
                }
                rec.decompress(&anchor);
                records.push((at as u64, rec));
                starts.push(start);
            }
            Ok(None) => break,
            Err(e) => {
                stopped_by = Some(e);
                break;
            }
        }
    }
    DecodedLog { records, starts, valid_end: at as u64, stopped_by, anchors }
}

/// How many records of each log committed (the fixed point of the module
/// comment), and the kept end of each log: the valid end, or where its
/// first dropped record starts (anchors before it are kept: an anchor
/// commits when flushed, so a committed vector, and through an anchor a
/// later record's LV, may name its end).
pub fn committed_prefixes(logs: &[DecodedLog]) -> (Vec<usize>, Vec<u64>) {
    let mut ends: Vec<u64> = logs.iter().map(|l| l.valid_end).collect();
    let mut kept: Vec<usize> = logs.iter().map(|l| l.records.len()).collect();
    loop {
        let elv = Lv::from_slice(&ends);
        let mut changed = false;
        for (i, log) in logs.iter().enumerate() {
            let n = log.records[..kept[i]].iter().take_while(|(_, r)| r.lv.le(&elv)).count();
            if n != kept[i] {
                kept[i] = n;
                // Up to where the first dropped record starts: anchors
                // before it stay (a committed vector may name their end).
                ends[i] = log.starts[n];
                changed = true;
            }
        }
        if !changed {
            return (kept, ends);
        }
    }
}

/// What a replay did.
#[derive(Clone, Debug, Default)]
pub struct ReplayReport {
    pub transactions: u64,
    pub threads: usize,
    pub time: Duration,
}

struct Pools {
    pools: Vec<VecDeque<(u64, Record)>>,
    in_progress: Vec<BTreeSet<u64>>,
    /// Each log's kept end (at least its last record's LSN).
    max_lsn: Vec<u64>,
    rlv: Lv,
    left: usize,
}

impl Pools {
    /// Algorithm 4, lines 4-7: every record of log `i` below the oldest one
    /// still pooled or in progress is recovered.
    fn advance(&mut self, i: usize) {
        let oldest = self.pools[i]
            .front()
            .map(|(l, _)| *l)
            .into_iter()
            .chain(self.in_progress[i].first().copied())
            .min();
        // LSNs are end positions: `lsn - 1` is below the oldest one and at
        // or above every LSN before it.
        let recovered = match oldest {
            Some(lsn) => lsn - 1,
            None => self.max_lsn[i],
        };
        if recovered > self.rlv.get(i) {
            self.rlv.set(i, recovered);
        }
    }

    fn take_ready(&mut self, start: usize) -> Option<(usize, u64, Record)> {
        let n = self.pools.len();
        for k in 0..n {
            let i = (start + k) % n;
            let rlv = self.rlv;
            // A record without an LV (serial logging) depends on everything
            // before it: it goes alone, from the head (serial recovery).
            let serial_busy = !self.in_progress[i].is_empty();
            let ready = |(k, (_, r)): (usize, &(u64, Record))| {
                if r.lv_len == 0 {
                    k == 0 && !serial_busy
                } else {
                    r.lv.le(&rlv)
                }
            };
            if let Some(pos) = self.pools[i].iter().take(POOL_WINDOW).enumerate().position(ready) {
                let (lsn, rec) = self.pools[i].remove(pos).expect("found");
                self.in_progress[i].insert(lsn);
                return Some((i, lsn, rec));
            }
        }
        None
    }
}

/// Applies the records of each log (already cut to what committed) with
/// `threads` workers, each record once every record its LV names was
/// applied. `apply` must be callable from several threads.
pub fn replay(
    logs: Vec<Vec<(u64, Record)>>,
    ends: &[u64],
    threads: usize,
    apply: &(dyn Fn(&Record) -> Result<(), TxnError> + Sync),
) -> Result<ReplayReport, TxnError> {
    let started = Instant::now();
    let total: usize = logs.iter().map(Vec::len).sum();
    // A drained log is recovered up to its kept end (trailing anchors included).
    assert_eq!(ends.len(), logs.len(), "a kept end per log");
    let max_lsn = logs.iter().zip(ends).map(|(l, e)| l.last().map_or(0, |(lsn, _)| *lsn).max(*e)).collect();
    let n = logs.len();
    let state = Mutex::new(Pools {
        pools: logs.into_iter().map(VecDeque::from).collect(),
        in_progress: vec![BTreeSet::new(); n],
        max_lsn,
        rlv: Lv::ZERO,
        left: total,
    });
    for i in 0..n {
        state.lock().advance(i);
    }
    let changed = Condvar::new();
    let failed: Mutex<Option<TxnError>> = Mutex::new(None);
    let threads = threads.max(1);
    strata_sync::thread::scope(|s| {
        for w in 0..threads {
            let (state, changed, failed) = (&state, &changed, &failed);
            s.spawn(move || loop {
                let next = {
                    let mut st = state.lock();
                    loop {
                        if st.left == 0 {
                            return;
                        }
                        if let Some(t) = st.take_ready(w) {
                            break t;
                        }
                        let in_progress: usize = st.in_progress.iter().map(BTreeSet::len).sum();
                        assert!(
                            in_progress > 0,
                            "replay stuck: no record is ready and none is being applied"
                        );
                        changed.wait(&mut st);
                    }
                };
                let (i, lsn, rec) = next;
                if let Err(e) = apply(&rec) {
                    failed.lock().get_or_insert(e);
                }
                let mut st = state.lock();
                st.in_progress[i].remove(&lsn);
                st.left -= 1;
                st.advance(i);
                changed.notify_all();
            });
        }
    });
    if let Some(e) = failed.into_inner() {
        return Err(e);
    }
    Ok(ReplayReport { transactions: total as u64, threads, time: started.elapsed() })
}

/// How much parallelism the logs allow recovery (issue 16): transactions
/// over the longest chain of the order replay enforces.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parallelism {
    pub transactions: u64,
    /// Longest chain where T follows every record of log j with an LSN at
    /// most `T.LV[j]` (serial records: every record before them).
    pub lv_chain: u64,
    /// Longest chain of true conflicts only: data records writing a row
    /// after one that wrote it (WAW, all data replay needs). `None` when
    /// the logs hold commands, whose read sets the log does not show.
    pub true_chain: Option<u64>,
}

impl Parallelism {
    /// Transactions over the LV chain: the speed-up unlimited threads could reach.
    pub fn lv_ratio(&self) -> f64 {
        self.transactions as f64 / self.lv_chain.max(1) as f64
    }

    pub fn true_ratio(&self) -> Option<f64> {
        self.true_chain.map(|c| self.transactions as f64 / c.max(1) as f64)
    }
}

/// [`Parallelism`] of committed logs (each in log order).
pub fn parallelism(logs: &[Vec<(u64, Record)>]) -> Parallelism {
    let n = logs.len();
    // Per log: LSNs and the running maximum of depths, in log order.
    let mut lsns: Vec<Vec<u64>> = vec![Vec::new(); n];
    let mut running: Vec<Vec<u64>> = vec![Vec::new(); n];
    let mut next = vec![0usize; n];
    let mut last_writer: std::collections::HashMap<(u32, u64), u64> = std::collections::HashMap::new();
    let mut out = Parallelism { true_chain: Some(0), ..Default::default() };
    let prefix_max = |lsns: &[u64], running: &[u64], upto: u64| -> u64 {
        let k = lsns.partition_point(|l| *l <= upto);
        if k == 0 {
            0
        } else {
            running[k - 1]
        }
    };
    loop {
        let mut progressed = false;
        for i in 0..n {
            while let Some((lsn, rec)) = logs[i].get(next[i]) {
                let ready = rec.lv_len == 0
                    || (0..n).all(|j| {
                        lsns[j].last().copied().unwrap_or(0) >= rec.lv.get(j)
                            || logs[j].get(next[j]).is_none_or(|(l, _)| *l > rec.lv.get(j))
                    });
                if !ready {
                    break;
                }
                let deps = if rec.lv_len == 0 {
                    running[i].last().copied().unwrap_or(0)
                } else {
                    (0..n).map(|j| prefix_max(&lsns[j], &running[j], rec.lv.get(j))).max().unwrap_or(0)
                };
                let depth = deps + 1;
                let true_depth = 1 + rec
                    .writes
                    .iter()
                    .map(|w| last_writer.get(&(w.table.0, w.key.0)).copied().unwrap_or(0))
                    .max()
                    .unwrap_or(0);
                for w in &rec.writes {
                    last_writer.insert((w.table.0, w.key.0), true_depth);
                }
                if rec.command.is_some() {
                    out.true_chain = None;
                }
                if let Some(t) = &mut out.true_chain {
                    *t = (*t).max(true_depth);
                }
                out.lv_chain = out.lv_chain.max(depth);
                out.transactions += 1;
                let best = running[i].last().copied().unwrap_or(0).max(depth);
                lsns[i].push(*lsn);
                running[i].push(best);
                next[i] += 1;
                progressed = true;
            }
        }
        if !progressed {
            assert!((0..n).all(|i| next[i] == logs[i].len()), "committed logs whose LVs form a cycle");
            return out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{encode, RowWrite, WriteOp};
    use crate::{RowKey, TableId};

    fn rec(lv: &[u64], key: u64) -> Vec<u8> {
        let mut out = Vec::new();
        let w =
            RowWrite { table: TableId(0), key: RowKey(key), op: WriteOp::Put(key.to_le_bytes().to_vec()) };
        encode(&Lv::from_slice(lv), lv.len(), &[w], &mut out);
        out
    }

    #[test]
    fn a_record_depending_on_a_dropped_one_is_dropped_too() {
        // Log 0: A (no deps), B (depends on log 1 up to 10_000: never written).
        // Log 1: C depends on B (log 0 up to B's end).
        let a = rec(&[0, 0], 1);
        let b = rec(&[0, 10_000], 2);
        let log0 = [a.clone(), b.clone()].concat();
        let c = rec(&[(a.len() + b.len()) as u64, 0], 3);
        let logs = vec![decode_log(&log0), decode_log(&c)];
        let (kept, ends) = committed_prefixes(&logs);
        assert_eq!(kept, vec![1, 0]);
        assert_eq!(ends, vec![a.len() as u64, 0]);
    }

    #[test]
    fn replay_respects_lvs_across_logs_with_several_threads() {
        // A chain across two logs: each record depends on the previous one.
        let mut logs: Vec<Vec<u8>> = vec![Vec::new(), Vec::new()];
        let mut last = [0u64, 0u64];
        for k in 0..200u64 {
            let i = (k % 2) as usize;
            let r = rec(&last, k);
            logs[i].extend_from_slice(&r);
            last[i] = logs[i].len() as u64;
        }
        let decoded: Vec<DecodedLog> = logs.iter().map(|l| decode_log(l)).collect();
        let (kept, _) = committed_prefixes(&decoded);
        assert_eq!(kept, vec![100, 100]);
        let order = Mutex::new(Vec::new());
        let apply = |r: &Record| {
            order.lock().push(r.writes[0].key.0);
            Ok(())
        };
        let ends: Vec<u64> = decoded.iter().map(|d| d.valid_end).collect();
        let report = replay(decoded.into_iter().map(|d| d.records).collect(), &ends, 4, &apply).unwrap();
        assert_eq!(report.transactions, 200);
        assert_eq!(*order.lock(), (0..200).collect::<Vec<_>>(), "a chain replays in order");
    }

    #[test]
    fn parallelism_counts_the_longest_lv_chain_and_the_true_one() {
        // Two logs of independent records (LV zero): all parallel.
        let mut a = Vec::new();
        let mut b = Vec::new();
        for k in 0..10u64 {
            a.extend_from_slice(&rec(&[0, 0], k));
            b.extend_from_slice(&rec(&[0, 0], 100 + k));
        }
        let logs: Vec<_> = [a, b].iter().map(|l| decode_log(l).records).collect();
        let p = parallelism(&logs);
        assert_eq!((p.transactions, p.lv_chain, p.true_chain), (20, 1, Some(1)));
        assert_eq!(p.lv_ratio(), 20.0);
        // The chain of the replay test: 200 records, each after the one before.
        let mut logs: Vec<Vec<u8>> = vec![Vec::new(), Vec::new()];
        let mut last = [0u64, 0u64];
        for k in 0..200u64 {
            let i = (k % 2) as usize;
            // Keys differ: the chain is all LV, no true conflict.
            logs[i].extend_from_slice(&rec(&last, k));
            last[i] = logs[i].len() as u64;
        }
        let logs: Vec<_> = logs.iter().map(|l| decode_log(l).records).collect();
        let p = parallelism(&logs);
        assert_eq!((p.transactions, p.lv_chain, p.true_chain), (200, 200, Some(1)));
    }
}
