//! Property tests: any writable point (names with spaces, commas, equals
//! signs, quotes, backslashes, tabs, unicode; integer and unsigned extremes;
//! floats including -0.0 and subnormals) written with `write_point` parses
//! back to itself in every precision, arbitrary bytes never break the
//! fuzz entry's invariants, and a batch parsed into again and again (its
//! points reused) gives what a fresh one gives. Deterministic: a fixed proptest seed (`SEED`,
//! printed in every assertion message) and no failure persistence.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use strata_series::{FieldValue, Point};

use super::fuzz::same_point;
use super::*;

const SEED: u64 = 0x11E_9808;

fn config(cases: u32) -> Config {
    Config { cases, rng_seed: RngSeed::Fixed(SEED), failure_persistence: None, ..Config::default() }
}

fn tricky_char() -> impl Strategy<Value = char> {
    prop_oneof![
        3 => prop::sample::select(vec![' ', ',', '=', '"', '\\', '#', '\t', '\r', 'i', 'u', 't', '-', '.', '0']),
        2 => prop::char::range('a', 'z'),
        1 => any::<char>().prop_map(|c| if c == '\n' { ' ' } else { c }),
    ]
}

/// Any text without a newline.
fn text(max_chars: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(tricky_char(), 0..=max_chars).prop_map(|chars| chars.into_iter().collect())
}

/// A non-empty name not ending in a backslash (line protocol cannot express
/// one).
fn name() -> impl Strategy<Value = String> {
    text(8).prop_map(|mut s| {
        if s.is_empty() || s.ends_with('\\') {
            s.push('k');
        }
        s
    })
}

fn measurement() -> impl Strategy<Value = String> {
    name().prop_map(|s| if s.starts_with(['#', '\t']) { format!("m{s}") } else { s })
}

fn float() -> impl Strategy<Value = f64> {
    use proptest::num::f64 as f;
    prop_oneof![
        4 => f::POSITIVE | f::NEGATIVE | f::NORMAL | f::SUBNORMAL | f::ZERO,
        1 => prop::sample::select(vec![
            -0.0, 0.0, f64::MIN_POSITIVE, -f64::MIN_POSITIVE, f64::from_bits(1), -f64::from_bits(1),
            f64::MAX, f64::MIN, f64::EPSILON, 1e300, 1.0, 0.1,
        ]),
    ]
}

fn value() -> impl Strategy<Value = FieldValue> {
    prop_oneof![
        float().prop_map(FieldValue::Float),
        prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(0i64), Just(-1i64), any::<i64>()]
            .prop_map(FieldValue::Integer),
        prop_oneof![Just(u64::MAX), Just(0u64), any::<u64>()].prop_map(FieldValue::Unsigned),
        any::<bool>().prop_map(FieldValue::Boolean),
        text(12).prop_map(FieldValue::String),
    ]
}

/// InfluxDB's timestamp range, both ends included.
fn timestamp_ns() -> impl Strategy<Value = i64> {
    use super::parser::{MAX_NANO_TIME, MIN_NANO_TIME};
    prop_oneof![Just(MIN_NANO_TIME), Just(MAX_NANO_TIME), Just(0i64), MIN_NANO_TIME..=MAX_NANO_TIME]
}

fn point() -> impl Strategy<Value = Point> {
    (
        measurement(),
        prop::collection::btree_map(name(), name(), 0..4),
        prop::collection::vec((name(), value()), 1..6),
        timestamp_ns(),
    )
        .prop_map(|(measurement, tags, raw_fields, timestamp_ns)| {
            // `time` is no valid tag or field key.
            let tags: Vec<(String, String)> = tags.into_iter().filter(|(k, _)| k != "time").collect();
            let mut fields: Vec<(String, FieldValue)> = Vec::new();
            for (key, value) in raw_fields {
                if key == "time" {
                    continue;
                }
                if !fields.iter().any(|f| f.0 == key) {
                    fields.push((key, value));
                }
            }
            if fields.is_empty() {
                fields.push(("v".to_string(), FieldValue::Boolean(true)));
            }
            Point { measurement, tags, fields, timestamp_ns }
        })
}

proptest! {
    #![proptest_config(config(768))]

    #[test]
    fn written_points_parse_back_to_themselves(
        points in prop::collection::vec(point(), 1..5),
        precision in prop::sample::select(Precision::ALL.to_vec()),
        crlf in any::<bool>(),
    ) {
        // Whole units of the precision, so writing loses nothing.
        let unit = precision.nanos_per_unit();
        let points: Vec<Point> =
            points.into_iter().map(|p| Point { timestamp_ns: p.timestamp_ns / unit * unit, ..p }).collect();
        let mut body = String::new();
        for p in &points {
            prop_assert_eq!(check_writable(p), Ok(()), "seed {:#x}", SEED);
            write_point(p, precision, &mut body);
            body.push_str(if crlf { "\r\n" } else { "\n" });
        }
        let batch = parse_lines(body.as_bytes(), precision, 0, &LineLimits::default());
        prop_assert!(batch.errors.is_empty(), "seed {:#x}: {:?} in {:?}", SEED, batch.errors, body);
        prop_assert_eq!(batch.points.len(), points.len(), "seed {:#x}", SEED);
        prop_assert_eq!(batch.line_numbers, (1..=points.len()).collect::<Vec<_>>());
        for (got, want) in batch.points.iter().zip(&points) {
            prop_assert!(same_point(got, want), "seed {:#x}: {:?} parsed as {:?} from {:?}", SEED, want, got, body);
        }
    }

    #[test]
    fn arbitrary_bytes_keep_the_fuzz_invariants(
        bytes in prop::collection::vec(
            prop_oneof![
                3 => prop::sample::select(b"m v=1i,t=\"\\ \n\r#-.e5uTf".to_vec()),
                1 => any::<u8>(),
            ],
            0..60,
        ),
    ) {
        // Panics (caught by proptest, with the input) on a violation.
        fuzz_line_protocol(&bytes);
        let batch = parse_lines(&bytes, Precision::Nanoseconds, 0, &LineLimits::default());
        let lines = bytes.split(|&b| b == b'\n').count();
        prop_assert!(batch.points.len() + batch.errors.len() <= lines, "seed {:#x}", SEED);
    }

    #[test]
    fn a_recycled_batch_parses_like_a_fresh_one(
        bodies in prop::collection::vec(
            prop::collection::vec(
                prop_oneof![
                    3 => point().prop_map(|p| {
                        let mut line = String::new();
                        write_point(&p, Precision::Nanoseconds, &mut line);
                        (line, Some(p))
                    }),
                    1 => text(20).prop_map(|t| (t, None)),
                ],
                0..6,
            ),
            1..5,
        ),
    ) {
        // Bodies of written points and arbitrary text lines, one after the
        // other into one batch: each written point comes back from its line
        // (no name, tag or field of an earlier body survives in it), and
        // the batch holds what a fresh one holds.
        let mut reused = ParsedBatch::default();
        let mut points_checked = 0;
        for lines in &bodies {
            let body = lines.iter().map(|(line, _)| line.as_str()).collect::<Vec<_>>().join("\n");
            parse_lines_into(body.as_bytes(), Precision::Nanoseconds, 7, &LineLimits::default(), &mut reused);
            for (at, (_, written)) in lines.iter().enumerate() {
                let Some(want) = written else { continue };
                let line = at + 1;
                let got = reused.line_numbers.iter().position(|&n| n == line).map(|i| &reused.points[i]);
                prop_assert!(
                    got.is_some_and(|got| same_point(got, want)),
                    "seed {:#x}: line {} {:?} parsed as {:?} from {:?}", SEED, line, want, got, body
                );
                points_checked += 1;
            }
            let fresh = parse_lines(body.as_bytes(), Precision::Nanoseconds, 7, &LineLimits::default());
            prop_assert_eq!(&reused.points, &fresh.points, "seed {:#x}: {:?}", SEED, body);
            prop_assert_eq!(&reused.line_numbers, &fresh.line_numbers, "seed {:#x}: {:?}", SEED, body);
            prop_assert_eq!(&reused.errors, &fresh.errors, "seed {:#x}: {:?}", SEED, body);
        }
        let written = bodies.iter().flatten().filter(|(_, p)| p.is_some()).count();
        prop_assert_eq!(points_checked, written, "seed {:#x}: every written point was checked", SEED);
    }
}

/// The recycled-batch property on one fixed pair of bodies: a batch that
/// held a wide line parses a narrow one exactly as a fresh batch does.
#[test]
fn a_recycled_batch_forgets_the_previous_body() {
    let mut reused = ParsedBatch::default();
    let first = b"cpu,host=a,region=eu usage=1,idle=2i 10\nmem,host=b used=3 20";
    parse_lines_into(first, Precision::Nanoseconds, 7, &LineLimits::default(), &mut reused);
    assert_eq!(reused.points.len(), 2);
    let second = b"disk free=4 30\nnot a line";
    parse_lines_into(second, Precision::Nanoseconds, 7, &LineLimits::default(), &mut reused);
    let fresh = parse_lines(second, Precision::Nanoseconds, 7, &LineLimits::default());
    assert_eq!(reused.points, fresh.points);
    assert_eq!(reused.line_numbers, fresh.line_numbers);
    assert_eq!(reused.errors, fresh.errors);
    assert_eq!(reused.points.len(), 1, "only the second body's point");
    assert_eq!(reused.errors.len(), 1, "its bad line is an error");
}
