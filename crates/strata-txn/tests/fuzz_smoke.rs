//! Stable-toolchain smoke tests of the crate's two fuzz entries (the
//! `txn_record_decode` and `txn_log_decode` targets of `fuzz/`): each entry
//! runs on [`FUZZ_SMOKE_CASES`] seeded inputs under `catch_unwind`, and a
//! failure prints the seed, the case and the input.
//!
//! The entries exist only under the `fuzz` feature, which the crate's
//! dev-dependency on itself turns on for its tests, so `cargo test` runs
//! these.
//!
//! Inputs, in turn: random bytes; random records with a plausible header
//! and a correct checksum (so decoding gets past the CRC to the structure
//! checks); valid records (or logs) with 1 to 3 bytes damaged, then maybe
//! truncated; the same damage with every checksum recomputed ("resealed");
//! and valid inputs unchanged, which are checked to decode to what was
//! encoded. Valid records are built with `strata_txn::record::encode` (and
//! a few with `encode_command`); valid logs are several such records back
//! to back, as a log device holds them (Taurus records whose LV names only
//! earlier records of their own log, or serial records without an LV),
//! sometimes followed by zeros.
//!
//! Regression ([`non_canonical_records_are_refused`]): `record::decode`
//! once accepted non-zero reserved bytes in a write and more zero padding
//! than the next multiple of 8 needs; such records re-encode to other
//! bytes, and `fuzz_record_decode` panicked on them.

use std::panic::catch_unwind;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_testkit::FUZZ_SMOKE_CASES;
use strata_txn::fuzz::{fuzz_log_decode, fuzz_record_decode};
use strata_txn::record::{decode, encode, encode_command, Command, Record, RowWrite, WriteOp, HEADER_BYTES};
use strata_txn::recovery::{committed_prefixes, decode_log};
use strata_txn::{Lv, RowKey, TableId, MAX_LOGS};

/// Rows of a few lengths, so padding varies.
const ROW_LENS: [usize; 7] = [0, 1, 3, 7, 8, 9, 40];

fn random_writes(rng: &mut ChaCha8Rng) -> Vec<RowWrite> {
    (0..rng.gen_range(0..5))
        .map(|_| {
            let op = if rng.gen_bool(0.25) {
                WriteOp::Delete
            } else {
                let len = ROW_LENS[rng.gen_range(0..ROW_LENS.len())];
                WriteOp::Put((0..len).map(|_| rng.gen()).collect())
            };
            RowWrite { table: TableId(rng.gen_range(0..4)), key: RowKey(rng.gen()), op }
        })
        .collect()
}

fn lv_of(rng: &mut ChaCha8Rng, lv_len: usize) -> Lv {
    let v: Vec<u64> = (0..lv_len).map(|_| rng.gen_range(0..1u64 << 20) * 8).collect();
    Lv::from_slice(&v)
}

fn encoded(lv: &Lv, lv_len: usize, writes: &[RowWrite]) -> Vec<u8> {
    let mut out = Vec::new();
    encode(lv, lv_len, writes, &mut out);
    out
}

fn random_command(rng: &mut ChaCha8Rng) -> Command {
    let len = [0, 1, 5, 8, 30][rng.gen_range(0..5)];
    Command { procedure: rng.gen_range(0..3), args: (0..len).map(|_| rng.gen()).collect() }
}

/// A decoded record encoded again.
fn reencoded(rec: &Record) -> Vec<u8> {
    let mut out = Vec::new();
    match &rec.command {
        Some(c) => encode_command(&rec.lv, rec.lv_len, c, &mut out),
        None => encode(&rec.lv, rec.lv_len, &rec.writes, &mut out),
    }
    out
}

/// Valid single records: serial (no LV), Taurus with 2, 3 and the most
/// logs, no writes, puts of every row length, deletes, several tables.
fn valid_records(seed: u64) -> Vec<Vec<u8>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    for lv_len in [0, 1, 2, 3, MAX_LOGS] {
        out.push(encoded(&Lv::ZERO, lv_len, &[]));
        for len in ROW_LENS {
            let lv = lv_of(&mut rng, lv_len);
            let w =
                RowWrite { table: TableId(1), key: RowKey(len as u64), op: WriteOp::Put(vec![0xA5; len]) };
            out.push(encoded(&lv, lv_len, &[w]));
        }
        let del = RowWrite { table: TableId(0), key: RowKey(u64::MAX), op: WriteOp::Delete };
        out.push(encoded(&lv_of(&mut rng, lv_len), lv_len, &[del]));
        for _ in 0..4 {
            let lv = lv_of(&mut rng, lv_len);
            let writes = random_writes(&mut rng);
            out.push(encoded(&lv, lv_len, &writes));
        }
        // Command records (command logging), a few.
        for _ in 0..2 {
            let mut rec = Vec::new();
            encode_command(&lv_of(&mut rng, lv_len), lv_len, &random_command(&mut rng), &mut rec);
            out.push(rec);
        }
    }
    out
}

/// A valid log of 2 to 6 records as one log device holds it: serial
/// records (no LV), or Taurus records of log 0 of `lv_len` logs whose own
/// element is the end of an earlier record (so the whole log is its
/// committed prefix), maybe followed by zeros (the end of what was written).
fn valid_log(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let lv_len = [0, 1, 2, 3, MAX_LOGS][rng.gen_range(0..5)];
    let mut log = Vec::new();
    let mut ends = vec![0u64];
    for _ in 0..rng.gen_range(2..7) {
        let mut lv = Lv::ZERO;
        if lv_len > 0 {
            lv.set(0, ends[rng.gen_range(0..ends.len())]);
        }
        if rng.gen_bool(0.2) {
            encode_command(&lv, lv_len, &random_command(rng), &mut log);
        } else {
            encode(&lv, lv_len, &random_writes(rng), &mut log);
        }
        ends.push(log.len() as u64);
    }
    if rng.gen_bool(0.3) {
        log.resize(log.len() + rng.gen_range(1..64), 0);
    }
    log
}

/// A random record with a plausible header (length, version 1, a small LV
/// length, a small write count) and a correct checksum.
fn random_sealed_record(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let len = HEADER_BYTES + 8 * rng.gen_range(0..24);
    let mut rec: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
    rec[0..4].copy_from_slice(&(len as u32).to_le_bytes());
    rec[8] = 1;
    rec[9] = rng.gen_range(0..=MAX_LOGS as u8 + 1);
    if rng.gen_bool(0.7) {
        rec[10] = 0;
        rec[11] = 0;
    }
    rec[12..16].copy_from_slice(&rng.gen_range(0..4u32).to_le_bytes());
    seal_all(&mut rec);
    rec
}

/// Recomputes the checksum of every record of `bytes` whose length field
/// is plausible and fits, walking the records as `decode_log` does.
fn seal_all(bytes: &mut [u8]) {
    let mut at = 0;
    while at + HEADER_BYTES <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        if len < HEADER_BYTES || !len.is_multiple_of(8) || at + len > bytes.len() {
            return;
        }
        let crc = crc32c::crc32c(&bytes[at + 8..at + len]);
        bytes[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
        at += len;
    }
}

/// Overwrites or flips 1 to 3 bytes, then maybe cuts the tail.
fn damage(rng: &mut ChaCha8Rng, bytes: &mut Vec<u8>) {
    for _ in 0..rng.gen_range(1..4) {
        let at = rng.gen_range(0..bytes.len());
        if rng.gen_bool(0.5) {
            bytes[at] = rng.gen();
        } else {
            bytes[at] ^= 1 << rng.gen_range(0..8);
        }
    }
    if rng.gen_bool(0.25) {
        bytes.truncate(rng.gen_range(0..=bytes.len()));
    }
}

/// Feeds `input` to `entry` under `catch_unwind`.
fn feed(entry: fn(&[u8]), input: &[u8], seed: u64, case: u32) {
    let outcome = catch_unwind(|| entry(input));
    assert!(outcome.is_ok(), "seed {seed:#x} case {case}: the fuzz entry panicked on {input:?}");
}

/// Runs `entry` on the five kinds of input in turn, built from `valid`
/// (a new valid input per case); `check_valid` checks the unchanged ones.
fn smoke(
    seed: u64,
    entry: fn(&[u8]),
    mut valid: impl FnMut(&mut ChaCha8Rng) -> Vec<u8>,
    check_valid: impl Fn(&[u8], &str),
) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for case in 0..FUZZ_SMOKE_CASES {
        let input = match case % 5 {
            0 => (0..rng.gen_range(0..200)).map(|_| rng.gen()).collect(),
            1 => random_sealed_record(&mut rng),
            2 | 3 => {
                let mut bytes = valid(&mut rng);
                damage(&mut rng, &mut bytes);
                if case % 5 == 3 {
                    seal_all(&mut bytes);
                }
                bytes
            }
            _ => {
                let bytes = valid(&mut rng);
                check_valid(&bytes, &format!("seed {seed:#x} case {case}"));
                bytes
            }
        };
        feed(entry, &input, seed, case);
    }
}

#[test]
fn fuzz_smoke_record_decode_never_panics_and_valid_records_round_trip() {
    let seed = 0x7a0_5eed_u64;
    let records = valid_records(seed);
    let mut mutated_decoded = 0u32;
    smoke(
        seed,
        fuzz_record_decode,
        |rng| records[rng.gen_range(0..records.len())].clone(),
        |bytes, context| {
            let (rec, len) = decode(bytes, 0)
                .unwrap_or_else(|e| panic!("{context}: a valid record fails: {e}"))
                .unwrap_or_else(|| panic!("{context}: a valid record is not found"));
            assert_eq!(len, bytes.len(), "{context}");
            assert_eq!(reencoded(&rec), bytes, "{context}");
        },
    );
    // The resealed damage must reach the structure checks: some of it decodes.
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 1);
    for _ in 0..2_000 {
        let mut bytes = records[rng.gen_range(0..records.len())].clone();
        damage(&mut rng, &mut bytes);
        seal_all(&mut bytes);
        mutated_decoded += u32::from(matches!(decode(&bytes, 0), Ok(Some(_))));
    }
    assert!(mutated_decoded > 50, "seed {seed:#x}: resealed damage rarely decodes ({mutated_decoded})");
}

#[test]
fn fuzz_smoke_log_decode_never_panics_and_valid_logs_are_kept_whole() {
    let seed = 0x7a0_1065_u64;
    smoke(seed, fuzz_log_decode, valid_log, |bytes, context| {
        let log = decode_log(bytes);
        assert!(log.stopped_by.is_none(), "{context}: {:?}", log.stopped_by);
        let records_end = log.records.last().map_or(0, |(lsn, _)| *lsn);
        assert_eq!(log.valid_end, records_end, "{context}: the LSN of the last record is the valid end");
        assert!(bytes[records_end as usize..].iter().all(|b| *b == 0), "{context}: only zeros follow");
        let mut at = 0;
        for (lsn, rec) in &log.records {
            let (again, len) = decode(&bytes[at..], at as u64).unwrap().unwrap();
            assert_eq!((at + len) as u64, *lsn, "{context}: an LSN is its record's end");
            assert_eq!(&again, rec, "{context}");
            at += len;
        }
        let (kept, ends) = committed_prefixes(std::slice::from_ref(&log));
        assert_eq!(
            (kept[0], ends[0]),
            (log.records.len(), log.valid_end),
            "{context}: a valid log is kept whole"
        );
    });
}

/// Serial records of one put with their checksums recomputed: reserved
/// byte 5 of the write set to 1, and 8 more zero bytes of padding. Neither
/// is canonical: `decode` refuses both, and the fuzz entry does not panic.
#[test]
fn non_canonical_records_are_refused() {
    let put = RowWrite { table: TableId(0), key: RowKey(1), op: WriteOp::Put(vec![7]) };
    let valid = encoded(&Lv::ZERO, 0, std::slice::from_ref(&put));
    let mut reserved = valid.clone();
    reserved[HEADER_BYTES + 5] = 1;
    seal_all(&mut reserved);
    let mut padded = valid.clone();
    padded.extend_from_slice(&[0; 8]);
    padded[0] += 8;
    seal_all(&mut padded);
    assert!(decode(&valid, 0).unwrap().is_some());
    for input in [reserved, padded] {
        assert!(decode(&input, 0).is_err(), "{input:?} decodes");
        assert!(catch_unwind(|| fuzz_record_decode(&input)).is_ok(), "{input:?}");
    }
}
