//! The fuzz entry for opening a DecLog area from arbitrary bytes
//! (`fuzz/fuzz_targets/declog_open.rs` calls [`fuzz_open`]; a seeded smoke
//! test here runs it on stable Rust). Opening must never panic. Two modes,
//! chosen by the first input byte:
//!
//! - even, raw: the rest of the input is the region image;
//! - odd, damaged log: a valid DecLog is written (transactions, sizes,
//!   truncations, cuts, compression on or off, drawn from the input; with
//!   compression the payloads are point payloads), then damaged with `(offset, xor)`
//!   pairs from the input. With at most one damaged byte (CRC32C detects every
//!   error within 32 bits, so nothing can be forged) a successful open returns
//!   only transactions that were committed since the last truncation, each
//!   with exactly its contents.
//!
//! After a successful open, one more transaction is committed and the area
//! parsed again: it must find what the open found plus that transaction.

use std::collections::BTreeMap;
use std::sync::Arc;

use strata_media::fuzz_input::FuzzInput as Input;
use strata_media::TxnId;
use strata_pmem::{Region, RegionOffset};

use crate::compress::point_payload;
use crate::config::{DeclogConfig, FlushMode};
use crate::entry::EntryIn;
use crate::error::DeclogError;
use crate::layout::Layout;
use crate::recovery::{parse, Recovered};
use crate::DecLog;

const MAX_IMAGE_BYTES: usize = 1 << 16;

type Contents = BTreeMap<TxnId, Vec<(u64, u32, Vec<u8>)>>;

fn contents(r: &Recovered) -> Contents {
    r.txns()
        .into_iter()
        .map(|(t, es)| (t, es.iter().map(|e| (e.key_hash, e.lsn, e.payload.clone())).collect()))
        .collect()
}

/// Writes a valid log from the input; returns its image and what it holds.
/// An entry payload: with compression a point payload of one of four series.
fn fuzz_payload(compression: bool, key_byte: u8, i: u8, len: u8, t: u64) -> Vec<u8> {
    if compression {
        let key = format!("series-{}", key_byte % 4);
        point_payload::encode(
            key.as_bytes(),
            t as i64 * 7 + i as i64,
            (len as f64).to_bits(),
            &vec![i; len as usize / 4],
        )
    } else {
        vec![i; len as usize]
    }
}

fn damaged_log(input: &mut Input<'_>) -> (Vec<u8>, Contents, usize) {
    let threads = 1 + (input.u8() % 3) as usize;
    let shape = input.u8();
    let align = if shape & 1 == 0 { 256 } else { 8 };
    let compression = shape & 2 != 0;
    let cfg = DeclogConfig {
        threads,
        queues_per_thread: 2,
        queue_len: 1 + (input.u8() % 4) as usize,
        align_bytes: align,
        flush_mode: FlushMode::Inline,
        compression,
        key_slots: 8,
        strict_ordering: shape & 4 != 0,
    };
    let bytes = Layout::footprint_bytes_for(&cfg, 4096);
    let region = Arc::new(Region::sim(bytes));
    let log = DecLog::format(region.clone(), RegionOffset(0), bytes, cfg).expect("format a fresh area");
    let mut written = Contents::new();
    // Transactions since the last cut, which a truncation to it keeps.
    let mut since_cut = Contents::new();
    for t in 1..=(input.u8() % 24) as u64 {
        let n = 1 + input.u8() % 3;
        let lsn = (input.u8() % 3) as u32;
        if n == 3 && lsn == 2 {
            match input.u8() % 4 {
                0 => {
                    log.truncate_all().expect("truncate");
                    written.clear();
                    since_cut.clear();
                }
                1 => {
                    log.cut().expect("cut");
                    since_cut.clear();
                }
                // Refused (no cut, or heads already past it) changes nothing.
                2 if log.last_cut().is_some_and(|cut| log.truncate_to(&cut.ends).is_ok()) => {
                    written = since_cut.clone();
                }
                _ => {}
            }
        }
        let entries: Vec<(u64, u32, Vec<u8>)> = (0..n)
            .map(|i| {
                let key_byte = input.u8();
                (key_byte as u64, lsn, fuzz_payload(compression, key_byte, i, input.u8() % 80, t))
            })
            .collect();
        let ins: Vec<EntryIn<'_>> = entries
            .iter()
            .map(|(k, l, p)| EntryIn { key_hash: *k, lsn: *l, compressed: false, payload: p })
            .collect();
        match log.commit(TxnId(t), &ins) {
            Ok(()) => {
                since_cut.insert(TxnId(t), entries.clone());
                written.insert(TxnId(t), entries);
            }
            Err(DeclogError::Full { .. }) | Err(DeclogError::Poisoned(_)) => break,
            Err(e) => panic!("commit on a fresh log failed: {e}"),
        }
    }
    drop(log);
    let mut image = region.as_sim().expect("sim").persistent_image();
    let damages = (input.u8() % 4) as usize;
    for _ in 0..damages {
        let at = input.u16() as usize % image.len();
        image[at] ^= input.u8();
    }
    (image, written, damages)
}

/// Opens a DecLog area (base 0) from fuzzer input; panics only on a bug.
pub fn fuzz_open(data: &[u8]) {
    let mut input = Input(data);
    let (image, written) = if input.u8() % 2 == 0 {
        let mut image = input.0[..input.0.len().min(MAX_IMAGE_BYTES)].to_vec();
        image.resize(image.len().next_multiple_of(8), 0);
        (image, None)
    } else {
        let (image, written, damages) = damaged_log(&mut input);
        (image, (damages <= 1).then_some(written))
    };
    let region = Arc::new(Region::sim_from_image(image));
    let Ok((log, first)) = DecLog::open_with_mode(region.clone(), RegionOffset(0), FlushMode::Inline) else {
        return;
    };
    let found = contents(&first);
    if let Some(written) = written {
        for (t, c) in &found {
            assert_eq!(written.get(t), Some(c), "{t} recovered but not committed with these contents");
        }
    }
    let extra = TxnId(first.max_txn_id.map_or(1, |t| t.0.saturating_add(1)));
    let payload = if log.config().compression {
        point_payload::encode(b"series-1", 99, 1.0f64.to_bits(), b"appended by the fuzzer")
    } else {
        b"appended by the fuzzer".to_vec()
    };
    let committed =
        log.commit(extra, &[EntryIn { key_hash: 5, lsn: 0, compressed: false, payload: &payload }]);
    drop(log);
    let second = parse(&region, RegionOffset(0)).expect("a log that opened parses again after a commit");
    let mut expect = found;
    if committed.is_ok() {
        expect.insert(extra, vec![(5, 0, payload)]);
    }
    assert_eq!(contents(&second), expect, "the second parse disagrees with the first");
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The fuzz target's entry on 20,000 seeded inputs: random bytes, random
    /// log recipes with 0-3 damaged bytes, and random images with a valid
    /// superblock planted so parsing gets past the magic.
    #[test]
    fn fuzz_smoke_never_panics_and_never_forges() {
        let seed = 0xDEC1_0600u64;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let valid = {
            let bytes = Layout::footprint_bytes(2, 4096);
            let region = Arc::new(Region::sim(bytes));
            let cfg =
                DeclogConfig { flush_mode: FlushMode::Inline, compression: false, ..Default::default() };
            let log = DecLog::format(region.clone(), RegionOffset(0), bytes, cfg).unwrap();
            for t in 1..=12 {
                let p = vec![t as u8; 30];
                log.commit(
                    TxnId(t),
                    &[EntryIn { key_hash: t, lsn: (t % 3) as u32, compressed: false, payload: &p }],
                )
                .unwrap();
            }
            drop(log);
            region.as_sim().unwrap().persistent_image()
        };
        for case in 0..20_000u32 {
            let input: Vec<u8> = match case % 3 {
                0 => (0..rng.gen_range(0..600)).map(|_| rng.gen()).collect(),
                1 => {
                    let mut v = vec![1u8];
                    v.extend((0..rng.gen_range(0..200)).map(|_| rng.gen::<u8>()));
                    v
                }
                _ => {
                    let mut image = valid.clone();
                    for _ in 0..rng.gen_range(1..6) {
                        let at = rng.gen_range(0..image.len());
                        image[at] = rng.gen();
                    }
                    let mut v = vec![0u8];
                    v.extend(image);
                    v
                }
            };
            let outcome = std::panic::catch_unwind(|| fuzz_open(&input));
            assert!(outcome.is_ok(), "seed {seed:#x} case {case}: fuzz_open panicked");
        }
    }

    #[test]
    fn an_undamaged_log_opens_with_everything_committed() {
        let mut input = vec![1u8, 1, 0, 2, 20];
        for t in 0..20u8 {
            input.extend_from_slice(&[0, (t % 3 == 0) as u8, t, 10 + t]);
        }
        input.push(0); // no damage
        let mut i = Input(&input[1..]);
        let (image, written, damages) = damaged_log(&mut i);
        assert_eq!(damages, 0);
        assert!(written.len() >= 10, "{} committed", written.len());
        let r = parse(&Region::sim_from_image(image), RegionOffset(0)).unwrap();
        assert_eq!(contents(&r), written);
        fuzz_open(&input);
    }
}
