//! The right flank on PMem (chronicledb-pmem.txt section 4.1 "Right Flank",
//! Fig. 4 A.b; format: `docs/format/events-flank.md`): an area holding a
//! 256-byte header and one node-size slot per level, slot `l` holding the
//! level's current node in the node format of `docs/format/events-node.md`.
//!
//! This module owns the bytes and their persist order only (opening an area
//! in [`open`], a write-out's end in [`write_out`], merge records and the
//! entry journal in [`merge_persist`]); the tree decides what to write
//! (`tree/flank.rs`, `tree/insert.rs`):
//! - leaf appends write the appended events and the *leaf commit word*
//!   (the leaf's new count, its count before the batch and a CRC32C of the
//!   batch's bytes; one aligned 8-byte store), then flush both and fence
//!   once: after a crash a word whose CRC does not match its batch means the
//!   batch was torn, and the leaf holds the count before it (always durable:
//!   the previous batch's fence covered it). Index-node appends persist the
//!   entries (flush, fence), then the node header with the new count (flush,
//!   fence): the count word is an aligned 8-byte store, so after a crash the
//!   count covers only persisted entries;
//! - a node's write-out is framed by a journal record naming the level, the
//!   node written out, its successor and a new root (if the tree grows); a
//!   commit word holding the CRC32C of the record's words commits it under
//!   one fence, and an *ended* word (format 4, [`write_out`]) ends it under
//!   the fence that makes the parent's new entry count;
//! - the height word and the slot headers are rewritten only inside a
//!   committed journal, so recovery can redo them;
//! - an out-of-order merge keeps a redo record (the merge state word, the
//!   queue generation and input size, and two ping-pong step records, see
//!   [`super::merge_record`]): a step record is persisted into the inactive
//!   record slot before the state word names it;
//! - a flank index entry rewritten in place by a merge is first copied to
//!   the slot's first unused entry position (persisted), then the entry
//!   journal word names it, then the entry is written in place; recovery
//!   copies it again while the word is set.

use std::ops::Range;
use std::sync::Arc;

use strata_pmem::{Region, RegionOffset, CACHE_LINE_BYTES};

use crate::ids::{DecodeError, EventError, NodeId};
use crate::node::header::OFFSET_COUNT;
use crate::node::{NODE_BYTES, NODE_HEADER_BYTES};

mod merge_persist;
mod open;
mod write_out;
pub use merge_persist::entry_journal_word;
use merge_persist::merge_record_offset;
pub use write_out::ParentAppend;

pub use super::merge_record::NO_NODE;
use super::merge_record::{MergeRecord, MERGE_RECORD_BYTES};
use crate::node::header::header_count;

/// `STEVFLNK` read as a little-endian u64.
pub const FLANK_MAGIC: u64 = u64::from_le_bytes(*b"STEVFLNK");
/// Version 4: a write-out ends with two fences, not four (the parent's new
/// entry with the successor's slot header, then the parent's count with the
/// idle journal state; [`super::flank_pmem_write_out`]), and a format leaves
/// the journal's node words `NO_NODE`. Version 3 (same layout) made merges
/// one pass (merge record kinds 3-5, see [`super::merge_record`]); version 2
/// (merge record kinds 1 and 2 only) moved the leaf slot's count into the
/// leaf commit word. Areas of versions 2 and 3 still open, keep their
/// version and are written in their own write-out order.
pub const FLANK_VERSION: u32 = 4;
/// The previous version, which this build still opens.
pub const FLANK_VERSION_PREVIOUS: u32 = 3;
/// The oldest version this build still opens.
pub const FLANK_VERSION_OLDEST: u32 = 2;
/// Bytes of the area header (one 256-byte media block).
pub const FLANK_HEADER_BYTES: u64 = 256;
/// Area offset of slot 0; slot `l` starts at `FLANK_SLOTS_OFFSET + l * FLANK_SLOT_BYTES`.
pub const FLANK_SLOTS_OFFSET: u64 = 256;
/// Bytes of one slot: one node.
pub const FLANK_SLOT_BYTES: u64 = NODE_BYTES as u64;
pub const FLANK_OFFSET_MAGIC: u64 = 0;
pub const FLANK_OFFSET_VERSION: u64 = 8;
pub const FLANK_OFFSET_MAX_LEVELS: u64 = 12;
pub const FLANK_OFFSET_EVENT_BYTES: u64 = 16;
pub const FLANK_OFFSET_INDEX_ENTRY_BYTES: u64 = 20;
pub const FLANK_OFFSET_LEAF_FILL: u64 = 24;
pub const FLANK_OFFSET_INDEX_FILL: u64 = 28;
pub const FLANK_OFFSET_FLAGS: u64 = 32;
pub const FLANK_OFFSET_CONFIG_CRC: u64 = 36;
pub const FLANK_OFFSET_HEADER_CRC: u64 = 40;
/// The header CRC covers bytes `0..FLANK_HEADER_CRC_COVERED_BYTES`.
pub const FLANK_HEADER_CRC_COVERED_BYTES: u64 = 40;
pub const FLANK_OFFSET_HEIGHT: u64 = 64;
pub const FLANK_OFFSET_MERGED_OOO_GENERATION: u64 = 72;
pub const FLANK_OFFSET_MERGE_STATE: u64 = 80;
pub const FLANK_OFFSET_MERGE_GENERATION: u64 = 88;
pub const FLANK_OFFSET_MERGE_INPUT_EVENTS: u64 = 96;
pub const FLANK_OFFSET_ENTRY_JOURNAL: u64 = 104;
/// The leaf commit word: bits 0..16 the leaf's count, bits 16..32 its count
/// before the last batch, bits 32..64 CRC32C of that batch's event bytes.
pub const FLANK_OFFSET_LEAF_COMMIT: u64 = 112;
pub const FLANK_OFFSET_JOURNAL_STATE: u64 = 128;
pub const FLANK_OFFSET_JOURNAL_LEVEL: u64 = 136;
pub const FLANK_OFFSET_JOURNAL_OLD_ID: u64 = 144;
pub const FLANK_OFFSET_JOURNAL_NEW_ID: u64 = 152;
pub const FLANK_OFFSET_JOURNAL_ROOT_ID: u64 = 160;
/// Area offsets of the two merge step record slots.
pub const FLANK_OFFSET_MERGE_RECORD_0: u64 = 168;
pub const FLANK_OFFSET_MERGE_RECORD_1: u64 = 208;
/// `flags` bit: leaves and index nodes share one id sequence.
pub const FLANK_FLAG_SHARED_IDS: u32 = 1;
/// `flags` bit: index entries carry their child's aggregates.
pub const FLANK_FLAG_AGGREGATES_INLINE: u32 = 2;
/// Journal state word: no write-out in flight.
pub const JOURNAL_IDLE: u64 = 0;
/// Journal state word of flank format 2: a write-out is in flight
/// (`WRITEOUT` as a little-endian u64); still read, no longer written.
pub const JOURNAL_ACTIVE: u64 = u64::from_le_bytes(*b"WRITEOUT");
/// High 32 bits of a journal commit word (format 3; `WOUT` as a
/// little-endian u32): a write-out is in flight if the low 32 bits are the
/// CRC32C of the record's four words, persisted under the same fence.
pub const JOURNAL_COMMIT_TAG: u32 = u32::from_le_bytes(*b"WOUT");
/// High 32 bits of a journal *ended* word (format 4; `WEND` as a
/// little-endian u32): no write-out in flight; the low 32 bits are the
/// CRC32C of the record's four words if they still name the write-out it
/// ended (the next write-out's W0 overwrites them before its commit word).
pub const JOURNAL_ENDED_TAG: u32 = u32::from_le_bytes(*b"WEND");
/// Merge state word: no out-of-order merge in flight.
pub const MERGE_IDLE: u64 = 0;
/// Merge state word: a merge is in flight, its current step record is in
/// record slot 0 (`OOOMERG0` as a little-endian u64).
pub const MERGE_ACTIVE_0: u64 = u64::from_le_bytes(*b"OOOMERG0");
/// Merge state word: a merge is in flight, current step record in slot 1.
pub const MERGE_ACTIVE_1: u64 = u64::from_le_bytes(*b"OOOMERG1");
/// Entry journal word: no flank entry rewrite in flight.
pub const ENTRY_JOURNAL_IDLE: u64 = 0;
/// High 16 bits of a set entry journal word (`EJ`); then the level (16
/// bits) and the entry index (32 bits).
pub const ENTRY_JOURNAL_TAG: u64 = 0x4A45;

/// Bytes of a flank area with `max_levels` slots.
pub fn flank_area_bytes(max_levels: u32) -> u64 {
    FLANK_SLOTS_OFFSET + u64::from(max_levels) * FLANK_SLOT_BYTES
}

/// The configuration a flank area was formatted for; `open` rejects an
/// area formatted for another.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FlankFingerprint {
    pub max_levels: u32,
    pub event_bytes: u32,
    pub index_entry_bytes: u32,
    pub leaf_fill: u32,
    pub index_fill: u32,
    pub flags: u32,
    /// CRC32C of the schema encoding, the kept aggregates and the spare room.
    pub config_crc: u32,
}

/// A write-out in flight (see the module comment and the format document).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FlankJournal {
    /// Level of the node written out.
    pub level: u32,
    /// The node written out (the slot's node when the write-out began).
    pub old_id: NodeId,
    /// Its successor, which the slot holds when the write-out ends.
    pub new_id: NodeId,
    /// A new root one level up, if the node written out was the root.
    pub root_id: Option<NodeId>,
}

/// What a flank area held when it was opened.
#[derive(Clone, Debug)]
pub struct FlankImage {
    pub height: u32,
    /// One node buffer per level `0..height`, as persisted (headers may be
    /// stale where the format document says so).
    pub slots: Vec<Vec<u8>>,
    pub journal: Option<FlankJournal>,
    /// Version 4, journal idle: the last write-out's record, whose end
    /// (the parent's count) may not have persisted with the idle state.
    pub last_write_out: Option<FlankJournal>,
    pub merged_ooo_generation: u64,
    /// An out-of-order merge in flight.
    pub merge: Option<MergeImage>,
    /// A flank entry rewrite in flight: `(level, entry index)`.
    pub entry_journal: Option<(u32, u32)>,
    /// The leaf commit word as read; the leaf slot's header count was set
    /// from it.
    pub leaf_commit: LeafCommit,
}

/// The leaf commit word (see [`FLANK_OFFSET_LEAF_COMMIT`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct LeafCommit {
    /// Events of the leaf after the last batch.
    pub count: u16,
    /// Events of the leaf before it (durable before the batch began).
    pub from: u16,
    /// CRC32C of the event bytes of entries `from..count`.
    pub crc: u32,
}

impl LeafCommit {
    pub fn word(self) -> u64 {
        u64::from(self.count) | u64::from(self.from) << 16 | u64::from(self.crc) << 32
    }

    pub fn from_word(w: u64) -> LeafCommit {
        LeafCommit { count: w as u16, from: (w >> 16) as u16, crc: (w >> 32) as u32 }
    }

    /// The word for a leaf of `count` events whose batch `from..count`
    /// occupies `batch` (the slot's bytes of those entries).
    pub fn for_batch(from: usize, count: usize, batch: &[u8]) -> Result<LeafCommit, EventError> {
        match (u16::try_from(from), u16::try_from(count)) {
            (Ok(from), Ok(count)) if from <= count => {
                Ok(LeafCommit { count, from, crc: crc32c::crc32c(batch) })
            }
            _ => Err(EventError::invalid(format!("leaf batch {from}..{count} does not fit the commit word"))),
        }
    }
}

/// An out-of-order merge the area records as in flight.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MergeImage {
    /// The queue generation being merged.
    pub generation: u64,
    /// Events of the merge input (the queue's `sorted()`).
    pub input_events: u64,
    /// The current step.
    pub record: MergeRecord,
    /// The record slot it is in (0 or 1).
    pub slot: u32,
}

/// PMem work done by the flank area since format or open.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FlankPmemStats {
    /// Appends persisted (leaf: events and commit word, one fence; index
    /// node: entries, fence, header, fence).
    pub appends_persisted: u64,
    /// Entries (events or index entries) made durable by them.
    pub entries_persisted: u64,
    pub slot_inits: u64,
    pub journal_records: u64,
    pub lines_flushed: u64,
    pub bytes_persisted: u64,
    pub fences: u64,
    /// Bytes read from the area (open only).
    pub bytes_read: u64,
}

/// The PMem flank area of one tree.
pub struct PmemFlankArea {
    region: Arc<Region>,
    base: u64,
    max_levels: u32,
    /// Bytes of one leaf entry (an event).
    event_bytes: usize,
    stats: FlankPmemStats,
    /// The record slot holding the current merge step (while a merge is in flight).
    merge_slot: Option<u32>,
    /// The area's format version (older areas keep their write-out order).
    version: u32,
}

fn header_bytes(fp: &FlankFingerprint, version: u32) -> Vec<u8> {
    let mut h = vec![0u8; CACHE_LINE_BYTES as usize];
    h[0..8].copy_from_slice(&FLANK_MAGIC.to_le_bytes());
    let fields = [
        (FLANK_OFFSET_VERSION, version),
        (FLANK_OFFSET_MAX_LEVELS, fp.max_levels),
        (FLANK_OFFSET_EVENT_BYTES, fp.event_bytes),
        (FLANK_OFFSET_INDEX_ENTRY_BYTES, fp.index_entry_bytes),
        (FLANK_OFFSET_LEAF_FILL, fp.leaf_fill),
        (FLANK_OFFSET_INDEX_FILL, fp.index_fill),
        (FLANK_OFFSET_FLAGS, fp.flags),
        (FLANK_OFFSET_CONFIG_CRC, fp.config_crc),
    ];
    for (at, v) in fields {
        h[at as usize..at as usize + 4].copy_from_slice(&v.to_le_bytes());
    }
    let crc = crc32c::crc32c(&h[..FLANK_HEADER_CRC_COVERED_BYTES as usize]);
    let at = FLANK_OFFSET_HEADER_CRC as usize;
    h[at..at + 4].copy_from_slice(&crc.to_le_bytes());
    h
}

/// The journal commit word of a record whose four words are `fields`.
pub fn journal_commit_word(fields: &[u8]) -> u64 {
    u64::from(JOURNAL_COMMIT_TAG) << 32 | u64::from(crc32c::crc32c(fields))
}

/// The ended word of a record's four words (`fields`, bytes 136..168).
pub fn journal_ended_word(fields: &[u8]) -> u64 {
    u64::from(JOURNAL_ENDED_TAG) << 32 | u64::from(crc32c::crc32c(fields))
}

fn node_word(raw: u64) -> Option<NodeId> {
    (raw != NO_NODE).then(|| NodeId::from_u64(raw))
}

impl PmemFlankArea {
    fn check_area(
        region: &Region,
        base: RegionOffset,
        area_bytes: u64,
        max_levels: u32,
    ) -> Result<(), EventError> {
        if !base.is_aligned(FLANK_HEADER_BYTES) {
            return Err(EventError::invalid(format!("flank area base {base} is not 256-byte aligned")));
        }
        let needed = flank_area_bytes(max_levels);
        if area_bytes < needed || !region.contains(base, needed) {
            return Err(EventError::invalid(format!(
                "flank area of {max_levels} levels needs {needed} bytes at {base}; the area has {area_bytes} \
                 and the region {}",
                region.len()
            )));
        }
        Ok(())
    }

    /// An area handle over `area_bytes` at `base`, once the region holds
    /// them (the version is this build's until `open` reads the header).
    fn checked(
        region: Arc<Region>,
        base: RegionOffset,
        area_bytes: u64,
        fp: &FlankFingerprint,
    ) -> Result<PmemFlankArea, EventError> {
        Self::check_area(&region, base, area_bytes, fp.max_levels)?;
        Ok(PmemFlankArea {
            region,
            base: base.0,
            max_levels: fp.max_levels,
            event_bytes: fp.event_bytes as usize,
            stats: Default::default(),
            merge_slot: None,
            version: FLANK_VERSION,
        })
    }

    /// Formats the area: header, height 1, slot 0 holding `leaf_header`
    /// (the first leaf's header), no journal; the magic is persisted last.
    pub fn format(
        region: Arc<Region>,
        base: RegionOffset,
        area_bytes: u64,
        fp: &FlankFingerprint,
        leaf_header: &[u8],
    ) -> Result<PmemFlankArea, EventError> {
        let mut area = Self::checked(region, base, area_bytes, fp)?;
        area.region.store_u64(RegionOffset(area.base + FLANK_OFFSET_MAGIC), 0);
        area.persist(FLANK_OFFSET_MAGIC, 8);
        let mut dynamic = vec![0u8; (FLANK_HEADER_BYTES - CACHE_LINE_BYTES) as usize];
        let put = |d: &mut Vec<u8>, at: u64, v: u64| {
            let at = (at - CACHE_LINE_BYTES) as usize;
            d[at..at + 8].copy_from_slice(&v.to_le_bytes());
        };
        put(&mut dynamic, FLANK_OFFSET_HEIGHT, 1);
        put(&mut dynamic, FLANK_OFFSET_JOURNAL_STATE, JOURNAL_IDLE);
        put(&mut dynamic, FLANK_OFFSET_JOURNAL_OLD_ID, NO_NODE);
        put(&mut dynamic, FLANK_OFFSET_JOURNAL_NEW_ID, NO_NODE);
        put(&mut dynamic, FLANK_OFFSET_JOURNAL_ROOT_ID, NO_NODE);
        area.write(CACHE_LINE_BYTES, &dynamic);
        area.write(FLANK_SLOTS_OFFSET, &leaf_header[..NODE_HEADER_BYTES]);
        let header = header_bytes(fp, FLANK_VERSION);
        area.write(8, &header[8..]);
        area.flush(0, FLANK_HEADER_BYTES);
        area.flush(FLANK_SLOTS_OFFSET, NODE_HEADER_BYTES as u64);
        area.fence();
        area.region.store_u64(RegionOffset(area.base + FLANK_OFFSET_MAGIC), FLANK_MAGIC);
        area.persist(FLANK_OFFSET_MAGIC, 8);
        area.stats.slot_inits += 1;
        Ok(area)
    }

    pub fn stats(&self) -> FlankPmemStats {
        self.stats
    }

    pub fn max_levels(&self) -> u32 {
        self.max_levels
    }

    /// The area's format version ([`FLANK_VERSION`] unless an older build
    /// formatted it).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Area offset of slot `level`.
    pub fn slot_offset(&self, level: u32) -> u64 {
        FLANK_SLOTS_OFFSET + u64::from(level) * FLANK_SLOT_BYTES
    }

    fn check_level(&self, level: u32) -> Result<(), EventError> {
        if level >= self.max_levels {
            return Err(EventError::Full {
                what: "PMem flank",
                detail: format!("level {level} beyond the {} slots of the area", self.max_levels),
            });
        }
        Ok(())
    }

    /// Makes the area look formatted by a build of flank format `version`
    /// (the header's version word and CRC; tests of older formats' data).
    #[cfg(test)]
    pub(crate) fn restamp_version(&mut self, version: u32) {
        let mut h = vec![0u8; FLANK_HEADER_CRC_COVERED_BYTES as usize + 4];
        self.read(0, &mut h);
        h[FLANK_OFFSET_VERSION as usize..][..4].copy_from_slice(&version.to_le_bytes());
        let crc = crc32c::crc32c(&h[..FLANK_HEADER_CRC_COVERED_BYTES as usize]);
        h[FLANK_OFFSET_HEADER_CRC as usize..][..4].copy_from_slice(&crc.to_le_bytes());
        self.write(0, &h);
        self.persist(0, h.len() as u64);
        self.version = version;
    }

    /// Writes `bytes` at area offset `at` and persists them (tests that
    /// build the images a crash can leave).
    #[cfg(test)]
    pub(crate) fn patch_persisted(&mut self, at: u64, bytes: &[u8]) {
        self.write(at, bytes);
        self.persist(at, bytes.len() as u64);
    }

    /// Reads `len` bytes at area offset `at` (tests).
    #[cfg(test)]
    pub(crate) fn read_bytes(&mut self, at: u64, len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        self.read(at, &mut buf);
        buf
    }

    fn write(&mut self, at: u64, bytes: &[u8]) {
        self.region.write(RegionOffset(self.base + at), bytes);
    }

    fn read(&mut self, at: u64, buf: &mut [u8]) {
        self.region.read(RegionOffset(self.base + at), buf);
        self.stats.bytes_read += buf.len() as u64;
    }

    fn flush(&mut self, at: u64, len: u64) {
        if len == 0 {
            return;
        }
        let start = RegionOffset(self.base + at);
        self.region.flush(start, len);
        let first = start.0 / CACHE_LINE_BYTES;
        let last = (start.0 + len - 1) / CACHE_LINE_BYTES;
        self.stats.lines_flushed += last - first + 1;
        self.stats.bytes_persisted += len;
    }

    fn fence(&mut self) {
        self.region.fence();
        self.stats.fences += 1;
    }

    fn persist(&mut self, at: u64, len: u64) {
        self.flush(at, len);
        self.fence();
    }

    fn store_word(&mut self, at: u64, value: u64) {
        self.region.store_u64(RegionOffset(self.base + at), value);
    }

    /// Persists an append to the node of `level`: `node[entries]` (the new
    /// entries; may be empty). Leaf: the entries and the leaf commit word,
    /// one fence. Index node: the entries, one fence, then the node's
    /// header, one fence. `appended` counts the entries for the statistics.
    pub fn persist_append(
        &mut self,
        level: u32,
        node: &[u8],
        entries: Range<usize>,
        appended: u64,
    ) -> Result<(), EventError> {
        self.check_level(level)?;
        let slot = self.slot_offset(level);
        let at = slot + entries.start as u64;
        if level == 0 {
            let first = (entries.start - NODE_HEADER_BYTES) / self.event_bytes;
            let commit = LeafCommit::for_batch(first, header_count(node), &node[entries.clone()])?;
            self.write(at, &node[entries.clone()]);
            self.store_word(FLANK_OFFSET_LEAF_COMMIT, commit.word());
            self.flush(at, entries.len() as u64);
            self.flush(FLANK_OFFSET_LEAF_COMMIT, 8);
            self.fence();
        } else {
            if !entries.is_empty() {
                self.write(at, &node[entries.clone()]);
                self.persist(at, entries.len() as u64);
            }
            self.write(slot, &node[..NODE_HEADER_BYTES]);
            self.persist(slot, NODE_HEADER_BYTES as u64);
        }
        self.stats.appends_persisted += 1;
        self.stats.entries_persisted += appended;
        Ok(())
    }

    /// Writes a fresh node header into slot `level` (for the leaf, with a
    /// zero leaf commit word: no events) and persists it, one fence (only
    /// inside a committed journal record, or at format).
    pub fn init_slot(&mut self, level: u32, header: &[u8]) -> Result<(), EventError> {
        self.write_slot_init(level, header)?;
        self.fence();
        Ok(())
    }

    /// [`PmemFlankArea::init_slot`] without its fence.
    fn write_slot_init(&mut self, level: u32, header: &[u8]) -> Result<(), EventError> {
        self.check_level(level)?;
        let slot = self.slot_offset(level);
        self.write(slot, &header[..NODE_HEADER_BYTES]);
        self.flush(slot, NODE_HEADER_BYTES as u64);
        if level == 0 {
            self.store_word(FLANK_OFFSET_LEAF_COMMIT, LeafCommit::default().word());
            self.flush(FLANK_OFFSET_LEAF_COMMIT, 8);
        }
        self.stats.slot_inits += 1;
        Ok(())
    }

    /// Stores and persists the height word.
    pub fn set_height(&mut self, height: u32) -> Result<(), EventError> {
        if height == 0 || height > self.max_levels {
            return Err(EventError::Full {
                what: "PMem flank",
                detail: format!("height {height} beyond the {} slots of the area", self.max_levels),
            });
        }
        self.store_word(FLANK_OFFSET_HEIGHT, u64::from(height));
        self.persist(FLANK_OFFSET_HEIGHT, 8);
        Ok(())
    }

    /// Commits a journal record: the four words and the commit word (their
    /// CRC32C), one fence (format 3; format 2 fenced the words first).
    pub fn begin_journal(&mut self, j: &FlankJournal) -> Result<(), EventError> {
        self.check_level(j.level)?;
        let words = [
            u64::from(j.level),
            j.old_id.to_u64(),
            j.new_id.to_u64(),
            j.root_id.map_or(NO_NODE, NodeId::to_u64),
        ];
        let mut fields = [0u8; 32];
        for (i, w) in words.iter().enumerate() {
            fields[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        self.write(FLANK_OFFSET_JOURNAL_LEVEL, &fields);
        #[cfg(any(test, feature = "crashtest"))]
        if super::planted::planted(super::planted::PlantedBug::JournalWithoutCrc) {
            self.store_word(FLANK_OFFSET_JOURNAL_STATE, JOURNAL_ACTIVE);
            self.persist(FLANK_OFFSET_JOURNAL_STATE, 40);
            self.stats.journal_records += 1;
            return Ok(());
        }
        self.store_word(FLANK_OFFSET_JOURNAL_STATE, journal_commit_word(&fields));
        self.persist(FLANK_OFFSET_JOURNAL_STATE, 40);
        self.stats.journal_records += 1;
        Ok(())
    }

    /// Ends the write-out: the state word back to idle, persisted.
    pub fn end_journal(&mut self) {
        self.store_word(FLANK_OFFSET_JOURNAL_STATE, JOURNAL_IDLE);
        self.persist(FLANK_OFFSET_JOURNAL_STATE, 8);
    }
}
