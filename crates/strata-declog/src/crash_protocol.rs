//! Crash test of DecLog on the PMem simulator (DESIGN.md section 3), an
//! implementation of [`PmemCrashProtocol`].
//!
//! The workload is a tiny engine on one worker thread, deterministic for a
//! seed. Keys are data points; an insert-only transaction inserts 1-3 new
//! keys (LSN 0); an update transaction updates 1-2 visible keys with the
//! data-driven LSN max(uts) + 1 (section 4.1) and sets their uts, and depends
//! on the last writer of each key. Following the engine contract of
//! [`crate::DecLog`], inserted keys become visible once their transaction is
//! acknowledged, updated keys at once (early lock release), so updates queue
//! behind unacknowledged updates, in both streams.
//!
//! DecLog runs in [`FlushMode::Inline`]: the logging threads' pipeline steps
//! run on the worker, and after each submit the worker runs 0-2 steps of
//! seeded random streams, so batches, blocked update tails, snapshot waits
//! and out-of-order acknowledgements occur in a reproducible order. A
//! transaction is acknowledged when its ticket says durable. Every
//! `checkpoint_every` transactions the worker drains the log, persists the
//! checkpoint word (every transaction so far is covered), truncates all
//! streams and resets every uts to 0 (rule 5); half-way it drops and reopens
//! the log (a clean restart). Streams are small, so rings wrap.
//!
//! Recovery opens the log (parse, seal, new epoch). Transactions up to the
//! checkpoint word count as present with their known contents (a stand-in for
//! checkpointed data); later ones are the complete transactions parsed. The
//! oracle then checks: every acknowledged transaction present, none partial
//! (contents equal what was written), and every present update transaction's
//! dependencies present (order violations).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use parking_lot::RwLock;
use strata_media::{AckLog, OracleCounts, TxnId, TxnOracle};
use strata_pmem::crash::PmemCrashProtocol;
use strata_pmem::{Region, RegionOffset};

use crate::config::{DeclogConfig, FlushMode};
use crate::entry::EntryIn;
use crate::layout::{Layout, DECLOG_MAGIC};
use crate::pipeline::DeclogStats;
use crate::recovery::RecoveredEntry;
use crate::ticket::{Ticket, TicketStatus};
use crate::DecLog;

const CHECKPOINT_WORD: RegionOffset = RegionOffset(0);
const LOG_BASE: RegionOffset = RegionOffset(256);
/// Updates pick mostly among the first few visible keys.
const HOT_KEYS: usize = 6;

/// SplitMix64: a small seeded generator, so the crate needs no RNG dependency.
#[derive(Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0; the modulo bias is irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// The key hash of workload key `key`.
pub fn key_hash(key: u64) -> u64 {
    SplitMix64::new(key ^ 0x6B65_795F_6861_7368).next_u64()
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
        }
    }

    fn area_bytes(&self) -> u64 {
        Layout::footprint_bytes(self.threads, self.stream_bytes)
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
        for t in 1..=self.txns {
            let txn = TxnId(t);
            if t == self.txns / 2 {
                log.pump().expect("drain before restart");
                w.poll();
                stats = add_stats(stats, log.stats());
                drop(log);
                log = DecLog::open_with_mode(region.clone(), LOG_BASE, FlushMode::Inline).expect("reopen").0;
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
                    entries.push((key_hash(k), lsn, payload(&mut w.rng, self.max_payload_bytes)));
                }
            } else {
                for _ in 0..=w.rng.below(3) {
                    let k = w.next_key;
                    w.next_key += 1;
                    reveal.push(k);
                    entries.push((key_hash(k), 0, payload(&mut w.rng, self.max_payload_bytes)));
                }
            }
            oracle.attempt(txn, txn_content(&entries), deps);
            contents.insert(txn, txn_content(&entries));
            let ins: Vec<EntryIn<'_>> = entries
                .iter()
                .map(|(h, lsn, p)| EntryIn {
                    key_hash: *h,
                    lsn: *lsn,
                    compressed: p.len() % 3 == 0,
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
            if self.checkpoint_every > 0 && t % self.checkpoint_every == 0 {
                log.pump().expect("drain before checkpoint");
                w.poll();
                assert!(w.pending.is_empty(), "seed {seed}: drained log left pending transactions");
                region.store_u64_persist(CHECKPOINT_WORD, t);
                log.truncate_all().expect("truncate");
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
        };
    }

    fn recover_and_check(
        &self,
        region: &Arc<Region>,
        acked: &BTreeSet<TxnId>,
    ) -> Result<(OracleCounts, Option<String>), String> {
        let checkpointed = region.load_u64(CHECKPOINT_WORD);
        let record = self.record.read();
        // The checkpoint stands for the data of every transaction it covers.
        let mut found: BTreeMap<TxnId, Vec<u8>> = (1..=checkpointed.min(self.txns))
            .map(|t| (TxnId(t), record.contents.get(&TxnId(t)).cloned().unwrap_or_default()))
            .collect();
        let recovered = match DecLog::open_with_mode(region.clone(), LOG_BASE, FlushMode::Inline) {
            Ok((log, r)) => {
                resume_and_reparse(log, region, &r)?;
                r
            }
            // Formatting persists the magic last: without it there is no log
            // and nothing was acknowledged.
            Err(_) if region.load_u64(LOG_BASE) != DECLOG_MAGIC => Default::default(),
            Err(e) => return Err(e.to_string()),
        };
        for (lsn, bucket) in &recovered.updates {
            if let Some(e) = bucket.iter().find(|e| e.lsn != *lsn) {
                return Err(format!("{} in LSN bucket {lsn} has LSN {}", e.txn, e.lsn));
            }
        }
        for (txn, entries) in recovered.txns() {
            if txn.0 > checkpointed && found.insert(txn, recovered_content(&entries)).is_some() {
                return Err(format!("{txn} recovered twice"));
            }
        }
        Ok(record.oracle.check(acked, &found))
    }
}

/// The restart after the crash goes on: two more transactions (one per
/// stream, above every id seen), then a second parse must find exactly what
/// the first found plus those two: sealing, the new epoch and resuming at
/// each stream's end keep earlier answers stable.
fn resume_and_reparse(log: DecLog, region: &Arc<Region>, first: &crate::Recovered) -> Result<(), String> {
    let next = first.max_txn_id.map_or(1, |t| t.0 + 1) + 1_000_000;
    let mut expect =
        first.txns().into_iter().map(|(t, e)| (t, recovered_content(&e))).collect::<BTreeMap<_, _>>();
    for (i, t) in [next, next + 1].into_iter().enumerate() {
        let e = [EntryIn { key_hash: i as u64, lsn: 0, compressed: false, payload: b"after restart" }];
        log.commit(TxnId(t), &e).map_err(|e| format!("commit after restart: {e}"))?;
        expect.insert(TxnId(t), txn_content(&[(i as u64, 0, b"after restart".to_vec())]));
    }
    drop(log);
    let second = crate::recovery::parse(region, LOG_BASE).map_err(|e| format!("second parse: {e}"))?;
    let got: BTreeMap<_, _> = second.txns().into_iter().map(|(t, e)| (t, recovered_content(&e))).collect();
    if got != expect {
        let diff: Vec<_> = got
            .keys()
            .filter(|t| !expect.contains_key(t))
            .chain(expect.keys().filter(|t| !got.contains_key(t)))
            .collect();
        return Err(format!("a second parse after resuming disagrees on {diff:?}"));
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
    }
}

#[cfg(test)]
mod planted_bug_tests {
    //! The crash test catches what it is for: each planted bug makes it fail.
    use super::*;
    use crate::pipeline::{PlantedBug, PLANTED_BUG};
    use strata_pmem::crash::{run_pmem_crashtest, PmemCrashConfig};

    fn run_with(bug: PlantedBug, seed: u64) -> strata_media::CrashReport {
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
