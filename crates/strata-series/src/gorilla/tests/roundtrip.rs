//! Property tests: arbitrary points of every field type round-trip through
//! `BlockWriter`, `encode_points`, `decode_block` and `decode_timestamps`,
//! bit-exactly. Timestamps mix repeats, regular 10 s steps, small steps of
//! either sign, bucket edges, arbitrary jumps and the i64 extremes; values
//! include NaN payloads, infinities, -0.0, i64/u64 extremes, repeats, empty
//! and unicode strings. Deterministic: fixed seed `SEED`, no persistence.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

use crate::gorilla::{decode_block, decode_timestamps, encode_points, BlockWriter, DecodedBlock};
use crate::model::{FieldType, FieldValue, TimestampNs};

const SEED: u64 = 0x6011_11A5;

fn config() -> Config {
    Config { cases: 256, rng_seed: RngSeed::Fixed(SEED), failure_persistence: None, ..Config::default() }
}

/// How the next timestamp follows the previous one.
#[derive(Clone, Debug)]
enum TsStep {
    By(i64),
    At(TimestampNs),
}

fn ts_step() -> impl Strategy<Value = TsStep> {
    prop_oneof![
        3 => Just(TsStep::By(10_000_000_000)),
        2 => Just(TsStep::By(0)),
        2 => (-5000i64..5000).prop_map(TsStep::By),
        1 => prop::sample::select(vec![63i64, 64, 65, -63, -64, 255, 256, 257, 2047, 2048, 2049,
            i32::MAX as i64, i32::MAX as i64 + 1, i32::MAX as i64 + 2, i32::MIN as i64, i32::MIN as i64 + 1])
            .prop_map(TsStep::By),
        1 => any::<i64>().prop_map(TsStep::By),
        1 => prop::sample::select(vec![i64::MIN, i64::MAX, 0, -1]).prop_map(TsStep::At),
        1 => any::<i64>().prop_map(TsStep::At),
    ]
}

fn timestamps(steps: &[TsStep]) -> Vec<TimestampNs> {
    let mut ts = 1_700_000_000_000_000_000i64;
    steps
        .iter()
        .map(|s| {
            ts = match *s {
                TsStep::By(d) => ts.wrapping_add(d),
                TsStep::At(t) => t,
            };
            ts
        })
        .collect()
}

fn float_value() -> impl Strategy<Value = f64> {
    prop_oneof![
        2 => any::<u64>().prop_map(f64::from_bits),
        2 => (0i32..40).prop_map(|k| 20.0 + k as f64 * 0.5),
        1 => prop::sample::select(vec![
            f64::NAN,
            f64::from_bits(0x7FF8_0000_0000_0001),
            f64::from_bits(0xFFF0_0000_0000_BEEF),
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            f64::MAX,
            f64::MIN,
        ]),
        1 => any::<f64>(),
    ]
}

fn integer_value() -> impl Strategy<Value = i64> {
    prop_oneof![
        2 => any::<i64>(),
        2 => -1000i64..1000,
        1 => prop::sample::select(vec![i64::MIN, i64::MAX, 0, -1, 1, i64::MIN + 1, i64::MAX - 1]),
    ]
}

fn unsigned_value() -> impl Strategy<Value = u64> {
    prop_oneof![
        2 => any::<u64>(),
        2 => 0u64..1000,
        1 => prop::sample::select(vec![u64::MAX, 0, 1, 1 << 63, (1 << 63) - 1, u64::MAX - 1]),
    ]
}

fn string_value() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => prop::sample::select(vec!["", "ok", "fail", "日本語", "🦀", "a b=c,d\"e"]).prop_map(String::from),
        2 => "\\PC{0,20}",
        1 => ".{0,300}",
    ]
}

/// Values with runs: each generated value is repeated 1..4 times.
fn with_runs<T: Clone + std::fmt::Debug>(value: impl Strategy<Value = T>) -> impl Strategy<Value = Vec<T>> {
    prop::collection::vec((value, 1usize..4), 0..120)
        .prop_map(|runs| runs.into_iter().flat_map(|(v, n)| std::iter::repeat_n(v, n)).collect())
}

fn points_strategy<T: Clone + std::fmt::Debug>(
    value: impl Strategy<Value = T>,
    wrap: fn(T) -> FieldValue,
) -> impl Strategy<Value = Vec<(TimestampNs, FieldValue)>> {
    with_runs(value).prop_flat_map(move |values| {
        let len = values.len();
        prop::collection::vec(ts_step(), len).prop_map(move |steps| {
            values.iter().cloned().zip(timestamps(&steps)).map(|(v, t)| (t, wrap(v))).collect()
        })
    })
}

fn same_points(a: &[(TimestampNs, FieldValue)], b: &[(TimestampNs, FieldValue)]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|((ta, va), (tb, vb))| ta == tb && va.same_bits(vb))
}

/// Round-trips `points` every way; returns the decoded block for more checks.
fn check(field_type: FieldType, points: &[(TimestampNs, FieldValue)]) -> Result<DecodedBlock, TestCaseError> {
    let bytes = encode_points(field_type, points).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut writer = BlockWriter::new(field_type);
    for (t, v) in points {
        writer.push(*t, v).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
    prop_assert_eq!(&writer.to_bytes(), &bytes, "seed {:#x}", SEED);
    prop_assert_eq!(writer.encoded_bytes(), bytes.len());
    prop_assert_eq!(writer.first_ts(), points.first().map(|p| p.0));
    prop_assert_eq!(writer.last_ts(), points.last().map(|p| p.0));
    let block = decode_block(&bytes).map_err(|e| TestCaseError::fail(format!("seed {SEED:#x}: {e}")))?;
    prop_assert_eq!(block.field_type, field_type);
    prop_assert!(same_points(&block.clone().into_points(), points), "seed {:#x}: points differ", SEED);
    for (i, (_, v)) in points.iter().enumerate() {
        prop_assert!(block.value(i).same_bits(v), "seed {:#x}: value {} differs", SEED, i);
    }
    prop_assert!(writer.decode().same_bits(&block));
    let ts: Vec<TimestampNs> = points.iter().map(|p| p.0).collect();
    prop_assert_eq!(decode_timestamps(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?, ts);
    Ok(block)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn floats_round_trip(points in points_strategy(float_value(), FieldValue::Float)) {
        prop_assert_eq!(check(FieldType::Float, &points)?.len(), points.len());
    }

    #[test]
    fn integers_round_trip(points in points_strategy(integer_value(), FieldValue::Integer)) {
        prop_assert_eq!(check(FieldType::Integer, &points)?.len(), points.len());
    }

    #[test]
    fn unsigned_round_trip(points in points_strategy(unsigned_value(), FieldValue::Unsigned)) {
        prop_assert_eq!(check(FieldType::Unsigned, &points)?.len(), points.len());
    }

    #[test]
    fn booleans_round_trip(points in points_strategy(any::<bool>(), FieldValue::Boolean)) {
        prop_assert_eq!(check(FieldType::Boolean, &points)?.len(), points.len());
    }

    #[test]
    fn strings_round_trip(points in points_strategy(string_value(), FieldValue::String)) {
        prop_assert_eq!(check(FieldType::String, &points)?.len(), points.len());
    }

    #[test]
    fn arbitrary_timestamp_sequences_round_trip(ts in prop::collection::vec(any::<i64>(), 0..200)) {
        let points: Vec<_> = ts.iter().map(|&t| (t, FieldValue::Boolean(t & 1 == 0))).collect();
        let block = check(FieldType::Boolean, &points)?;
        prop_assert_eq!(block.timestamps, ts);
    }
}

#[test]
fn extreme_and_special_sequences_round_trip() {
    let ts = [i64::MIN, i64::MAX, i64::MIN, i64::MIN, 0, -1, i64::MAX, i64::MAX, 5, 4, 3];
    let cases: Vec<(FieldType, Vec<FieldValue>)> = vec![
        (
            FieldType::Float,
            [f64::NAN, -0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY, f64::from_bits(0x7FF0_0000_0000_0001)]
                .into_iter()
                .map(FieldValue::Float)
                .collect(),
        ),
        (
            FieldType::Integer,
            [i64::MIN, i64::MAX, i64::MIN, 0, i64::MAX].into_iter().map(FieldValue::Integer).collect(),
        ),
        (
            FieldType::Unsigned,
            [u64::MAX, 0, u64::MAX, 1 << 63].into_iter().map(FieldValue::Unsigned).collect(),
        ),
        (
            FieldType::String,
            ["", "", "ü", "", "ü"].into_iter().map(|s| FieldValue::String(s.into())).collect(),
        ),
    ];
    for (ft, values) in cases {
        let points: Vec<_> = ts.iter().copied().zip(values.iter().cycle().cloned()).collect();
        let block = check(ft, &points).unwrap_or_else(|e| panic!("{ft:?}: {e}"));
        assert_eq!(block.timestamps, ts, "{ft:?}");
    }
}
