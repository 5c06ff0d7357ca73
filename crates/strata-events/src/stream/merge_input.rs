//! The spilled input of an out-of-order merge (chronicledb-pmem.txt section
//! 4.3 merge protocol; format: `docs/format/events-ooo-queue.md`, "Merge
//! input file"): with a queue that is not durable (the DRAM queue) and a
//! PMem flank, whose merges keep a redo record that recovery resumes with
//! the queue's events, the merge input is written to the file
//! `ooo-merge-input` in the stream directory before the merge begins, so an
//! interrupted merge can still be finished after a crash.
//!
//! The file is replaced durably (temporary file, sync, rename, directory
//! sync); after the merge it is removed without a directory sync: a file
//! that comes back after a crash names a generation no pending merge names,
//! and is ignored.

use std::path::Path;

use strata_media::fs::{create_durably, rename_durably};
use strata_media::FileSystem;

use crate::ids::EventError;
use crate::ooo::EventList;

pub const MERGE_INPUT_FILE: &str = "ooo-merge-input";
/// `STEVMRGI` read as a little-endian u64.
pub const MERGE_INPUT_MAGIC: u64 = u64::from_le_bytes(*b"STEVMRGI");
pub const MERGE_INPUT_VERSION: u32 = 1;
/// Bytes before the events.
pub const MERGE_INPUT_HEADER_BYTES: usize = 32;
pub const MERGE_INPUT_OFFSET_MAGIC: usize = 0;
pub const MERGE_INPUT_OFFSET_VERSION: usize = 8;
pub const MERGE_INPUT_OFFSET_EVENT_BYTES: usize = 12;
pub const MERGE_INPUT_OFFSET_GENERATION: usize = 16;
pub const MERGE_INPUT_OFFSET_EVENTS: usize = 24;

/// Encodes the file: header, the events in `sorted()` order, CRC32C of all
/// bytes before it.
pub fn encode(generation: u64, events: &EventList) -> Vec<u8> {
    let mut out = Vec::with_capacity(MERGE_INPUT_HEADER_BYTES + events.as_bytes().len() + 4);
    out.extend_from_slice(&MERGE_INPUT_MAGIC.to_le_bytes());
    out.extend_from_slice(&MERGE_INPUT_VERSION.to_le_bytes());
    out.extend_from_slice(&(events.event_bytes() as u32).to_le_bytes());
    out.extend_from_slice(&generation.to_le_bytes());
    out.extend_from_slice(&(events.len() as u64).to_le_bytes());
    out.extend_from_slice(events.as_bytes());
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Decodes a file `encode` wrote for events of `event_bytes` bytes:
/// `(generation, events)`. `Corruption` for anything else, never a panic.
pub fn decode(bytes: &[u8], event_bytes: usize) -> Result<(u64, EventList), EventError> {
    let corrupt = |what: String| EventError::corruption(MERGE_INPUT_FILE, what);
    if bytes.len() < MERGE_INPUT_HEADER_BYTES + 4 {
        return Err(corrupt(format!("{} bytes: shorter than header and CRC", bytes.len())));
    }
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let body = bytes.len() - 4;
    if crc32c::crc32c(&bytes[..body]) != u32_at(body) {
        return Err(corrupt("CRC mismatch".into()));
    }
    if u64_at(MERGE_INPUT_OFFSET_MAGIC) != MERGE_INPUT_MAGIC {
        return Err(corrupt("bad magic".into()));
    }
    if u32_at(MERGE_INPUT_OFFSET_VERSION) != MERGE_INPUT_VERSION {
        return Err(corrupt(format!("version {}", u32_at(MERGE_INPUT_OFFSET_VERSION))));
    }
    if u32_at(MERGE_INPUT_OFFSET_EVENT_BYTES) as usize != event_bytes {
        return Err(corrupt(format!(
            "events of {} bytes, the stream's have {event_bytes}",
            u32_at(MERGE_INPUT_OFFSET_EVENT_BYTES)
        )));
    }
    let count = u64_at(MERGE_INPUT_OFFSET_EVENTS);
    let payload = &bytes[MERGE_INPUT_HEADER_BYTES..body];
    if event_bytes == 0
        || !payload.len().is_multiple_of(event_bytes)
        || (payload.len() / event_bytes) as u64 != count
    {
        return Err(corrupt(format!("{count} events in {} bytes", payload.len())));
    }
    let mut events = EventList::with_capacity(event_bytes, count as usize);
    for e in payload.chunks_exact(event_bytes) {
        events.push(e);
    }
    Ok((u64_at(MERGE_INPUT_OFFSET_GENERATION), events))
}

/// Writes the merge input of `generation` durably.
pub fn write(fs: &dyn FileSystem, dir: &Path, generation: u64, events: &EventList) -> Result<(), EventError> {
    let tmp = dir.join(format!("{MERGE_INPUT_FILE}.tmp"));
    let file = create_durably(fs, &tmp)?;
    file.write_at(0, &encode(generation, events))?;
    file.sync_all()?;
    rename_durably(fs, &tmp, &dir.join(MERGE_INPUT_FILE))?;
    Ok(())
}

/// The spilled input of `generation`, if the file holds that generation.
pub fn read(
    fs: &dyn FileSystem,
    dir: &Path,
    generation: u64,
    event_bytes: usize,
) -> Result<Option<EventList>, EventError> {
    let path = dir.join(MERGE_INPUT_FILE);
    if !fs.exists(&path) {
        return Ok(None);
    }
    let file = fs.open(&path)?;
    let mut bytes = vec![0u8; file.len()? as usize];
    file.read_exact_at(0, &mut bytes)?;
    let (stored, events) = decode(&bytes, event_bytes)?;
    Ok((stored == generation).then_some(events))
}

/// Removes the file after its merge ended (no directory sync, module comment).
pub fn remove(fs: &dyn FileSystem, dir: &Path) -> Result<(), EventError> {
    let path = dir.join(MERGE_INPUT_FILE);
    if fs.exists(&path) {
        fs.remove(&path)?;
    }
    Ok(())
}

/// Fuzz entry: decoding arbitrary bytes never panics, and what decodes
/// re-encodes to the same bytes.
pub fn fuzz_decode(data: &[u8]) {
    let event_bytes = data.first().map_or(16, |&b| 9 + usize::from(b % 64));
    if let Ok((generation, events)) = decode(data, event_bytes) {
        assert_eq!(encode(generation, &events), data, "a decoded merge input re-encodes to its bytes");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use strata_media::FaultFs;

    fn events(n: usize) -> EventList {
        let mut list = EventList::new(16);
        for i in 0..n as u64 {
            list.push(&[(i as i64).to_le_bytes(), (i * 7).to_le_bytes()].concat());
        }
        list
    }

    #[test]
    fn written_input_reads_back_for_its_generation_only() {
        let fs = FaultFs::new();
        let dir = Path::new("s");
        fs.create_dir_all(dir).unwrap();
        assert!(read(&fs, dir, 3, 16).unwrap().is_none(), "no file yet");
        write(&fs, dir, 3, &events(5)).unwrap();
        let back = read(&fs, dir, 3, 16).unwrap().expect("generation 3");
        assert_eq!(back.as_bytes(), events(5).as_bytes());
        assert!(read(&fs, dir, 4, 16).unwrap().is_none(), "another generation is ignored");
        let crashed = fs.crash(strata_media::fs::Tear::None);
        assert!(read(&crashed, dir, 3, 16).unwrap().is_some(), "the write is durable");
        remove(&fs, dir).unwrap();
        assert!(read(&fs, dir, 3, 16).unwrap().is_none());
    }

    #[test]
    fn the_header_sits_where_the_constants_say_and_damage_is_corruption() {
        let bytes = encode(0x0102_0304_0506_0708, &events(3));
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        assert_eq!(&bytes[..8], b"STEVMRGI");
        assert_eq!(u64_at(MERGE_INPUT_OFFSET_GENERATION), 0x0102_0304_0506_0708);
        assert_eq!(u64_at(MERGE_INPUT_OFFSET_EVENTS), 3);
        assert_eq!(bytes.len(), MERGE_INPUT_HEADER_BYTES + 3 * 16 + 4);
        for at in [0, 9, 13, 20, 30, 40, bytes.len() - 1] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x40;
            assert!(decode(&bad, 16).unwrap_err().is_corruption(), "byte {at}");
        }
        assert!(decode(&bytes, 24).is_err(), "another event size");
        assert!(decode(&bytes[..20], 16).is_err(), "truncated");
    }

    #[test]
    fn the_format_document_agrees_with_the_code() {
        const DOC: &str = include_str!("../../../../docs/format/events-ooo-queue.md");
        let value =
            |name: &str| strata_testkit::doc_table::table_value(DOC, "### Merge input constants", name);
        assert_eq!(value("MERGE_INPUT_MAGIC"), format!("{MERGE_INPUT_MAGIC:#018X}").replace("0X", "0x"));
        assert_eq!(value("MERGE_INPUT_VERSION"), MERGE_INPUT_VERSION.to_string());
        assert_eq!(value("MERGE_INPUT_HEADER_BYTES"), MERGE_INPUT_HEADER_BYTES.to_string());
        let rows = strata_testkit::doc_table::markdown_table(DOC, "### Merge input layout");
        let offset = |name: &str| -> String {
            rows.iter().find(|r| r[3] == name).unwrap_or_else(|| panic!("field {name} missing"))[0].clone()
        };
        for (name, at) in [
            ("magic", MERGE_INPUT_OFFSET_MAGIC),
            ("version", MERGE_INPUT_OFFSET_VERSION),
            ("event_bytes", MERGE_INPUT_OFFSET_EVENT_BYTES),
            ("generation", MERGE_INPUT_OFFSET_GENERATION),
            ("events", MERGE_INPUT_OFFSET_EVENTS),
        ] {
            assert_eq!(offset(name), at.to_string(), "field {name}");
        }
        let bytes = encode(5, &events(2));
        assert_eq!(bytes.len(), MERGE_INPUT_HEADER_BYTES + 2 * 16 + 4, "header, n * e, crc");
        assert!(DOC.contains("\"STEVMRGI\""), "the doc spells the magic in ASCII");
    }

    #[test]
    fn fuzz_smoke_decoding_never_panics() {
        let seed = 0x6d65_7267;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let valid = encode(9, &events(4));
        for i in 0..20_000 {
            let data = if i % 2 == 0 {
                let mut d = valid.clone();
                let at = rng.gen_range(0..d.len());
                d[at] = rng.gen();
                d.truncate(rng.gen_range(0..=d.len()));
                d
            } else {
                (0..rng.gen_range(0..96)).map(|_| rng.gen()).collect()
            };
            let outcome = std::panic::catch_unwind(|| fuzz_decode(&data));
            assert!(outcome.is_ok(), "seed {seed:#x} input {i}: {data:?}");
        }
        fuzz_decode(&valid);
    }
}
