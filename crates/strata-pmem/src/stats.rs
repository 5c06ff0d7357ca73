//! Persist accounting (DESIGN.md section 1, "Every backend counts"): lines
//! flushed, fences, bytes persisted and distinct 256-byte media blocks
//! written, per thread and per region.
//!
//! Counting is cheap: each thread owns its counters (plain `Cell`s for the
//! per-thread totals, and per region an atomic block that only this thread
//! writes, so no contended read-modify-write). A region's totals sum the
//! blocks of every thread that touched it.
//!
//! Media blocks: a 64-byte flush costs a whole 256-byte XPLine on Optane. We
//! count the distinct 256-byte blocks among the lines a thread flushes between
//! two of its fences (the write-combining window), so flushing four lines of
//! one block then fencing counts one block.

use std::cell::{Cell, RefCell};
use std::ops::{Add, Sub};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use crate::offset::{CACHE_LINE_BYTES, MEDIA_BLOCK_BYTES};

/// Persist counts. Differences of two snapshots give the cost of the work in between.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PersistStats {
    pub lines_flushed: u64,
    pub fences: u64,
    pub bytes_persisted: u64,
    pub media_blocks_written: u64,
}

impl Add for PersistStats {
    type Output = PersistStats;
    fn add(self, o: PersistStats) -> PersistStats {
        PersistStats {
            lines_flushed: self.lines_flushed + o.lines_flushed,
            fences: self.fences + o.fences,
            bytes_persisted: self.bytes_persisted + o.bytes_persisted,
            media_blocks_written: self.media_blocks_written + o.media_blocks_written,
        }
    }
}

impl Sub for PersistStats {
    type Output = PersistStats;
    fn sub(self, o: PersistStats) -> PersistStats {
        PersistStats {
            lines_flushed: self.lines_flushed.saturating_sub(o.lines_flushed),
            fences: self.fences.saturating_sub(o.fences),
            bytes_persisted: self.bytes_persisted.saturating_sub(o.bytes_persisted),
            media_blocks_written: self.media_blocks_written.saturating_sub(o.media_blocks_written),
        }
    }
}

/// One thread's counters for one region; written only by that thread.
#[derive(Default)]
struct ThreadRegionCounters {
    lines_flushed: AtomicU64,
    fences: AtomicU64,
    bytes_persisted: AtomicU64,
    media_blocks_written: AtomicU64,
}

impl ThreadRegionCounters {
    fn bump(counter: &AtomicU64, by: u64) {
        // Single writer: a load and a store avoid a locked read-modify-write.
        counter.store(counter.load(Ordering::Relaxed) + by, Ordering::Relaxed);
    }

    fn snapshot(&self) -> PersistStats {
        PersistStats {
            lines_flushed: self.lines_flushed.load(Ordering::Relaxed),
            fences: self.fences.load(Ordering::Relaxed),
            bytes_persisted: self.bytes_persisted.load(Ordering::Relaxed),
            media_blocks_written: self.media_blocks_written.load(Ordering::Relaxed),
        }
    }
}

/// The per-region side of the accounting.
#[derive(Default)]
pub(crate) struct RegionStats {
    threads: Mutex<Vec<Arc<ThreadRegionCounters>>>,
}

impl RegionStats {
    pub(crate) fn total(&self) -> PersistStats {
        self.threads.lock().iter().fold(PersistStats::default(), |acc, t| acc + t.snapshot())
    }
}

/// Maximum block ranges remembered per fence window; past it, blocks are
/// counted without de-duplication (an over-estimate only for windows of
/// many scattered flushes).
const MAX_WINDOW_RANGES: usize = 64;

/// The media blocks a thread flushed since its last fence, as inclusive
/// ranges per region: most windows hold one or two flushes, so a scan of
/// a few ranges is cheaper than hashing every block.
#[derive(Default)]
struct FenceWindow {
    ranges: Vec<(usize, u64, u64)>,
}

impl FenceWindow {
    /// Adds blocks `first..=last` of `region`; returns how many were not in
    /// the window yet.
    fn add(&mut self, region: usize, first: u64, last: u64) -> u64 {
        let mut new_blocks = 0;
        let mut block = first;
        while block <= last {
            // The range holding `block`, else where the next range starts.
            let mut covered_to = None;
            let mut next_start = u64::MAX;
            for &(r, a, b) in &self.ranges {
                if r != region {
                    continue;
                }
                if a <= block && block <= b {
                    covered_to = Some(covered_to.map_or(b, |c: u64| c.max(b)));
                } else if a > block {
                    next_start = next_start.min(a);
                }
            }
            match covered_to {
                Some(b) => block = b.saturating_add(1),
                None => {
                    let end = last.min(next_start.saturating_sub(1));
                    new_blocks += end - block + 1;
                    block = end.saturating_add(1);
                }
            }
            if block == 0 {
                break; // wrapped past u64::MAX
            }
        }
        if new_blocks > 0 {
            // A range that ends where this one starts (a stream of appends)
            // grows instead of a new one: the window stays a few ranges.
            let joins = self
                .ranges
                .iter()
                .position(|&(r, a, b)| r == region && a <= first && first <= b.saturating_add(1));
            match joins {
                Some(i) => self.ranges[i].2 = self.ranges[i].2.max(last),
                None if self.ranges.len() < MAX_WINDOW_RANGES => self.ranges.push((region, first, last)),
                None => {}
            }
        }
        new_blocks
    }

    fn clear(&mut self) {
        self.ranges.clear();
    }
}

#[derive(Default)]
struct ThreadState {
    totals: Cell<PersistStats>,
    /// Blocks flushed since this thread's last fence.
    window_blocks: RefCell<FenceWindow>,
    regions: RefCell<Vec<(Weak<RegionStats>, Arc<ThreadRegionCounters>)>>,
}

thread_local! {
    static THREAD: ThreadState = ThreadState::default();
}

/// This thread's persist counts since it started (all regions).
pub fn thread_persist_stats() -> PersistStats {
    THREAD.with(|t| t.totals.get())
}

fn with_counters<R>(region: &Arc<RegionStats>, f: impl FnOnce(&ThreadRegionCounters) -> R) -> R {
    THREAD.with(|t| {
        let mut regions = t.regions.borrow_mut();
        if let Some((_, c)) = regions.iter().find(|(w, _)| w.as_ptr() == Arc::as_ptr(region)) {
            return f(c);
        }
        if regions.len() >= 32 {
            regions.retain(|(w, _)| w.strong_count() > 0);
        }
        let counters = Arc::new(ThreadRegionCounters::default());
        region.threads.lock().push(counters.clone());
        regions.push((Arc::downgrade(region), counters.clone()));
        f(&counters)
    })
}

/// Records a flush of `len_bytes` at byte `offset`.
pub(crate) fn record_flush(region: &Arc<RegionStats>, offset: u64, len_bytes: u64) {
    if len_bytes == 0 {
        return;
    }
    let first_line = offset / CACHE_LINE_BYTES;
    let last_line = (offset + len_bytes - 1) / CACHE_LINE_BYTES;
    let lines = last_line - first_line + 1;
    let first_block = offset / MEDIA_BLOCK_BYTES;
    let last_block = (offset + len_bytes - 1) / MEDIA_BLOCK_BYTES;
    let region_key = Arc::as_ptr(region) as usize;
    let new_blocks = THREAD.with(|t| {
        let mut window = t.window_blocks.borrow_mut();
        let new_blocks = window.add(region_key, first_block, last_block);
        let mut s = t.totals.get();
        s.lines_flushed += lines;
        s.bytes_persisted += len_bytes;
        s.media_blocks_written += new_blocks;
        t.totals.set(s);
        new_blocks
    });
    with_counters(region, |c| {
        ThreadRegionCounters::bump(&c.lines_flushed, lines);
        ThreadRegionCounters::bump(&c.bytes_persisted, len_bytes);
        ThreadRegionCounters::bump(&c.media_blocks_written, new_blocks);
    });
}

/// Records a fence; closes this thread's write-combining window.
pub(crate) fn record_fence(region: &Arc<RegionStats>) {
    THREAD.with(|t| {
        t.window_blocks.borrow_mut().clear();
        let mut s = t.totals.get();
        s.fences += 1;
        t.totals.set(s);
    });
    with_counters(region, |c| ThreadRegionCounters::bump(&c.fences, 1));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_blocks_are_counted_per_fence_window() {
        let region = Arc::new(RegionStats::default());
        let before = thread_persist_stats();
        // Four lines of one 256-byte block, flushed one by one: one block.
        for line in 0..4 {
            record_flush(&region, line * 64, 64);
        }
        record_fence(&region);
        // The same block again after the fence: a second media write.
        record_flush(&region, 0, 8);
        // A range straddling two blocks.
        record_flush(&region, 250, 10);
        record_fence(&region);
        let d = thread_persist_stats() - before;
        assert_eq!(d.lines_flushed, 4 + 1 + 2);
        assert_eq!(d.fences, 2);
        assert_eq!(d.bytes_persisted, 256 + 8 + 10);
        assert_eq!(d.media_blocks_written, 1 + 2);
        assert_eq!(region.total(), d);
    }

    #[test]
    fn fence_window_counts_each_block_once() {
        let mut w = FenceWindow::default();
        assert_eq!(w.add(1, 4, 7), 4);
        assert_eq!(w.add(1, 5, 6), 0, "inside a range");
        assert_eq!(w.add(1, 2, 9), 4, "2, 3, 8 and 9 are new");
        assert_eq!(w.add(2, 4, 4), 1, "another region");
        assert_eq!(w.add(1, 0, 20), 21 - 8);
        w.clear();
        assert_eq!(w.add(1, 4, 7), 4, "a fence empties the window");
        // Against a set of blocks, over seeded random flushes.
        let mut rng = 0x5eed_u64;
        for _ in 0..200 {
            let (mut w, mut set) = (FenceWindow::default(), std::collections::HashSet::new());
            for _ in 0..20 {
                rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let (region, first) = ((rng >> 60) as usize % 2, (rng >> 33) % 40);
                let last = first + (rng >> 20) % 6;
                let expect = (first..=last).filter(|b| set.insert((region, *b))).count() as u64;
                assert_eq!(w.add(region, first, last), expect, "seed 0x5eed");
            }
        }
    }

    #[test]
    fn region_totals_sum_threads() {
        let region = Arc::new(RegionStats::default());
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    record_flush(&region, 0, 64);
                    record_fence(&region);
                });
            }
        });
        let t = region.total();
        assert_eq!((t.lines_flushed, t.fences, t.media_blocks_written), (2, 2, 2));
    }
}
