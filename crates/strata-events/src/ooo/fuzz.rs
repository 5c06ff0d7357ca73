//! The fuzz entry of the OOO queues (`fuzz/fuzz_targets/events_ooo_decode.rs`):
//! recovering a PMem queue from an arbitrary or damaged area image, and
//! decoding flash pages, must never panic, and whatever recovery accepts must
//! obey the format (`docs/format/events-ooo-queue.md`).
//!
//! Input: `mode (1) | rest`. By `mode % 3`:
//! - 0: `rest` is the area image (padded to 8 bytes, at most 64 KiB); both
//!   flavours open it and, if they accept it, are queried, pushed to and
//!   truncated.
//! - 1: `event_size (1) | slots (1) | events (1) | seed (8) | (pos u16, xor u8)*`:
//!   a valid queue is built (with `mode & 8` across a truncation) and its
//!   image damaged by the xors; with `mode & 4` every CRC is then recomputed
//!   as the format document says, so the damage reaches the tag, slot and
//!   geometry checks. Without damage it must recover exactly what was pushed.
//! - 2: `event_size (1) | generation (1) | page (1) | bytes`: `bytes` decoded
//!   as a flash page, and a page of `bytes` as events encoded, optionally
//!   damaged (`mode & 4`) and decoded.

use std::sync::Arc;

use strata_pmem::{Region, RegionOffset};

use super::flash_layout::{decode_page, decode_page_header, encode_page, events_per_page, FLASH_PAGE_BYTES};
use super::pmem_layout::{
    decode_header, record_crc, HEADER_CRC_OFFSET, PMEM_HEADER_BYTES, RECORD_CRC_OFFSET,
};
use super::{event_ts, OooIndexing, OooQueue, PmemOooQueue, MAX_EVENT_BYTES};
use crate::sample_events::{workload_event, SplitMix64};

/// Largest image mode 0 uses.
const MAX_IMAGE_BYTES: usize = 64 << 10;

pub fn fuzz_ooo_decode(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => {
            open_image(pad_image(rest));
        }
        1 => damaged_queue(mode, rest),
        _ => flash_page(mode, rest),
    }
}

fn pad_image(bytes: &[u8]) -> Vec<u8> {
    let mut image = bytes[..bytes.len().min(MAX_IMAGE_BYTES)].to_vec();
    let len = image.len().max(PMEM_HEADER_BYTES as usize).div_ceil(8) * 8;
    image.resize(len, 0);
    image
}

/// Opens both flavours of the queue at offset 0 of `image` and exercises
/// whatever opens. Returns the events the indexed flavour found, if it opened.
pub(crate) fn open_image(image: Vec<u8>) -> Option<Vec<Vec<u8>>> {
    let region = Arc::new(Region::sim_from_image(image));
    let mut indexed_events = None;
    for indexing in [OooIndexing::Indexed, OooIndexing::Pure] {
        if let Ok((q, report)) = PmemOooQueue::open(region.clone(), RegionOffset(0), indexing) {
            assert_eq!(report.events_recovered, q.len());
            assert!(q.len() <= q.slot_count(), "more events than slots");
            let events = exercise(q);
            if indexing == OooIndexing::Indexed {
                indexed_events = events;
            }
        }
    }
    indexed_events
}

/// Queries, a push and a truncation on an opened queue. Returns its events
/// (application-time order) if `sorted()` succeeded.
fn exercise(mut q: PmemOooQueue) -> Option<Vec<Vec<u8>>> {
    let len = q.len();
    let sorted = q.sorted().ok();
    if let Some(s) = &sorted {
        assert_eq!(s.len() as u64, len, "sorted() returns every event");
        let ts: Vec<i64> = s.timestamps().collect();
        assert!(ts.windows(2).all(|w| w[0] <= w[1]), "sorted() out of order");
        if let (Some(&lo), Some(&hi)) = (ts.first(), ts.last()) {
            let mid = lo / 2 + hi / 2;
            if let Ok(r) = q.get_range(mid, hi) {
                assert_eq!(r.len(), ts.iter().filter(|&&t| t >= mid).count(), "range count");
            }
            if let Ok(p) = q.point(lo) {
                assert!(p.timestamps().all(|t| t == lo) && !p.is_empty(), "point query");
            }
        }
    }
    if !q.is_full() {
        let mut event = vec![0u8; q.event_bytes()];
        event[..8].copy_from_slice(&7i64.to_le_bytes());
        q.push(&event).expect("push into an opened queue with room");
        assert_eq!(q.len(), len + 1);
    }
    q.truncate().expect("truncate an opened queue");
    assert!(q.is_empty());
    assert!(q.sorted().expect("sorted after truncate").is_empty());
    sorted.map(|s| s.to_vecs())
}

/// A valid queue image: `slots` slots of `event_bytes`-byte events holding
/// `events` pushed events (with `across_truncate`, after half of them were
/// truncated). Returns the image and the events the queue holds in model order.
pub(crate) fn valid_image(
    event_bytes: usize,
    slots: u64,
    events: u64,
    seed: u64,
    across_truncate: bool,
) -> (Vec<u8>, Vec<Vec<u8>>) {
    let area = PmemOooQueue::area_bytes_for(event_bytes, slots * event_bytes as u64);
    let region = Arc::new(Region::sim(area));
    let mut q = PmemOooQueue::format(region.clone(), RegionOffset(0), area, event_bytes, OooIndexing::Pure)
        .expect("format a valid queue");
    let mut rng = SplitMix64::new(seed);
    let mut held = Vec::new();
    let first = if across_truncate { (events / 2).min(slots) } else { 0 };
    for i in 0..first + events.min(slots) {
        if across_truncate && i == first {
            q.truncate().expect("truncate");
            held.clear();
        }
        let ts = (rng.below(32) as i64 - 8) * 5;
        let e = if event_bytes >= 16 {
            workload_event(ts, i, event_bytes, &mut rng)
        } else {
            let mut e = ts.to_le_bytes().to_vec();
            e.resize(event_bytes, i as u8);
            e
        };
        q.push(&e).expect("push into a queue with room");
        held.push(e);
    }
    held.sort_by_key(|e| event_ts(e)); // stable: ties stay in arrival order
    let image = region.as_sim().expect("sim").persistent_image();
    (image, held)
}

/// Recomputes every slot's CRC and the header CRC as the format says.
pub(crate) fn fix_crcs(image: &mut [u8]) {
    let crc_at = HEADER_CRC_OFFSET as usize;
    let crc = crc32c::crc32c(&image[..crc_at]);
    image[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
    let Ok((g, _)) = decode_header(image, 0) else {
        return;
    };
    for slot in 0..g.slot_count {
        let at = g.slot_offset(slot) as usize;
        let Some(record) = image.get_mut(at..at + g.slot_bytes as usize) else {
            return;
        };
        let crc = record_crc(slot, record);
        let c = RECORD_CRC_OFFSET as usize;
        record[c..c + 4].copy_from_slice(&crc.to_le_bytes());
    }
}

fn damaged_queue(mode: u8, rest: &[u8]) {
    if rest.len() < 11 {
        return;
    }
    let event_bytes = 8 + rest[0] as usize % 41;
    let slots = 1 + rest[1] as u64 % 24;
    let events = rest[2] as u64 % 32;
    let seed = u64::from_le_bytes(rest[3..11].try_into().expect("8 bytes"));
    let (mut image, held) = valid_image(event_bytes, slots, events, seed, mode & 8 != 0);
    let damage = &rest[11..];
    for m in damage.chunks_exact(3) {
        let pos = u16::from_le_bytes([m[0], m[1]]) as usize % image.len();
        image[pos] ^= if m[2] == 0 { 0x80 } else { m[2] };
    }
    if mode & 4 != 0 {
        fix_crcs(&mut image);
    }
    let found = open_image(image);
    if damage.len() < 3 {
        assert_eq!(found.as_ref(), Some(&held), "an undamaged queue recovers exactly what was pushed");
    }
}

fn flash_page(mode: u8, rest: &[u8]) {
    if rest.len() < 3 {
        return;
    }
    let event_bytes = (8 + rest[0] as usize % 120).min(MAX_EVENT_BYTES);
    let (generation, page_index) = (rest[1] as u64, rest[2] as u64);
    let bytes = &rest[3..];
    let _ = decode_page_header(bytes, generation, page_index, event_bytes);
    if let Ok((h, events)) = decode_page(bytes, generation, page_index, event_bytes) {
        assert_eq!(events.len(), h.event_count as usize * event_bytes);
    }
    let fit =
        (events_per_page(event_bytes) as usize * event_bytes).min(bytes.len() / event_bytes * event_bytes);
    if fit == 0 {
        return;
    }
    let mut page = vec![0u8; FLASH_PAGE_BYTES as usize];
    encode_page(&mut page, generation, page_index, event_bytes, &bytes[..fit]);
    let damaged = mode & 4 != 0;
    if damaged {
        let pos = (bytes[0] as usize * 31 + bytes.len()) % page.len();
        page[pos] ^= 0x5a;
    }
    match decode_page(&page, generation, page_index, event_bytes) {
        Ok((_, events)) => assert!(damaged || events == &bytes[..fit], "page round trip"),
        Err(e) => assert!(damaged, "a valid page was rejected: {e:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// ~20,000 seeded inputs over every mode: raw random images, valid images
    /// with random bytes flipped (fed as raw images), damaged queues with and
    /// without CRC repair (undamaged ones must round-trip), flash pages.
    #[test]
    fn fuzz_smoke_never_panics_and_valid_inputs_round_trip() {
        let seed = 0x00_0f_f0_0f_u64;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut round_trips = 0;
        for i in 0..20_000u32 {
            let mut data = vec![0u8];
            match i % 4 {
                0 => {
                    data[0] = 0;
                    let len = rng.gen_range(0..600);
                    data.extend((0..len).map(|_| rng.gen::<u8>()));
                }
                1 => {
                    data[0] = 0;
                    let eb = rng.gen_range(8..48);
                    let (mut image, _) =
                        valid_image(eb, rng.gen_range(1..12), rng.gen_range(0..14), rng.gen(), rng.gen());
                    for _ in 0..rng.gen_range(1..4) {
                        let pos = rng.gen_range(0..image.len());
                        image[pos] ^= 1 << rng.gen_range(0..8);
                    }
                    if rng.gen_bool(0.3) {
                        fix_crcs(&mut image);
                    }
                    data.extend_from_slice(&image);
                }
                2 => {
                    data[0] = [1u8, 4, 7, 10, 13][rng.gen_range(0..5)];
                    data.extend((0..11).map(|_| rng.gen::<u8>()));
                    if rng.gen_bool(0.2) {
                        round_trips += 1;
                    } else {
                        let n = rng.gen_range(1..6) * 3;
                        data.extend((0..n).map(|_| rng.gen::<u8>()));
                    }
                }
                _ => {
                    data[0] = if rng.gen_bool(0.5) { 2 } else { 6 };
                    let len = rng.gen_range(3..400);
                    data.extend((0..len).map(|_| rng.gen::<u8>()));
                }
            }
            let result = std::panic::catch_unwind(|| fuzz_ooo_decode(&data));
            assert!(result.is_ok(), "seed {seed:#x} input {i} panicked: {data:?}");
        }
        assert!(round_trips > 500, "undamaged queues were exercised ({round_trips})");
    }

    #[test]
    fn an_undamaged_image_recovers_its_events_in_both_flavours() {
        let (image, held) = valid_image(24, 10, 9, 5, true);
        assert_eq!(held.len(), 9);
        assert_eq!(open_image(image), Some(held));
    }

    #[test]
    fn empty_and_tiny_inputs_are_ignored() {
        fuzz_ooo_decode(&[]);
        fuzz_ooo_decode(&[0]);
        fuzz_ooo_decode(&[1, 2]);
        fuzz_ooo_decode(&[2]);
        assert!(open_image(pad_image(&[])).is_none(), "a zeroed header is no queue");
    }
}
