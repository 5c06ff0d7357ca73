//! The out-of-order (OOO) queues of chronicledb-pmem.txt section 2.2
//! ("Out-Of-Order Data") and section 4.3, with the variants compared in
//! section 5.4.
//!
//! Events that arrive out of application-time order are not inserted into the
//! TAB+-tree one by one; they go to an OOO queue, which answers application-time
//! queries itself and, when it reaches its size limit, is bulk-merged into the
//! tree in application-time order and emptied.
//!
//! Owns: the [`OooQueue`] trait, the flat [`EventList`] the queries return,
//! the recovery and query counters, and the variants:
//! - [`PmemOooQueue`] (`pmem`): events appended in arrival order into a PMem
//!   area, each push persisted before it returns (one fence); *pure* (queries
//!   scan the queue) or *indexed* (a DRAM application-time index of PMem
//!   offsets, rebuilt by a scan at recovery). Format: `docs/format/events-ooo-queue.md`.
//! - [`DramOooQueue`] (`dram`): an ordered DRAM tree holding the events, not
//!   durable (the paper's DRAM baseline).
//! - [`FlashOooQueue`] (`flash`): 8 KiB pages appended to an SSD file, the
//!   current page buffered in DRAM and written with an fsync when full (up to
//!   a page of events is lost in a crash, the original ChronicleDB); pure or
//!   indexed (DRAM index of page and slot).
//! - [`fuzz::fuzz_ooo_decode`]: the fuzz entry (recovery from arbitrary images).
//!
//! Events are fixed-size byte strings (`event_bytes`, the same for every event
//! of a queue) whose first 8 bytes are the application timestamp, an `i64`
//! little-endian ([`event_ts`]).
//!
//! # Merge protocol (what the TAB+-tree layer must do)
//!
//! A queue's content belongs to its *generation* ([`OooQueue::generation`]),
//! which every [`OooQueue::truncate`] advances (persistently for the PMem and
//! flash queues). To merge without losing or duplicating an event across a
//! crash, the tree layer:
//! 1. reads `g = queue.generation()` and `events = queue.sorted()`;
//! 2. bulk-merges `events` into the tree and makes the tree durable, recording
//!    `g` as its *merged OOO generation* in the same durable step;
//! 3. calls `queue.truncate()`.
//!
//! At recovery, after opening the tree and the queue, it calls
//! [`OooQueue::discard_if_merged`] with the tree's merged generation: if the
//! crash fell between steps 2 and 3 the queue still holds generation `g`,
//! whose events the tree already has, and the queue is truncated then.
//! [`OooQueue::drain_sorted`] is steps 1 and 3 without 2 (for the DRAM queue,
//! tests and callers without a durable tree).

mod dram;
mod flash;
pub mod flash_layout;
#[cfg(any(test, feature = "fuzz"))]
pub mod fuzz;
mod pmem;
#[cfg(any(test, feature = "crashtest"))]
pub use pmem::{PlantedBug, PLANTED_BUG};
pub mod pmem_layout;

#[cfg(test)]
mod flash_tests;
#[cfg(test)]
mod format_doc_tests;
#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod pmem_tests;
#[cfg(test)]
mod test_support;

use std::sync::atomic::{AtomicU64, Ordering};

pub use dram::DramOooQueue;
pub use flash::{FlashOooConfig, FlashOooQueue};
pub use flash_layout::{FLASH_PAGE_BYTES, FLASH_PAGE_HEADER_BYTES};
pub use pmem::PmemOooQueue;
pub use pmem_layout::{PMEM_HEADER_BYTES, PMEM_RECORD_HEADER_BYTES};

use crate::EventError;

/// The paper's queue size (section 5.4: "a queue size of 100 MiB").
pub const DEFAULT_CAPACITY_BYTES: u64 = 100 << 20;
/// Smallest event: the 8-byte timestamp alone.
pub const MIN_EVENT_BYTES: usize = 8;
/// Largest event any queue accepts (so at least one fits in a flash page).
pub const MAX_EVENT_BYTES: usize = 4096;

/// The application timestamp of an event: its first 8 bytes, `i64`
/// little-endian. `event` must hold at least [`MIN_EVENT_BYTES`] bytes
/// (queues check this on push); shorter input reads as 0-padded.
pub fn event_ts(event: &[u8]) -> i64 {
    let mut b = [0u8; 8];
    let n = event.len().min(8);
    b[..n].copy_from_slice(&event[..n]);
    i64::from_le_bytes(b)
}

/// Checks an `event_bytes` setting.
pub fn check_event_bytes(event_bytes: usize) -> Result<(), EventError> {
    if (MIN_EVENT_BYTES..=MAX_EVENT_BYTES).contains(&event_bytes) {
        Ok(())
    } else {
        Err(EventError::invalid(format!(
            "event_bytes {event_bytes} outside {MIN_EVENT_BYTES}..={MAX_EVENT_BYTES}"
        )))
    }
}

/// Checks that `event` has the queue's size.
fn check_event(event: &[u8], event_bytes: usize) -> Result<(), EventError> {
    if event.len() == event_bytes {
        Ok(())
    } else {
        Err(EventError::invalid(format!(
            "event of {} bytes in a queue of {event_bytes}-byte events",
            event.len()
        )))
    }
}

/// Which flavour of a persistent queue (section 5.4: "we differentiate
/// between a pure solution and one with an additional in-memory application
/// time index").
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum OooIndexing {
    /// No DRAM index: queries scan the whole queue.
    Pure,
    /// A DRAM application-time index of the events' positions.
    Indexed,
}

impl OooIndexing {
    pub fn name(self) -> &'static str {
        match self {
            OooIndexing::Pure => "pure",
            OooIndexing::Indexed => "indexed",
        }
    }
}

/// Fixed-size events in one flat buffer (no allocation per event), in the
/// order a query defines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventList {
    event_bytes: usize,
    bytes: Vec<u8>,
}

impl EventList {
    pub fn new(event_bytes: usize) -> Self {
        EventList { event_bytes, bytes: Vec::new() }
    }

    pub fn with_capacity(event_bytes: usize, events: usize) -> Self {
        EventList { event_bytes, bytes: Vec::with_capacity(event_bytes * events) }
    }

    /// Appends `event`, which must have `event_bytes` bytes.
    pub fn push(&mut self, event: &[u8]) {
        debug_assert_eq!(event.len(), self.event_bytes, "event size");
        self.bytes.extend_from_slice(event);
    }

    pub fn event_bytes(&self) -> usize {
        self.event_bytes
    }

    pub fn len(&self) -> usize {
        self.bytes.len().checked_div(self.event_bytes).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let start = i.checked_mul(self.event_bytes)?;
        self.bytes.get(start..start.checked_add(self.event_bytes)?)
    }

    pub fn iter(&self) -> std::slice::ChunksExact<'_, u8> {
        self.bytes.chunks_exact(self.event_bytes.max(1))
    }

    pub fn timestamps(&self) -> impl Iterator<Item = i64> + '_ {
        self.iter().map(event_ts)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    pub fn to_vecs(&self) -> Vec<Vec<u8>> {
        self.iter().map(<[u8]>::to_vec).collect()
    }
}

/// Work done by a recovery constructor (section 5.4 compares recovery work:
/// "only the persistent Indexed variants have to perform work besides
/// opening the log").
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct OooRecovery {
    /// Events in the queue after recovery.
    pub events_recovered: u64,
    /// Records (PMem slots or events of flash pages) decoded and checked.
    pub records_examined: u64,
    /// Whole flash pages read (pure flash reads only the last page in full).
    pub pages_read: u64,
    /// Flash page headers read without their page.
    pub page_headers_read: u64,
    pub bytes_read: u64,
    /// Entries inserted into the DRAM application-time index.
    pub index_entries_built: u64,
    /// A torn record or page (never acknowledged) was found at the end and dropped.
    pub torn_tail_dropped: bool,
    /// A truncation that had to zero the area was interrupted and was completed.
    pub reset_completed: bool,
    /// Stale files of earlier generations removed (flash).
    pub stale_files_removed: u64,
    /// The queue's generation after recovery.
    pub generation: u64,
}

/// Counters of the reads queries performed since the queue was created.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct OooQueryStats {
    /// Records (events with their PMem record header) read and decoded.
    pub records_read: u64,
    /// Flash pages read from the file.
    pub page_reads: u64,
    /// Bytes read from PMem or the file.
    pub bytes_read: u64,
}

/// Query counters behind a shared reference.
#[derive(Debug, Default)]
pub(crate) struct QueryCounters {
    records_read: AtomicU64,
    page_reads: AtomicU64,
    bytes_read: AtomicU64,
}

impl QueryCounters {
    pub(crate) fn add(&self, records: u64, pages: u64, bytes: u64) {
        self.records_read.fetch_add(records, Ordering::Relaxed);
        self.page_reads.fetch_add(pages, Ordering::Relaxed);
        self.bytes_read.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> OooQueryStats {
        OooQueryStats {
            records_read: self.records_read.load(Ordering::Relaxed),
            page_reads: self.page_reads.load(Ordering::Relaxed),
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
        }
    }
}

/// An out-of-order queue (section 4.3). Queries return events in
/// application-time order, events with equal timestamps in arrival order.
pub trait OooQueue: Send {
    /// The variant's name as the benchmarks print it (`pmem-indexed`, `dram`, ...).
    fn variant(&self) -> String;

    fn event_bytes(&self) -> usize;

    /// Appends `event` (exactly `event_bytes` bytes). The PMem queue returns
    /// once the event is durable; the flash queue once it is buffered (see
    /// [`FlashOooQueue::durable_len`]); the DRAM queue never makes it durable.
    /// `Full` when the queue holds its capacity.
    fn push(&mut self, event: &[u8]) -> Result<(), EventError>;

    /// Events in the queue.
    fn len(&self) -> u64;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Event bytes held: `len * event_bytes` (media overhead not counted, so
    /// every variant holds the same events for one capacity).
    fn bytes_used(&self) -> u64 {
        self.len() * self.event_bytes() as u64
    }

    /// The limit on [`OooQueue::bytes_used`] ([`DEFAULT_CAPACITY_BYTES`] by default).
    fn capacity_bytes(&self) -> u64;

    /// Whether the next push would fail with `Full`: time to merge.
    fn is_full(&self) -> bool {
        self.bytes_used() + self.event_bytes() as u64 > self.capacity_bytes()
    }

    /// Events with `t_lo <= ts <= t_hi` (empty if `t_lo > t_hi`).
    fn get_range(&self, t_lo: i64, t_hi: i64) -> Result<EventList, EventError>;

    /// Events with timestamp `t` (an application-time point query: HIT if
    /// non-empty, MISS otherwise).
    fn point(&self, t: i64) -> Result<EventList, EventError> {
        self.get_range(t, t)
    }

    /// Every event, for a bulk merge; the queue is unchanged.
    fn sorted(&self) -> Result<EventList, EventError>;

    /// Makes every event pushed so far durable, as a clean shutdown does:
    /// the flash queue writes its partial page; a no-op for the PMem queue
    /// (each push is durable) and the DRAM queue (never durable).
    fn sync(&mut self) -> Result<(), EventError> {
        Ok(())
    }

    /// The generation the current content belongs to (see the module's merge protocol).
    fn generation(&self) -> u64;

    /// Empties the queue and advances the generation; durable when it returns
    /// for the PMem and flash queues.
    fn truncate(&mut self) -> Result<(), EventError>;

    /// Every event in application-time order, then empties the queue. Not
    /// crash-safe on its own for a durable tree: see the merge protocol.
    fn drain_sorted(&mut self) -> Result<EventList, EventError> {
        let events = self.sorted()?;
        self.truncate()?;
        Ok(events)
    }

    /// The recovery step of the merge protocol: truncates the queue if its
    /// generation is `merged_generation` (the tree already holds its events).
    /// Returns whether it truncated.
    fn discard_if_merged(&mut self, merged_generation: u64) -> Result<bool, EventError> {
        if self.generation() == merged_generation {
            self.truncate()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Reads the queries performed so far.
    fn query_stats(&self) -> OooQueryStats;
}

/// Sorts `(ts, arrival, event)` triples by timestamp, ties by arrival, into a list.
fn sorted_list(event_bytes: usize, mut found: Vec<(i64, u64, usize)>, bytes: &[u8]) -> EventList {
    found.sort_unstable_by_key(|&(ts, arrival, _)| (ts, arrival));
    let mut out = EventList::with_capacity(event_bytes, found.len());
    for (_, _, at) in found {
        out.push(&bytes[at..at + event_bytes]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_list_indexes_iterates_and_reads_timestamps() {
        let mut list = EventList::new(10);
        assert!(list.is_empty());
        let mut a = 7i64.to_le_bytes().to_vec();
        a.extend_from_slice(&[1, 2]);
        let mut b = (-3i64).to_le_bytes().to_vec();
        b.extend_from_slice(&[3, 4]);
        list.push(&a);
        list.push(&b);
        assert_eq!(list.len(), 2);
        assert_eq!(list.get(1), Some(&b[..]));
        assert_eq!(list.get(2), None);
        assert_eq!(list.timestamps().collect::<Vec<_>>(), vec![7, -3]);
        assert_eq!(list.to_vecs(), vec![a, b]);
        assert_eq!(EventList::default().iter().count(), 0, "an empty default list iterates nothing");
    }

    #[test]
    fn event_sizes_outside_the_limits_are_rejected() {
        assert!(check_event_bytes(MIN_EVENT_BYTES).is_ok());
        assert!(check_event_bytes(MAX_EVENT_BYTES).is_ok());
        assert!(matches!(check_event_bytes(7), Err(EventError::InvalidInput(_))));
        assert!(matches!(check_event_bytes(MAX_EVENT_BYTES + 1), Err(EventError::InvalidInput(_))));
        assert_eq!(event_ts(&(-5i64).to_le_bytes()), -5);
        assert_eq!(event_ts(&[1]), 1, "short input reads zero-padded");
    }

    #[test]
    fn sorted_list_orders_by_time_then_arrival() {
        let bytes: Vec<u8> = [5i64, 3, 5, 1].iter().flat_map(|t| t.to_le_bytes()).collect();
        let found = vec![(5, 0, 0), (3, 1, 8), (5, 2, 16), (1, 3, 24)];
        let list = sorted_list(8, found, &bytes);
        assert_eq!(list.timestamps().collect::<Vec<_>>(), vec![1, 3, 5, 5]);
        assert_eq!(list.as_bytes()[16..24], bytes[0..8], "equal timestamps keep arrival order");
    }
}
