//! The SSD crash test of the block store (chronicledb-pmem.txt section
//! 2.2, "Storage Layout"): every crash image of a seeded run of appends,
//! flushes, translation blocks and syncs keeps every node synced before the
//! crash.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_crashtest::fs_harness::{run_fs_crashtest, FsCrashConfig, FsCrashProtocol};
use strata_crashtest::oracle::{AckLog, TxnOracle};
use strata_media::fs::FileSystem;
use strata_media::TxnId;

use std::path::Path;

use strata_crashtest::error::{CheckResult, CrashCheckError};
use strata_events::block_store::{sample_node, BlockStore};
use strata_events::NodeId;

/// The block file's path (the block store's tests use the same).
fn path() -> &'static Path {
    Path::new("blocks.evb")
}

/// The SSD crash model on the block store: appends, flushes (rewrites
/// of the open block), translation blocks and syncs; a node is
/// acknowledged once the store's durable end passes it.
struct StoreCrash {
    seed: u64,
    contents: Mutex<BTreeMap<TxnId, (NodeId, Vec<u8>)>>,
}

impl FsCrashProtocol for StoreCrash {
    fn name(&self) -> String {
        "events-block-store".into()
    }

    fn run(&self, fs: Arc<dyn FileSystem>, acks: &AckLog) {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut store = BlockStore::create(&*fs, path()).unwrap();
        let mut contents = BTreeMap::new();
        let mut unacked = Vec::new();
        for t in 1..=60u64 {
            let id = NodeId::leaf(t);
            let len = rng.gen_range(0..6000);
            let bytes = sample_node(t, len, rng.gen_bool(0.5));
            let addr = store.append(id, &bytes).unwrap();
            contents.insert(TxnId(t), (id, bytes));
            unacked.push((TxnId(t), addr));
            match rng.gen_range(0..10) {
                0 | 1 => store.flush().unwrap(),
                2 => {
                    store.append_translation_block(&sample_node(t, 100, true)).unwrap();
                }
                3 | 4 => {
                    store.sync().unwrap();
                    let end = store.durable_end();
                    unacked.retain(|(txn, addr)| {
                        let done = *addr < end;
                        if done {
                            acks.ack(*txn);
                        }
                        !done
                    });
                }
                _ => {}
            }
        }
        *self.contents.lock() = contents;
    }

    fn recover_and_check(&self, fs: Arc<dyn FileSystem>, acked: &BTreeSet<TxnId>) -> CheckResult {
        let contents = self.contents.lock();
        let mut oracle = TxnOracle::new();
        let by_id: BTreeMap<NodeId, TxnId> = contents.iter().map(|(t, (id, _))| (*id, *t)).collect();
        for (t, (_, bytes)) in contents.iter() {
            oracle.attempt(*t, bytes.clone(), Vec::new());
        }
        if !fs.exists(path()) {
            return Ok(oracle.check(acked, &BTreeMap::new()));
        }
        let (store, _) = BlockStore::open(&*fs, path()).map_err(CrashCheckError::step("BlockStore::open"))?;
        let mut found = BTreeMap::new();
        for rec in store.scan() {
            let rec = rec.map_err(CrashCheckError::step("scan"))?;
            let bytes = store.read(rec.addr).map_err(CrashCheckError::step("read"))?;
            let txn = by_id
                .get(&rec.node_id)
                .ok_or_else(|| CrashCheckError::Unidentified(format!("unknown node {}", rec.node_id)))?;
            found.insert(*txn, bytes);
        }
        Ok(oracle.check(acked, &found))
    }
}

#[test]
fn every_ssd_crash_image_keeps_every_synced_node() {
    for seed in [1, 2, 3] {
        let proto = StoreCrash { seed, contents: Mutex::new(BTreeMap::new()) };
        let report = run_fs_crashtest(&proto, &FsCrashConfig { seed, max_images: None });
        println!("{}", report.line());
        assert!(report.crash_points > 30, "{}", report.line());
        assert!(report.is_clean(), "seed {seed}: {} {:?}", report.line(), report.first_failure);
    }
}
