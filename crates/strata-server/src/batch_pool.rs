//! Parsed-request vectors kept from one `/write` to the next (issue 14,
//! item 7: no fresh megabyte allocations on the HTTP path). A request of
//! 5,000 lines parses into vectors of hundreds of KB; allocated afresh for
//! every request, their pages are faulted in (and zeroed by the kernel)
//! every time, and every point allocates its line's names. A few batches
//! are kept, their points too, for the next requests to parse into.

use parking_lot::Mutex;
use strata_influx::line_protocol::ParsedBatch;

/// Batches kept (about one per concurrent writer).
const KEPT_BATCHES: usize = 8;
/// A batch with room for more lines than this is dropped, not kept (one
/// huge request does not pin its memory for good).
const KEPT_MAX_LINES: usize = 20_000;

#[derive(Default)]
pub struct BatchPool {
    kept: Mutex<Vec<ParsedBatch>>,
}

/// A batch lent from a [`BatchPool`], given back when dropped.
pub struct LentBatch<'p> {
    pool: &'p BatchPool,
    batch: Option<ParsedBatch>,
}

impl std::ops::Deref for LentBatch<'_> {
    type Target = ParsedBatch;
    fn deref(&self) -> &ParsedBatch {
        self.batch.as_ref().expect("lent until dropped")
    }
}

impl std::ops::DerefMut for LentBatch<'_> {
    fn deref_mut(&mut self) -> &mut ParsedBatch {
        self.batch.as_mut().expect("lent until dropped")
    }
}

impl Drop for LentBatch<'_> {
    fn drop(&mut self) {
        if let Some(batch) = self.batch.take() {
            self.pool.give_back(batch);
        }
    }
}

impl BatchPool {
    /// An empty batch, with the room an earlier request left when there is one.
    pub fn take(&self) -> ParsedBatch {
        self.kept.lock().pop().unwrap_or_default()
    }

    /// [`Self::take`], given back when the returned guard drops.
    pub fn lend(&self) -> LentBatch<'_> {
        LentBatch { pool: self, batch: Some(self.take()) }
    }

    /// Keeps `batch` (emptied) for a later request, unless enough are kept
    /// or it is too large to keep.
    pub fn give_back(&self, mut batch: ParsedBatch) {
        if batch.points.capacity().max(batch.spare_points()) > KEPT_MAX_LINES {
            return;
        }
        batch.recycle();
        let mut kept = self.kept.lock();
        if kept.len() < KEPT_BATCHES {
            kept.push(batch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_influx::line_protocol::{parse_lines_into, LineLimits, Precision};

    #[test]
    fn a_batch_given_back_is_handed_out_again_empty_with_its_room() {
        let pool = BatchPool::default();
        let mut batch = pool.take();
        parse_lines_into(
            b"m f=1 1\nm f=2 2\nbad line\n",
            Precision::Nanoseconds,
            0,
            &LineLimits::default(),
            &mut batch,
        );
        assert_eq!((batch.points.len(), batch.errors.len()), (2, 1));
        let room = batch.points.capacity();
        pool.give_back(batch);
        let again = pool.take();
        assert!(again.points.is_empty() && again.line_numbers.is_empty() && again.errors.is_empty());
        assert_eq!(again.points.capacity(), room, "the room is kept");
        let mut huge = ParsedBatch::default();
        huge.points.reserve(KEPT_MAX_LINES + 1);
        pool.give_back(huge);
        assert_eq!(pool.take().points.capacity(), 0, "a huge batch is not kept");
        {
            let mut lent = pool.lend();
            lent.points.reserve(10);
        }
        assert!(pool.take().points.capacity() >= 10, "a lent batch comes back when dropped");
    }
}
