//! A B+-tree with access stamps (fir.txt 4.3.1, `MarkNode`): every node
//! records the largest stamp (txnId) of a write beneath it. Hand-written:
//! the stamps and the traversal that skips untouched subtrees
//! ([`BTree::changed_since`]) are what FIR's incremental checkpoints rest
//! on, and [`BTree::from_sorted`] is the bottom-up build recovery uses
//! (fir.txt 4.4.2: O(n), balanced, no splits).
//!
//! Invariants (checked by [`BTree::check`] in tests): keys strictly
//! increase in order; every leaf lies at the same depth; an inner node's
//! separator `i` is the smallest key under child `i + 1`; a node's stamp is
//! at least each child's; no node exceeds [`MAX_ENTRIES`].

/// Most entries of a leaf and children of an inner node.
pub const MAX_ENTRIES: usize = 64;
/// Most inner levels (a tree of 64^16 entries; a path of child indexes
/// fits a `u8` each).
const MAX_DEPTH: usize = 16;

enum Node<K, V> {
    Leaf { keys: Vec<K>, vals: Vec<V>, stamp: u64 },
    Inner { seps: Vec<K>, children: Vec<Node<K, V>>, stamp: u64 },
}

impl<K, V> Node<K, V> {
    fn stamp(&self) -> u64 {
        match self {
            Node::Leaf { stamp, .. } | Node::Inner { stamp, .. } => *stamp,
        }
    }

    fn mark(&mut self, t: u64) {
        match self {
            Node::Leaf { stamp, .. } | Node::Inner { stamp, .. } => *stamp = (*stamp).max(t),
        }
    }
}

/// What [`BTree::changed_since`] reports, in key order.
#[derive(Debug, PartialEq, Eq)]
pub enum Item<'a, K, V> {
    /// An entry of a leaf written at or after the checkpoint time.
    Entry(&'a K, &'a V),
    /// A subtree nobody wrote since: its smallest and largest key (the
    /// previous checkpoint's entries between them still hold).
    Skip(&'a K, &'a K),
}

pub struct BTree<K, V> {
    root: Node<K, V>,
    len: usize,
}

impl<K: Ord + Copy, V> Default for BTree<K, V> {
    fn default() -> Self {
        BTree { root: Node::Leaf { keys: Vec::new(), vals: Vec::new(), stamp: 0 }, len: 0 }
    }
}

impl<K: Ord + Copy, V> BTree<K, V> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, key: &K) -> Option<&V> {
        let mut node = &self.root;
        loop {
            match node {
                Node::Leaf { keys, vals, .. } => return keys.binary_search(key).ok().map(|i| &vals[i]),
                Node::Inner { seps, children, .. } => node = &children[child_index(seps, key)],
            }
        }
    }

    /// The value of `key` to change, its path stamped with `stamp`
    /// (`MarkNode` on the write path). None if absent; the path to where
    /// it would be is stamped all the same (the next incremental
    /// checkpoint then visits that subtree: more work, never a miss).
    pub fn get_mut(&mut self, key: &K, stamp: u64) -> Option<&mut V> {
        let mut node = &mut self.root;
        loop {
            node.mark(stamp);
            match node {
                Node::Leaf { keys, vals, .. } => {
                    let i = keys.binary_search(key).ok()?;
                    return Some(&mut vals[i]);
                }
                Node::Inner { seps, children, .. } => node = &mut children[child_index(seps, key)],
            }
        }
    }

    /// The value of `key`, inserted from `make` if absent; the path is
    /// stamped with `stamp`. A present key costs one search.
    pub fn entry(&mut self, key: K, stamp: u64, make: impl FnOnce() -> V) -> &mut V {
        let (path, depth, found) = self.descend(&key, stamp);
        if let Ok(i) = found {
            return self.at(&path[..depth], i);
        }
        if let Some((sep, right)) = insert(&mut self.root, key, make(), stamp) {
            let left = std::mem::replace(
                &mut self.root,
                Node::Leaf { keys: Vec::new(), vals: Vec::new(), stamp: 0 },
            );
            let stamp = left.stamp().max(right.stamp());
            self.root = Node::Inner { seps: vec![sep], children: vec![left, right], stamp };
        }
        self.len += 1;
        self.get_mut(&key, stamp).expect("present")
    }

    /// Stamps the path to `key` with `stamp`: the child taken at each
    /// inner node, their count, and `key`'s place in its leaf.
    fn descend(&mut self, key: &K, stamp: u64) -> ([u8; MAX_DEPTH], usize, Result<usize, usize>) {
        let mut path = [0u8; MAX_DEPTH];
        let mut depth = 0;
        let mut node = &mut self.root;
        loop {
            node.mark(stamp);
            match node {
                Node::Leaf { keys, .. } => return (path, depth, keys.binary_search(key)),
                Node::Inner { seps, children, .. } => {
                    let c = child_index(seps, key);
                    path[depth] = c as u8;
                    depth += 1;
                    node = &mut children[c];
                }
            }
        }
    }

    /// The value at leaf position `i` at the end of `path` (from [`Self::descend`]).
    fn at(&mut self, path: &[u8], i: usize) -> &mut V {
        let mut node = &mut self.root;
        for &c in path {
            match node {
                Node::Inner { children, .. } => node = &mut children[c as usize],
                Node::Leaf { .. } => unreachable!("a path deeper than the tree"),
            }
        }
        match node {
            Node::Leaf { vals, .. } => &mut vals[i],
            Node::Inner { .. } => unreachable!("a path ending above the leaves"),
        }
    }

    /// Nodes in the tree (what a full traversal visits).
    pub fn node_count(&self) -> u64 {
        fn count<K, V>(n: &Node<K, V>) -> u64 {
            match n {
                Node::Leaf { .. } => 1,
                Node::Inner { children, .. } => 1 + children.iter().map(count).sum::<u64>(),
            }
        }
        count(&self.root)
    }

    /// Every entry in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        let mut out = Vec::with_capacity(self.len);
        collect(&self.root, &mut out);
        out.into_iter()
    }

    /// Builds a tree bottom-up from entries in strictly increasing key
    /// order (fir.txt 4.4.2), every node stamped `stamp`: leaves filled to
    /// [`MAX_ENTRIES`] (the last ones balanced so none is under half),
    /// then each level above them the same way.
    pub fn from_sorted(
        entries: impl IntoIterator<Item = (K, V), IntoIter: ExactSizeIterator>,
        stamp: u64,
    ) -> Self {
        let mut it = entries.into_iter();
        let len = it.len();
        if len == 0 {
            return BTree { root: Node::Leaf { keys: Vec::new(), vals: Vec::new(), stamp }, len };
        }
        let mut level: Vec<(K, Node<K, V>)> = Vec::new();
        let mut last: Option<K> = None;
        for size in chunk_sizes(len) {
            let (keys, vals): (Vec<K>, Vec<V>) = it.by_ref().take(size).unzip();
            let ordered = keys.windows(2).all(|w| w[0] < w[1]) && last.is_none_or(|l| l < keys[0]);
            assert!(ordered, "entries in strictly increasing key order");
            last = keys.last().copied();
            level.push((keys[0], Node::Leaf { keys, vals, stamp }));
        }
        while level.len() > 1 {
            let mut up = Vec::new();
            let mut it = level.into_iter();
            for size in chunk_sizes(it.len()) {
                let group: Vec<(K, Node<K, V>)> = it.by_ref().take(size).collect();
                let first = group[0].0;
                let seps = group[1..].iter().map(|(k, _)| *k).collect();
                let children = group.into_iter().map(|(_, n)| n).collect();
                up.push((first, Node::Inner { seps, children, stamp }));
            }
            level = up;
        }
        BTree { root: level.pop().expect("one root").1, len }
    }

    /// The incremental checkpoint's traversal (fir.txt Algorithm 2,
    /// `GetIncrement`): in key order, every entry of a leaf stamped at or
    /// after `t`, and a [`Item::Skip`] for each subtree stamped before it.
    pub fn changed_since<'a>(&'a self, t: u64, out: &mut Vec<Item<'a, K, V>>) {
        if self.len > 0 {
            changed(&self.root, t, out);
        }
    }

    /// Asserts the invariants in the module comment.
    pub fn check(&self) {
        let mut depth = None;
        check_node(&self.root, 0, &mut depth, None, None, true);
        assert_eq!(self.iter().count(), self.len, "len");
    }
}

/// Which child of an inner node holds `key`.
fn child_index<K: Ord>(seps: &[K], key: &K) -> usize {
    seps.partition_point(|s| s <= key)
}

/// Sizes of the groups `n` items split into: full groups, the last two
/// evened out so none is under half full (one group if `n` fits).
fn chunk_sizes(n: usize) -> Vec<usize> {
    let groups = n.div_ceil(MAX_ENTRIES).max(1);
    let base = n / groups;
    let extra = n % groups;
    (0..groups).map(|g| base + usize::from(g < extra)).collect()
}

/// Inserts an absent key below `node`; a split returns the right half and
/// its smallest key.
fn insert<K: Ord + Copy, V>(node: &mut Node<K, V>, key: K, val: V, stamp: u64) -> Option<(K, Node<K, V>)> {
    node.mark(stamp);
    match node {
        Node::Leaf { keys, vals, .. } => {
            let i = keys.binary_search(&key).expect_err("an absent key");
            keys.insert(i, key);
            vals.insert(i, val);
            if keys.len() <= MAX_ENTRIES {
                return None;
            }
            let half = keys.len() / 2;
            let (rk, rv) = (keys.split_off(half), vals.split_off(half));
            // The new leaf keeps the whole leaf's stamp: a key moved into
            // it stays stamped as high as it was (txn.rs skips restamping
            // keys known to be stamped).
            let stamp = node.stamp();
            Some((rk[0], Node::Leaf { keys: rk, vals: rv, stamp }))
        }
        Node::Inner { seps, children, .. } => {
            let i = child_index(seps, &key);
            let (sep, right) = insert(&mut children[i], key, val, stamp)?;
            seps.insert(i, sep);
            children.insert(i + 1, right);
            if children.len() <= MAX_ENTRIES {
                return None;
            }
            let half = children.len() / 2;
            let rc = children.split_off(half);
            let mut rs = seps.split_off(half - 1);
            let up = rs.remove(0);
            let rstamp = rc.iter().map(Node::stamp).max().unwrap_or(0);
            Some((up, Node::Inner { seps: rs, children: rc, stamp: rstamp }))
        }
    }
}

fn collect<'a, K, V>(node: &'a Node<K, V>, out: &mut Vec<(&'a K, &'a V)>) {
    match node {
        Node::Leaf { keys, vals, .. } => out.extend(keys.iter().zip(vals)),
        Node::Inner { children, .. } => children.iter().for_each(|c| collect(c, out)),
    }
}

fn first_key<K, V>(node: &Node<K, V>) -> &K {
    match node {
        Node::Leaf { keys, .. } => &keys[0],
        Node::Inner { children, .. } => first_key(&children[0]),
    }
}

fn last_key<K, V>(node: &Node<K, V>) -> &K {
    match node {
        Node::Leaf { keys, .. } => keys.last().expect("a non-empty leaf"),
        Node::Inner { children, .. } => last_key(children.last().expect("children")),
    }
}

fn changed<'a, K, V>(node: &'a Node<K, V>, t: u64, out: &mut Vec<Item<'a, K, V>>) {
    if node.stamp() < t {
        out.push(Item::Skip(first_key(node), last_key(node)));
        return;
    }
    match node {
        Node::Leaf { keys, vals, .. } => out.extend(keys.iter().zip(vals).map(|(k, v)| Item::Entry(k, v))),
        Node::Inner { children, .. } => children.iter().for_each(|c| changed(c, t, out)),
    }
}

fn check_node<K: Ord, V>(
    node: &Node<K, V>,
    level: usize,
    depth: &mut Option<usize>,
    lo: Option<&K>,
    hi: Option<&K>,
    root: bool,
) {
    let in_range = |k: &K| lo.is_none_or(|l| k >= l) && hi.is_none_or(|h| k < h);
    match node {
        Node::Leaf { keys, vals, .. } => {
            assert_eq!(keys.len(), vals.len());
            assert!(root || !keys.is_empty(), "an empty leaf below the root");
            assert!(keys.len() <= MAX_ENTRIES, "an overfull leaf");
            assert!(keys.windows(2).all(|w| w[0] < w[1]), "leaf keys in order");
            assert!(keys.iter().all(in_range), "a leaf key outside its separators");
            assert_eq!(*depth.get_or_insert(level), level, "leaves at one depth");
        }
        Node::Inner { seps, children, stamp } => {
            assert_eq!(seps.len() + 1, children.len());
            assert!(children.len() >= 2 && children.len() <= MAX_ENTRIES, "inner fan-out {}", children.len());
            assert!(seps.windows(2).all(|w| w[0] < w[1]), "separators in order");
            for (i, c) in children.iter().enumerate() {
                assert!(c.stamp() <= *stamp, "a child stamped after its parent");
                let clo = if i == 0 { lo } else { Some(&seps[i - 1]) };
                let chi = if i == seps.len() { hi } else { Some(&seps[i]) };
                if i > 0 {
                    assert!(first_key(c) == &seps[i - 1], "separator {i} is its child's smallest key");
                }
                check_node(c, level + 1, depth, clo, chi, false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Against a BTreeMap: inserts and updates in random order, with
        /// stamps; lookups, order, invariants, and the incremental
        /// traversal covering exactly the keys written at or after `t`.
        #[test]
        fn the_tree_matches_a_btreemap_and_its_stamps_cover_every_write(
            ops in proptest::collection::vec((0u64..3000, 0u64..1000), 1..2500),
            t in 0u64..2500,
        ) {
            let mut tree: BTree<u64, u64> = BTree::default();
            let mut model = BTreeMap::new();
            let mut written_at = BTreeMap::new();
            for (stamp, (key, val)) in ops.iter().enumerate() {
                let stamp = stamp as u64 + 1;
                *tree.entry(*key, stamp, || 0) = *val;
                model.insert(*key, *val);
                written_at.insert(*key, stamp);
            }
            tree.check();
            prop_assert_eq!(tree.len(), model.len());
            prop_assert!(tree.iter().map(|(k, v)| (*k, *v)).eq(model.iter().map(|(k, v)| (*k, *v))));
            for k in [0u64, 1, 17, 2999, 5000] {
                prop_assert_eq!(tree.get(&k), model.get(&k));
            }
            let mut items = Vec::new();
            tree.changed_since(t, &mut items);
            // Every key written at or after t is an entry; every key is an
            // entry or inside one skip; all in order.
            let mut covered = Vec::new();
            for item in &items {
                match item {
                    Item::Entry(k, _) => covered.push(**k),
                    Item::Skip(lo, hi) => {
                        for (k, at) in written_at.range(**lo..=**hi) {
                            prop_assert!(*at < t, "key {} written at {} inside a skip of {}..={}", k, at, lo, hi);
                            covered.push(*k);
                        }
                    }
                }
            }
            prop_assert!(covered.iter().copied().eq(model.keys().copied()), "in order, each key once");

            let rebuilt = BTree::from_sorted(model.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>(), 7);
            rebuilt.check();
            prop_assert!(rebuilt.iter().map(|(k, v)| (*k, *v)).eq(model.iter().map(|(k, v)| (*k, *v))));
        }
    }

    #[test]
    fn a_bottom_up_build_is_balanced_and_untouched_subtrees_are_skipped() {
        let n = 64 * 64 * 3 + 5;
        let mut tree = BTree::from_sorted((0..n as u64).map(|k| (k, k)).collect::<Vec<_>>(), 10);
        tree.check();
        assert_eq!(tree.len(), n);
        assert_eq!(tree.node_count(), 193 + 4 + 1, "193 leaves, 4 inner nodes over them, a root");
        // One write at stamp 20: its leaf is listed, the rest skipped.
        *tree.get_mut(&5000, 20).unwrap() = 1;
        let mut items = Vec::new();
        tree.changed_since(15, &mut items);
        let entries = items.iter().filter(|i| matches!(i, Item::Entry(..))).count();
        let skips = items.iter().filter(|i| matches!(i, Item::Skip(..))).count();
        assert!((MAX_ENTRIES / 2..=MAX_ENTRIES).contains(&entries), "one leaf's entries: {entries}");
        assert!(skips <= 3 * MAX_ENTRIES, "skips per level, not per leaf: {skips}");
        assert!(items.contains(&Item::Entry(&5000, &1)));
        items.clear();
        tree.changed_since(21, &mut items);
        assert_eq!(items, vec![Item::Skip(&0, &(n as u64 - 1))], "nothing since 21: one skip");
        assert_eq!(chunk_sizes(65), vec![33, 32]);
        assert_eq!(chunk_sizes(64), vec![64]);
        assert_eq!(chunk_sizes(1), vec![1]);
    }
}
