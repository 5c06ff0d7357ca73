//! The last-point cache (issue 21, item 2): per series, its newest point
//! kept in DRAM beside the series' data, so `last(*)` and TSBS's
//! `lastpoint` read no block. InfluxDB keeps no such cache (it reads the
//! newest TSM block); QuestDB answers `LATEST ON` from its partition
//! index. We keep the point itself, which costs one value per series.
//!
//! Owns: the cached state and its epoch. The series' data
//! ([`crate::series_data::SeriesData`]) tells it of every change:
//! - a write that lands at or after the cached time replaces it (a write
//!   before it changes nothing, whether it is out of order or an
//!   overwrite of an older point);
//! - a delete covering the cached time makes it unknown (the next newest
//!   point may be anywhere, and reading it is I/O, which the apply gate
//!   must not wait for);
//! - loading sealed blocks or tombstones at recovery makes it unknown.
//!
//! An unknown entry is filled by a read: the reader takes the epoch with
//! the lookup, reads outside the gate, and fills the entry only if the
//! epoch is unchanged, i.e. no change happened between lookup and fill, so
//! the read saw the state the lookup did.

use crate::model::{FieldValue, TimeRange, TimestampNs};

/// What the cache knows of a series' newest point.
#[derive(Clone, Debug, PartialEq)]
pub enum LastPoint {
    /// Not known: a read must find it.
    Unknown,
    /// The series holds no point.
    Empty,
    /// The newest point.
    Point(TimestampNs, FieldValue),
}

/// One series' cache entry.
#[derive(Clone, Debug)]
pub struct LastPointCache {
    state: LastPoint,
    /// Bumped by every change of the series' data.
    epoch: u64,
}

impl LastPointCache {
    /// The entry of a series created with no data.
    pub fn empty() -> LastPointCache {
        LastPointCache { state: LastPoint::Empty, epoch: 0 }
    }

    pub fn state(&self) -> &LastPoint {
        &self.state
    }

    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Whether a write at `ts` would become the newest point.
    fn takes(&self, ts: TimestampNs) -> bool {
        match &self.state {
            LastPoint::Unknown => false,
            LastPoint::Empty => true,
            LastPoint::Point(last, _) => ts >= *last,
        }
    }

    /// `value` now is the point at `ts` (cloned only when it is the newest).
    pub fn wrote(&mut self, ts: TimestampNs, value: &FieldValue) {
        self.epoch += 1;
        if self.takes(ts) {
            self.state = LastPoint::Point(ts, value.clone());
        }
    }

    /// [`Self::wrote`] with a value the caller no longer needs.
    pub fn wrote_owned(&mut self, ts: TimestampNs, value: FieldValue) {
        self.epoch += 1;
        if self.takes(ts) {
            self.state = LastPoint::Point(ts, value);
        }
    }

    /// The points in `range` are gone.
    pub fn deleted(&mut self, range: TimeRange) {
        self.epoch += 1;
        if matches!(self.state, LastPoint::Point(last, _) if range.contains(last)) {
            self.state = LastPoint::Unknown;
        }
    }

    /// Data arrived that the cache did not see (recovery).
    pub fn forget(&mut self) {
        self.epoch += 1;
        self.state = LastPoint::Unknown;
    }

    /// A read found `newest` (None: no point) in the state of `epoch`;
    /// kept only if nothing changed since. Returns whether it was kept.
    pub fn fill(&mut self, epoch: u64, newest: Option<(TimestampNs, FieldValue)>) -> bool {
        if epoch != self.epoch || self.state != LastPoint::Unknown {
            return false;
        }
        self.state = match newest {
            Some((ts, v)) => LastPoint::Point(ts, v),
            None => LastPoint::Empty,
        };
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(x: f64) -> FieldValue {
        FieldValue::Float(x)
    }

    #[test]
    fn writes_at_or_after_the_newest_replace_it_and_older_ones_do_not() {
        let mut c = LastPointCache::empty();
        c.wrote(10, &f(1.0));
        assert_eq!(c.state(), &LastPoint::Point(10, f(1.0)));
        c.wrote(5, &f(2.0)); // out of order
        assert_eq!(c.state(), &LastPoint::Point(10, f(1.0)));
        c.wrote_owned(10, f(3.0)); // overwrite of the newest
        assert_eq!(c.state(), &LastPoint::Point(10, f(3.0)));
        c.wrote(11, &f(4.0));
        assert_eq!(c.state(), &LastPoint::Point(11, f(4.0)));
    }

    #[test]
    fn a_delete_of_the_newest_makes_it_unknown_until_a_fill_of_the_same_epoch() {
        let mut c = LastPointCache::empty();
        c.wrote(10, &f(1.0));
        c.deleted(TimeRange { min_ns: 0, max_ns: 5 });
        assert_eq!(c.state(), &LastPoint::Point(10, f(1.0)), "the newest is outside the delete");
        c.deleted(TimeRange { min_ns: 8, max_ns: 12 });
        assert_eq!(c.state(), &LastPoint::Unknown);
        c.wrote(20, &f(2.0));
        assert_eq!(c.state(), &LastPoint::Unknown, "older points may still be newer than nothing");
        let epoch = c.epoch();
        c.wrote(3, &f(9.0)); // a change between lookup and fill
        assert!(!c.fill(epoch, Some((20, f(2.0)))), "a stale read is not kept");
        assert_eq!(c.state(), &LastPoint::Unknown);
        assert!(c.fill(c.epoch(), Some((20, f(2.0)))));
        assert_eq!(c.state(), &LastPoint::Point(20, f(2.0)));
    }

    #[test]
    fn forgetting_and_filling_with_nothing_gives_empty() {
        let mut c = LastPointCache::empty();
        c.wrote(1, &f(1.0));
        c.forget();
        assert_eq!(c.state(), &LastPoint::Unknown);
        assert!(c.fill(c.epoch(), None));
        assert_eq!(c.state(), &LastPoint::Empty);
        assert!(!c.fill(c.epoch(), Some((1, f(1.0)))), "only an unknown entry is filled");
        c.wrote(2, &f(2.0));
        assert_eq!(c.state(), &LastPoint::Point(2, f(2.0)));
    }
}
