//! Queries of an [`EventStream`] (chronicledb-pmem.txt section 2.2, R2/R3,
//! with section 4.3's queue): the tree's answer merged with the events still
//! in the out-of-order queue, in time order (the tree's first on equal
//! timestamps: they arrived first).

use crate::aggregate::Aggregates;
use crate::event::attr_as_f64;
use crate::ids::EventError;
use crate::tree::MergeByTs;

use super::EventStream;

impl EventStream {
    /// Time travel: events with `t_lo <= ts <= t_hi`, in time order.
    pub fn range(&self, t_lo: i64, t_hi: i64) -> Result<Vec<Vec<u8>>, EventError> {
        self.range_iter(t_lo, t_hi)?.collect()
    }

    /// [`EventStream::range`] read lazily: leaves are loaded as the caller
    /// advances, so a caller that stops early (`LIMIT`) reads only what it
    /// consumed (the queue's events of the range are collected up front).
    pub fn range_iter(
        &self,
        t_lo: i64,
        t_hi: i64,
    ) -> Result<impl Iterator<Item = Result<Vec<u8>, EventError>> + '_, EventError> {
        let extra = self.queue.get_range(t_lo, t_hi)?.to_vecs();
        Ok(self.tree.range_merged(t_lo, t_hi, extra))
    }

    /// Every event in time order.
    pub fn replay(&self) -> Result<Vec<Vec<u8>>, EventError> {
        self.range(i64::MIN, i64::MAX)
    }

    /// The events with timestamp `t`.
    pub fn point(&self, t: i64) -> Result<Vec<Vec<u8>>, EventError> {
        self.range(t, t)
    }

    /// Temporal aggregation: the tree's aggregates merged with the queue's.
    pub fn aggregate(&self, t_lo: i64, t_hi: i64) -> Result<Aggregates, EventError> {
        let mut aggs = self.tree.aggregate(t_lo, t_hi)?;
        let extra = self.queue.get_range(t_lo, t_hi)?;
        aggs.merge(&Aggregates::of_events(&self.config.tree.spec, extra.iter())?);
        Ok(aggs)
    }

    /// Events with `t_lo <= ts <= t_hi` whose attribute `attr` lies in
    /// `[lo, hi]`, in time order.
    pub fn filter(
        &self,
        attr: usize,
        lo: f64,
        hi: f64,
        t_lo: i64,
        t_hi: i64,
    ) -> Result<Vec<Vec<u8>>, EventError> {
        let tree = self.tree.filter(attr, lo, hi, t_lo, t_hi)?;
        let schema = &self.config.tree.schema;
        let extra: Vec<Vec<u8>> = self
            .queue
            .get_range(t_lo, t_hi)?
            .iter()
            .filter(|e| attr_as_f64(schema, e, attr).is_some_and(|v| lo <= v && v <= hi))
            .map(<[u8]>::to_vec)
            .collect();
        MergeByTs::new(tree.into_iter().map(Ok), extra.into_iter()).collect()
    }
}
