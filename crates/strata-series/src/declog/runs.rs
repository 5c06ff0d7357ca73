//! Puts a transaction's operations in (series, time) order, one operation
//! per point, for the per-key entries of declog.txt 4.2 (one entry per
//! series key and transaction) and the existence check of 4.1.2.
//!
//! A request arrives row by row (every field of a line is another series),
//! so its operations interleave a few hundred series. A comparison sort of
//! 50,000 of them cost more than the rest of the planning; ids of one
//! request are nearly dense, so a stable counting sort by series id does
//! it in two passes, and each series' run (almost always in time order
//! already) is sorted on its own only when it is not.

use parking_lot::Mutex;

use crate::core::data::PointChange;
use crate::model::{FieldValue, SeriesId, TimestampNs};

/// One planned operation: a point of a series and what to do to it.
pub(crate) type PlannedOp = (SeriesId, TimestampNs, PointChange);

/// Vectors kept for the next transactions, at most this many of each kind.
const MAX_POOLED: usize = 8;

/// Spread of ids (max - min) up to which the counting sort is used, as a
/// multiple of the operation count (its table is that many words).
const DENSE_SPREAD_PER_OP: u64 = 4;

/// Scratch space of the sort, kept between transactions (a request's
/// vectors are megabytes: allocating them afresh faults in new pages).
#[derive(Default)]
pub(crate) struct RunScratch {
    /// Counting sort: the next position of each id.
    next: Vec<u32>,
}

/// The sort's scratch space and the planned operations' vectors of
/// transactions that finished, for the next ones to reuse.
#[derive(Default)]
pub(crate) struct RunBuffers {
    scratch: Mutex<Vec<RunScratch>>,
    ops: Mutex<Vec<Vec<PlannedOp>>>,
}

impl RunBuffers {
    /// A transaction's writes (`Some`) and deletes (`None`), in its order,
    /// as per-series runs of planned operations (writes as inserts).
    pub(crate) fn sort(&self, ops: &mut [(SeriesId, TimestampNs, Option<FieldValue>)]) -> Vec<PlannedOp> {
        let mut scratch = self.scratch.lock().pop().unwrap_or_default();
        let mut out = self.ops.lock().pop().unwrap_or_default();
        sort_into_runs(
            ops,
            |v| v.take().map_or(PointChange::Delete, PointChange::Insert),
            PointChange::Delete,
            &mut scratch,
            &mut out,
        );
        put_back(&self.scratch, scratch);
        out
    }

    /// Keeps `ops` (emptied) for a later transaction.
    pub(crate) fn give_back(&self, mut ops: Vec<PlannedOp>) {
        ops.clear();
        put_back(&self.ops, ops);
    }
}

fn put_back<T>(pool: &Mutex<Vec<T>>, item: T) {
    let mut pool = pool.lock();
    if pool.len() < MAX_POOLED {
        pool.push(item);
    }
}

/// Moves `ops` into `out` (cleared first) in (series, time) order, each
/// through `take`, keeping one operation per point: the transaction's
/// last (`ops` is in transaction order). `out` is usually a vector kept
/// from an earlier transaction; `filler` is any value, for the slots a
/// counting sort scatters into.
///
/// The counting sort reads `ops` in order and scatters into `out`: a
/// request is row-major and its runs column-major, and random writes cost
/// far less than random reads (a gather by a sorted index was most of the
/// sort's time).
pub(crate) fn sort_into_runs<A, B: Clone>(
    ops: &mut [(SeriesId, TimestampNs, A)],
    mut take: impl FnMut(&mut A) -> B,
    filler: B,
    scratch: &mut RunScratch,
    out: &mut Vec<(SeriesId, TimestampNs, B)>,
) {
    assert!(ops.len() < u32::MAX as usize, "a transaction's operations are counted in u32");
    out.clear();
    let in_order = ops.windows(2).all(|w| (w[0].0, w[0].1) <= (w[1].0, w[1].1));
    let (lo, hi) = ops.iter().fold((u64::MAX, 0), |(lo, hi), (id, ..)| (lo.min(id.0), hi.max(id.0)));
    let spread = hi.saturating_sub(lo);
    if in_order || spread > DENSE_SPREAD_PER_OP * ops.len() as u64 {
        out.extend(ops.iter_mut().map(|(id, ts, v)| (*id, *ts, take(v))));
        if !in_order {
            // Stable: of several operations on one point the last stays last.
            out.sort_by_key(|(id, ts, _)| (*id, *ts));
        }
    } else {
        let next = &mut scratch.next;
        next.clear();
        next.resize(spread as usize + 2, 0);
        for (id, ..) in ops.iter() {
            next[(id.0 - lo) as usize + 1] += 1;
        }
        for i in 1..next.len() {
            next[i] += next[i - 1];
        }
        out.resize(ops.len(), (SeriesId(0), 0, filler));
        for (id, ts, v) in ops.iter_mut() {
            let at = &mut next[(id.0 - lo) as usize];
            out[*at as usize] = (*id, *ts, take(v));
            *at += 1;
        }
        for run in out.chunk_by_mut(|a, b| a.0 == b.0) {
            if !run.windows(2).all(|w| w[0].1 <= w[1].1) {
                run.sort_by_key(|(_, ts, _)| *ts);
            }
        }
    }
    // One per point: the transaction's last.
    out.dedup_by(|later, kept| {
        let same = later.0 == kept.0 && later.1 == kept.1;
        if same {
            std::mem::swap(&mut later.2, &mut kept.2);
        }
        same
    });
    debug_assert!(out.windows(2).all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn reference(mut ops: Vec<(SeriesId, TimestampNs, u32)>) -> Vec<(SeriesId, TimestampNs, u32)> {
        ops.sort_by_key(|(id, ts, _)| (*id, *ts));
        let mut out: Vec<(SeriesId, TimestampNs, u32)> = Vec::new();
        for op in ops {
            match out.last_mut() {
                Some(last) if last.0 == op.0 && last.1 == op.1 => *last = op,
                _ => out.push(op),
            }
        }
        out
    }

    #[test]
    fn agrees_with_a_stable_sort_and_keeps_the_last_write_of_a_point() {
        for seed in 0..200u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let n = rng.gen_range(0..300);
            // Dense ids, sparse ids, and duplicates of one point.
            let id_span = if seed % 3 == 0 { 1u64 << 40 } else { 20 };
            let ops: Vec<_> = (0..n)
                .map(|i| (SeriesId(1000 + rng.gen_range(0..id_span)), rng.gen_range(0..8i64), i as u32))
                .collect();
            let mut scratch = RunScratch::default();
            let mut out = vec![(SeriesId(7), 7, 7)];
            sort_into_runs(&mut ops.clone(), |v| *v, 0, &mut scratch, &mut out);
            assert_eq!(out, reference(ops), "seed {seed}");
        }
    }

    #[test]
    fn sorted_input_is_only_deduplicated() {
        let ops = vec![(SeriesId(1), 1, 'a'), (SeriesId(1), 1, 'b'), (SeriesId(2), 0, 'c')];
        let mut out = Vec::new();
        sort_into_runs(&mut ops.clone(), |v| *v, ' ', &mut RunScratch::default(), &mut out);
        assert_eq!(out, vec![(SeriesId(1), 1, 'b'), (SeriesId(2), 0, 'c')]);
    }
}
