//! The crash simulator, the `sim` backend (DESIGN.md section 3).
//!
//! Keeps a volatile image (what loads see) and a persistent image (what
//! survives). Stores mark their 8-byte words dirty; `flush` snapshots the
//! dirty words of the flushed lines as pending; `fence` moves every pending
//! snapshot to the persistent image. At a crash, each uncertain word
//! independently holds its persisted value, any pending snapshot, or its
//! current value (caches may evict a dirty line at any time).
//!
//! When capture is on, a [`CrashPoint`] is recorded right after every flush,
//! right before every fence takes effect (stores issued since the last flush
//! may be on media while flushed lines are not yet), and right after every
//! fence; [`crate::crash`] turns those into images (the harness of
//! `strata-crashtest` recovers and checks them).
//!
//! Two simplifications, both documented in ARCHITECTURE.md: a dirty word's
//! candidates are its persisted and current values (and flushed snapshots),
//! not every intermediate value stored in between; and a fence commits every
//! thread's pending flushes (crash tests run their workload on one thread).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::crash::{CrashPoint, UncertainWord};
use crate::offset::{CACHE_LINE_BYTES, WORD_BYTES};

/// The operation after which a crash point was taken.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SimOpKind {
    Flush,
    /// Just before a fence completes: every earlier flush may still be in
    /// flight, and stores made since the last flush may already be evicted.
    BeforeFence,
    Fence,
    /// The end of the run (everything the workload did, nothing more).
    End,
}

struct SimState {
    volatile: Vec<u8>,
    persistent: Arc<Vec<u8>>,
    /// Words stored since they were last flushed.
    dirty: BTreeSet<u64>,
    /// Words flushed since the last fence: their snapshots, oldest first.
    pending: BTreeMap<u64, Vec<u64>>,
    ops: u64,
    capture: bool,
    points: Vec<CrashPoint>,
}

/// A simulated persistent region. Every method takes one lock: the simulator
/// is for tests, where determinism matters more than speed.
pub struct SimRegion {
    len: u64,
    state: Mutex<SimState>,
}

fn word_at(bytes: &[u8], word: u64) -> u64 {
    let at = (word * WORD_BYTES) as usize;
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

impl SimRegion {
    /// A zeroed region, fully persistent.
    pub fn new(len: u64) -> Self {
        Self::from_image(vec![0; len as usize])
    }

    /// A region whose volatile and persistent images both equal `image`
    /// (a machine that just restarted from that image).
    pub fn from_image(image: Vec<u8>) -> Self {
        assert!((image.len() as u64).is_multiple_of(WORD_BYTES), "sim region length must be a multiple of 8");
        SimRegion {
            len: image.len() as u64,
            state: Mutex::new(SimState {
                volatile: image.clone(),
                persistent: Arc::new(image),
                dirty: BTreeSet::new(),
                pending: BTreeMap::new(),
                ops: 0,
                capture: false,
                points: Vec::new(),
            }),
        }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Starts or stops recording a crash point after every flush and fence.
    pub fn set_capture(&self, on: bool) {
        self.state.lock().capture = on;
    }

    /// Flushes and fences performed so far.
    pub fn ops(&self) -> u64 {
        self.state.lock().ops
    }

    /// Records the end-of-run crash point and returns every point captured.
    pub fn take_crash_points(&self) -> Vec<CrashPoint> {
        let mut s = self.state.lock();
        if s.capture {
            Self::capture(&mut s, SimOpKind::End);
        }
        std::mem::take(&mut s.points)
    }

    /// The image that survives a crash in which no uncertain word reached media.
    pub fn persistent_image(&self) -> Vec<u8> {
        self.state.lock().persistent.as_ref().clone()
    }

    pub(crate) fn read(&self, offset: u64, buf: &mut [u8]) {
        let s = self.state.lock();
        buf.copy_from_slice(&s.volatile[offset as usize..offset as usize + buf.len()]);
    }

    pub(crate) fn write(&self, offset: u64, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let mut s = self.state.lock();
        s.volatile[offset as usize..offset as usize + data.len()].copy_from_slice(data);
        let first = offset / WORD_BYTES;
        let last = (offset + data.len() as u64 - 1) / WORD_BYTES;
        s.dirty.extend(first..=last);
    }

    pub(crate) fn store_u64(&self, offset: u64, value: u64) {
        self.write(offset, &value.to_le_bytes());
    }

    pub(crate) fn load_u64(&self, offset: u64) -> u64 {
        let mut b = [0u8; 8];
        self.read(offset, &mut b);
        u64::from_le_bytes(b)
    }

    pub(crate) fn flush(&self, offset: u64, len: u64) {
        if len == 0 {
            return;
        }
        let mut s = self.state.lock();
        let first_line = offset / CACHE_LINE_BYTES;
        let last_line = (offset + len - 1) / CACHE_LINE_BYTES;
        let words_per_line = CACHE_LINE_BYTES / WORD_BYTES;
        let first_word = first_line * words_per_line;
        let end_word = ((last_line + 1) * words_per_line).min(self.len / WORD_BYTES);
        let flushed: Vec<u64> = s.dirty.range(first_word..end_word).copied().collect();
        for w in flushed {
            s.dirty.remove(&w);
            let v = word_at(&s.volatile, w);
            s.pending.entry(w).or_default().push(v);
        }
        s.ops += 1;
        if s.capture {
            Self::capture(&mut s, SimOpKind::Flush);
        }
    }

    pub(crate) fn fence(&self) {
        let mut s = self.state.lock();
        if s.capture {
            Self::capture(&mut s, SimOpKind::BeforeFence);
        }
        let pending = std::mem::take(&mut s.pending);
        if !pending.is_empty() {
            let persistent = Arc::make_mut(&mut s.persistent);
            for (w, snapshots) in pending {
                let v = *snapshots.last().expect("pending word has a snapshot");
                let at = (w * WORD_BYTES) as usize;
                persistent[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
        }
        s.ops += 1;
        if s.capture {
            Self::capture(&mut s, SimOpKind::Fence);
        }
    }

    fn capture(s: &mut SimState, kind: SimOpKind) {
        let mut words: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for (&w, snaps) in &s.pending {
            words.entry(w).or_default().extend_from_slice(snaps);
        }
        for &w in &s.dirty {
            words.entry(w).or_default().push(word_at(&s.volatile, w));
        }
        let mut uncertain = Vec::new();
        for (w, mut values) in words {
            let old = word_at(&s.persistent, w);
            values.retain(|v| *v != old);
            values.dedup();
            let mut seen = Vec::with_capacity(values.len());
            for v in values {
                if !seen.contains(&v) {
                    seen.push(v);
                }
            }
            if !seen.is_empty() {
                uncertain.push(UncertainWord { word_offset: w * WORD_BYTES, old, new_values: seen });
            }
        }
        let index = s.points.len() as u64;
        let point = CrashPoint { index, op: s.ops, kind, persistent: s.persistent.clone(), uncertain };
        s.points.push(point);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_without_flush_and_fence_is_uncertain() {
        let r = SimRegion::new(256);
        r.set_capture(true);
        r.store_u64(8, 42);
        r.flush(8, 8);
        let points = r.take_crash_points();
        assert_eq!(points.len(), 2, "one after the flush, one at the end");
        assert!(points.iter().all(|p| p.kind != SimOpKind::BeforeFence));
        let u = &points[0].uncertain;
        assert_eq!(u.len(), 1);
        assert_eq!((u[0].word_offset, u[0].old, u[0].new_values.clone()), (8, 0, vec![42]));
        assert_eq!(r.persistent_image()[8], 0, "no fence yet");
    }

    #[test]
    fn flush_then_fence_persists() {
        let r = SimRegion::new(128);
        r.set_capture(true);
        r.write(0, &[1; 16]);
        r.flush(0, 16);
        r.fence();
        assert_eq!(&r.persistent_image()[..16], &[1; 16]);
        let points = r.take_crash_points();
        assert_eq!(points[1].kind, SimOpKind::BeforeFence);
        assert_eq!(points[1].uncertain.len(), 2, "flushed but not fenced: still uncertain");
        assert_eq!(points[1].op, 1, "a crash before the fence precedes its op");
        assert!(points[2].uncertain.is_empty(), "fenced data is certain");
        assert_eq!(points[2].kind, SimOpKind::Fence);
    }

    #[test]
    fn fence_without_flush_persists_nothing() {
        let r = SimRegion::new(64);
        r.store_u64(0, 5);
        r.fence();
        assert_eq!(r.persistent_image()[0], 0);
    }

    #[test]
    fn store_after_flush_keeps_both_values_possible() {
        let r = SimRegion::new(64);
        r.set_capture(true);
        r.store_u64(0, 1);
        r.flush(0, 8);
        r.store_u64(0, 2);
        r.flush(0, 8);
        r.fence();
        let p = &r.take_crash_points()[1];
        assert_eq!(p.uncertain[0].new_values, vec![1, 2]);
        assert_eq!(r.persistent_image()[0], 2, "the last flushed snapshot wins at the fence");
    }

    #[test]
    fn flush_covers_whole_lines() {
        let r = SimRegion::new(128);
        r.store_u64(56, 9);
        r.flush(0, 1); // same 64-byte line
        r.fence();
        assert_eq!(r.persistent_image()[56], 9);
    }
}
