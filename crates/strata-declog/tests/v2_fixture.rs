//! Format version 2 compatibility: `fixtures/declog_v2.hex` is a DecLog
//! area written by the version-2 writer (commit 3c3cb63, before per-key
//! entries; regenerate only from a version-2 build with
//! `STRATA_WRITE_V2_FIXTURE=1 cargo test -p strata-declog --test v2_fixture`).
//! Today's code must open it, return its single-point entries as written,
//! and keep writing into it.
//!
//! The fixture holds only the 64-byte lines that are not zero, as
//! `offset hex` lines, so it stays small and diffable.

use std::sync::Arc;

use strata_declog::compress::point_payload;
use strata_declog::{DecLog, DeclogConfig, EntryIn, FlushMode, TxnId};
use strata_pmem::{Region, RegionOffset};

const AREA_BYTES: u64 = 48 * 1024;
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/declog_v2.hex");

fn config() -> DeclogConfig {
    DeclogConfig { queue_len: 4, key_slots: 16, flush_mode: FlushMode::Inline, ..DeclogConfig::default() }
}

/// One operation: key, timestamp, value, rest.
type Op = (String, i64, f64, Vec<u8>);

/// The transactions the fixture holds: (txn, lsn, operations).
fn txns() -> Vec<(u64, u32, Vec<Op>)> {
    let mut out = Vec::new();
    for t in 1..=6u64 {
        let lsn = if t % 3 == 0 { t as u32 } else { 0 };
        let ops = (0..3)
            .map(|k| {
                let key = format!("\u{2}db\u{3}cpu host=h{k}#usage_user");
                (key, 1_000 * t as i64 + k, t as f64 * 0.25 + k as f64, vec![1u8])
            })
            .collect();
        out.push((t, lsn, ops));
    }
    out
}

fn key_hash(key: &str) -> u64 {
    strata_declog::compress::key_hash(key.as_bytes())
}

fn write_fixture() {
    let region = Arc::new(Region::sim(AREA_BYTES));
    let log = DecLog::format(region.clone(), RegionOffset(0), AREA_BYTES, config()).unwrap();
    for (t, lsn, ops) in txns() {
        let payloads: Vec<Vec<u8>> = ops
            .iter()
            .map(|(k, ts, v, rest)| point_payload::encode(k.as_bytes(), *ts, v.to_bits(), rest))
            .collect();
        let entries: Vec<EntryIn<'_>> = ops
            .iter()
            .zip(&payloads)
            .map(|((k, ..), p)| EntryIn { key_hash: key_hash(k), lsn, compressed: false, payload: p })
            .collect();
        log.commit(TxnId(t), &entries).unwrap();
    }
    drop(log);
    let image = region.as_sim().unwrap().persistent_image();
    let mut text = String::new();
    for (i, line) in image.chunks(64).enumerate() {
        if line.iter().any(|b| *b != 0) {
            let hex: String = line.iter().map(|b| format!("{b:02x}")).collect();
            text.push_str(&format!("{} {hex}\n", i * 64));
        }
    }
    std::fs::write(FIXTURE, text).unwrap();
}

fn read_fixture() -> Vec<u8> {
    let text = std::fs::read_to_string(FIXTURE).expect("the version-2 fixture is checked in");
    let mut image = vec![0u8; AREA_BYTES as usize];
    for line in text.lines() {
        let (at, hex) = line.split_once(' ').expect("offset hex");
        let at: usize = at.parse().unwrap();
        for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
            image[at + i] = u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap();
        }
    }
    image
}

#[test]
fn a_version_2_area_opens_and_its_entries_come_back_as_written() {
    if std::env::var_os("STRATA_WRITE_V2_FIXTURE").is_some() {
        write_fixture();
    }
    let region = Arc::new(Region::sim_from_image(read_fixture()));
    let (log, parsed) = DecLog::open_with_mode(region.clone(), RegionOffset(0), FlushMode::Inline).unwrap();
    let mut expected: Vec<(u64, u32, Vec<u8>)> = Vec::new();
    for (t, lsn, ops) in txns() {
        for (k, ts, v, rest) in ops {
            expected.push((t, lsn, point_payload::encode(k.as_bytes(), ts, v.to_bits(), &rest)));
        }
    }
    let mut found: Vec<(u64, u32, Vec<u8>)> = parsed
        .inserts
        .iter()
        .chain(parsed.updates_in_lsn_order())
        .map(|e| (e.txn.0, e.lsn, e.payload.clone()))
        .collect();
    found.sort();
    expected.sort();
    assert_eq!(found, expected, "every version-2 entry, decompressed to its point payload");
    // The log keeps accepting writes after the version-2 entries.
    let p = point_payload::encode(b"\x02db\x03cpu host=h9#x", 7, 1.5f64.to_bits(), b"\x01");
    log.commit(TxnId(7), &[EntryIn { key_hash: 9, lsn: 0, compressed: false, payload: &p }]).unwrap();
    drop(log);
    let image = region.as_sim().unwrap().persistent_image();
    let (_log, again) =
        DecLog::open_with_mode(Arc::new(Region::sim_from_image(image)), RegionOffset(0), FlushMode::Inline)
            .unwrap();
    assert_eq!(again.entry_count(), expected.len() + 1);
}
