//! Tests of log compression: round trips (seeded proptest), bit-exact floats
//! and timestamp extremes, the compression ratio of a smooth series, table
//! persistence and checkpoint copies, the checkpoint clear, and the fuzz
//! smoke test of `decompress`.

use std::sync::Arc;

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_pmem::{Region, RegionOffset};

use super::key_table::KEY_TABLE_MAX_KEY_BYTES;
use super::*;
use crate::entry::entry_len;

fn new_table(slots: u32) -> KeyTable {
    let region = Arc::new(Region::sim(2 * key_table_area_bytes(slots) + 4096));
    KeyTable::format(region, RegionOffset(0), slots).unwrap()
}

/// Compresses `points` with `enc` and decompresses them with `dec`, checking
/// each comes back bit for bit; returns the payloads.
fn round_trip(
    points: &[(Vec<u8>, i64, f64, Vec<u8>)],
    enc: &mut KeyTable,
    dec: &mut KeyTable,
) -> Vec<Compressed> {
    let mut out = Vec::new();
    for (i, (key, timestamp, value, rest)) in points.iter().enumerate() {
        let p = LogPoint { key, timestamp: *timestamp, value: *value, rest };
        let c = compress(&p, i as u64, enc).unwrap();
        let d = decompress(c.compressed, &c.payload, i as u64, dec).unwrap();
        assert!(d.same_as(&p), "point {i}: {p:?} came back as {d:?}");
        out.push(c);
    }
    out
}

fn series_key(i: usize) -> Vec<u8> {
    format!("cpu,host=server{i:03},region=eu usage_user").into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_sequences_of_many_keys_round_trip(
        seed in any::<u64>(),
        len in 1usize..400,
        keys in 1usize..40,
        clear_every in 0usize..150,
    ) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut enc = new_table(64);
        let mut dec = new_table(64);
        let mut ts = vec![0i64; keys];
        for i in 0..len {
            let k = rng.gen_range(0..keys);
            ts[k] = match rng.gen_range(0..4) {
                0 => rng.gen(),
                1 => ts[k].wrapping_add(10),
                _ => ts[k].wrapping_add(rng.gen_range(-100_000..100_000)),
            };
            let value = match rng.gen_range(0..3) {
                0 => f64::from_bits(rng.gen()),
                1 => (rng.gen_range(0..1000) as f64) / 4.0,
                _ => 42.0,
            };
            let rest: Vec<u8> = (0..rng.gen_range(0..5)).map(|_| rng.gen()).collect();
            let pts = [(series_key(k), ts[k], value, rest)];
            round_trip(&pts, &mut enc, &mut dec);
            if clear_every > 0 && i % clear_every == clear_every - 1 {
                enc.clear_for_checkpoint();
                dec.clear_for_checkpoint();
            }
        }
        prop_assert_eq!(enc.len(), dec.len());
        for k in 0..keys {
            prop_assert_eq!(enc.get(&series_key(k)), dec.get(&series_key(k)), "seed {}", seed);
        }
    }
}

#[test]
fn floats_round_trip_bit_exact() {
    let specials = [
        f64::from_bits(0x7FF8_0000_0000_0001),
        f64::from_bits(0xFFF0_0000_0000_0ABC),
        f64::NAN,
        -0.0,
        0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE / 3.0,
        f64::MAX,
        -0.0,
        f64::from_bits(1),
        f64::from_bits(u64::MAX),
    ];
    let points: Vec<_> =
        specials.iter().enumerate().map(|(i, &v)| (b"k".to_vec(), i as i64, v, Vec::new())).collect();
    let (mut enc, mut dec) = (new_table(4), new_table(4));
    let out = round_trip(&points, &mut enc, &mut dec);
    assert!(out[1..].iter().all(|c| c.compressed), "only the first entry is uncompressed");
}

#[test]
fn timestamp_extremes_round_trip() {
    let stamps = [i64::MIN, i64::MAX, i64::MIN, 0, i64::MAX, i64::MAX, -1, i64::MIN + 1, 1, i64::MAX - 1];
    let points: Vec<_> = stamps.iter().map(|&t| (b"ts".to_vec(), t, 1.0, b"s".to_vec())).collect();
    let (mut enc, mut dec) = (new_table(4), new_table(4));
    round_trip(&points, &mut enc, &mut dec);
    assert_eq!(enc.get(b"ts").unwrap().state, dec.get(b"ts").unwrap().state);
}

#[test]
fn smooth_series_compress_to_a_few_bytes_per_entry() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (keys, per_key) = (50usize, 400usize);
    let (mut enc, mut dec) = (new_table(128), new_table(128));
    let mut points = Vec::new();
    let mut values = vec![50.0f64; keys];
    for step in 0..per_key {
        for (k, v) in values.iter_mut().enumerate() {
            *v = ((*v + rng.gen_range(-1..=1) as f64 * 0.5) * 2.0).round() / 2.0;
            points.push((
                series_key(k),
                1_700_000_000_000_000_000 + step as i64 * 10_000_000_000,
                *v,
                Vec::new(),
            ));
        }
    }
    let out = round_trip(&points, &mut enc, &mut dec);
    let raw_payload: usize = points.iter().map(|(k, ..)| k.len() + 16).sum();
    let compressed_payload: usize = out.iter().map(|c| c.payload.len()).sum();
    let raw_entry: u64 = points.iter().map(|(k, ..)| entry_len(k.len() as u64 + 16)).sum();
    let compressed_entry: u64 = out.iter().map(|c| entry_len(c.payload.len() as u64)).sum();
    let n = points.len() as f64;
    eprintln!(
        "smooth series, {} entries: payload {:.2} -> {:.2} bytes/entry; log entry {:.2} -> {:.2} bytes/entry",
        points.len(),
        raw_payload as f64 / n,
        compressed_payload as f64 / n,
        raw_entry as f64 / n,
        compressed_entry as f64 / n
    );
    assert!((compressed_payload as f64 / n) < 4.0, "compressed payload over 4 bytes per entry");
    assert!(compressed_payload * 10 < raw_payload, "less than 10x payload compression");
}

#[test]
fn long_keys_are_rejected_and_a_full_table_is_an_error() {
    let mut t = new_table(2);
    let long = vec![b'x'; KEY_TABLE_MAX_KEY_BYTES + 1];
    let p = LogPoint { key: &long, timestamp: 0, value: 0.0, rest: b"" };
    assert!(matches!(compress(&p, 0, &mut t), Err(crate::DeclogError::InvalidInput(_))));
    let max = [b'y'; KEY_TABLE_MAX_KEY_BYTES];
    for key in [&max[..], b"a"] {
        compress(&LogPoint { key, timestamp: 0, value: 0.0, rest: b"" }, 0, &mut t).unwrap();
    }
    let err = compress(&LogPoint { key: b"b", timestamp: 0, value: 0.0, rest: b"" }, 0, &mut t);
    assert!(err.unwrap_err().to_string().contains("key table full"));
    assert_eq!(t.len(), 2);
}

/// Points of `keys` keys, `per_key` each, interleaved.
fn smooth_points(keys: usize, from_step: usize, steps: usize) -> Vec<(Vec<u8>, i64, f64, Vec<u8>)> {
    let mut out = Vec::new();
    for step in from_step..from_step + steps {
        for k in 0..keys {
            out.push((series_key(k), step as i64 * 1000, (step % 7) as f64 + k as f64, b"str".to_vec()));
        }
    }
    out
}

fn compress_all(points: &[(Vec<u8>, i64, f64, Vec<u8>)], table: &mut KeyTable) -> Vec<Compressed> {
    points
        .iter()
        .enumerate()
        .map(|(i, (key, timestamp, value, rest))| {
            compress(&LogPoint { key, timestamp: *timestamp, value: *value, rest }, i as u64, table).unwrap()
        })
        .collect()
}

fn decompress_all(points: &[(Vec<u8>, i64, f64, Vec<u8>)], entries: &[Compressed], table: &mut KeyTable) {
    for (i, ((key, timestamp, value, rest), c)) in points.iter().zip(entries).enumerate() {
        let d = decompress(c.compressed, &c.payload, i as u64, table).unwrap();
        let p = LogPoint { key, timestamp: *timestamp, value: *value, rest };
        assert!(d.same_as(&p), "continuation point {i}: {p:?} came back as {d:?}");
    }
}

#[test]
fn reopened_table_keeps_ids_and_snapshot_decodes_a_continuation() {
    let slots = 64;
    let snap_base = RegionOffset(key_table_area_bytes(slots).next_multiple_of(256));
    let region = Arc::new(Region::sim(snap_base.0 + key_table_area_bytes(slots)));
    let mut enc = KeyTable::format(region.clone(), RegionOffset(0), slots).unwrap();
    compress_all(&smooth_points(20, 0, 5), &mut enc);
    enc.snapshot_to(&region, snap_base).unwrap();
    let later = smooth_points(20, 5, 10);
    let entries = compress_all(&later, &mut enc);
    assert!(entries.iter().all(|c| c.compressed), "every key is known");

    // The active table: every key with its id, from the volatile and the
    // persistent image alike (inserts are persisted).
    let image = region.as_sim().unwrap().persistent_image();
    for r in [region.clone(), Arc::new(Region::sim_from_image(image.clone()))] {
        let active = KeyTable::open(r, RegionOffset(0)).unwrap();
        assert_eq!(active.len(), 20);
        for k in 0..20 {
            assert_eq!(active.get(&series_key(k)).unwrap().id, enc.get(&series_key(k)).unwrap().id);
        }
    }
    // The checkpoint copy, after a crash, continues where the compressor was.
    let crashed = Arc::new(Region::sim_from_image(image));
    let mut dec = KeyTable::open(crashed, snap_base).unwrap();
    decompress_all(&later, &entries, &mut dec);
    for k in 0..20 {
        assert_eq!(dec.get(&series_key(k)), enc.get(&series_key(k)), "key {k} state after the continuation");
    }
}

#[test]
fn clear_for_checkpoint_keeps_ids_and_clears_the_rest() {
    let region = Arc::new(Region::sim(key_table_area_bytes(16)));
    let mut enc = KeyTable::format(region.clone(), RegionOffset(0), 16).unwrap();
    compress_all(&smooth_points(3, 0, 4), &mut enc);
    let ids: Vec<u32> = (0..3).map(|k| enc.get(&series_key(k)).unwrap().id).collect();
    assert!(enc.get(&series_key(0)).unwrap().state.has_state);
    enc.clear_for_checkpoint();
    let image = region.as_sim().unwrap().persistent_image();
    let reopened = KeyTable::open(Arc::new(Region::sim_from_image(image)), RegionOffset(0)).unwrap();
    for (k, id) in ids.iter().enumerate() {
        for t in [&enc, &reopened] {
            let r = t.get(&series_key(k)).unwrap();
            assert_eq!((r.id, r.state), (*id, KeyState::CLEARED), "key {k}");
        }
    }
    // The next entry of a known key is compressed (id instead of key) with
    // raw timestamp and value, and records its own first-entry metadata; the
    // persisted, cleared table decodes it.
    let mut dec = reopened;
    let p = LogPoint { key: &series_key(1), timestamp: 123_456, value: 2.5, rest: b"" };
    let c = compress(&p, 777, &mut enc).unwrap();
    assert!(c.compressed);
    assert_eq!(c.payload.len(), 1 + 16, "id + raw timestamp + raw value");
    assert!(decompress(c.compressed, &c.payload, 777, &mut dec).unwrap().same_as(&p));
    assert_eq!(enc.get(&series_key(1)).unwrap().state.first_entry_meta, 777);
    assert_eq!(enc.get(&series_key(1)), dec.get(&series_key(1)));
}

#[test]
fn torn_slot_identity_reads_empty_and_the_raw_entry_reinserts_it() {
    let region = Arc::new(Region::sim(key_table_area_bytes(8)));
    let mut enc = KeyTable::format(region.clone(), RegionOffset(0), 8).unwrap();
    let p = LogPoint { key: b"k1", timestamp: 5, value: 1.0, rest: b"" };
    let first = compress(&p, 0, &mut enc).unwrap();
    let slot = enc.get(b"k1").unwrap().slot as u64;
    let at = RegionOffset(
        super::key_table::KEY_TABLE_HEADER_BYTES + slot * super::key_table::KEY_TABLE_SLOT_BYTES + 64,
    );
    region.write(at, b"Z");
    let mut dec = KeyTable::open(region, RegionOffset(0)).unwrap();
    assert!(dec.is_empty(), "a slot with a bad identity CRC is empty");
    assert!(decompress(first.compressed, &first.payload, 0, &mut dec).unwrap().same_as(&p));
    assert_eq!(dec.get(b"k1").unwrap().id, enc.get(b"k1").unwrap().id);
}

#[test]
fn decompress_rejects_bad_payloads_without_changing_the_table() {
    let mut t = fuzz::primed_table();
    let before = t.get(b"cpu,host=a usage").cloned();
    for (flag, payload) in [
        (true, &[][..]),
        (true, &[0x7F][..]),
        (true, &[0x00][..]),
        (false, &[0x09, 0x02, b'a', b'b'][..]),
        (false, &[0x00, 0x02, b'z', b'z', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0][..]),
    ] {
        let err = decompress(flag, payload, 0, &mut t).unwrap_err();
        assert!(err.is_corruption(), "{payload:?}: {err}");
    }
    assert_eq!(t.get(b"cpu,host=a usage").cloned(), before);
    assert_eq!(t.len(), 4);
}

#[test]
fn fuzz_smoke_decompress_never_panics() {
    let seed = 0xDEC1_0600_u64;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Valid payloads of the primed table, to mutate.
    let mut valid = Vec::new();
    let mut t = fuzz::primed_table();
    for (key, ts, v) in
        [(&b"cpu,host=a usage"[..], 4_000, 1.5), (b"mem,host=b free", 30, 9.0), (b"new", 1, 0.1)]
    {
        let c = compress(&LogPoint { key, timestamp: ts, value: v, rest: b"r" }, 0, &mut t).unwrap();
        let mut input = vec![c.compressed as u8];
        input.extend_from_slice(&c.payload);
        valid.push(input);
    }
    for input in &valid {
        fuzz_decompress(input);
        let mut dec = fuzz::primed_table();
        assert!(decompress(input[0] == 1, &input[1..], 0, &mut dec).is_ok(), "seed {seed}: valid input");
    }
    // Per-key payloads (flags bit 1) of a key with state and of a cleared one.
    for (key, rest) in [(&b"cpu,host=a usage"[..], &b"r"[..]), (b"net,host=d rx", b"")] {
        let mut t = fuzz::primed_table();
        let pts: Vec<PointItem<'_>> = (0..5)
            .map(|i| PointItem { timestamp: 5_000 + i * 10, value_bits: (i as f64).to_bits(), rest })
            .collect();
        let b = points_payload::encode(key, pts);
        let c = compress_points(&points_payload::decode(&b).unwrap(), 0, &mut t).unwrap();
        let mut input = vec![3u8];
        input.extend_from_slice(&c.payload);
        let mut dec = fuzz::primed_table();
        assert_eq!(
            decompress_points(&input[1..], 0, &mut dec).unwrap(),
            b,
            "seed {seed}: valid per-key input"
        );
        fuzz_decompress(&input);
        valid.push(input);
    }
    for i in 0..20_000 {
        let input: Vec<u8> = if i % 2 == 0 {
            (0..rng.gen_range(0..40)).map(|_| rng.gen()).collect()
        } else {
            let mut b = valid[rng.gen_range(0..valid.len())].clone();
            for _ in 0..rng.gen_range(1..4) {
                let at = rng.gen_range(0..b.len());
                b[at] ^= 1 << rng.gen_range(0..8);
            }
            b.truncate(rng.gen_range(1..=b.len()));
            b
        };
        fuzz_decompress(&input);
    }
}

/// `fuzz_point_payload` on 20,000 seeded inputs: random bytes and mutated
/// valid payloads; valid payloads round-trip.
#[test]
fn fuzz_smoke_point_payload_never_panics_and_round_trips() {
    let seed = 0xDEC1_0601_u64;
    let valid: Vec<Vec<u8>> = [(&b""[..], &b""[..]), (b"cpu,host=a usage", b"rest"), (&[b'k'; 200][..], b"")]
        .iter()
        .map(|(key, rest)| point_payload::encode(key, -3, 7.5f64.to_bits(), rest))
        .collect();
    for v in &valid {
        let p = point_payload::decode(v).unwrap_or_else(|e| panic!("seed {seed}: valid payload: {e}"));
        assert_eq!(p.encode(), *v);
        fuzz_point_payload(v);
    }
    let decoded = mutate_20k(seed, &valid, |input| {
        fuzz_point_payload(input);
        point_payload::decode(input).is_ok()
    });
    assert!(decoded > 100, "seed {seed}: the mutations rarely decoded ({decoded})");
}

/// Runs `check` on 20,000 inputs from `seed`: random bytes, and `valid`
/// payloads with a few bits flipped and cut short; returns how many it
/// said decoded.
fn mutate_20k(seed: u64, valid: &[Vec<u8>], mut check: impl FnMut(&[u8]) -> bool) -> u32 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut decoded = 0;
    for i in 0..20_000 {
        let input: Vec<u8> = if i % 2 == 0 {
            (0..rng.gen_range(0..60)).map(|_| rng.gen()).collect()
        } else {
            let mut b = valid[rng.gen_range(0..valid.len())].clone();
            for _ in 0..rng.gen_range(1..4) {
                let at = rng.gen_range(0..b.len());
                b[at] ^= 1 << rng.gen_range(0..8);
            }
            b.truncate(rng.gen_range(0..=b.len()));
            b
        };
        decoded += check(&input) as u32;
    }
    decoded
}

/// `fuzz_points_payload` on 20,000 seeded inputs: random bytes and mutated
/// valid payloads; valid payloads round-trip.
#[test]
fn fuzz_smoke_points_payload_never_panics_and_round_trips() {
    let seed = 0xDEC1_0602_u64;
    let valid: Vec<Vec<u8>> =
        [(&b""[..], &b""[..], 1), (b"cpu,host=a usage", b"rest", 3), (&[b'k'; 200][..], b"", 2)]
            .iter()
            .map(|(key, rest, n)| {
                points_payload::encode(
                    key,
                    (0..*n).map(|i| PointItem { timestamp: -3 + i, value_bits: 7, rest }),
                )
            })
            .collect();
    for v in &valid {
        fuzz_points_payload(v);
    }
    let decoded = mutate_20k(seed, &valid, |input| {
        fuzz_points_payload(input);
        points_payload::decode(input).is_ok()
    });
    assert!(decoded > 100, "seed {seed}: the mutations rarely decoded ({decoded})");
}
