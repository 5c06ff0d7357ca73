//! Window aggregates from one snapshot (`SeriesStore::window_aggregates`):
//! a sealed block is answered from its summary, without reading it, when it
//! has one, lies inside the range and inside one window, no tombstone that
//! applies to it overlaps it, and no other block or DRAM point of the series
//! overlaps its time span (so no other point can override one of its
//! points). Every other block and the DRAM points are read and decoded as
//! `super::read` does, and everything is folded in time order
//! ([`WindowFold`]). The snapshot is copied under the apply gate, block I/O
//! happens after it, as for every read.

use super::read::SeriesSnapshot;
use super::SeriesCore;
use crate::block_file::BlockIndexEntry;
use crate::error::EngineError;
use crate::model::{SeriesId, TimeRange};
use crate::window_agg::{PartialAggregate, WindowFold, WindowSpec};

impl SeriesCore {
    /// Per series of `ids`, its partial aggregates in `range` per window of
    /// `window` (None: one for the range), by window start, from one
    /// snapshot; blocks are answered from their summaries where they can be.
    pub fn window_aggregates(
        &self,
        ids: &[SeriesId],
        range: TimeRange,
        window: Option<WindowSpec>,
    ) -> Result<Vec<Vec<PartialAggregate>>, EngineError> {
        self.read_each(ids, range, |snap, _, id| aggregate(snap, id, range, window))
    }
}

/// Which of `snap`'s blocks its summary answers (see the module comment),
/// by index into `snap.sealed`.
fn summarized(snap: &SeriesSnapshot, fold: &WindowFold, range: TimeRange) -> Vec<bool> {
    snap.sealed
        .iter()
        .zip(snap.isolated())
        .map(|((_, b), isolated)| {
            let e: &BlockIndexEntry = &b.entry;
            e.summary.is_some()
                && isolated
                && range.min_ns <= e.min_ts
                && e.max_ts <= range.max_ns
                && fold.one_window(e.min_ts, e.max_ts)
                && !snap
                    .tombstones
                    .iter()
                    .any(|t| t.upto_file_seq >= b.file_seq && t.range.overlaps(e.min_ts, e.max_ts))
        })
        .collect()
}

/// One series' partials: summaries of the blocks [`summarized`] accepts,
/// the rest read, merged in time order.
fn aggregate(
    mut snap: SeriesSnapshot,
    id: SeriesId,
    range: TimeRange,
    window: Option<WindowSpec>,
) -> Result<Vec<PartialAggregate>, EngineError> {
    let mut fold = WindowFold::new(range, window);
    let answered = summarized(&snap, &fold, range);
    let mut summaries: Vec<BlockIndexEntry> = Vec::new();
    let mut rest = Vec::new();
    for (block, answered) in std::mem::take(&mut snap.sealed).into_iter().zip(answered) {
        if answered {
            summaries.push(block.1.entry);
        } else {
            rest.push(block);
        }
    }
    snap.sealed = rest;
    summaries.sort_by_key(|e| e.min_ts);
    let points = snap.materialize(id, range)?;
    let mut points = points.iter().peekable();
    for e in &summaries {
        while let Some((t, v)) = points.next_if(|(t, _)| *t < e.min_ts) {
            fold.add_point(*t, v);
        }
        let s = e.summary.as_ref().expect("summarized blocks have a summary");
        fold.add_summary(e.min_ts, e.max_ts, u64::from(e.point_count), s);
    }
    for (t, v) in points {
        fold.add_point(*t, v);
    }
    Ok(fold.finish())
}
