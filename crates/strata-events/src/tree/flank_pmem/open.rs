//! Opening a PMem flank area (chronicledb-pmem.txt section 4.1: "the most
//! recent state of the flank is available at any time"): the header checks,
//! the journal, merge and entry-journal words as found, the slots, and the
//! leaf commit word applied to the leaf slot (`docs/format/events-flank.md`,
//! "Header" and "Persist order of an append").

use super::*;

impl PmemFlankArea {
    /// Opens a formatted area: checks the header against `fp` (`Corruption`
    /// if it differs or is damaged) and reads the height, the journal and the
    /// slots of levels `0..height`.
    pub fn open(
        region: Arc<Region>,
        base: RegionOffset,
        area_bytes: u64,
        fp: &FlankFingerprint,
    ) -> Result<(PmemFlankArea, FlankImage), EventError> {
        let mut area = Self::checked(region, base, area_bytes, fp)?;
        let location = format!("flank area header at {base}");
        let corrupt = |what: String| EventError::corruption(&location, what);
        let mut h = vec![0u8; FLANK_HEADER_BYTES as usize];
        area.read(0, &mut h);
        let magic = u64::from_le_bytes(h[0..8].try_into().expect("8 bytes"));
        if magic != FLANK_MAGIC {
            return Err(corrupt(format!(
                "magic {magic:#018x}: the area was never formatted (or a format was cut)"
            )));
        }
        let crc_at = FLANK_OFFSET_HEADER_CRC as usize;
        let stored_crc = u32::from_le_bytes(h[crc_at..crc_at + 4].try_into().expect("4 bytes"));
        if crc32c::crc32c(&h[..FLANK_HEADER_CRC_COVERED_BYTES as usize]) != stored_crc {
            return Err(corrupt("header CRC mismatch".into()));
        }
        let version = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes"));
        if !(FLANK_VERSION_OLDEST..=FLANK_VERSION).contains(&version) {
            return Err(corrupt(format!(
                "flank format version {version}; this build reads versions {FLANK_VERSION_OLDEST} to {FLANK_VERSION} (recreate the tree)"
            )));
        }
        area.version = version;
        let expected = header_bytes(fp, version);
        if h[..CACHE_LINE_BYTES as usize] != expected[..] {
            return Err(corrupt(format!(
                "formatted for another tree configuration (stored {:?}, expected {:?})",
                &h[8..44],
                &expected[8..44]
            )));
        }
        let word = |at: u64| u64::from_le_bytes(h[at as usize..at as usize + 8].try_into().expect("8 bytes"));
        let height = word(FLANK_OFFSET_HEIGHT);
        if height == 0 || height > u64::from(fp.max_levels) {
            return Err(corrupt(format!("height {height} outside 1..={}", fp.max_levels)));
        }
        let fields = &h[FLANK_OFFSET_JOURNAL_LEVEL as usize..FLANK_OFFSET_JOURNAL_LEVEL as usize + 32];
        let record = || {
            let level = word(FLANK_OFFSET_JOURNAL_LEVEL);
            match (node_word(word(FLANK_OFFSET_JOURNAL_OLD_ID)), node_word(word(FLANK_OFFSET_JOURNAL_NEW_ID)))
            {
                (Some(old_id), Some(new_id)) if level < height => Some(FlankJournal {
                    level: level as u32,
                    old_id,
                    new_id,
                    root_id: node_word(word(FLANK_OFFSET_JOURNAL_ROOT_ID)),
                }),
                _ => None,
            }
        };
        let state = word(FLANK_OFFSET_JOURNAL_STATE);
        let ended = version >= 4 && state >> 32 == u64::from(JOURNAL_ENDED_TAG);
        // An ended word whose CRC does not match: the next write-out's W0
        // was rewriting the words (the last write-out had ended whole).
        let last_write_out = if ended && state == journal_ended_word(fields) { record() } else { None };
        let journal = match state {
            JOURNAL_IDLE => None,
            _ if ended => None,
            // A commit word whose CRC does not match: the fence that would
            // have made the record whole never returned, so the write-out
            // had not begun (W1 runs after it).
            w if w >> 32 == u64::from(JOURNAL_COMMIT_TAG) && w != journal_commit_word(fields) => None,
            w if w == JOURNAL_ACTIVE || w >> 32 == u64::from(JOURNAL_COMMIT_TAG) => match record() {
                Some(j) => Some(j),
                None => {
                    let level = word(FLANK_OFFSET_JOURNAL_LEVEL);
                    return Err(corrupt(format!("journal record of level {level} with missing ids")));
                }
            },
            state => return Err(corrupt(format!("journal state {state:#018x}"))),
        };
        let merged_ooo_generation = word(FLANK_OFFSET_MERGED_OOO_GENERATION);
        let merge_slot = match word(FLANK_OFFSET_MERGE_STATE) {
            MERGE_IDLE => None,
            MERGE_ACTIVE_0 => Some(0),
            MERGE_ACTIVE_1 => Some(1),
            state => return Err(corrupt(format!("merge state {state:#018x}"))),
        };
        let merge = match merge_slot {
            None => None,
            Some(slot) => {
                let at = merge_record_offset(slot) as usize;
                let record = MergeRecord::decode(&h[at..at + MERGE_RECORD_BYTES as usize])
                    .map_err(|e| corrupt(format!("merge record {slot}: {e}")))?;
                Some(MergeImage {
                    generation: word(FLANK_OFFSET_MERGE_GENERATION),
                    input_events: word(FLANK_OFFSET_MERGE_INPUT_EVENTS),
                    record,
                    slot,
                })
            }
        };
        area.merge_slot = merge_slot;
        let entry_journal = match word(FLANK_OFFSET_ENTRY_JOURNAL) {
            ENTRY_JOURNAL_IDLE => None,
            w if w >> 48 == ENTRY_JOURNAL_TAG && (w >> 32) & 0xFFFF < height && (w >> 32) & 0xFFFF > 0 => {
                Some((((w >> 32) & 0xFFFF) as u32, w as u32))
            }
            w => return Err(corrupt(format!("entry journal word {w:#018x}"))),
        };
        let mut slots = Vec::with_capacity(height as usize);
        for level in 0..height as u32 {
            let mut slot = vec![0u8; NODE_BYTES];
            area.read(area.slot_offset(level), &mut slot);
            slots.push(slot);
        }
        let leaf_commit = LeafCommit::from_word(word(FLANK_OFFSET_LEAF_COMMIT));
        let durable =
            area.apply_leaf_commit(leaf_commit, &mut slots[0]).map_err(|e| corrupt(e.to_string()))?;
        if durable != leaf_commit.count {
            // A torn batch: rewrite the word to describe what the leaf holds,
            // so a later torn batch can never make the stale CRC match again.
            let settled = LeafCommit { count: durable, from: durable, crc: 0 };
            area.store_word(FLANK_OFFSET_LEAF_COMMIT, settled.word());
            area.persist(FLANK_OFFSET_LEAF_COMMIT, 8);
        }
        let image = FlankImage {
            height: height as u32,
            slots,
            journal,
            last_write_out,
            merged_ooo_generation,
            merge,
            entry_journal,
            leaf_commit,
        };
        Ok((area, image))
    }

    /// Sets the leaf slot's header count from the commit word: its count if
    /// the CRC matches the batch's bytes, else the count before the batch
    /// (a torn batch); returns that count. `Err` names a word that cannot
    /// describe the slot.
    fn apply_leaf_commit(&self, commit: LeafCommit, slot: &mut [u8]) -> Result<u16, DecodeError> {
        let (from, count) = (usize::from(commit.from), usize::from(commit.count));
        let batch = NODE_HEADER_BYTES + from * self.event_bytes..NODE_HEADER_BYTES + count * self.event_bytes;
        if from > count || batch.end > slot.len() {
            return Err(DecodeError::Invalid(format!(
                "leaf commit word {:#018x} outside the slot",
                commit.word()
            )));
        }
        #[cfg(any(test, feature = "crashtest"))]
        let checked = !crate::tree::planted::planted(crate::tree::planted::PlantedBug::UncheckedLeafCommit);
        #[cfg(not(any(test, feature = "crashtest")))]
        let checked = true;
        let durable =
            if !checked || crc32c::crc32c(&slot[batch]) == commit.crc { commit.count } else { commit.from };
        slot[OFFSET_COUNT..OFFSET_COUNT + 4].copy_from_slice(&u32::from(durable).to_le_bytes());
        Ok(durable)
    }
}
