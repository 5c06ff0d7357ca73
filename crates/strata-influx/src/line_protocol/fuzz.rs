//! The fuzz entry for the line protocol (`fuzz/fuzz_targets/line_protocol.rs`)
//! and its stable-Rust smoke test: any bytes parse without panicking, the
//! batch is well formed, and every parsed point, written back and parsed
//! again, is itself.

use strata_series::Point;

use super::{check_writable, parse_lines, write_point, LineLimits, ParsedBatch, Precision};

/// A default time that every precision's unit divides, so points that got it
/// still write and parse back exactly.
const FUZZ_DEFAULT_TIME_NS: i64 = 472_222 * 3_600_000_000_000;

/// Parses `data` with nanosecond precision and with a precision chosen by its
/// length, with default and with tight limits, and checks each batch (see
/// the module doc). Panics on a violation.
pub fn fuzz_line_protocol(data: &[u8]) {
    let tight = LineLimits { max_line_bytes: 64, max_fields_per_line: 3 };
    let other = Precision::ALL[data.len() % Precision::ALL.len()];
    for (precision, limits) in
        [(Precision::Nanoseconds, LineLimits::default()), (other, LineLimits::default()), (other, tight)]
    {
        let batch = parse_lines(data, precision, FUZZ_DEFAULT_TIME_NS, &limits);
        check_batch_shape(data, &batch, &limits);
        check_round_trip(&batch, precision);
    }
}

fn check_batch_shape(data: &[u8], batch: &ParsedBatch, limits: &LineLimits) {
    let line_count = data.split(|&b| b == b'\n').count();
    assert_eq!(batch.points.len(), batch.line_numbers.len());
    assert!(batch.line_numbers.windows(2).all(|w| w[0] < w[1]), "line numbers not increasing");
    assert!(batch.errors.windows(2).all(|w| w[0].line < w[1].line), "error lines not increasing");
    for e in &batch.errors {
        assert!((1..=line_count).contains(&e.line), "error line {} of {line_count}", e.line);
        assert!(e.message.starts_with("unable to parse '"), "{}", e.message);
        assert!(!batch.line_numbers.contains(&e.line), "line {} both parsed and rejected", e.line);
    }
    for (p, &line) in batch.points.iter().zip(&batch.line_numbers) {
        assert!((1..=line_count).contains(&line));
        assert!(!p.measurement.is_empty());
        assert!(!p.fields.is_empty() && p.fields.len() <= limits.max_fields_per_line);
        assert!(p.tags.windows(2).all(|w| w[0].0 < w[1].0), "tags not sorted and unique: {p:?}");
        for (i, (key, _)) in p.fields.iter().enumerate() {
            assert!(!p.fields[..i].iter().any(|f| &f.0 == key), "repeated field key in {p:?}");
        }
    }
}

fn check_round_trip(batch: &ParsedBatch, precision: Precision) {
    let unlimited = LineLimits { max_line_bytes: usize::MAX, max_fields_per_line: usize::MAX };
    let mut body = String::new();
    for p in &batch.points {
        assert_eq!(check_writable(p), Ok(()), "parsed point cannot be written: {p:?}");
        let start = body.len();
        write_point(p, precision, &mut body);
        let again = parse_lines(&body.as_bytes()[start..], precision, FUZZ_DEFAULT_TIME_NS, &unlimited);
        assert!(again.errors.is_empty(), "{p:?} written as {:?}: {:?}", &body[start..], again.errors);
        assert_eq!(again.points.len(), 1);
        assert!(
            same_point(&again.points[0], p),
            "{p:?} written as {:?} parsed as {:?}",
            &body[start..],
            again
        );
        body.push('\n');
    }
    let again = parse_lines(body.as_bytes(), precision, FUZZ_DEFAULT_TIME_NS, &unlimited);
    assert_eq!(again.points.len(), batch.points.len(), "rewritten batch {body:?}");
    assert!(again.points.iter().zip(&batch.points).all(|(a, b)| same_point(a, b)));
}

/// Equality with floats compared by bits (so -0.0 differs from 0.0).
pub(crate) fn same_point(a: &Point, b: &Point) -> bool {
    a.measurement == b.measurement
        && a.tags == b.tags
        && a.timestamp_ns == b.timestamp_ns
        && a.fields.len() == b.fields.len()
        && a.fields.iter().zip(&b.fields).all(|(x, y)| x.0 == y.0 && x.1.same_bits(&y.1))
}

/// Seeded random points for tests: names and strings drawn from a small
/// alphabet heavy in line protocol's special characters.
#[cfg(test)]
pub(crate) mod gen {
    use rand::Rng;
    use strata_series::FieldValue;

    use super::*;

    const ALPHABET: &[&str] =
        &["a", "b", "z", "0", "9", " ", ",", "=", "\"", "\\", "#", "\t", "\r", "é", "€", "𝄞", "_", "-", "."];

    pub(crate) fn text(rng: &mut impl Rng, max_len: usize) -> String {
        let len = rng.gen_range(0..=max_len);
        (0..len).map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())]).collect()
    }

    /// A non-empty name that does not end in a backslash.
    pub(crate) fn name(rng: &mut impl Rng) -> String {
        let mut s = text(rng, 6);
        while s.ends_with('\\') {
            s.pop();
        }
        if s.is_empty() {
            s.push('k');
        }
        s
    }

    pub(crate) fn value(rng: &mut impl Rng) -> FieldValue {
        match rng.gen_range(0..9) {
            0 => FieldValue::Float(rng.gen_range(-1e6..1e6)),
            1 => FieldValue::Float(f64::from_bits(rng.gen::<u64>() & !(0x7ff << 52))), // subnormal or zero
            2 => FieldValue::Float([-0.0, f64::MAX, f64::MIN, f64::MIN_POSITIVE, 1e300][rng.gen_range(0..5)]),
            3 => FieldValue::Integer(rng.gen()),
            4 => FieldValue::Integer([i64::MIN, i64::MAX, 0, -1][rng.gen_range(0..4)]),
            5 => FieldValue::Unsigned(rng.gen()),
            6 => FieldValue::Unsigned([0, u64::MAX][rng.gen_range(0..2)]),
            7 => FieldValue::Boolean(rng.gen()),
            _ => FieldValue::String(text(rng, 8)),
        }
    }

    /// A writable point whose timestamp is a whole number of `precision` units.
    pub(crate) fn point(rng: &mut impl Rng, precision: Precision) -> Point {
        let mut measurement = name(rng);
        if measurement.starts_with(['#', '\t']) {
            measurement.insert(0, 'm');
        }
        let mut tags: Vec<(String, String)> =
            (0..rng.gen_range(0..4)).map(|_| (name(rng), name(rng))).collect();
        tags.sort();
        tags.dedup_by(|a, b| a.0 == b.0);
        let mut fields: Vec<(String, FieldValue)> = Vec::new();
        for _ in 0..rng.gen_range(1..5) {
            let key = name(rng);
            if !fields.iter().any(|f| f.0 == key) {
                fields.push((key, value(rng)));
            }
        }
        let unit = precision.nanos_per_unit();
        let timestamp_ns = rng.gen_range(i64::MIN / unit..=i64::MAX / unit) * unit;
        Point { measurement, tags, fields, timestamp_ns }
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{catch_unwind, AssertUnwindSafe};

    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    const SEED: u64 = 0x11E_9807;
    const CASES: usize = 20_000;

    fn valid_body(rng: &mut ChaCha8Rng) -> (Vec<u8>, Vec<Point>, Precision) {
        let precision = Precision::ALL[rng.gen_range(0..Precision::ALL.len())];
        let points: Vec<Point> = (0..rng.gen_range(1..5)).map(|_| gen::point(rng, precision)).collect();
        let mut body = String::new();
        for p in &points {
            write_point(p, precision, &mut body);
            body.push_str(["\n", "\r\n"][rng.gen_range(0..2)]);
        }
        (body.into_bytes(), points, precision)
    }

    fn mutate(rng: &mut ChaCha8Rng, body: &mut Vec<u8>) {
        const SPICE: &[u8] = b" ,=\"\\\n\r#tfiue.-+0123456789\xff\xc3";
        for _ in 0..rng.gen_range(1..4) {
            let at = rng.gen_range(0..=body.len());
            match rng.gen_range(0..5) {
                0 if at < body.len() => body[at] = SPICE[rng.gen_range(0..SPICE.len())],
                1 => body.insert(at, SPICE[rng.gen_range(0..SPICE.len())]),
                2 if at < body.len() => {
                    body.remove(at);
                }
                3 => body.truncate(at),
                _ if at < body.len() => body[at] ^= 1 << rng.gen_range(0..8),
                _ => body.push(SPICE[rng.gen_range(0..SPICE.len())]),
            }
        }
    }

    fn random_bytes(rng: &mut ChaCha8Rng) -> Vec<u8> {
        const ALPHABET: &[u8] = b"cpu,host=a b=1i 2u 3.5e-2 \"x\\\" T false\n\r#\t\\\xe2\x82\xac\x80";
        let len = rng.gen_range(0..80);
        (0..len)
            .map(|_| if rng.gen_bool(0.9) { ALPHABET[rng.gen_range(0..ALPHABET.len())] } else { rng.gen() })
            .collect()
    }

    #[test]
    fn fuzz_smoke() {
        let mut rng = ChaCha8Rng::seed_from_u64(SEED);
        let mut valid_round_trips = 0;
        for case in 0..CASES {
            let (mut input, points, precision) = valid_body(&mut rng);
            let kind = case % 3;
            if kind == 0 {
                let batch = parse_lines(&input, precision, 0, &LineLimits::default());
                assert!(batch.errors.is_empty(), "seed {SEED:#x} case {case}: {:?}", batch.errors);
                assert_eq!(batch.points.len(), points.len(), "seed {SEED:#x} case {case}");
                for (got, want) in batch.points.iter().zip(&points) {
                    assert!(same_point(got, want), "seed {SEED:#x} case {case}: {got:?} != {want:?}");
                }
                valid_round_trips += 1;
            } else if kind == 1 {
                mutate(&mut rng, &mut input);
            } else {
                input = random_bytes(&mut rng);
            }
            let outcome = catch_unwind(AssertUnwindSafe(|| fuzz_line_protocol(&input)));
            assert!(
                outcome.is_ok(),
                "seed {SEED:#x} case {case}: fuzz_line_protocol panicked on {:?}",
                String::from_utf8_lossy(&input)
            );
        }
        assert!(valid_round_trips > CASES / 4);
    }

    #[test]
    fn fuzz_entry_accepts_edge_inputs() {
        for input in [&b""[..], b"\n", b"\\", b"a b=\"", b"#", b"a b=1 -9223372036854775808", b"\xff b=1"] {
            fuzz_line_protocol(input);
        }
        let batch = parse_lines(b"a b=1", Precision::Hours, FUZZ_DEFAULT_TIME_NS, &LineLimits::default());
        assert_eq!(batch.points[0].timestamp_ns % Precision::Hours.nanos_per_unit(), 0);
    }
}
