//! Crash test of DecLog on the PMem simulator (DESIGN.md section 3), an
//! implementation of [`PmemCrashProtocol`].
//!
//! The workload is a tiny engine on one worker thread, deterministic for a
//! seed. Keys are data points; an insert-only transaction inserts 1-3 new
//! keys (LSN 0); an update transaction updates 1-2 visible keys with the
//! data-driven LSN max(uts) + 1 (section 4.1) and sets their uts, and depends
//! on the last writer of each key. Following the engine contract of
//! [`DecLog`], inserted keys become visible once their transaction is
//! acknowledged, updated keys at once (early lock release), so updates queue
//! behind unacknowledged updates, in both streams.
//!
//! With `compression` (the default) every entry's payload is a point payload
//! of one of `series` series keys (so each key recurs and compresses), and
//! DecLog compresses it; the oracle compares the point payloads parsing
//! returns with those submitted.
//!
//! DecLog runs in [`FlushMode::Inline`]: the logging threads' pipeline steps
//! run on the worker, and after each submit the worker runs 0-2 steps of
//! seeded random streams, so batches, blocked update tails, snapshot waits
//! and out-of-order acknowledgements occur in a reproducible order. A
//! transaction is acknowledged when its ticket says durable. Every
//! `checkpoint_every` transactions the worker drains the log and checkpoints,
//! alternating two ways: odd checkpoints [`DecLog::cut`] the log, reset every
//! uts to 0 (rule 5) and go on; `cut_lag` transactions later (the engine
//! flushing its data meanwhile) they persist the checkpoint word (every
//! transaction up to the cut is covered) and [`DecLog::truncate_to`] the cut,
//! with the transactions since still in flight. Even checkpoints persist the
//! checkpoint word, truncate all streams and reset every uts. Half-way, at
//! the first transaction with a cut pending, the worker drops and reopens the
//! log (a clean restart), so one `truncate_to` relies on the cut record.
//! Streams are small, so rings wrap.
//!
//! Recovery opens the log (parse, seal, new epoch). Transactions up to the
//! checkpoint word count as present with their known contents (a stand-in for
//! checkpointed data); later ones are the complete transactions parsed (with
//! a crash between a cut and its truncation, parsing passes the cut). The
//! oracle then checks: every acknowledged transaction present, none partial
//! (contents equal what was written), and every present update transaction's
//! dependencies present (order violations).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::oracle::{AckLog, TxnOracle};
use crate::pmem_harness::PmemCrashProtocol;
use crate::workload::SplitMix64;
use parking_lot::RwLock;
use strata_media::TxnId;
use strata_pmem::{Region, RegionOffset};

use crate::error::{CheckResult, CrashCheckError};
use strata_declog::compress::point_payload;
use strata_declog::layout::{Layout, DECLOG_MAGIC};
use strata_declog::{
    CutPoint, DecLog, DeclogConfig, DeclogStats, EntryIn, FlushMode, RecoveredEntry, Ticket, TicketStatus,
};

const CHECKPOINT_WORD: RegionOffset = RegionOffset(0);
const LOG_BASE: RegionOffset = RegionOffset(256);
/// Updates pick mostly among the first few visible keys.
const HOT_KEYS: usize = 6;

/// The key hash of workload key `key`.
pub fn key_hash(key: u64) -> u64 {
    SplitMix64::new(key ^ 0x6B65_795F_6861_7368).next_u64()
}

/// The series key of workload key (data point) `key`.
fn series_key(key: u64, series: u64) -> Vec<u8> {
    format!("cpu,host=h{:02},region=eu usage_user", key % series.max(1)).into_bytes()
}

/// The payload of one entry for data point `key`: a point payload with a
/// smooth value and 0-`max_len`/3 random rest bytes, or with
/// `compression` off up to `max_len` random bytes.
fn entry_payload(rng: &mut SplitMix64, key: u64, proto: &DeclogPmemCrash) -> Vec<u8> {
    if !proto.compression {
        return payload(rng, proto.max_payload_bytes);
    }
    let value = 20.0 + rng.below(16) as f64 * 0.25;
    let rest = payload(rng, proto.max_payload_bytes / 3);
    point_payload::encode(&series_key(key, proto.series), key as i64 * 10_000, value.to_bits(), &rest)
}

/// The oracle's view of a transaction's content: its entries in order.
pub fn txn_content(entries: &[(u64, u32, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (key_hash, lsn, payload) in entries {
        out.extend_from_slice(&key_hash.to_le_bytes());
        out.extend_from_slice(&lsn.to_le_bytes());
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend_from_slice(payload);
    }
    out
}

fn recovered_content(entries: &[&RecoveredEntry]) -> Vec<u8> {
    let v: Vec<(u64, u32, Vec<u8>)> =
        entries.iter().map(|e| (e.key_hash, e.lsn, e.payload.clone())).collect();
    txn_content(&v)
}

/// What the run recorded for the checks.
#[derive(Default)]
struct RunRecord {
    oracle: TxnOracle,
    contents: BTreeMap<TxnId, Vec<u8>>,
    stats: DeclogStats,
    /// Transactions acknowledged before a transaction submitted earlier.
    out_of_order_acks: u64,
    update_txns: u64,
    /// The furthest stream position written (past the capacity: the ring wrapped).
    max_stream_end: u64,
    /// Cuts taken and truncations to them.
    cuts: u64,
    truncations_to_cut: u64,
    /// Whether the mid-run restart happened between a cut and its truncation.
    restarted_with_cut_pending: bool,
}

/// DecLog on the simulator with a seeded insert/update workload.
pub struct DeclogPmemCrash {
    pub seed: u64,
    pub txns: u64,
    /// Drain, checkpoint and truncate every this many transactions (0: never).
    pub checkpoint_every: u64,
    /// Percent of transactions that update (when some key is visible).
    pub update_percent: u64,
    pub max_payload_bytes: u64,
    pub threads: usize,
    pub queues_per_thread: usize,
    pub queue_len: usize,
    pub align_bytes: u64,
    pub stream_bytes: u64,
    /// DecLog's log compression (point payloads).
    pub compression: bool,
    /// Series keys the data points belong to (with compression).
    pub series: u64,
    /// Key table slots per stream (with compression).
    pub key_slots: u32,
    /// Transactions between a cut and its `truncate_to`.
    pub cut_lag: u64,
    record: RwLock<RunRecord>,
}

impl DeclogPmemCrash {
    pub fn new(seed: u64, txns: u64) -> Self {
        DeclogPmemCrash {
            seed,
            txns,
            checkpoint_every: 25,
            update_percent: 45,
            max_payload_bytes: 60,
            threads: 2,
            queues_per_thread: 2,
            queue_len: 4,
            align_bytes: 256,
            stream_bytes: 16384,
            compression: true,
            series: 12,
            key_slots: 16,
            cut_lag: 12,
            record: RwLock::new(RunRecord::default()),
        }
    }

    fn config(&self) -> DeclogConfig {
        DeclogConfig {
            threads: self.threads,
            queues_per_thread: self.queues_per_thread,
            queue_len: self.queue_len,
            align_bytes: self.align_bytes,
            flush_mode: FlushMode::Inline,
            compression: self.compression,
            key_slots: self.key_slots,
            strict_ordering: false,
        }
    }

    fn area_bytes(&self) -> u64 {
        Layout::footprint_bytes_for(&self.config(), self.stream_bytes)
    }

    /// DecLog's counters of the last run.
    pub fn run_stats(&self) -> DeclogStats {
        self.record.read().stats
    }

    /// Acknowledgements that overtook an earlier-submitted transaction in the last run.
    pub fn out_of_order_acks(&self) -> u64 {
        self.record.read().out_of_order_acks
    }

    /// The furthest stream position the last run wrote.
    pub fn max_stream_end(&self) -> u64 {
        self.record.read().max_stream_end
    }

    pub fn update_txns(&self) -> u64 {
        self.record.read().update_txns
    }

    /// (cuts taken, truncations to a cut, whether the restart fell between
    /// a cut and its truncation) in the last run.
    pub fn cut_counts(&self) -> (u64, u64, bool) {
        let r = self.record.read();
        (r.cuts, r.truncations_to_cut, r.restarted_with_cut_pending)
    }
}

/// A key the workload may update.
#[derive(Clone, Copy)]
struct KeyState {
    uts: u32,
    last_writer: TxnId,
}

struct Workload<'a> {
    rng: SplitMix64,
    acks: &'a AckLog,
    keys: BTreeMap<u64, KeyState>,
    next_key: u64,
    /// Submitted, not yet acknowledged: ticket and, for inserts, the keys to reveal.
    pending: Vec<(Ticket, Vec<u64>)>,
    out_of_order_acks: u64,
}

impl Workload<'_> {
    /// Acknowledges every durable pending transaction.
    fn poll(&mut self) {
        let mut i = 0;
        let mut first_pending_seen = false;
        while i < self.pending.len() {
            match self.pending[i].0.status() {
                TicketStatus::Durable => {
                    let (t, keys) = self.pending.remove(i);
                    self.acks.ack(t.txn());
                    if first_pending_seen {
                        self.out_of_order_acks += 1;
                    }
                    for k in keys {
                        self.keys.insert(k, KeyState { uts: 0, last_writer: t.txn() });
                    }
                }
                TicketStatus::Pending => {
                    first_pending_seen = true;
                    i += 1;
                }
                TicketStatus::Failed(why) => panic!("{} failed: {why}", self.pending[i].0.txn()),
            }
        }
    }
}

impl PmemCrashProtocol for DeclogPmemCrash {
    fn name(&self) -> String {
        format!("declog-align{}", self.align_bytes)
    }

    fn region_len(&self) -> u64 {
        LOG_BASE.0 + self.area_bytes()
    }

    fn run(&self, region: &Arc<Region>, acks: &AckLog) {
        let seed = self.seed;
        let mut log =
            DecLog::format(region.clone(), LOG_BASE, self.area_bytes(), self.config()).expect("format");
        let mut oracle = TxnOracle::new();
        let mut contents = BTreeMap::new();
        let mut w = Workload {
            rng: SplitMix64::new(seed),
            acks,
            keys: BTreeMap::new(),
            next_key: 1,
            pending: Vec::new(),
            out_of_order_acks: 0,
        };
        let mut stats = DeclogStats::default();
        let mut update_txns = 0;
        let mut favoured = 0usize;
        // A cut waiting for its truncation: the transaction it covers up to, and where it cut.
        let mut pending_cut: Option<(u64, CutPoint)> = None;
        let mut restarted = false;
        let (mut cuts, mut truncations_to_cut, mut restarted_with_cut_pending) = (0, 0, false);
        for t in 1..=self.txns {
            let txn = TxnId(t);
            let half = self.txns / 2;
            if !restarted && t >= half && (pending_cut.is_some() || t >= half + 2 * self.checkpoint_every) {
                restarted = true;
                restarted_with_cut_pending = pending_cut.is_some();
                log.pump().expect("drain before restart");
                w.poll();
                stats = add_stats(stats, log.stats());
                drop(log);
                log = DecLog::open_with_mode(region.clone(), LOG_BASE, FlushMode::Inline).expect("reopen").0;
            }
            if let Some((covered, cut)) = pending_cut.take_if(|(covered, _)| t == *covered + self.cut_lag) {
                // The engine's checkpoint of everything up to the cut is done.
                region.store_u64_persist(CHECKPOINT_WORD, covered);
                log.truncate_to(&cut.ends)
                    .unwrap_or_else(|e| panic!("seed {seed}: truncate_to at T{t}: {e}"));
                truncations_to_cut += 1;
            }
            let update = !w.keys.is_empty() && w.rng.below(100) < self.update_percent;
            let mut entries: Vec<(u64, u32, Vec<u8>)> = Vec::new();
            let mut deps = Vec::new();
            let mut reveal = Vec::new();
            if update {
                update_txns += 1;
                // Mostly a few hot keys, so updates chain (LSN 1, 2, 3, ...)
                // and a transaction's keys often lie in different streams.
                let visible: Vec<u64> = w.keys.keys().copied().collect();
                let pick = |rng: &mut SplitMix64| {
                    let hot = visible.len().min(HOT_KEYS) as u64;
                    let n = if rng.below(100) < 75 { hot } else { visible.len() as u64 };
                    visible[rng.below(n) as usize]
                };
                let mut chosen = vec![pick(&mut w.rng)];
                if w.rng.below(100) < 60 {
                    let k = pick(&mut w.rng);
                    if k != chosen[0] {
                        chosen.push(k);
                    }
                }
                let lsn = chosen.iter().map(|k| w.keys[k].uts).max().expect("one key") + 1;
                for &k in &chosen {
                    let state = w.keys.get_mut(&k).expect("visible");
                    if !deps.contains(&state.last_writer) {
                        deps.push(state.last_writer);
                    }
                    *state = KeyState { uts: lsn, last_writer: txn };
                    entries.push((key_hash(k), lsn, entry_payload(&mut w.rng, k, self)));
                }
            } else {
                for _ in 0..=w.rng.below(3) {
                    let k = w.next_key;
                    w.next_key += 1;
                    reveal.push(k);
                    entries.push((key_hash(k), 0, entry_payload(&mut w.rng, k, self)));
                }
            }
            oracle.attempt(txn, txn_content(&entries), deps);
            contents.insert(txn, txn_content(&entries));
            let ins: Vec<EntryIn<'_>> = entries
                .iter()
                .map(|(h, lsn, p)| EntryIn {
                    key_hash: *h,
                    lsn: *lsn,
                    compressed: !self.compression && p.len() % 3 == 0,
                    payload: p,
                })
                .collect();
            let ticket = log.submit(txn, &ins).unwrap_or_else(|e| panic!("seed {seed}: submit T{t}: {e}"));
            w.pending.push((ticket, reveal));
            w.poll();
            // Mostly step one favoured stream, which changes now and then,
            // so the other lags and its pending updates hold later ones back.
            if w.rng.below(8) == 0 {
                favoured = w.rng.below(self.threads as u64) as usize;
            }
            for _ in 0..w.rng.below(4) {
                let s =
                    if w.rng.below(100) < 80 { favoured } else { w.rng.below(self.threads as u64) as usize };
                log.step(s);
                w.poll();
            }
            if self.checkpoint_every > 0 && t % self.checkpoint_every == 0 && pending_cut.is_none() {
                log.pump().expect("drain before checkpoint");
                w.poll();
                assert!(w.pending.is_empty(), "seed {seed}: drained log left pending transactions");
                if (t / self.checkpoint_every) % 2 == 1 {
                    let cut = log.cut().unwrap_or_else(|e| panic!("seed {seed}: cut at T{t}: {e}"));
                    pending_cut = Some((t, cut));
                    cuts += 1;
                } else {
                    region.store_u64_persist(CHECKPOINT_WORD, t);
                    log.truncate_all().expect("truncate");
                }
                for k in w.keys.values_mut() {
                    k.uts = 0;
                }
            }
        }
        log.pump().expect("final drain");
        w.poll();
        assert!(w.pending.is_empty(), "seed {seed}: transactions left unacknowledged");
        stats = add_stats(stats, log.stats());
        let max_stream_end = log.stream_positions().iter().map(|p| p.1).max().unwrap_or(0);
        drop(log);
        *self.record.write() = RunRecord {
            oracle,
            contents,
            stats,
            out_of_order_acks: w.out_of_order_acks,
            update_txns,
            max_stream_end,
            cuts,
            truncations_to_cut,
            restarted_with_cut_pending,
        };
    }

    fn recover_and_check(&self, region: &Arc<Region>, acked: &BTreeSet<TxnId>) -> CheckResult {
        let checkpointed = region.load_u64(CHECKPOINT_WORD);
        let record = self.record.read();
        // The checkpoint stands for the data of every transaction it covers.
        let mut found: BTreeMap<TxnId, Vec<u8>> = (1..=checkpointed.min(self.txns))
            .map(|t| (TxnId(t), record.contents.get(&TxnId(t)).cloned().unwrap_or_default()))
            .collect();
        let recovered = match DecLog::open_with_mode(region.clone(), LOG_BASE, FlushMode::Inline) {
            Ok((log, r)) => {
                resume_and_reparse(log, region, &r, self.compression)?;
                r
            }
            // Formatting persists the magic last: without it there is no log
            // and nothing was acknowledged.
            Err(_) if region.load_u64(LOG_BASE) != DECLOG_MAGIC => Default::default(),
            Err(e) => return Err(CrashCheckError::step("parse")(e)),
        };
        for (lsn, bucket) in &recovered.updates {
            if let Some(e) = bucket.iter().find(|e| e.lsn != *lsn) {
                return Err(CrashCheckError::inconsistent(format!(
                    "{} in LSN bucket {lsn} has LSN {}",
                    e.txn, e.lsn
                )));
            }
        }
        for (txn, entries) in recovered.txns() {
            if txn.0 > checkpointed && found.insert(txn, recovered_content(&entries)).is_some() {
                return Err(CrashCheckError::inconsistent(format!("{txn} recovered twice")));
            }
        }
        Ok(record.oracle.check(acked, &found))
    }
}

/// The restart after the crash goes on: two more transactions (one per
/// stream, above every id seen), then a second parse must find exactly what
/// the first found plus those two: sealing, the new epoch and resuming at
/// each stream's end keep earlier answers stable.
fn resume_and_reparse(
    log: DecLog,
    region: &Arc<Region>,
    first: &strata_declog::Recovered,
    compression: bool,
) -> Result<(), CrashCheckError> {
    let next = first.max_txn_id.map_or(1, |t| t.0 + 1) + 1_000_000;
    let mut expect =
        first.txns().into_iter().map(|(t, e)| (t, recovered_content(&e))).collect::<BTreeMap<_, _>>();
    for (i, t) in [next, next + 1].into_iter().enumerate() {
        let payload = if compression {
            point_payload::encode(&series_key(i as u64, 2), t as i64, 1.5f64.to_bits(), b"after restart")
        } else {
            b"after restart".to_vec()
        };
        let e = [EntryIn { key_hash: i as u64, lsn: 0, compressed: false, payload: &payload }];
        log.commit(TxnId(t), &e).map_err(CrashCheckError::step("commit after restart"))?;
        expect.insert(TxnId(t), txn_content(&[(i as u64, 0, payload)]));
    }
    drop(log);
    let second =
        strata_declog::recovery::parse(region, LOG_BASE).map_err(CrashCheckError::step("second parse"))?;
    let got: BTreeMap<_, _> = second.txns().into_iter().map(|(t, e)| (t, recovered_content(&e))).collect();
    if got != expect {
        let diff: Vec<_> = got
            .keys()
            .filter(|t| !expect.contains_key(t))
            .chain(expect.keys().filter(|t| !got.contains_key(t)))
            .collect();
        return Err(CrashCheckError::inconsistent(format!(
            "a second parse after resuming disagrees on {diff:?}"
        )));
    }
    Ok(())
}

fn payload(rng: &mut SplitMix64, max_len: u64) -> Vec<u8> {
    let len = rng.below(max_len + 1);
    (0..len).map(|_| rng.next_u64() as u8).collect()
}

fn add_stats(a: DeclogStats, b: DeclogStats) -> DeclogStats {
    DeclogStats {
        txns_submitted: a.txns_submitted + b.txns_submitted,
        entries: a.entries + b.entries,
        batches: a.batches + b.batches,
        wraps: a.wraps + b.wraps,
        update_tails: a.update_tails + b.update_tails,
        snapshot_waits: a.snapshot_waits + b.snapshot_waits,
        fences: a.fences + b.fences,
        batch_bytes: a.batch_bytes + b.batch_bytes,
        entry_bytes: a.entry_bytes + b.entry_bytes,
        payload_bytes_submitted: a.payload_bytes_submitted + b.payload_bytes_submitted,
        payload_bytes_logged: a.payload_bytes_logged + b.payload_bytes_logged,
        compressed_entries: a.compressed_entries + b.compressed_entries,
    }
}

#[cfg(test)]
mod run_tests {
    use super::*;

    /// One uncrashed run: compression is in use, cuts are taken and
    /// truncated to (one across the restart), and the final image passes the
    /// oracle with every transaction acknowledged.
    #[test]
    fn a_run_compresses_cuts_truncates_and_recovers_everything() {
        let proto = DeclogPmemCrash::new(5, 300);
        let region = Arc::new(Region::sim(proto.region_len()));
        let acks = AckLog::new(|| 0);
        proto.run(&region, &acks);
        let stats = proto.run_stats();
        assert_eq!(stats.compressed_entries, stats.entries, "{stats:?}");
        assert!(stats.payload_bytes_logged * 2 < stats.payload_bytes_submitted, "{stats:?}");
        assert_eq!(proto.cut_counts(), (6, 6, true));
        let acked: BTreeSet<TxnId> = (1..=300).map(TxnId).collect();
        let (counts, why) = proto.recover_and_check(&region, &acked).unwrap();
        assert_eq!((counts.lost, counts.partial, counts.order_violations), (0, 0, 0), "{why:?}");
    }
}

#[cfg(test)]
mod planted_bug_tests {
    //! The crash test catches what it is for: each planted bug makes it fail.
    use super::*;
    use crate::pmem_harness::{run_pmem_crashtest, PmemCrashConfig};
    use strata_declog::crashtest_hooks::{PlantedBug, PLANTED_BUG};

    fn run_with(bug: PlantedBug, seed: u64) -> crate::oracle::CrashReport {
        PLANTED_BUG.with(|b| b.set(bug));
        let proto = DeclogPmemCrash::new(seed, 200);
        let cfg = PmemCrashConfig { seed, max_images: Some(4000), ..Default::default() };
        let report = run_pmem_crashtest(&proto, &cfg);
        PLANTED_BUG.with(|b| b.set(PlantedBug::None));
        println!("{bug:?}: {} first failure: {:?}", report.line(), report.first_failure);
        report
    }

    #[test]
    fn ignoring_the_thread_snapshot_shows_as_order_violations() {
        let total: u64 = [1u64, 2, 3, 4, 5, 6]
            .iter()
            .map(|&s| run_with(PlantedBug::IgnoreSnapshot, s).counts.order_violations)
            .sum();
        assert!(total > 0, "no seed caught an update persisted before its dependency");
    }

    #[test]
    fn acknowledging_without_a_fence_shows_as_lost() {
        let report = run_with(PlantedBug::SkipBodyOnlyFence, 1);
        assert!(report.counts.lost > 0, "{}", report.line());
    }
}
