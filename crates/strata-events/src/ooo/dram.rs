//! The DRAM OOO queue, the baseline of chronicledb-pmem.txt section 5.4 ("a
//! DRAM red-black application time tree"): an ordered map from
//! `(timestamp, arrival)` to the event, in DRAM only. Fastest to write and
//! query; a crash loses it whole.

use std::collections::BTreeMap;

use super::{check_event, check_event_bytes, event_ts, EventList, OooQueryStats, OooQueue, QueryCounters};
use crate::EventError;

/// The DRAM application-time tree queue (not durable).
#[derive(Debug)]
pub struct DramOooQueue {
    event_bytes: usize,
    capacity_bytes: u64,
    next_arrival: u64,
    generation: u64,
    events: BTreeMap<(i64, u64), Box<[u8]>>,
    counters: QueryCounters,
}

impl DramOooQueue {
    /// An empty queue of `event_bytes`-byte events holding up to
    /// `capacity_bytes` of event bytes (at least one event).
    pub fn new(event_bytes: usize, capacity_bytes: u64) -> Result<DramOooQueue, EventError> {
        check_event_bytes(event_bytes)?;
        Ok(DramOooQueue {
            event_bytes,
            capacity_bytes: capacity_bytes.max(event_bytes as u64),
            next_arrival: 0,
            generation: 1,
            events: BTreeMap::new(),
            counters: QueryCounters::default(),
        })
    }

    /// The queue starting at `generation` instead of 1 (a stream recovering
    /// with a DRAM queue starts past the tree's merged generation, so a new
    /// merge never reuses a generation the tree recorded as merged).
    pub fn starting_at(mut self, generation: u64) -> DramOooQueue {
        self.generation = generation.max(1);
        self
    }
}

impl OooQueue for DramOooQueue {
    fn variant(&self) -> String {
        "dram".to_string()
    }

    fn event_bytes(&self) -> usize {
        self.event_bytes
    }

    fn push(&mut self, event: &[u8]) -> Result<(), EventError> {
        check_event(event, self.event_bytes)?;
        if self.is_full() {
            return Err(EventError::Full {
                what: "DRAM OOO queue",
                detail: format!("{} events of {} bytes", self.events.len(), self.event_bytes),
            });
        }
        self.events.insert((event_ts(event), self.next_arrival), event.into());
        self.next_arrival += 1;
        Ok(())
    }

    fn len(&self) -> u64 {
        self.events.len() as u64
    }

    fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    fn get_range(&self, t_lo: i64, t_hi: i64) -> Result<EventList, EventError> {
        let mut out = EventList::new(self.event_bytes);
        if t_lo > t_hi {
            return Ok(out);
        }
        for event in self.events.range((t_lo, 0)..=(t_hi, u64::MAX)).map(|(_, e)| e) {
            out.push(event);
        }
        let n = out.len() as u64;
        self.counters.add(n, 0, n * self.event_bytes as u64);
        Ok(out)
    }

    fn sorted(&self) -> Result<EventList, EventError> {
        self.get_range(i64::MIN, i64::MAX)
    }

    fn generation(&self) -> u64 {
        self.generation
    }

    fn truncate(&mut self) -> Result<(), EventError> {
        self.events.clear();
        self.generation += 1;
        Ok(())
    }

    fn query_stats(&self) -> OooQueryStats {
        self.counters.snapshot()
    }
}
