//! Which points may exist, so a written point is classified by existence
//! (declog.txt 4.1.2, rule 2: an insert touches nothing that exists), not
//! by time order: an out-of-order point that is new is still an insert.
//!
//! Per series, [`TouchedMap`] keeps:
//! - `max`: no point above it was ever planned, recovered or loaded;
//! - `spans`: sorted, disjoint time ranges covering every timestamp a
//!   planned write or delete named since open, and the recovered data
//!   (a superset: spans merge when there are too many);
//! - `in_flight`: per planned transaction not yet applied, the range of its
//!   points of this series.
//!
//! A point is surely new when it lies above `max` or in no span. A point in
//! a span is an update when it lies in another transaction's in-flight
//! range (two concurrent writes of one point must not both be LSN-0
//! inserts: their replay order could differ from the live engine's), else
//! when the series' data may hold it ([`crate::core::data::DataPart::may_hold`]:
//! exact in DRAM, by time range in sealed blocks, and points deleted since
//! the last checkpoint count, so a re-insert of a deleted point is ordered
//! after the delete). Everything here runs under the protocol's planning
//! mutex.
//!
//! The crash lines plant [`PlantedBug`]s here (tests and the `crashtest`
//! feature only, through `crate::crashtest_hooks`) to show that they catch a
//! classification that lets a write of an existing or in-flight point
//! become an insert.

use foldhash::HashMap;

use crate::core::SeriesCore;
use crate::model::{SeriesId, TimestampNs};

/// Spans kept per series before the two closest merge.
pub const MAX_SPANS: usize = 16;

/// A transaction's token while it is planned and not yet applied.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PlanToken(pub u64);

/// One series' touched time (see the module comment).
#[derive(Clone, Debug, Default)]
pub(crate) struct Touched {
    max: TimestampNs,
    spans: Vec<(TimestampNs, TimestampNs)>,
    in_flight: Vec<(PlanToken, TimestampNs, TimestampNs)>,
}

impl Touched {
    fn from_range(range: Option<(TimestampNs, TimestampNs)>) -> Touched {
        match range {
            Some((min, max)) => Touched { max, spans: vec![(min, max)], in_flight: Vec::new() },
            None => Touched { max: TimestampNs::MIN, spans: Vec::new(), in_flight: Vec::new() },
        }
    }

    fn in_spans(&self, ts: TimestampNs) -> bool {
        let i = self.spans.partition_point(|(_, hi)| *hi < ts);
        self.spans.get(i).is_some_and(|(lo, _)| *lo <= ts)
    }

    fn add_span(&mut self, lo: TimestampNs, hi: TimestampNs) {
        debug_assert!(lo <= hi);
        self.max = self.max.max(hi);
        // Spans overlapping or touching [lo, hi] merge with it.
        let first = self.spans.partition_point(|(_, h)| h.saturating_add(1) < lo);
        let mut last = first;
        let (mut lo, mut hi) = (lo, hi);
        while last < self.spans.len() && self.spans[last].0 <= hi.saturating_add(1) {
            lo = lo.min(self.spans[last].0);
            hi = hi.max(self.spans[last].1);
            last += 1;
        }
        self.spans.splice(first..last, [(lo, hi)]);
        if self.spans.len() > MAX_SPANS {
            let i = (0..self.spans.len() - 1)
                .min_by_key(|&i| self.spans[i + 1].0.abs_diff(self.spans[i].1))
                .expect("more than one span");
            self.spans[i].1 = self.spans[i + 1].1;
            self.spans.remove(i + 1);
        }
        debug_assert!(self.spans.windows(2).all(|w| w[0].1 < w[1].0), "spans sorted and disjoint");
    }
}

/// A broken classification the crash lines plant to show they catch it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PlantedBug {
    None,
    /// Every written point is an insert (LSN 0), as if nothing existed.
    EveryWriteAnInsert,
    /// The ranges of transactions in flight are ignored: a point another
    /// transaction of the group is writing, not yet applied, is an insert.
    IgnoreInFlight,
}

#[cfg(any(test, feature = "crashtest"))]
thread_local! {
    /// The bug planted on this thread (the thread that plans transactions).
    pub static PLANTED_BUG: std::cell::Cell<PlantedBug> = const { std::cell::Cell::new(PlantedBug::None) };
}

#[cfg(any(test, feature = "crashtest"))]
fn planted() -> PlantedBug {
    PLANTED_BUG.with(|b| b.get())
}

#[cfg(not(any(test, feature = "crashtest")))]
fn planted() -> PlantedBug {
    PlantedBug::None
}

/// How a written point is classified.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Existence {
    /// Surely new: an insert (LSN 0).
    New,
    /// May exist, or is being written by a transaction in flight: an update.
    MayExist,
}

/// Per series, what was touched (see the module comment).
#[derive(Default)]
pub(crate) struct TouchedMap {
    series: HashMap<SeriesId, Touched>,
    next_token: u64,
}

impl TouchedMap {
    /// After recovery: each replayed series' range of log timestamps
    /// (deletes included); the data's own range is added when a series is
    /// first classified.
    pub(crate) fn from_replay(
        ranges: impl IntoIterator<Item = (SeriesId, (TimestampNs, TimestampNs))>,
    ) -> Self {
        let mut map = TouchedMap::default();
        for (id, range) in ranges {
            map.series.insert(id, Touched::from_range(Some(range)));
        }
        map
    }

    /// Series `id`'s touched time (from its data when first asked).
    pub(crate) fn series(&mut self, core: &SeriesCore, id: SeriesId) -> &mut Touched {
        self.series.entry(id).or_insert_with(|| Touched::from_range(core.data().ts_range(id)))
    }

    /// A token for a transaction about to be planned.
    pub(crate) fn token(&mut self) -> PlanToken {
        self.next_token += 1;
        PlanToken(self.next_token)
    }

    /// Transaction `token` is applied (or failed): its ranges of `ids` are
    /// no longer in flight (their spans stay).
    pub(crate) fn applied(&mut self, token: PlanToken, ids: &[SeriesId]) {
        for id in ids {
            if let Some(t) = self.series.get_mut(id) {
                t.in_flight.retain(|(k, ..)| *k != token);
            }
        }
    }
}

impl Touched {
    /// Classifies a write of `(id, ts)` (this series) by a transaction
    /// being planned, before its own range is planned.
    pub(crate) fn classify(&self, core: &SeriesCore, id: SeriesId, ts: TimestampNs) -> Existence {
        let bug = planted();
        if ts > self.max || !self.in_spans(ts) || bug == PlantedBug::EveryWriteAnInsert {
            return Existence::New;
        }
        if bug != PlantedBug::IgnoreInFlight
            && self.in_flight.iter().any(|(_, lo, hi)| (*lo..=*hi).contains(&ts))
        {
            return Existence::MayExist;
        }
        if core.data().may_hold(id, ts) {
            Existence::MayExist
        } else {
            Existence::New
        }
    }

    /// Records that transaction `token` plans writes or deletes in
    /// `[lo, hi]`, in flight until [`TouchedMap::applied`].
    pub(crate) fn plan(&mut self, token: PlanToken, lo: TimestampNs, hi: TimestampNs) {
        self.add_span(lo, hi);
        self.in_flight.push((token, lo, hi));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(t: &Touched) -> Vec<(i64, i64)> {
        t.spans.clone()
    }

    #[test]
    fn spans_merge_when_they_overlap_or_touch_and_stay_bounded() {
        let mut t = Touched::from_range(None);
        t.add_span(10, 20);
        t.add_span(40, 50);
        assert_eq!(spans(&t), [(10, 20), (40, 50)]);
        assert!(t.in_spans(15) && !t.in_spans(30) && t.in_spans(40) && !t.in_spans(51));
        t.add_span(21, 25);
        assert_eq!(spans(&t), [(10, 25), (40, 50)], "touching spans merge");
        t.add_span(0, 45);
        assert_eq!(spans(&t), [(0, 50)], "a span over several swallows them");
        assert_eq!(t.max, 50);
        for i in 0..40 {
            t.add_span(100 + i * 10, 100 + i * 10 + 1);
        }
        assert!(t.spans.len() <= MAX_SPANS);
        for i in 0..40 {
            assert!(
                t.in_spans(100 + i * 10) && t.in_spans(101 + i * 10),
                "merging keeps every planned timestamp"
            );
        }
        t.add_span(i64::MIN, i64::MIN);
        t.add_span(i64::MAX, i64::MAX);
        assert!(t.in_spans(i64::MIN) && t.in_spans(i64::MAX));
    }

    #[test]
    fn a_random_sequence_of_spans_covers_every_point_it_was_given() {
        use rand::{Rng, SeedableRng};
        let seed = 0x7bc4_u64;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut next = || rng.gen::<u64>();
        let mut t = Touched::from_range(Some((500, 600)));
        let mut given = vec![500, 600];
        for _ in 0..500 {
            let lo = (next() % 10_000) as i64;
            let hi = lo + (next() % 50) as i64;
            t.add_span(lo, hi);
            given.extend([lo, hi]);
        }
        for ts in given {
            assert!(t.in_spans(ts), "seed {seed:#x}: {ts} lost");
        }
        assert!(t.spans.windows(2).all(|w| w[0].1 < w[1].0), "seed {seed:#x}");
    }
}
