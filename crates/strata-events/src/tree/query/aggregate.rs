//! Temporal aggregation (chronicledb-pmem.txt section 2.2: "temporal
//! aggregation queries on those materialized aggregates can be answered in
//! logarithmic time"): a subtree entirely inside `[t_lo, t_hi]` contributes
//! its stored aggregates; only the subtrees at the two borders are descended,
//! and leaves are scanned only there.
//!
//! A child's events lie between its key and the next key (or the parent's
//! own bound), so the entries strictly between the border entries are
//! covered by their keys alone; a border entry is decided by its aggregates'
//! time range (covered, disjoint, or descended).

use crate::aggregate::Aggregates;
use crate::ids::EventError;

use super::{QNode, QueryStats};
use crate::tree::TabTree;

impl TabTree {
    /// The aggregates of the events with `t_lo <= ts <= t_hi`.
    pub fn aggregate(&self, t_lo: i64, t_hi: i64) -> Result<Aggregates, EventError> {
        self.aggregate_with_stats(t_lo, t_hi).map(|(a, _)| a)
    }

    /// [`TabTree::aggregate`] and what it touched.
    pub fn aggregate_with_stats(&self, t_lo: i64, t_hi: i64) -> Result<(Aggregates, QueryStats), EventError> {
        let mut out = Aggregates::empty(&self.config.spec);
        let mut stats = QueryStats::default();
        if t_lo <= t_hi {
            let root = self.root_node(&mut stats);
            self.aggregate_node(&root, t_lo, t_hi, None, &mut out, &mut stats)?;
        }
        Ok((out, stats))
    }

    /// Adds the events of `node`'s subtree in `[t_lo, t_hi]` to `out`;
    /// `upper` bounds every timestamp of the subtree, if known.
    fn aggregate_node(
        &self,
        node: &QNode<'_>,
        t_lo: i64,
        t_hi: i64,
        upper: Option<i64>,
        out: &mut Aggregates,
        stats: &mut QueryStats,
    ) -> Result<(), EventError> {
        let spec = &self.config.spec;
        if node.level == 0 {
            let leaf = node.leaf(self)?;
            let r = leaf.time_range(t_lo, t_hi);
            stats.events_scanned += r.len() as u64;
            for i in r {
                out.add_event(spec, leaf.get(i).expect("in range"))?;
            }
            return Ok(());
        }
        let view = node.index(self)?;
        let implicit = self.implicit_child(node);
        let n = view.len();
        let first = view.lower_bound(t_lo).saturating_sub(1);
        let end = view.upper_bound(t_hi);
        for i in first..end {
            let key = view.key_at(i).expect("in range");
            let next_key = if i + 1 < n { view.key_at(i + 1) } else { implicit.or(upper) };
            if t_lo <= key && next_key.is_some_and(|k| k <= t_hi) {
                stats.aggregates_read += 1;
                stats.subtrees_covered += 1;
                out.merge(&self.aggs.of_entry(spec, &view, i)?);
                continue;
            }
            stats.aggregates_read += 1;
            let a = self.aggs.of_entry(spec, &view, i)?;
            if a.count == 0 || a.ts_max < t_lo || a.ts_min > t_hi {
                stats.subtrees_pruned += 1;
            } else if t_lo <= a.ts_min && a.ts_max <= t_hi {
                stats.subtrees_covered += 1;
                out.merge(&a);
            } else {
                let child = self.load(view.child_at(i).expect("in range"), node.level - 1, stats)?;
                self.aggregate_node(&child, t_lo, t_hi, next_key, out, stats)?;
            }
        }
        if implicit.is_some_and(|k| k <= t_hi) {
            let child = self.flank_node(node.level - 1, stats);
            self.aggregate_node(&child, t_lo, t_hi, upper, out, stats)?;
        }
        Ok(())
    }
}
