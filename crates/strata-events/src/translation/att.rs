//! [`AttTranslation`]: the interleaved Address Translation Tree of
//! chronicledb-pmem.txt section 2.2 (the "Flash" variant of Fig. 7), one
//! tree per node kind, its nodes ([`super::att_node`]) stored as translation
//! blocks of the [`BlockStore`], between the data blocks.
//!
//! DRAM holds each tree's right flank (the root included) and every node
//! changed since the last commit; a node not in DRAM is current on SSD,
//! reached from its lowest ancestor in DRAM. An update to a node number
//! whose ATT leaf is on SSD loads that leaf (copy-on-write).
//!
//! Commit: when an update moves a tree's leaf flank to the right (the flank
//! leaf is complete), every changed node of both trees is written bottom-up,
//! each write updating its parent, up to the roots; the last root written
//! carries the commit (both roots, next ids, and `replay_from` = the
//! address of the update that triggered it, the first not in the trees).
//! So an update costs a DRAM write, and one in F (the fanout) triggers h
//! block writes for a tree of height h (paper: "an insert can trigger h
//! writes of 32 KiB"). [`AttTranslation::commit`] commits on demand (a clean
//! shutdown: replay starts after the last update, nothing to replay).
//!
//! Lookup of a node whose leaf is not in DRAM reads the translation blocks
//! below the lowest DRAM ancestor: two 32 KiB reads for a tree of height
//! three with only the flank in DRAM, as in section 4.2.
//!
//! Recovery: the block store's chain of translation blocks leads from the
//! end of the file back to the last commit (skipping the blocks of a commit
//! torn by the crash); the roots are loaded, and the data records from
//! `replay_from` on are scanned and applied again.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::att_node::{encode_node, AttCommit, AttNode, ATT_MAX_FANOUT, ATT_MIN_FANOUT};
use super::{check_order, kind_index, RecoveryReport, Translation, TranslationKind, TranslationStats};
use crate::block_store::{BlockStore, PhysAddr, ScannedRecord};
use crate::ids::{EventError, NodeId, NodeKind};

/// Tree geometry.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AttOptions {
    /// Entries per node; [`ATT_MAX_FANOUT`] fills a 32 KiB block. Smaller
    /// fanouts give tall trees with few nodes (tests). A recovered tree keeps
    /// the fanout it was written with.
    pub fanout: u32,
}

impl Default for AttOptions {
    fn default() -> Self {
        AttOptions { fanout: ATT_MAX_FANOUT }
    }
}

/// A node in DRAM.
struct DramNode {
    entries: Vec<u64>,
    /// Changed since it was last written.
    dirty: bool,
}

/// One tree (one node kind).
#[derive(Default)]
struct AttTree {
    /// Levels; 0 = empty, 1 = the root is a leaf.
    height: u32,
    /// Highest node number set plus one (0 = none).
    next_id: u64,
    /// (level, node index) -> node: the flank and every changed node.
    nodes: BTreeMap<(u32, u64), DramNode>,
    /// Where the root was last written.
    root_addr: Option<PhysAddr>,
}

/// The interleaved ATT (module comment).
pub struct AttTranslation {
    fanout: u64,
    trees: [AttTree; 2],
    commit_seq: u64,
    last_addr: Option<PhysAddr>,
    /// `replay_from` of the last commit (or of the recovery).
    replay_floor: PhysAddr,
    /// Set when a write failed half-way; every later update is refused.
    failed: Option<String>,
    sets_since_commit: u64,
    stats: TranslationStats,
    ssd_reads: AtomicU64,
}

impl AttTranslation {
    /// An empty translation (a new block file).
    pub fn new(options: AttOptions) -> Result<AttTranslation, EventError> {
        if !(ATT_MIN_FANOUT..=ATT_MAX_FANOUT).contains(&options.fanout) {
            return Err(EventError::invalid(format!(
                "ATT fanout {} outside {ATT_MIN_FANOUT}..={ATT_MAX_FANOUT}",
                options.fanout
            )));
        }
        Ok(AttTranslation {
            fanout: options.fanout as u64,
            trees: Default::default(),
            commit_seq: 0,
            last_addr: None,
            replay_floor: PhysAddr::block_start(0),
            failed: None,
            sets_since_commit: 0,
            stats: TranslationStats::default(),
            ssd_reads: AtomicU64::new(0),
        })
    }

    pub fn fanout(&self) -> u32 {
        self.fanout as u32
    }

    /// Levels of a kind's tree (0 = empty).
    pub fn height(&self, kind: NodeKind) -> u32 {
        self.trees[kind_index(kind)].height
    }

    /// Nodes of a kind's tree held in DRAM.
    pub fn dram_nodes(&self, kind: NodeKind) -> usize {
        self.trees[kind_index(kind)].nodes.len()
    }

    /// `F^e`, saturating (only compared with node numbers below 2^64).
    fn pow(&self, e: u32) -> u128 {
        (self.fanout as u128).checked_pow(e).unwrap_or(u128::MAX)
    }

    /// The index of the node `levels` levels above, covering `n` (a node
    /// number, or a node index at some level).
    fn up(&self, n: u64, levels: u32) -> u64 {
        (n as u128 / self.pow(levels)) as u64
    }

    /// The entry, in the node `levels + 1` levels above, leading towards `n`.
    fn slot(&self, n: u64, levels: u32) -> usize {
        ((n as u128 / self.pow(levels)) % self.fanout as u128) as usize
    }

    /// Levels a tree needs to cover node numbers below `next_id`.
    pub fn height_for(&self, next_id: u64) -> u32 {
        let mut h = 1;
        while self.pow(h) < next_id as u128 {
            h += 1;
        }
        h
    }

    /// Reads the node at `addr`, checking it is node (`k`, `level`, `index`).
    fn read_node(
        &self,
        store: &BlockStore,
        addr: PhysAddr,
        k: usize,
        level: Option<u32>,
        index: u64,
    ) -> Result<AttNode, EventError> {
        let block = store.read_translation_block(addr)?;
        self.ssd_reads.fetch_add(1, Ordering::Relaxed);
        let corrupt = |what: String| EventError::corruption(format!("ATT node at {addr}"), what);
        let node = AttNode::decode(&block.payload).map_err(|e| corrupt(e.to_string()))?;
        let level_ok = level.is_none_or(|l| node.level as u32 == l);
        if node.tree as usize != k
            || !level_ok
            || node.node_index != index
            || node.fanout as u64 != self.fanout
        {
            return Err(corrupt(format!(
                "found tree {} level {} index {} fanout {}, expected tree {k} level {level:?} index {index} fanout {}",
                node.tree, node.level, node.node_index, node.fanout, self.fanout
            )));
        }
        Ok(node)
    }

    /// Where node (`level`, `index`) of tree `k` is on SSD, if it was ever
    /// written: descends from its lowest ancestor in DRAM.
    fn ssd_addr_of(
        &self,
        store: &BlockStore,
        k: usize,
        level: u32,
        index: u64,
    ) -> Result<Option<PhysAddr>, EventError> {
        let t = &self.trees[k];
        let Some((anc_level, anc)) =
            (level + 1..t.height).find_map(|l| t.nodes.get(&(l, self.up(index, l - level))).map(|n| (l, n)))
        else {
            return Ok(None);
        };
        let mut entry = anc.entries[self.slot(index, anc_level - 1 - level)];
        for l in (level + 1..anc_level).rev() {
            let Some(addr) = PhysAddr::from_u64(entry) else {
                return Ok(None);
            };
            let node = self.read_node(store, addr, k, Some(l), self.up(index, l - level))?;
            entry = node.entries[self.slot(index, l - 1 - level)];
        }
        Ok(PhysAddr::from_u64(entry))
    }

    /// Node (`level`, `index`) of tree `k` in DRAM, loaded from SSD (or
    /// created empty) if absent.
    fn node_mut(
        &mut self,
        store: &BlockStore,
        k: usize,
        level: u32,
        index: u64,
    ) -> Result<&mut DramNode, EventError> {
        if !self.trees[k].nodes.contains_key(&(level, index)) {
            let entries = match self.ssd_addr_of(store, k, level, index)? {
                Some(addr) => self.read_node(store, addr, k, Some(level), index)?.entries,
                None => vec![0; self.fanout as usize],
            };
            self.trees[k].nodes.insert((level, index), DramNode { entries, dirty: false });
        }
        Ok(self.trees[k].nodes.get_mut(&(level, index)).expect("inserted"))
    }

    /// Adds root levels until tree `k` covers its next id.
    fn grow(&mut self, k: usize) {
        let want = self.height_for(self.trees[k].next_id);
        let fanout = self.fanout as usize;
        let t = &mut self.trees[k];
        while t.height < want {
            let mut entries = vec![0; fanout];
            if let Some(old_level) = t.height.checked_sub(1) {
                // A clean old root is current on SSD; a dirty one fills
                // this entry when the commit writes it.
                let old_dirty = t.nodes.get(&(old_level, 0)).is_some_and(|n| n.dirty);
                if !old_dirty {
                    entries[0] = t.root_addr.map_or(0, PhysAddr::to_u64);
                }
            }
            t.nodes.insert((t.height, 0), DramNode { entries, dirty: true });
            t.height += 1;
        }
    }

    /// Writes every changed node of both trees (module comment), the last
    /// root carrying the commit with `replay_from`; then drops from DRAM the
    /// clean nodes off the flank.
    fn commit_with(&mut self, store: &mut BlockStore, replay_from: PhysAddr) -> Result<(), EventError> {
        let dirty_trees: Vec<usize> =
            (0..2).filter(|&k| self.trees[k].nodes.values().any(|n| n.dirty)).collect();
        let Some(&last_tree) = dirty_trees.last() else {
            return Ok(());
        };
        for &k in &dirty_trees {
            let height = self.trees[k].height;
            for level in 0..height {
                let dirty: Vec<u64> = self.trees[k]
                    .nodes
                    .range((level, 0)..=(level, u64::MAX))
                    .filter(|(_, n)| n.dirty)
                    .map(|((_, index), _)| *index)
                    .collect();
                for index in dirty {
                    let is_root = level + 1 == height;
                    let commit = (is_root && k == last_tree).then(|| {
                        let mut roots = [self.trees[0].root_addr, self.trees[1].root_addr];
                        roots[k] = Some(store.next_translation_addr());
                        AttCommit {
                            seq: self.commit_seq + 1,
                            replay_from,
                            roots,
                            next_ids: [self.trees[0].next_id, self.trees[1].next_id],
                        }
                    });
                    let node = &self.trees[k].nodes[&(level, index)];
                    let payload = encode_node(k as u8, level as u8, index, commit.as_ref(), &node.entries);
                    let addr = store.append_translation_block(&payload)?;
                    if let Some(c) = commit {
                        assert_eq!(c.roots[k], Some(addr), "the commit names its own block");
                    }
                    self.stats.translation_blocks_written += 1;
                    self.trees[k].nodes.get_mut(&(level, index)).expect("present").dirty = false;
                    if is_root {
                        self.trees[k].root_addr = Some(addr);
                    } else {
                        let slot = (index % self.fanout) as usize;
                        let parent = self.node_mut(store, k, level + 1, index / self.fanout)?;
                        parent.entries[slot] = addr.to_u64();
                        parent.dirty = true;
                    }
                }
            }
        }
        self.commit_seq += 1;
        self.replay_floor = replay_from;
        self.stats.commits += 1;
        self.sets_since_commit = 0;
        for k in 0..2 {
            let flank: Vec<Option<u64>> = (0..self.trees[k].height)
                .map(|l| self.trees[k].next_id.checked_sub(1).map(|last| self.up(last, l + 1)))
                .collect();
            self.trees[k].nodes.retain(|(level, index), n| n.dirty || flank[*level as usize] == Some(*index));
        }
        Ok(())
    }

    /// Commits every change now (e.g. before a clean shutdown): recovery
    /// then replays only records appended after the last update (none if
    /// every appended record got its translation).
    pub fn commit(&mut self, store: &mut BlockStore) -> Result<(), EventError> {
        self.check_failed()?;
        let after_last = self.last_addr.and_then(|a| PhysAddr::from_u64(a.to_u64() + 1));
        let replay_from = after_last.unwrap_or(self.replay_floor).max(self.replay_floor);
        let r = self.commit_with(store, replay_from);
        self.poison_on_error(r)
    }

    fn check_failed(&self) -> Result<(), EventError> {
        match &self.failed {
            Some(why) => Err(EventError::invalid(format!("the ATT failed earlier ({why}); recover it"))),
            None => Ok(()),
        }
    }

    fn poison_on_error(&mut self, r: Result<(), EventError>) -> Result<(), EventError> {
        if let Err(e) = &r {
            self.failed = Some(e.to_string());
        }
        r
    }

    fn apply(&mut self, store: &mut BlockStore, id: NodeId, addr: PhysAddr) -> Result<(), EventError> {
        let k = kind_index(id.kind);
        let n = id.number;
        let old_next = self.trees[k].next_id;
        let new_next = old_next.max(n + 1);
        let moved =
            old_next.checked_sub(1).is_some_and(|last| (new_next - 1) / self.fanout > last / self.fanout);
        self.trees[k].next_id = new_next;
        self.grow(k);
        if moved {
            self.commit_with(store, addr)?;
        }
        let slot = (n % self.fanout) as usize;
        let leaf = self.node_mut(store, k, 0, n / self.fanout)?;
        leaf.entries[slot] = addr.to_u64();
        leaf.dirty = true;
        Ok(())
    }

    /// Recovers the trees from `store` (module comment). `options` applies
    /// only when the file holds no commit yet.
    pub fn recover(
        store: &mut BlockStore,
        options: AttOptions,
    ) -> Result<(AttTranslation, RecoveryReport), EventError> {
        let started = Instant::now();
        let mut blocks_read = 0;
        let mut cursor = store.last_translation_block();
        let mut found = None;
        while let Some(addr) = cursor {
            let block = store.read_translation_block(addr)?;
            blocks_read += 1;
            let node = AttNode::decode(&block.payload)
                .map_err(|what| EventError::corruption(format!("ATT node at {addr}"), what.to_string()))?;
            if let Some(commit) = node.commit {
                found = Some((addr, node, commit));
                break;
            }
            cursor = block.prev_translation;
        }
        let mut replay_from = PhysAddr::block_start(0);
        let mut att = match &found {
            Some((_, node, _)) => AttTranslation::new(AttOptions { fanout: node.fanout })?,
            None => AttTranslation::new(options)?,
        };
        if let Some((commit_addr, commit_node, commit)) = found {
            att.commit_seq = commit.seq;
            replay_from = commit.replay_from;
            att.replay_floor = replay_from;
            for k in 0..2 {
                att.trees[k].next_id = commit.next_ids[k];
                let Some(root) = commit.roots[k] else {
                    continue;
                };
                let node = if root == commit_addr {
                    commit_node.clone()
                } else {
                    blocks_read += 1;
                    att.read_node(store, root, k, None, 0)?
                };
                let height = node.level as u32 + 1;
                if node.tree as usize != k || height != att.height_for(commit.next_ids[k].max(1)) {
                    return Err(EventError::corruption(
                        format!("ATT root at {root}"),
                        format!("tree {} of height {height} for {} ids", node.tree, commit.next_ids[k]),
                    ));
                }
                let t = &mut att.trees[k];
                t.height = height;
                t.root_addr = Some(root);
                t.nodes.insert((height - 1, 0), DramNode { entries: node.entries, dirty: false });
            }
        }
        let mut scan = store.scan_from(replay_from);
        let records: Vec<ScannedRecord> = scan.by_ref().collect::<Result<_, _>>()?;
        blocks_read += scan.blocks_read();
        for r in &records {
            att.set(store, r.node_id, r.addr)?;
        }
        let report = RecoveryReport {
            kind: TranslationKind::Att,
            records_scanned: records.len() as u64,
            translations_restored: records.len() as u64,
            blocks_read,
            replay_from,
            duration: started.elapsed(),
        };
        Ok((att, report))
    }
}

impl Translation for AttTranslation {
    fn kind(&self) -> TranslationKind {
        TranslationKind::Att
    }

    fn set(&mut self, store: &mut BlockStore, id: NodeId, addr: PhysAddr) -> Result<(), EventError> {
        self.check_failed()?;
        check_order(self.last_addr, id, addr)?;
        if id.number >= 1 << 63 {
            return Err(EventError::invalid(format!("{id}: node numbers are below 2^63")));
        }
        let r = self.apply(store, id, addr);
        self.poison_on_error(r)?;
        self.last_addr = Some(addr);
        self.stats.sets += 1;
        self.sets_since_commit += 1;
        Ok(())
    }

    fn get(&self, store: &BlockStore, id: NodeId) -> Result<Option<PhysAddr>, EventError> {
        let k = kind_index(id.kind);
        let n = id.number;
        if n >= self.trees[k].next_id {
            return Ok(None);
        }
        let leaf_index = n / self.fanout;
        let slot = (n % self.fanout) as usize;
        let entry = match self.trees[k].nodes.get(&(0, leaf_index)) {
            Some(leaf) => leaf.entries[slot],
            None => match self.ssd_addr_of(store, k, 0, leaf_index)? {
                Some(addr) => self.read_node(store, addr, k, Some(0), leaf_index)?.entries[slot],
                None => 0,
            },
        };
        Ok(PhysAddr::from_u64(entry))
    }

    fn sync(&mut self, store: &mut BlockStore) -> Result<(), EventError> {
        store.sync()
    }

    fn stats(&self) -> TranslationStats {
        TranslationStats {
            ssd_block_reads: self.ssd_reads.load(Ordering::Relaxed),
            pending: self.sets_since_commit,
            ..self.stats
        }
    }
}
