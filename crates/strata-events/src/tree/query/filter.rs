//! Filter queries on a secondary attribute (chronicledb-pmem.txt section
//! 2.2, R3, lightweight indexes: "by intersecting a query range on a
//! secondary attribute with its computed min/max range, large portions of
//! the stream can be excluded from processing"): a depth-first walk in time
//! order that skips every subtree whose time range or whose `[min, max]` of
//! the attribute misses the query; the aggregates come from the index
//! entries or from the PMem aggregate array. Without min and max kept for
//! the attribute only the time range prunes.

use crate::event::attr_as_f64;
use crate::ids::EventError;

use super::{QNode, QueryStats};
use crate::tree::TabTree;

/// The query of one filter walk.
struct Filter {
    attr: usize,
    lo: f64,
    hi: f64,
    t_lo: i64,
    t_hi: i64,
    /// Whether the spec keeps min and max of the attribute.
    prunable: bool,
}

impl TabTree {
    /// The events with `t_lo <= ts <= t_hi` whose attribute `attr` (read as
    /// a number) lies in `[lo, hi]`, in timestamp order. NaN never matches.
    pub fn filter(
        &self,
        attr: usize,
        lo: f64,
        hi: f64,
        t_lo: i64,
        t_hi: i64,
    ) -> Result<Vec<Vec<u8>>, EventError> {
        self.filter_with_stats(attr, lo, hi, t_lo, t_hi).map(|(v, _)| v)
    }

    /// [`TabTree::filter`] and what it touched.
    pub fn filter_with_stats(
        &self,
        attr: usize,
        lo: f64,
        hi: f64,
        t_lo: i64,
        t_hi: i64,
    ) -> Result<(Vec<Vec<u8>>, QueryStats), EventError> {
        let schema = &self.config.schema;
        let a = schema.attrs().get(attr).ok_or_else(|| {
            EventError::invalid(format!("no attribute {attr}: the schema has {}", schema.attr_count()))
        })?;
        if !a.ty.is_numeric() {
            return Err(EventError::invalid(format!(
                "attribute '{}' is a {}, not a number",
                a.name,
                a.ty.name()
            )));
        }
        let keeps = self.config.spec.per_attr()[attr];
        let f = Filter { attr, lo, hi, t_lo, t_hi, prunable: keeps.min && keeps.max };
        let mut out = Vec::new();
        let mut stats = QueryStats::default();
        if t_lo <= t_hi && lo <= hi {
            let root = self.root_node(&mut stats);
            self.filter_node(&root, &f, &mut out, &mut stats)?;
        }
        Ok((out, stats))
    }

    fn filter_node(
        &self,
        node: &QNode<'_>,
        f: &Filter,
        out: &mut Vec<Vec<u8>>,
        stats: &mut QueryStats,
    ) -> Result<(), EventError> {
        let schema = &self.config.schema;
        if node.level == 0 {
            let leaf = node.leaf(self)?;
            let r = leaf.time_range(f.t_lo, f.t_hi);
            stats.events_scanned += r.len() as u64;
            for i in r {
                let e = leaf.get(i).expect("in range");
                if attr_as_f64(schema, e, f.attr).is_some_and(|v| f.lo <= v && v <= f.hi) {
                    out.push(e.to_vec());
                }
            }
            return Ok(());
        }
        let view = node.index(self)?;
        let first = view.lower_bound(f.t_lo).saturating_sub(1);
        let end = view.upper_bound(f.t_hi);
        for i in first..end {
            stats.aggregates_read += 1;
            let a = self.aggs.of_entry(&self.config.spec, &view, i)?;
            let time_miss = a.count == 0 || a.ts_max < f.t_lo || a.ts_min > f.t_hi;
            let v = a.attrs[f.attr];
            let attr_miss =
                f.prunable && (v.max.is_some_and(|max| max < f.lo) || v.min.is_some_and(|min| min > f.hi));
            if time_miss || attr_miss {
                stats.subtrees_pruned += 1;
                continue;
            }
            let child = self.load(view.child_at(i).expect("in range"), node.level - 1, stats)?;
            self.filter_node(&child, f, out, stats)?;
        }
        if self.implicit_child(node).is_some_and(|k| k <= f.t_hi) {
            let child = self.flank_node(node.level - 1, stats);
            self.filter_node(&child, f, out, stats)?;
        }
        Ok(())
    }
}
