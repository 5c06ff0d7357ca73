//! Test helpers of the OOO queues: the reference model (the pushed events,
//! sorted stably by timestamp) and seeded event generators.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{event_ts, EventList, OooQueue};

/// The reference model: every event in arrival order.
#[derive(Default, Debug, Clone)]
pub(crate) struct Model {
    pub(crate) events: Vec<Vec<u8>>,
}

impl Model {
    pub(crate) fn push(&mut self, e: &[u8]) {
        self.events.push(e.to_vec());
    }

    pub(crate) fn len(&self) -> u64 {
        self.events.len() as u64
    }

    /// Events with `lo <= ts <= hi`, sorted stably by timestamp (ties in arrival order).
    pub(crate) fn range(&self, lo: i64, hi: i64) -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> =
            self.events.iter().filter(|e| (lo..=hi).contains(&event_ts(e))).cloned().collect();
        v.sort_by_key(|e| event_ts(e));
        v
    }

    pub(crate) fn sorted(&self) -> Vec<Vec<u8>> {
        self.range(i64::MIN, i64::MAX)
    }

    pub(crate) fn clear(&mut self) {
        self.events.clear();
    }
}

/// An event: timestamp, a 4-byte arrival number, then `fill` bytes from `rng`.
pub(crate) fn make_event(rng: &mut ChaCha8Rng, ts: i64, arrival: u32, event_bytes: usize) -> Vec<u8> {
    let mut e = ts.to_le_bytes().to_vec();
    e.extend_from_slice(&arrival.to_le_bytes());
    while e.len() < event_bytes {
        e.push(rng.gen());
    }
    e.truncate(event_bytes);
    e
}

/// A timestamp for the `i`th arrival: mostly near `i` (out of order by a
/// little), sometimes anywhere in the span, from a coarse grid so equal
/// timestamps are common.
pub(crate) fn ooo_ts(rng: &mut ChaCha8Rng, i: u64) -> i64 {
    let t = if rng.gen_bool(0.1) {
        rng.gen_range(-50..(i as i64 + 50))
    } else {
        i as i64 + rng.gen_range(-20..=20)
    };
    t.div_euclid(4) * 4
}

pub(crate) fn vecs(list: &EventList) -> Vec<Vec<u8>> {
    list.to_vecs()
}

/// Asserts that `q` holds exactly the model's events, in every query form.
pub(crate) fn assert_matches_model(q: &dyn OooQueue, model: &Model, rng: &mut ChaCha8Rng, ctx: &str) {
    assert_eq!(q.len(), model.len(), "{ctx}: len");
    assert_eq!(q.bytes_used(), model.len() * q.event_bytes() as u64, "{ctx}: bytes_used");
    assert_eq!(vecs(&q.sorted().unwrap()), model.sorted(), "{ctx}: sorted");
    for _ in 0..3 {
        let lo = rng.gen_range(-60..(model.len() as i64 + 60));
        let hi = lo + rng.gen_range(0..30);
        assert_eq!(vecs(&q.get_range(lo, hi).unwrap()), model.range(lo, hi), "{ctx}: range {lo}..={hi}");
        let t = model.events.get(rng.gen_range(0..model.events.len().max(1))).map_or(lo, |e| event_ts(e));
        assert_eq!(vecs(&q.point(t).unwrap()), model.range(t, t), "{ctx}: point {t}");
    }
    assert!(q.get_range(10, 9).unwrap().is_empty(), "{ctx}: an inverted range is empty");
}

/// The `i`th arrival's event with an [`ooo_ts`] timestamp.
pub(crate) fn ooo_event(rng: &mut ChaCha8Rng, i: u64, event_bytes: usize) -> Vec<u8> {
    let ts = ooo_ts(rng, i);
    make_event(rng, ts, i as u32, event_bytes)
}
