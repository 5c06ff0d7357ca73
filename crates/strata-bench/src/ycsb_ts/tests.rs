//! Tests of the YCSB-TS generator as a whole: determinism, Table 1's mixes,
//! Zipfian key choice, visibility of read points, per-key time order, the
//! worker split, line protocol and the 50-byte points.

use std::collections::{HashMap, HashSet};

use strata_influx::line_protocol::{parse_lines, LineLimits, Precision};
use strata_series::FieldValue;

use super::model::{self, point_payload, DataPoint, Note, Op, OpKind, NOTE_BYTES, OPS_PER_TXN, POINT_BYTES};
use super::spec::{MixUnit, SpecError, Workload, YcsbTsSpec, PPM, START_NS};
use super::workload::{YcsbTsGenerator, LOAD_BATCH_OPS};

fn spec(workload: Workload, seed: u64) -> YcsbTsSpec {
    YcsbTsSpec { seed, ..YcsbTsSpec::new(workload) }
}

fn all_txns(generator: &mut YcsbTsGenerator) -> Vec<super::Txn> {
    generator.by_ref().collect()
}

/// Point index of a timestamp (the spec's interval from START_NS).
fn point_index(spec: &YcsbTsSpec, ts_ns: i64) -> u64 {
    ((ts_ns - START_NS) / spec.interval_ns) as u64
}

#[test]
fn same_seed_same_operations_other_seed_other_operations() {
    for workload in Workload::ALL {
        let s = spec(workload, 11);
        let mut first = YcsbTsGenerator::new(&s).unwrap();
        let mut second = YcsbTsGenerator::new(&s).unwrap();
        let load: Vec<Vec<Op>> = first.load_phase().collect();
        assert_eq!(load, second.load_phase().collect::<Vec<_>>(), "workload {workload} seed 11");
        let txns = all_txns(&mut first);
        assert_eq!(txns.len(), 10_000);
        assert_eq!(txns, all_txns(&mut second), "workload {workload} seed 11");
        // The load phase does not depend on the transaction stream.
        assert_eq!(load, first.load_phase().collect::<Vec<_>>());

        let mut other = YcsbTsGenerator::new(&spec(workload, 12)).unwrap();
        assert_ne!(txns[..10], all_txns(&mut other)[..10], "workload {workload}: seeds 11 and 12");
    }
}

#[test]
fn operation_mix_matches_table_1() {
    // 10,000 transactions = 100,000 operations per workload.
    for workload in Workload::ALL {
        let s = spec(workload, 0x7ab1e1);
        let txns = all_txns(&mut YcsbTsGenerator::new(&s).unwrap());
        let mut counts: HashMap<OpKind, u64> = HashMap::new();
        for txn in &txns {
            assert_eq!(txn.ops.len(), OPS_PER_TXN);
            for op in &txn.ops {
                *counts.entry(op.kind()).or_default() += 1;
            }
        }
        let ops = (txns.len() * OPS_PER_TXN) as f64;
        assert_eq!(ops, 100_000.0);
        let params = workload.params();
        for kind in OpKind::ALL {
            let p = params.fraction(kind);
            let expected = ops * p;
            // Five standard deviations of a binomial count, at least 1.
            let band = 5.0 * (ops * p * (1.0 - p)).sqrt() + 1.0;
            let got = *counts.get(&kind).unwrap_or(&0) as f64;
            assert!(
                (got - expected).abs() <= band,
                "seed 0x7ab1e1 workload {workload}: {} {got}, expected {expected} +- {band}",
                kind.name()
            );
        }
    }
    // Table 1 itself.
    let b = Workload::B.params();
    assert_eq!((b.insert_ppm, b.read_ppm, b.update_ppm, b.zipf_theta), (900_000, 99_000, 1_000, Some(0.9)));
    assert_eq!(Workload::A.params().zipf_theta, None);
    assert_eq!(Workload::D.params().zipf_theta, Some(1.1));
    for workload in Workload::ALL {
        let p = workload.params();
        assert_eq!(p.insert_ppm + p.read_ppm + p.update_ppm, PPM, "workload {workload}");
    }
}

#[test]
fn per_transaction_mix_gives_homogeneous_transactions() {
    let s = YcsbTsSpec { mix_unit: MixUnit::Transaction, txns: 20_000, ..spec(Workload::B, 5) };
    let txns = all_txns(&mut YcsbTsGenerator::new(&s).unwrap());
    let mut per_kind: HashMap<OpKind, u64> = HashMap::new();
    for txn in &txns {
        let kind = txn.ops[0].kind();
        assert_eq!(txn.count(kind), OPS_PER_TXN, "seed 5 txn {}: mixed kinds", txn.id);
        *per_kind.entry(kind).or_default() += 1;
    }
    let reads = per_kind[&OpKind::Read] as f64;
    // 9.9 % of 20,000 = 1980, sd 42.
    assert!((reads - 1980.0).abs() < 210.0, "seed 5: {reads} read transactions");
    assert!(txns.iter().filter(|t| t.is_read_only()).count() as f64 == reads);
    let updates = *per_kind.get(&OpKind::Update).unwrap_or(&0);
    assert!((5..=40).contains(&updates), "seed 5: {updates} update transactions, expected about 20");
}

#[test]
fn read_and_update_keys_follow_the_zipfian() {
    for (workload, seed) in [(Workload::C, 0xc0ffee_u64), (Workload::D, 0xd00d)] {
        let s = YcsbTsSpec { txns: 30_000, ..spec(workload, seed) };
        let mut generator = YcsbTsGenerator::new(&s).unwrap();
        let popularity = generator.key_popularity().unwrap().clone();
        let ranks = popularity.ranks().clone();
        assert_eq!(Some(ranks.theta()), workload.params().zipf_theta);
        let mut rank_of_key = vec![0u64; s.num_keys as usize];
        for rank in 0..s.num_keys {
            rank_of_key[popularity.item_of_rank(rank) as usize] = rank;
        }
        let mut counts = vec![0u64; s.num_keys as usize];
        let mut samples = 0u64;
        for txn in generator.by_ref() {
            for op in txn.ops.iter().filter(|op| op.kind() != OpKind::Insert) {
                counts[rank_of_key[op.key() as usize] as usize] += 1;
                samples += 1;
            }
        }
        // 10 % of 300,000 operations.
        assert!((28_000..32_000).contains(&samples), "seed {seed:#x}: {samples} reads and updates");

        let top = counts[0] as f64 / samples as f64;
        let expected_top = ranks.zipf_probability(0);
        assert!(
            (top / expected_top - 1.0).abs() < 0.06,
            "seed {seed:#x} workload {workload}: hottest key {top} vs {expected_top}"
        );

        // Chi-square over log-spaced rank bins against the sampler's own
        // distribution: 10 bins, 9 degrees of freedom, p = 0.001 at 27.9.
        let mut chi2 = 0.0;
        let (mut lo, mut width) = (0u64, 1u64);
        while lo < s.num_keys {
            let hi = (lo + width).min(s.num_keys);
            let observed: u64 = counts[lo as usize..hi as usize].iter().sum();
            let expected = (lo..hi).map(|r| ranks.sampled_probability(r)).sum::<f64>() * samples as f64;
            chi2 += (observed as f64 - expected).powi(2) / expected;
            (lo, width) = (hi, width * 2);
        }
        assert!(chi2 < 27.9, "seed {seed:#x} workload {workload}: chi-square {chi2}");
    }
}

/// Applies a load phase to the set of existing points.
fn apply_load(generator: &YcsbTsGenerator, existing: &mut HashSet<(u64, i64)>) {
    for batch in generator.load_phase() {
        assert!(batch.len() <= LOAD_BATCH_OPS);
        for op in batch {
            assert_eq!(op.kind(), OpKind::Insert);
            assert!(existing.insert((op.key(), op.ts_ns())), "load inserts {op:?} twice");
        }
    }
}

/// Checks that a transaction's reads and updates hit `existing`, then adds
/// its inserts. Returns how many reads and updates hit a point inserted by
/// a transaction (not by the load phase).
fn apply_txn(s: &YcsbTsSpec, txn: &super::Txn, existing: &mut HashSet<(u64, i64)>) -> u64 {
    let mut recent = 0;
    for op in &txn.ops {
        if op.kind() != OpKind::Insert {
            assert!(
                existing.contains(&(op.key(), op.ts_ns())),
                "seed {} txn {}: {op:?} of a missing point",
                s.seed,
                txn.id
            );
            recent += u64::from(point_index(s, op.ts_ns()) >= s.load_points_per_key);
        }
    }
    for op in &txn.ops {
        if op.kind() == OpKind::Insert {
            assert!(
                existing.insert((op.key(), op.ts_ns())),
                "seed {} txn {}: {op:?} inserted twice",
                s.seed,
                txn.id
            );
        }
    }
    recent
}

#[test]
fn reads_and_updates_touch_only_inserted_points() {
    let s = YcsbTsSpec { num_keys: 50, load_points_per_key: 3, txns: 5_000, ..spec(Workload::D, 77) };
    let mut generator = YcsbTsGenerator::new(&s).unwrap();
    let mut existing = HashSet::new();
    apply_load(&generator, &mut existing);
    assert_eq!(existing.len(), 150);
    let mut recent = 0;
    while let Some(txn) = generator.next_txn() {
        recent += apply_txn(&s, &txn, &mut existing);
    }
    // Points are chosen among all inserted ones, not only the loaded ones.
    assert!(recent > 1000, "seed 77: only {recent} reads and updates of run-inserted points");
    assert_eq!(existing.len() as u64, 150 + count_inserts(&s));
    // After the run every existing point of a key is visible to the next transaction.
    for key in 0..s.num_keys {
        let points = existing.iter().filter(|(k, _)| *k == key).count() as u64;
        assert_eq!(generator.visible_points(key), points, "key {key}");
    }
}

fn count_inserts(s: &YcsbTsSpec) -> u64 {
    YcsbTsGenerator::new(s).unwrap().flat_map(|t| t.ops).filter(|op| op.kind() == OpKind::Insert).count()
        as u64
}

#[test]
fn workers_see_only_points_that_exist_whatever_the_interleaving() {
    let s = YcsbTsSpec { num_keys: 40, load_points_per_key: 2, txns: 6_000, ..spec(Workload::C, 31) };
    let whole = YcsbTsGenerator::new(&s).unwrap();
    let mut workers: Vec<YcsbTsGenerator> = (0..3).map(|w| whole.for_worker(w, 3).unwrap()).collect();
    let mut existing = HashSet::new();
    for worker in &workers {
        apply_load(worker, &mut existing);
    }
    assert_eq!(existing.len(), 80, "the workers' load phases partition the whole load");
    // An uneven interleaving: worker 0 runs ahead, then the others.
    let mut step = 0u64;
    loop {
        let index = if step % 5 < 3 { 0 } else { 1 + (step % 2) as usize };
        step += 1;
        let txn = match workers[index].next_txn() {
            Some(txn) => txn,
            None => match workers.iter_mut().find_map(|w| w.next_txn()) {
                Some(txn) => txn,
                None => break,
            },
        };
        apply_txn(&s, &txn, &mut existing);
    }
}

#[test]
fn inserts_are_in_time_order_per_key_one_interval_apart() {
    for workers in [1u64, 4] {
        let s = YcsbTsSpec { num_keys: 30, load_points_per_key: 5, txns: 2_000, ..spec(Workload::B, 9) };
        let whole = YcsbTsGenerator::new(&s).unwrap();
        let mut next_index: HashMap<u64, u64> = HashMap::new();
        for worker in 0..workers {
            let mut generator = whole.for_worker(worker, workers).unwrap();
            let ops: Vec<Op> = generator.load_phase().flatten().collect();
            let run: Vec<Op> = generator.by_ref().flat_map(|t| t.ops).collect();
            for op in ops.iter().chain(&run).filter(|op| op.kind() == OpKind::Insert) {
                assert_eq!(op.key() % workers, worker, "worker {worker} inserted into another's key");
                let expected = next_index.entry(op.key()).or_default();
                assert_eq!(point_index(&s, op.ts_ns()), *expected, "seed 9 workers {workers}: {op:?}");
                assert_eq!(op.ts_ns(), START_NS + *expected as i64 * s.interval_ns);
                *expected += 1;
            }
        }
        // A worker's keys advance together: their point counts differ by at
        // most one (different workers' keys drift apart).
        assert_eq!(next_index.len() as u64, s.num_keys);
        for worker in 0..workers {
            let counts = next_index.iter().filter(|(k, _)| *k % workers == worker).map(|(_, n)| *n);
            let (min, max) = (counts.clone().min().unwrap(), counts.max().unwrap());
            assert!(max - min <= 1, "workers {workers} worker {worker}: point counts from {min} to {max}");
        }
    }
}

#[test]
fn worker_streams_are_disjoint_deterministic_and_cover_the_run() {
    let s = YcsbTsSpec { txns: 1_001, ..spec(Workload::D, 3) };
    let whole = YcsbTsGenerator::new(&s).unwrap();
    assert_eq!(all_txns(&mut whole.for_worker(0, 1).unwrap()), all_txns(&mut whole.clone()));
    let mut ids = Vec::new();
    let mut total = 0;
    for worker in 0..4 {
        let mut generator = whole.for_worker(worker, 4).unwrap();
        total += generator.txn_count();
        let txns = all_txns(&mut generator);
        assert_eq!(txns.len() as u64, whole.for_worker(worker, 4).unwrap().txn_count());
        assert_eq!(txns, all_txns(&mut whole.for_worker(worker, 4).unwrap()), "worker {worker} seed 3");
        ids.extend(txns.iter().map(|t| t.id));
    }
    assert_eq!(total, 1_001);
    ids.sort_unstable();
    assert_eq!(ids, (0..1_001).collect::<Vec<u64>>());
    let first = all_txns(&mut whole.for_worker(0, 4).unwrap());
    let second = all_txns(&mut whole.for_worker(1, 4).unwrap());
    assert_ne!(first[0].ops, second[0].ops);
}

#[test]
fn load_phase_is_time_major_and_batched() {
    let s = YcsbTsSpec { num_keys: 1500, load_points_per_key: 2, ..spec(Workload::A, 1) };
    let generator = YcsbTsGenerator::new(&s).unwrap();
    let batches: Vec<Vec<Op>> = generator.load_phase().collect();
    assert_eq!(batches.iter().map(Vec::len).collect::<Vec<_>>(), vec![1000, 1000, 1000]);
    let ops: Vec<Op> = batches.into_iter().flatten().collect();
    assert_eq!(ops.len() as u64, s.load_points());
    assert_eq!((ops[0].key(), ops[0].ts_ns()), (0, START_NS));
    assert_eq!((ops[1500].key(), ops[1500].ts_ns()), (0, START_NS + s.interval_ns));
    assert!(ops.windows(2).all(|w| w[0].ts_ns() <= w[1].ts_ns()));
    let small: Vec<usize> = generator.load_phase_batched(0).take(3).map(|b| b.len()).collect();
    assert_eq!(small, vec![1, 1, 1]);
}

#[test]
fn every_key_is_its_own_series() {
    let mut seen = HashSet::new();
    for key in 0..25_000u64 {
        let mut series = String::new();
        model::write_series(key, &mut series);
        assert!(seen.insert(series), "key {key} repeats a series");
    }
    assert_eq!(
        model::series_tags(12_345),
        vec![
            ("tag0".to_string(), "45".to_string()),
            ("tag1".to_string(), "23".to_string()),
            ("tag2".to_string(), "1".to_string()),
        ]
    );
}

#[test]
fn line_protocol_parses_back_to_the_point() {
    let s = YcsbTsSpec { txns: 200, ..spec(Workload::C, 21) };
    let mut generator = YcsbTsGenerator::new(&s).unwrap();
    let mut points: Vec<(u64, DataPoint)> = Vec::new();
    for op in generator.load_phase().flatten().step_by(37).chain(generator.by_ref().flat_map(|t| t.ops)) {
        if let Some(point) = op.inserted_point() {
            points.push((op.key(), point));
        }
    }
    assert!(points.len() > 1000);
    let mut body = String::new();
    for (key, point) in &points {
        point.write_line_protocol(*key, &mut body);
        body.push('\n');
    }
    let batch = parse_lines(body.as_bytes(), Precision::Nanoseconds, 0, &LineLimits::default());
    assert!(batch.errors.is_empty(), "{:?}", batch.errors.first());
    assert_eq!(batch.points.len(), points.len());
    for (parsed, (key, point)) in batch.points.iter().zip(&points) {
        assert_eq!(parsed.measurement, "usermetric");
        assert_eq!(parsed.tags, model::series_tags(*key));
        assert_eq!(parsed.timestamp_ns, point.timestamp_ns);
        assert_eq!(parsed.fields.len(), 2);
        let field = |name: &str| parsed.fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        match field("value") {
            Some(FieldValue::Float(v)) => assert_eq!(v.to_bits(), point.value.to_bits(), "key {key}"),
            other => panic!("key {key}: value field {other:?}"),
        }
        match field("note") {
            Some(FieldValue::String(note)) => {
                assert_eq!(note.len(), NOTE_BYTES);
                assert_eq!(note, point.note.as_str());
            }
            other => panic!("key {key}: note field {other:?}"),
        }
    }
    let one = points[0].1.to_line_protocol(points[0].0);
    assert!(one.starts_with("usermetric,tag0=") && one.contains(" value=") && one.contains(",note=\""));
    assert!(!one.contains('\n'));
}

#[test]
fn a_point_is_50_bytes_by_the_papers_accounting() {
    assert_eq!(POINT_BYTES, 50);
    assert_eq!(model::TIMESTAMP_BYTES + model::VALUE_BYTES + NOTE_BYTES, 50);
    let (value, note) = point_payload(1, 2, 3);
    let point = DataPoint { timestamp_ns: START_NS, value, note };
    let bytes = point.encode();
    assert_eq!(bytes.len(), 50);
    assert_eq!(DataPoint::decode(&bytes), Some(point));
    assert_eq!(DataPoint::decode(&bytes[..49]), None);
    let mut bad = bytes;
    bad[49] = b'"';
    assert_eq!(DataPoint::decode(&bad), None, "a quote is not a note character");
    assert_eq!(point.note.as_str().len(), NOTE_BYTES);
}

#[test]
fn payloads_are_a_function_of_seed_key_and_index() {
    assert_eq!(point_payload(1, 2, 3), point_payload(1, 2, 3));
    let distinct: HashSet<[u8; NOTE_BYTES]> =
        (0..1000).map(|i| *point_payload(1, i % 10, i / 10).1.as_bytes()).collect();
    assert_eq!(distinct.len(), 1000);
    let values: Vec<f64> = (0..10_000).map(|i| point_payload(7, i, 0).0).collect();
    assert!(values.iter().all(|v| (0.0..model::MAX_VALUE).contains(v)));
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    assert!((mean - 500.0).abs() < 15.0, "mean value {mean}");
    assert!(Note::from_bytes([b'a'; NOTE_BYTES]).is_some());
    assert!(Note::from_bytes([b' '; NOTE_BYTES]).is_none());
}

#[test]
fn bad_specs_are_rejected_with_reasons() {
    let base = spec(Workload::B, 1);
    let err = |s: YcsbTsSpec| YcsbTsGenerator::new(&s).unwrap_err();
    assert_eq!(err(YcsbTsSpec { num_keys: 0, ..base.clone() }), SpecError::NoKeys);
    assert_eq!(err(YcsbTsSpec { interval_ns: 0, ..base.clone() }), SpecError::BadInterval(0));
    assert_eq!(
        err(YcsbTsSpec { load_points_per_key: 0, ..base.clone() }),
        SpecError::NothingToRead(Workload::B)
    );
    // Workload A never reads, so it needs no load.
    assert!(YcsbTsGenerator::new(&YcsbTsSpec { load_points_per_key: 0, ..spec(Workload::A, 1) }).is_ok());
    let overflow = err(YcsbTsSpec { interval_ns: i64::MAX / 100, ..base.clone() });
    assert!(matches!(overflow, SpecError::TimestampOverflow { worker: 0, .. }), "{overflow:?}");
    assert!(overflow.to_string().contains("overflows"));

    let generator = YcsbTsGenerator::new(&YcsbTsSpec { num_keys: 3, ..base.clone() }).unwrap();
    assert_eq!(generator.for_worker(2, 2).unwrap_err(), SpecError::BadWorker { worker: 2, workers: 2 });
    assert_eq!(generator.for_worker(0, 0).unwrap_err(), SpecError::BadWorker { worker: 0, workers: 0 });
    assert_eq!(
        generator.for_worker(0, 4).unwrap_err(),
        SpecError::MoreWorkersThanKeys { workers: 4, num_keys: 3 }
    );
    assert_eq!("d".parse::<Workload>(), Ok(Workload::D));
    assert!("E".parse::<Workload>().unwrap_err().to_string().contains("A, B, C or D"));
}
