//! The key hash table of DecLog's log compression (declog.txt 4.4.1, 4.5,
//! 4.6; format: `docs/format/declog-stream.md`, "Key hash table and
//! compressed payloads"): one slot per series key in a PMem area, and a DRAM
//! mirror that serves every lookup during compression and decompression.
//!
//! Per key the table keeps the paper's value fields: the string encoding (a
//! small key id), the integer field (last timestamp and last delta, for
//! delta-of-delta), the float fields (last value bits and the XOR window),
//! and the log metadata of the key's first entry (an opaque u64 the caller
//! gives, e.g. the entry's stream position).
//!
//! The PMem area is a 256-byte header and `slot_count` 512-byte slots
//! (two media blocks each; a key's state, updated at every entry, lies in
//! the first), open addressing by the key's FNV-1a hash with
//! linear probing. A slot has an identity part (hash, id, key) and a state
//! part, each with its own CRC32C. Keys longer than [`KEY_TABLE_MAX_KEY_BYTES`]
//! are rejected (`InvalidInput`); there is no overflow area.
//!
//! When PMem is written (everything else happens in the mirror):
//! - a key's slot is written and persisted when the key is first inserted
//!   (with the state after its first entry);
//! - [`KeyTable::clear_for_checkpoint`] rewrites every slot's state part as
//!   cleared and persists it (the paper: "all fields are cleared after each
//!   checkpoint except the string encoding");
//! - [`KeyTable::snapshot_to`] writes a complete copy (header and every slot
//!   with its current mirror state) elsewhere, for the checkpoint log.
//!
//! On open, a slot whose identity CRC fails is empty (a torn insert: the key's
//! uncompressed entry carries key and id and re-inserts it on decompression);
//! a slot whose state CRC fails has cleared state (a torn clear).

use foldhash::HashMap;
use std::sync::Arc;

use strata_pmem::{Region, RegionOffset};

use crate::error::DeclogError;

/// "DLKEYTAB" as a little-endian u64.
pub const KEY_TABLE_MAGIC: u64 = u64::from_le_bytes(*b"DLKEYTAB");
/// Version 2: 512-byte slots holding keys of up to 448 bytes (version 1:
/// 256-byte slots, 192-byte keys, too short for TSBS-like series keys).
pub const KEY_TABLE_FORMAT_VERSION: u32 = 2;
/// Bytes reserved for the header; slots start here (relative to the base).
pub const KEY_TABLE_HEADER_BYTES: u64 = 256;
pub const KT_OFFSET_MAGIC: u64 = 0;
pub const KT_OFFSET_VERSION: u64 = 8;
pub const KT_OFFSET_SLOT_COUNT: u64 = 12;
pub const KT_OFFSET_SLOT_BYTES: u64 = 16;
pub const KT_OFFSET_MAX_KEY_BYTES: u64 = 20;
pub const KT_OFFSET_CRC: u64 = 24;
/// The header CRC32C covers bytes 0..24.
pub const KT_CRC_COVERED_BYTES: u64 = 24;
/// One slot per key: two 256-byte media blocks.
pub const KEY_TABLE_SLOT_BYTES: u64 = 512;
pub const SLOT_OFFSET_KEY_HASH: usize = 0;
pub const SLOT_OFFSET_KEY_ID: usize = 8;
pub const SLOT_OFFSET_KEY_LEN: usize = 12;
pub const SLOT_OFFSET_USED: usize = 14;
pub const SLOT_OFFSET_IDENTITY_CRC: usize = 16;
pub const SLOT_OFFSET_STATE_CRC: usize = 20;
pub const SLOT_OFFSET_LAST_TIMESTAMP: usize = 24;
pub const SLOT_OFFSET_LAST_DELTA: usize = 32;
pub const SLOT_OFFSET_LAST_VALUE_BITS: usize = 40;
pub const SLOT_OFFSET_FIRST_ENTRY_META: usize = 48;
pub const SLOT_OFFSET_HAS_STATE: usize = 56;
pub const SLOT_OFFSET_XOR_LEADING: usize = 57;
pub const SLOT_OFFSET_XOR_TRAILING: usize = 58;
pub const SLOT_OFFSET_KEY: usize = 64;
/// Longest key a slot holds.
pub const KEY_TABLE_MAX_KEY_BYTES: usize = 448;
/// `xor_leading` of a key whose XOR window is not open yet.
pub const XOR_NO_WINDOW: u8 = 0xFF;
/// Most slots a table may have (ids and slot indexes fit u32).
pub const KEY_TABLE_MAX_SLOTS: u32 = 1 << 24;

/// Bytes of a table area with `slot_count` slots.
pub const fn key_table_area_bytes(slot_count: u32) -> u64 {
    KEY_TABLE_HEADER_BYTES + slot_count as u64 * KEY_TABLE_SLOT_BYTES
}

/// FNV-1a (64-bit) of a key: the slot probe start.
pub fn key_hash(key: &[u8]) -> u64 {
    key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The compression state of one key; all zero (with no XOR window) when
/// cleared.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct KeyState {
    /// Whether a first entry was seen since the key was inserted or cleared;
    /// without it the next entry's timestamp and value are written raw.
    pub has_state: bool,
    pub last_timestamp: i64,
    pub last_delta: i64,
    pub last_value_bits: u64,
    /// Leading zeros of the XOR window, [`XOR_NO_WINDOW`] when none is open.
    pub xor_leading: u8,
    pub xor_trailing: u8,
    /// Log metadata of the key's first entry since insert or clear.
    pub first_entry_meta: u64,
}

impl KeyState {
    pub const CLEARED: KeyState = KeyState {
        has_state: false,
        last_timestamp: 0,
        last_delta: 0,
        last_value_bits: 0,
        xor_leading: XOR_NO_WINDOW,
        xor_trailing: 0,
        first_entry_meta: 0,
    };
}

/// One key of the mirror.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRecord {
    pub id: u32,
    pub slot: u32,
    pub state: KeyState,
}

/// The key hash table: a PMem area and its DRAM mirror.
pub struct KeyTable {
    region: Arc<Region>,
    base: RegionOffset,
    slot_count: u32,
    by_key: HashMap<Vec<u8>, KeyRecord>,
    key_of_id: HashMap<u32, Vec<u8>>,
    /// Slots in use (by a key of the mirror).
    used_slots: Vec<bool>,
    next_id: u32,
}

fn corruption(offset: u64, what: impl Into<String>) -> DeclogError {
    DeclogError::corruption(offset, what)
}

fn header_bytes(slot_count: u32) -> [u8; 32] {
    let mut h = [0u8; 32];
    h[0..8].copy_from_slice(&KEY_TABLE_MAGIC.to_le_bytes());
    h[8..12].copy_from_slice(&KEY_TABLE_FORMAT_VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&slot_count.to_le_bytes());
    h[16..20].copy_from_slice(&(KEY_TABLE_SLOT_BYTES as u32).to_le_bytes());
    h[20..24].copy_from_slice(&(KEY_TABLE_MAX_KEY_BYTES as u32).to_le_bytes());
    let crc = crc32c::crc32c(&h[..KT_CRC_COVERED_BYTES as usize]);
    h[24..28].copy_from_slice(&crc.to_le_bytes());
    h
}

fn identity_crc(slot: &[u8], key_len: usize) -> u32 {
    let crc = crc32c::crc32c(&slot[..SLOT_OFFSET_IDENTITY_CRC]);
    crc32c::crc32c_append(crc, &slot[SLOT_OFFSET_KEY..SLOT_OFFSET_KEY + key_len])
}

fn state_crc(slot: &[u8]) -> u32 {
    crc32c::crc32c(&slot[SLOT_OFFSET_LAST_TIMESTAMP..SLOT_OFFSET_KEY])
}

fn write_state(slot: &mut [u8], s: &KeyState) {
    slot[SLOT_OFFSET_LAST_TIMESTAMP..SLOT_OFFSET_LAST_TIMESTAMP + 8]
        .copy_from_slice(&s.last_timestamp.to_le_bytes());
    slot[SLOT_OFFSET_LAST_DELTA..SLOT_OFFSET_LAST_DELTA + 8].copy_from_slice(&s.last_delta.to_le_bytes());
    slot[SLOT_OFFSET_LAST_VALUE_BITS..SLOT_OFFSET_LAST_VALUE_BITS + 8]
        .copy_from_slice(&s.last_value_bits.to_le_bytes());
    slot[SLOT_OFFSET_FIRST_ENTRY_META..SLOT_OFFSET_FIRST_ENTRY_META + 8]
        .copy_from_slice(&s.first_entry_meta.to_le_bytes());
    slot[SLOT_OFFSET_HAS_STATE] = s.has_state as u8;
    slot[SLOT_OFFSET_XOR_LEADING] = s.xor_leading;
    slot[SLOT_OFFSET_XOR_TRAILING] = s.xor_trailing;
    slot[SLOT_OFFSET_XOR_TRAILING + 1..SLOT_OFFSET_KEY].fill(0);
    let crc = state_crc(slot);
    slot[SLOT_OFFSET_STATE_CRC..SLOT_OFFSET_STATE_CRC + 4].copy_from_slice(&crc.to_le_bytes());
}

/// The whole slot image of a key.
fn slot_bytes(key: &[u8], record: &KeyRecord) -> Vec<u8> {
    let mut slot = vec![0u8; KEY_TABLE_SLOT_BYTES as usize];
    slot[SLOT_OFFSET_KEY_HASH..SLOT_OFFSET_KEY_HASH + 8].copy_from_slice(&key_hash(key).to_le_bytes());
    slot[SLOT_OFFSET_KEY_ID..SLOT_OFFSET_KEY_ID + 4].copy_from_slice(&record.id.to_le_bytes());
    slot[SLOT_OFFSET_KEY_LEN..SLOT_OFFSET_KEY_LEN + 2].copy_from_slice(&(key.len() as u16).to_le_bytes());
    slot[SLOT_OFFSET_USED] = 1;
    slot[SLOT_OFFSET_KEY..SLOT_OFFSET_KEY + key.len()].copy_from_slice(key);
    let crc = identity_crc(&slot, key.len());
    slot[SLOT_OFFSET_IDENTITY_CRC..SLOT_OFFSET_IDENTITY_CRC + 4].copy_from_slice(&crc.to_le_bytes());
    write_state(&mut slot, &record.state);
    slot
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// Decodes a slot: `None` when empty or its identity is torn.
fn decode_slot(slot: &[u8]) -> Option<(Vec<u8>, u32, KeyState)> {
    if slot[SLOT_OFFSET_USED] != 1 {
        return None;
    }
    let key_len = u16::from_le_bytes([slot[SLOT_OFFSET_KEY_LEN], slot[SLOT_OFFSET_KEY_LEN + 1]]) as usize;
    if key_len > KEY_TABLE_MAX_KEY_BYTES
        || identity_crc(slot, key_len) != u32_at(slot, SLOT_OFFSET_IDENTITY_CRC)
    {
        return None;
    }
    let key = slot[SLOT_OFFSET_KEY..SLOT_OFFSET_KEY + key_len].to_vec();
    if key_hash(&key) != u64_at(slot, SLOT_OFFSET_KEY_HASH) {
        return None;
    }
    let id = u32_at(slot, SLOT_OFFSET_KEY_ID);
    let state_ok = state_crc(slot) == u32_at(slot, SLOT_OFFSET_STATE_CRC);
    let leading = slot[SLOT_OFFSET_XOR_LEADING];
    let trailing = slot[SLOT_OFFSET_XOR_TRAILING];
    let window_ok = leading == XOR_NO_WINDOW || (leading as u32 + trailing as u32) < 64;
    let state = if state_ok && window_ok && slot[SLOT_OFFSET_HAS_STATE] <= 1 {
        KeyState {
            has_state: slot[SLOT_OFFSET_HAS_STATE] == 1,
            last_timestamp: u64_at(slot, SLOT_OFFSET_LAST_TIMESTAMP) as i64,
            last_delta: u64_at(slot, SLOT_OFFSET_LAST_DELTA) as i64,
            last_value_bits: u64_at(slot, SLOT_OFFSET_LAST_VALUE_BITS),
            xor_leading: leading,
            xor_trailing: trailing,
            first_entry_meta: u64_at(slot, SLOT_OFFSET_FIRST_ENTRY_META),
        }
    } else {
        KeyState::CLEARED
    };
    Some((key, id, state))
}

impl KeyTable {
    /// Formats an empty table of `slot_count` slots at `base` (zeroes every
    /// slot, then persists the header last).
    pub fn format(region: Arc<Region>, base: RegionOffset, slot_count: u32) -> Result<KeyTable, DeclogError> {
        if slot_count == 0 || slot_count > KEY_TABLE_MAX_SLOTS {
            return Err(DeclogError::InvalidConfig(format!(
                "key table of {slot_count} slots: 1..={KEY_TABLE_MAX_SLOTS} allowed"
            )));
        }
        write_empty_area(&region, base, slot_count)?;
        Ok(KeyTable::empty(region, base, slot_count))
    }

    fn empty(region: Arc<Region>, base: RegionOffset, slot_count: u32) -> KeyTable {
        KeyTable {
            region,
            base,
            slot_count,
            by_key: HashMap::default(),
            key_of_id: HashMap::default(),
            used_slots: vec![false; slot_count as usize],
            next_id: 0,
        }
    }

    /// Opens a table (active or a checkpoint copy) and rebuilds the mirror.
    pub fn open(region: Arc<Region>, base: RegionOffset) -> Result<KeyTable, DeclogError> {
        region.check_range(base, KEY_TABLE_HEADER_BYTES, "key table header")?;
        let h = region.read_vec(base, 32);
        if u64_at(&h, 0) != KEY_TABLE_MAGIC {
            return Err(corruption(base.0, "no key table magic"));
        }
        if crc32c::crc32c(&h[..KT_CRC_COVERED_BYTES as usize]) != u32_at(&h, KT_OFFSET_CRC as usize) {
            return Err(corruption(base.0, "key table header CRC mismatch"));
        }
        let version = u32_at(&h, KT_OFFSET_VERSION as usize);
        if version != KEY_TABLE_FORMAT_VERSION {
            return Err(corruption(
                base.0,
                format!(
                    "key table format version {version}; this build reads version {KEY_TABLE_FORMAT_VERSION} \
                     (stop the build that wrote it gracefully, so a checkpoint covers the log, then remove \
                     the DecLog file)"
                ),
            ));
        }
        let slot_count = u32_at(&h, KT_OFFSET_SLOT_COUNT as usize);
        if h != header_bytes(slot_count) || slot_count == 0 || slot_count > KEY_TABLE_MAX_SLOTS {
            return Err(corruption(base.0, format!("unsupported key table header ({slot_count} slots)")));
        }
        region.check_range(base, key_table_area_bytes(slot_count), "key table slots")?;
        let mut table = KeyTable::empty(region, base, slot_count);
        for index in 0..slot_count {
            let at = table.slot_offset(index);
            let slot = table.region.read_vec(at, KEY_TABLE_SLOT_BYTES as usize);
            let Some((key, id, state)) = decode_slot(&slot) else { continue };
            if table.by_key.contains_key(&key) || table.key_of_id.contains_key(&id) {
                return Err(corruption(at.0, format!("key table slot {index} repeats a key or id {id}")));
            }
            table.adopt(key, KeyRecord { id, slot: index, state });
        }
        Ok(table)
    }

    /// Opens a private copy of the table at `base` of `region`: the mirror
    /// is rebuilt from the slots as [`KeyTable::open`] does, and every later
    /// write goes to a DRAM copy of the area, never to `region`. Recovery
    /// decompresses with such a copy, so parsing stays read-only.
    pub fn open_detached(region: &Region, base: RegionOffset) -> Result<KeyTable, DeclogError> {
        region.check_range(base, KEY_TABLE_HEADER_BYTES, "key table header")?;
        let h = region.read_vec(base, 32);
        let slot_count = u32_at(&h, KT_OFFSET_SLOT_COUNT as usize);
        if slot_count == 0 || slot_count > KEY_TABLE_MAX_SLOTS {
            return Err(corruption(base.0, format!("unsupported key table header ({slot_count} slots)")));
        }
        let bytes = key_table_area_bytes(slot_count);
        region.check_range(base, bytes, "key table slots")?;
        let copy = Region::sim_from_image(region.read_vec(base, bytes as usize));
        // The copy is the whole region, the table at its offset 0.
        KeyTable::open(Arc::new(copy), RegionOffset(0))
    }

    /// Clears every key's state in the DRAM mirror only (ids and strings
    /// kept, PMem untouched): what a writer does when it opens the log, and
    /// a decompressor where it starts.
    pub fn reset_states(&mut self) {
        for r in self.by_key.values_mut() {
            r.state = KeyState::CLEARED;
        }
    }

    fn adopt(&mut self, key: Vec<u8>, record: KeyRecord) {
        self.used_slots[record.slot as usize] = true;
        self.next_id = self.next_id.max(record.id.saturating_add(1));
        self.key_of_id.insert(record.id, key.clone());
        self.by_key.insert(key, record);
    }

    fn slot_offset(&self, index: u32) -> RegionOffset {
        self.base + KEY_TABLE_HEADER_BYTES + index as u64 * KEY_TABLE_SLOT_BYTES
    }

    pub fn region(&self) -> &Arc<Region> {
        &self.region
    }

    pub fn base(&self) -> RegionOffset {
        self.base
    }

    pub fn slot_count(&self) -> u32 {
        self.slot_count
    }

    /// Keys in the table.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// The mirror's record of `key`.
    pub fn get(&self, key: &[u8]) -> Option<&KeyRecord> {
        self.by_key.get(key)
    }

    /// The key with string encoding `id`.
    pub fn key_of(&self, id: u32) -> Option<&[u8]> {
        self.key_of_id.get(&id).map(Vec::as_slice)
    }

    /// The id the next new key gets.
    pub fn next_id(&self) -> u32 {
        self.next_id
    }

    /// The mirror record of a known key, to read and move its state in one
    /// lookup (no PMem write, as [`KeyTable::set_state`]).
    pub(crate) fn record_mut(&mut self, key: &[u8]) -> Option<&mut KeyRecord> {
        self.by_key.get_mut(key)
    }

    /// Sets the mirror state of a known key (no PMem write: states reach PMem
    /// only at insert, clear and snapshot).
    pub(crate) fn set_state(&mut self, key: &[u8], state: KeyState) {
        if let Some(r) = self.by_key.get_mut(key) {
            r.state = state;
        }
    }

    /// Checks a key can be inserted.
    pub fn check_key(key: &[u8]) -> Result<(), DeclogError> {
        if key.len() > KEY_TABLE_MAX_KEY_BYTES {
            return Err(DeclogError::InvalidInput(format!(
                "series key of {} bytes exceeds the key table limit of {KEY_TABLE_MAX_KEY_BYTES}",
                key.len()
            )));
        }
        Ok(())
    }

    /// Inserts a new key with `id` (`None`: the next id) and `state`: writes
    /// and persists its slot, then updates the mirror. Returns the id.
    pub fn insert(&mut self, key: &[u8], id: Option<u32>, state: KeyState) -> Result<u32, DeclogError> {
        let id = self.insert_unfenced(key, id, state)?;
        self.region.fence();
        Ok(id)
    }

    /// [`KeyTable::insert`] with the slot written and flushed but not
    /// fenced: the caller fences ([`KeyTable::fence`]) once after several
    /// inserts, before any entry naming one of them is written.
    pub fn insert_unfenced(
        &mut self,
        key: &[u8],
        id: Option<u32>,
        state: KeyState,
    ) -> Result<u32, DeclogError> {
        KeyTable::check_key(key)?;
        if self.by_key.contains_key(key) {
            return Err(DeclogError::InvalidInput("key already in the key table".into()));
        }
        let id = id.unwrap_or(self.next_id);
        if id == u32::MAX || self.key_of_id.contains_key(&id) {
            return Err(DeclogError::InvalidInput(format!("key id {id} is taken or out of range")));
        }
        // A full table fails at once: without this check every new key of a
        // full table probed every slot before being logged raw.
        if self.by_key.len() >= self.slot_count as usize {
            return Err(DeclogError::InvalidInput(format!(
                "key table full ({} slots); its new keys are logged raw",
                self.slot_count
            )));
        }
        let start = (key_hash(key) % self.slot_count as u64) as u32;
        let slot = (0..self.slot_count)
            .map(|i| ((start as u64 + i as u64) % self.slot_count as u64) as u32)
            .find(|&s| !self.used_slots[s as usize])
            .ok_or_else(|| {
                DeclogError::InvalidInput(format!(
                    "key table full ({} slots); checkpoint into a larger table",
                    self.slot_count
                ))
            })?;
        let record = KeyRecord { id, slot, state };
        let (at, bytes) = (self.slot_offset(slot), slot_bytes(key, &record));
        self.region.write(at, &bytes);
        self.region.flush(at, bytes.len() as u64);
        self.adopt(key.to_vec(), record);
        Ok(id)
    }

    /// Orders every flushed slot before what follows (one fence for the
    /// slots of [`KeyTable::insert_unfenced`]).
    pub fn fence(&self) {
        self.region.fence();
    }

    /// The checkpoint reset (declog.txt 4.5 step 4): every key keeps its id
    /// and string, every other field is cleared, in PMem (persisted) and in
    /// the mirror.
    pub fn clear_for_checkpoint(&mut self) {
        let mut part = [0u8; KEY_TABLE_SLOT_BYTES as usize];
        write_state(&mut part, &KeyState::CLEARED);
        let state_part = &part[SLOT_OFFSET_STATE_CRC..SLOT_OFFSET_KEY];
        let mut slots = Vec::with_capacity(self.by_key.len());
        for r in self.by_key.values_mut() {
            r.state = KeyState::CLEARED;
            slots.push(r.slot);
        }
        for slot in slots {
            let at = self.slot_offset(slot) + SLOT_OFFSET_STATE_CRC as u64;
            self.region.write(at, state_part);
            self.region.flush(at, state_part.len() as u64);
        }
        self.region.fence();
    }

    /// Copies the table with every key's current mirror state to `base` of
    /// `region` (the checkpoint log's copy, declog.txt 4.5 step 4), slots
    /// first, header last, persisted. The copy opens with [`KeyTable::open`].
    pub fn snapshot_to(&self, region: &Region, base: RegionOffset) -> Result<(), DeclogError> {
        region.check_range(base, key_table_area_bytes(self.slot_count), "key table snapshot")?;
        let mut image = vec![0u8; (self.slot_count as u64 * KEY_TABLE_SLOT_BYTES) as usize];
        for (key, r) in &self.by_key {
            let at = (r.slot as u64 * KEY_TABLE_SLOT_BYTES) as usize;
            image[at..at + KEY_TABLE_SLOT_BYTES as usize].copy_from_slice(&slot_bytes(key, r));
        }
        let slots_at = base + KEY_TABLE_HEADER_BYTES;
        region.write(slots_at, &image);
        region.persist(slots_at, image.len() as u64);
        write_header(region, base, self.slot_count);
        Ok(())
    }
}

fn write_header(region: &Region, base: RegionOffset, slot_count: u32) {
    let mut h = vec![0u8; KEY_TABLE_HEADER_BYTES as usize];
    h[..32].copy_from_slice(&header_bytes(slot_count));
    region.write_persist(base, &h);
}

pub(crate) fn write_empty_area(
    region: &Region,
    base: RegionOffset,
    slot_count: u32,
) -> Result<(), DeclogError> {
    region.check_range(base, key_table_area_bytes(slot_count), "key table")?;
    let zero = vec![0u8; (slot_count as u64 * KEY_TABLE_SLOT_BYTES) as usize];
    let slots_at = base + KEY_TABLE_HEADER_BYTES;
    region.write(slots_at, &zero);
    region.persist(slots_at, zero.len() as u64);
    write_header(region, base, slot_count);
    Ok(())
}
