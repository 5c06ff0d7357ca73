//! Crash test of the PMem translation array with its block file (DESIGN.md
//! section 3 applied to chronicledb-pmem.txt section 4.2), an
//! implementation of [`PmemCrashProtocol`] for the crash line
//! `events-translation/pmem`.
//!
//! Workload (deterministic for a seed): each transaction writes one node:
//! mostly the next leaf, sometimes the next index node, sometimes a new
//! version of an existing node; the node's bytes start with the transaction
//! id, so every version is distinct. It is appended to the block store and
//! its translation set. Now and then the workload syncs: the translation's
//! `sync` (store synced, every pending slot persisted), or the store alone
//! (slots stay pending: recoverable by replay), or only flushes the open
//! block (nothing durable). After each sync, every transaction whose record
//! lies before the store's durable end is acknowledged.
//!
//! The block file lives on a [`FaultFs`]. After every sync the workload keeps
//! a copy of the file system as a crash would leave it (synced data only),
//! tagged with the simulator's operation count; a crash at PMem operation
//! `c` is recovered with the latest copy tagged `<= c` (the file work
//! between two PMem operations changes no PMem word, so that state is one
//! the crash model allows). Syncs happen before the slots they cover are
//! persisted, so this is the state of the file at the crash.
//!
//! Oracle: after `BlockStore::open` and `PmemArrayTranslation::recover`,
//! every node's translation must lead to a record of that node holding one
//! of its versions (else `partial`: a translation to garbage); the version
//! found and its predecessors count as present; an acknowledged version
//! missing is `lost`. Nodes never written must have no translation. Then
//! recovery resumes: two more nodes are written and synced, and a second
//! recovery must find them and every translation of the first unchanged.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use crate::oracle::{AckLog, TxnOracle};
use crate::pmem_harness::{fs_as_of, sim_ops, PmemCrashProtocol};
use parking_lot::RwLock;
use strata_media::fs::Tear;
use strata_media::{FaultFs, TxnId};
use strata_pmem::{Region, RegionOffset};

use strata_events::block_store::{BlockStore, PhysAddr};
use strata_events::translation::{PmemArrayTranslation, Translation, PMEM_TRANSLATION_MAGIC};
use strata_events::{NodeId, NodeKind};

use crate::error::{CheckResult, CrashCheckError};
use crate::workload::SplitMix64;

const BLOCK_FILE: &str = "events.blocks";
const AREA_BASE: RegionOffset = RegionOffset(0);

/// What the run recorded for the checks.
#[derive(Default)]
struct RunRecord {
    oracle: TxnOracle,
    /// Every version written of each node, in order.
    versions: BTreeMap<NodeId, Vec<(TxnId, Vec<u8>)>>,
    /// The file system after each sync: (simulator operation count, state).
    snapshots: Vec<(u64, FaultFs)>,
    batches_persisted: u64,
    blocks_written: u64,
}

/// The PMem translation array and its block file under crash test.
pub struct PmemTranslationCrash {
    pub seed: u64,
    /// Node writes (transactions).
    pub nodes: u64,
    /// A sync decision is drawn once in this many writes on average.
    pub sync_every: u64,
    pub leaf_capacity: u64,
    pub index_capacity: u64,
    /// Largest node written (bytes).
    pub max_node_bytes: usize,
    record: RwLock<RunRecord>,
}

impl PmemTranslationCrash {
    pub fn new(seed: u64, nodes: u64) -> Self {
        PmemTranslationCrash {
            seed,
            nodes,
            sync_every: 12,
            leaf_capacity: nodes + 8,
            index_capacity: nodes / 4 + 8,
            max_node_bytes: 1500,
            record: RwLock::new(RunRecord::default()),
        }
    }

    fn area_bytes(&self) -> u64 {
        PmemArrayTranslation::footprint_bytes(self.leaf_capacity, self.index_capacity)
            .expect("small capacities")
    }

    /// (PMem batches persisted, blocks written) in the last run.
    pub fn run_counts(&self) -> (u64, u64) {
        let r = self.record.read();
        (r.batches_persisted, r.blocks_written)
    }

    /// The file system as of a crash at simulator operation `op`.
    fn fs_at(&self, op: u64) -> Option<FaultFs> {
        fs_as_of(&self.record.read().snapshots, op, false)
    }
}

/// A node's bytes: the transaction id, then compressible or noisy filler.
fn node_bytes(rng: &mut SplitMix64, txn: u64, max_len: usize) -> Vec<u8> {
    let len = 8 + rng.below(max_len.saturating_sub(8) as u64 + 1) as usize;
    let mut b = txn.to_le_bytes().to_vec();
    let noisy = rng.below(10) < 3;
    b.extend((8..len).map(|i| {
        if noisy {
            rng.next_u64() as u8
        } else {
            (txn as u8).wrapping_add((i / 32) as u8)
        }
    }));
    b
}

impl PmemCrashProtocol for PmemTranslationCrash {
    fn name(&self) -> String {
        "events-translation".into()
    }

    fn region_len(&self) -> u64 {
        self.area_bytes()
    }

    fn run(&self, region: &Arc<Region>, acks: &AckLog) {
        let seed = self.seed;
        let fs = FaultFs::new();
        let path = Path::new(BLOCK_FILE);
        let mut store = BlockStore::create(&fs, path).expect("create block file");
        let mut snapshots = vec![(sim_ops(region), fs.crash(Tear::None))];
        let mut t = PmemArrayTranslation::create(
            region.clone(),
            AREA_BASE,
            self.area_bytes(),
            self.leaf_capacity,
            self.index_capacity,
        )
        .expect("format translation area");
        let mut rng = SplitMix64::new(seed);
        let mut oracle = TxnOracle::new();
        let mut versions: BTreeMap<NodeId, Vec<(TxnId, Vec<u8>)>> = BTreeMap::new();
        let (mut next_leaf, mut next_index) = (0u64, 0u64);
        let mut unacked: Vec<(TxnId, PhysAddr)> = Vec::new();
        for txn_no in 1..=self.nodes {
            let txn = TxnId(txn_no);
            let roll = rng.below(100);
            let id = if roll < 10 && !versions.is_empty() {
                let ids: Vec<NodeId> = versions.keys().copied().collect();
                let recent = ids.len().min(12);
                ids[ids.len() - 1 - rng.below(recent as u64) as usize]
            } else if roll < 22 && next_index < self.index_capacity {
                next_index += 1;
                NodeId::index(next_index - 1)
            } else if next_leaf < self.leaf_capacity {
                next_leaf += 1;
                NodeId::leaf(next_leaf - 1)
            } else {
                break;
            };
            let bytes = node_bytes(&mut rng, txn_no, self.max_node_bytes);
            let addr = store.append(id, &bytes).unwrap_or_else(|e| panic!("seed {seed}: append {txn}: {e}"));
            t.set(&mut store, id, addr).unwrap_or_else(|e| panic!("seed {seed}: set {txn}: {e}"));
            oracle.attempt(txn, bytes.clone(), Vec::new());
            versions.entry(id).or_default().push((txn, bytes));
            unacked.push((txn, addr));
            let decision = rng.below(self.sync_every.max(3));
            if decision == 2 {
                store.flush().unwrap_or_else(|e| panic!("seed {seed}: flush {txn}: {e}"));
            }
            if decision < 2 {
                // The file state is captured between the file sync and the
                // PMem operations that rely on it (the translation's own
                // `sync` then finds the store synced and only persists).
                store.sync().unwrap_or_else(|e| panic!("seed {seed}: store sync {txn}: {e}"));
                snapshots.push((sim_ops(region), fs.crash(Tear::None)));
                if decision == 0 {
                    t.sync(&mut store).unwrap_or_else(|e| panic!("seed {seed}: sync {txn}: {e}"));
                }
                let durable = store.durable_end();
                unacked.retain(|(txn, addr)| {
                    let done = *addr < durable;
                    if done {
                        acks.ack(*txn);
                    }
                    !done
                });
            }
        }
        store.sync().expect("final store sync");
        snapshots.push((sim_ops(region), fs.crash(Tear::None)));
        t.sync(&mut store).expect("final sync");
        for (txn, _) in unacked {
            acks.ack(txn);
        }
        *self.record.write() = RunRecord {
            oracle,
            versions,
            snapshots,
            batches_persisted: t.stats().batches_persisted,
            blocks_written: store.blocks_written(),
        };
    }

    fn recover_and_check_at(
        &self,
        region: &Arc<Region>,
        acked: &BTreeSet<TxnId>,
        crash_op: u64,
    ) -> CheckResult {
        let record = self.record.read();
        let empty = BTreeMap::new();
        if region.load_u64(AREA_BASE) != PMEM_TRANSLATION_MAGIC {
            // Formatting persists the magic last; nothing was acknowledged before.
            return Ok(record.oracle.check(acked, &empty));
        }
        let fs = self.fs_at(crash_op).ok_or(CrashCheckError::NoFileSystemState)?;
        let path = Path::new(BLOCK_FILE);
        let (mut store, _) = BlockStore::open(&fs, path).map_err(CrashCheckError::step("open block file"))?;
        let (mut t, _) = PmemArrayTranslation::recover(region.clone(), AREA_BASE, self.area_bytes(), &store)
            .map_err(CrashCheckError::step("recover translations"))?;
        let mut found = BTreeMap::new();
        let mut garbage = 0u64;
        let mut first_garbage = None;
        let mut translations = BTreeMap::new();
        for kind in [NodeKind::Leaf, NodeKind::Index] {
            let capacity = t.capacity(kind);
            for number in 0..capacity {
                let id = NodeId { kind, number };
                let addr = t.get(&store, id).map_err(CrashCheckError::step("translation get"))?;
                let Some(addr) = addr else {
                    continue;
                };
                translations.insert(id, addr);
                let node_versions = record.versions.get(&id).map(Vec::as_slice).unwrap_or(&[]);
                let version = match store.read_node(addr) {
                    Ok((rid, bytes)) if rid == id => node_versions.iter().position(|(_, b)| *b == bytes),
                    _ => None,
                };
                match version {
                    Some(v) => found.extend(node_versions[..=v].iter().map(|(txn, b)| (*txn, b.clone()))),
                    None => {
                        garbage += 1;
                        first_garbage
                            .get_or_insert_with(|| format!("{id} translates to {addr}: no version of it"));
                    }
                }
            }
        }
        let (mut counts, mut why) = record.oracle.check(acked, &found);
        counts.partial += garbage;
        if why.is_none() {
            why = first_garbage;
        }
        drop(record);
        resume_and_recheck(self, region, &fs, &mut store, &mut t, &translations)?;
        Ok((counts, why))
    }
}

/// Recovery goes on: two more nodes, synced; a second recovery must keep
/// every translation of the first and add the two.
fn resume_and_recheck(
    proto: &PmemTranslationCrash,
    region: &Arc<Region>,
    fs: &FaultFs,
    store: &mut BlockStore,
    t: &mut PmemArrayTranslation,
    first: &BTreeMap<NodeId, PhysAddr>,
) -> Result<(), CrashCheckError> {
    let mut expect = first.clone();
    for (i, id) in [NodeId::leaf(proto.leaf_capacity - 1), NodeId::index(proto.index_capacity - 1)]
        .into_iter()
        .enumerate()
    {
        let addr =
            store.append(id, format!("resumed {i}").as_bytes()).map_err(CrashCheckError::step("append"))?;
        t.set(store, id, addr).map_err(CrashCheckError::step("set after recovery"))?;
        expect.insert(id, addr);
    }
    t.sync(store).map_err(CrashCheckError::step("sync after recovery"))?;
    let (store, _) = BlockStore::open(fs, Path::new(BLOCK_FILE)).map_err(CrashCheckError::step("reopen"))?;
    let (t, _) = PmemArrayTranslation::recover(region.clone(), AREA_BASE, proto.area_bytes(), &store)
        .map_err(CrashCheckError::step("second recovery"))?;
    let mut got = BTreeMap::new();
    for kind in [NodeKind::Leaf, NodeKind::Index] {
        for number in 0..t.capacity(kind) {
            let id = NodeId { kind, number };
            if let Some(addr) = t.get(&store, id).map_err(CrashCheckError::step("translation get"))? {
                got.insert(id, addr);
            }
        }
    }
    if got != expect {
        let diff: Vec<_> = got
            .iter()
            .filter(|(id, a)| expect.get(id) != Some(a))
            .map(|(id, _)| *id)
            .chain(expect.keys().filter(|id| !got.contains_key(id)).copied())
            .collect();
        return Err(CrashCheckError::inconsistent(format!(
            "a second recovery after resuming disagrees on {diff:?}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pmem_harness::{run_pmem_crashtest, PmemCrashConfig};
    use strata_events::crashtest_hooks::{TranslationBug as PlantedBug, TRANSLATION_BUG as PLANTED_BUG};

    /// One uncrashed run: batches and several blocks were written, and the
    /// final image passes the oracle with everything acknowledged.
    #[test]
    fn an_uncrashed_run_recovers_every_node() {
        let proto = PmemTranslationCrash::new(3, 160);
        let region = Arc::new(Region::sim(proto.region_len()));
        let acks = AckLog::new(|| 0);
        proto.run(&region, &acks);
        let (batches, blocks) = proto.run_counts();
        assert!(batches >= 5, "{batches} batches");
        assert!(blocks >= 4, "{blocks} blocks");
        assert_eq!(acks.len(), 160);
        let acked = acks.acked_by(0);
        let image = Arc::new(Region::sim_from_image(region.as_sim().unwrap().persistent_image()));
        let (counts, why) = proto.recover_and_check(&image, &acked).unwrap();
        assert!(counts.is_clean(), "{counts:?} {why:?}");
    }

    fn crashtest(seed: u64, bug: PlantedBug) -> crate::oracle::CrashReport {
        PLANTED_BUG.with(|b| b.set(bug));
        let proto = PmemTranslationCrash::new(seed, 140);
        let cfg =
            PmemCrashConfig { seed, samples_per_point: 16, max_images: Some(3000), ..Default::default() };
        let report = run_pmem_crashtest(&proto, &cfg);
        PLANTED_BUG.with(|b| b.set(PlantedBug::None));
        println!("{bug:?} seed {seed}: {} first failure: {:?}", report.line(), report.first_failure);
        report
    }

    #[test]
    fn every_crash_image_keeps_acknowledged_translations() {
        for seed in [1, 2] {
            let report = crashtest(seed, PlantedBug::None);
            assert!(report.crash_points > 20, "{}", report.line());
            assert!(report.is_clean(), "seed {seed}: {} {:?}", report.line(), report.first_failure);
        }
    }

    #[test]
    fn persisting_slots_of_unsynced_records_shows_as_garbage() {
        let partial: u64 =
            [1, 2, 3].iter().map(|&s| crashtest(s, PlantedBug::IgnoreDurableEnd).counts.partial).sum();
        assert!(partial > 0, "no seed caught a slot pointing at a lost record");
    }

    #[test]
    fn replaying_from_the_batch_end_shows_as_lost() {
        let lost: u64 = [1, 2, 3].iter().map(|&s| crashtest(s, PlantedBug::ReplayFromLast).counts.lost).sum();
        assert!(lost > 0, "no seed caught a replay start past unpersisted slots");
    }
}
