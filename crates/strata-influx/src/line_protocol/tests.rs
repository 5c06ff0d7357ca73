//! Tests of `parse_lines` against InfluxDB's documented examples, every
//! error kind in a mixed body, precision scaling, limits, and bodies cut at
//! every byte or holding invalid UTF-8.

use strata_series::{FieldValue, Point};

use super::fuzz::same_point;
use super::*;

const T: i64 = 1_465_839_830_100_400_200;
const DEFAULT_TIME_NS: i64 = 42;

fn parse(body: &str) -> ParsedBatch {
    parse_lines(body.as_bytes(), Precision::Nanoseconds, DEFAULT_TIME_NS, &LineLimits::default())
}

fn one(line: &str) -> Point {
    let batch = parse(line);
    assert!(batch.errors.is_empty(), "{line}: {:?}", batch.errors);
    assert_eq!(batch.points.len(), 1, "{line}");
    batch.points.into_iter().next().unwrap()
}

fn s(v: &str) -> String {
    v.to_owned()
}

fn tags(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (s(k), s(v))).collect()
}

fn point(measurement: &str, tag_pairs: &[(&str, &str)], fields: &[(&str, FieldValue)], ts: i64) -> Point {
    Point {
        measurement: s(measurement),
        tags: tags(tag_pairs),
        fields: fields.iter().map(|(k, v)| (s(k), v.clone())).collect(),
        timestamp_ns: ts,
    }
}

fn float(v: f64) -> FieldValue {
    FieldValue::Float(v)
}

fn string(v: &str) -> FieldValue {
    FieldValue::String(s(v))
}

#[test]
fn documented_examples_parse_as_influxdb_documents_them() {
    use FieldValue::{Boolean, Integer, Unsigned};
    let loc = [("location", "us-midwest")];
    let table: Vec<(&str, Point)> = vec![
        // Syntax, tag set, no tags, two tags, two fields, no timestamp.
        (
            r"weather,location=us-midwest temperature=82 1465839830100400200",
            point("weather", &loc, &[("temperature", float(82.0))], T),
        ),
        (
            r"weather temperature=82 1465839830100400200",
            point("weather", &[], &[("temperature", float(82.0))], T),
        ),
        (
            r"weather,location=us-midwest,season=summer temperature=82 1465839830100400200",
            point(
                "weather",
                &[("location", "us-midwest"), ("season", "summer")],
                &[("temperature", float(82.0))],
                T,
            ),
        ),
        (
            r"weather,location=us-midwest temperature=82,bug_concentration=98 1465839830100400200",
            point("weather", &loc, &[("temperature", float(82.0)), ("bug_concentration", float(98.0))], T),
        ),
        (
            r"weather,location=us-midwest temperature=82",
            point("weather", &loc, &[("temperature", float(82.0))], DEFAULT_TIME_NS),
        ),
        // Data types.
        (r"mymeas value=0.64", point("mymeas", &[], &[("value", float(0.64))], DEFAULT_TIME_NS)),
        (
            r"mymeas value=-1.234456e+78",
            point("mymeas", &[], &[("value", float(-1.234456e78))], DEFAULT_TIME_NS),
        ),
        (r"mymeas value=1.0", point("mymeas", &[], &[("value", float(1.0))], DEFAULT_TIME_NS)),
        (r"mymeas value=1", point("mymeas", &[], &[("value", float(1.0))], DEFAULT_TIME_NS)),
        (r"mymeas value=.5", point("mymeas", &[], &[("value", float(0.5))], DEFAULT_TIME_NS)),
        (r"mymeas value=1e3", point("mymeas", &[], &[("value", float(1000.0))], DEFAULT_TIME_NS)),
        (r"mymeas value=1i", point("mymeas", &[], &[("value", Integer(1))], DEFAULT_TIME_NS)),
        (r"mymeas value=-12i", point("mymeas", &[], &[("value", Integer(-12))], DEFAULT_TIME_NS)),
        (r"mymeas value=12u", point("mymeas", &[], &[("value", Unsigned(12))], DEFAULT_TIME_NS)),
        (
            r#"mymeas value="stringing along""#,
            point("mymeas", &[], &[("value", string("stringing along"))], DEFAULT_TIME_NS),
        ),
        (r"mymeas value=true", point("mymeas", &[], &[("value", Boolean(true))], DEFAULT_TIME_NS)),
        // Quoting: a quoted measurement keeps its quotes; "true" is a string.
        (
            r#""weather" temperature=82"#,
            point(r#""weather""#, &[], &[("temperature", float(82.0))], DEFAULT_TIME_NS),
        ),
        (
            r#"weather,location=us-midwest too_hot="true""#,
            point("weather", &loc, &[("too_hot", string("true"))], DEFAULT_TIME_NS),
        ),
        // Special characters.
        (
            r"weather,location=us\,midwest temperature=82 1465839830100400200",
            point("weather", &[("location", "us,midwest")], &[("temperature", float(82.0))], T),
        ),
        (
            r"weather,location=us-midwest temp\=rature=82 1465839830100400200",
            point("weather", &loc, &[("temp=rature", float(82.0))], T),
        ),
        (
            r"weather,location\ place=us-midwest temperature=82 1465839830100400200",
            point("weather", &[("location place", "us-midwest")], &[("temperature", float(82.0))], T),
        ),
        (
            r"wea\,ther,location=us-midwest temperature=82 1465839830100400200",
            point("wea,ther", &loc, &[("temperature", float(82.0))], T),
        ),
        (
            r"wea\ ther,location=us-midwest temperature=82 1465839830100400200",
            point("wea ther", &loc, &[("temperature", float(82.0))], T),
        ),
        (
            r#"weather,location=us-midwest temperature="too\"hot\"" 1465839830100400200"#,
            point("weather", &loc, &[("temperature", string(r#"too"hot""#))], T),
        ),
        (
            r#"weather,location=us-midwest temperature_str="too hot/cold" 1465839830100401200"#,
            point("weather", &loc, &[("temperature_str", string("too hot/cold"))], T + 1000),
        ),
        (
            r#"weather,location=us-midwest temperature_str="too hot\cold" 1465839830100401200"#,
            point("weather", &loc, &[("temperature_str", string(r"too hot\cold"))], T + 1000),
        ),
        (
            r#"weather,location=us-midwest temperature_str="too hot\\cold" 1465839830100401200"#,
            point("weather", &loc, &[("temperature_str", string(r"too hot\cold"))], T + 1000),
        ),
        (
            r#"weather,location=us-midwest temperature_str="too hot\\\cold" 1465839830100401200"#,
            point("weather", &loc, &[("temperature_str", string(r"too hot\\cold"))], T + 1000),
        ),
        (
            r#"weather,location=us-midwest temperature_str="too hot\\\\cold" 1465839830100401200"#,
            point("weather", &loc, &[("temperature_str", string(r"too hot\\cold"))], T + 1000),
        ),
        (
            r#"weather,location=us-midwest temperature_str="too hot\\\\\cold" 1465839830100401200"#,
            point("weather", &loc, &[("temperature_str", string(r"too hot\\\cold"))], T + 1000),
        ),
        // tsdb/README.md's example, escaped space in a tag value.
        (
            r#"cpu,host=server\ 01,region=uswest value=1.0,msg="all systems nominal" 1434055562000000000"#,
            point(
                "cpu",
                &[("host", "server 01"), ("region", "uswest")],
                &[("value", float(1.0)), ("msg", string("all systems nominal"))],
                1_434_055_562_000_000_000,
            ),
        ),
        // Unicode anywhere, '=' literal in a measurement, tags out of order.
        (
            r#"wéather⛅,zone=東京,a=ü temp°=1i,s="ñ ☃" -5"#,
            point(
                "wéather⛅",
                &[("a", "ü"), ("zone", "東京")],
                &[("temp°", Integer(1)), ("s", string("ñ ☃"))],
                -5,
            ),
        ),
        (r"a=b,c=d e=1", point("a=b", &[("c", "d")], &[("e", float(1.0))], DEFAULT_TIME_NS)),
    ];
    for (line, want) in table {
        let got = one(line);
        assert!(same_point(&got, &want), "{line}\n got {got:?}\nwant {want:?}");
    }
}

#[test]
fn every_boolean_spelling_is_accepted() {
    for (spelling, want) in [
        ("t", true),
        ("T", true),
        ("true", true),
        ("True", true),
        ("TRUE", true),
        ("f", false),
        ("F", false),
        ("false", false),
        ("False", false),
        ("FALSE", false),
    ] {
        let p = one(&format!("m b={spelling}"));
        assert_eq!(p.fields, [(s("b"), FieldValue::Boolean(want))], "{spelling}");
    }
}

#[test]
fn value_extremes_parse_exactly() {
    let p = one("m a=-9223372036854775808i,b=9223372036854775807i,c=18446744073709551615u,d=0u,\
         e=-0.0,f=4.9e-324,g=1.7976931348623157e308,h=2.2250738585072014e-308,i=1e-400");
    let want = [
        FieldValue::Integer(i64::MIN),
        FieldValue::Integer(i64::MAX),
        FieldValue::Unsigned(u64::MAX),
        FieldValue::Unsigned(0),
        FieldValue::Float(-0.0),
        FieldValue::Float(f64::from_bits(1)),
        FieldValue::Float(f64::MAX),
        FieldValue::Float(f64::MIN_POSITIVE),
        FieldValue::Float(0.0),
    ];
    assert_eq!(p.fields.len(), want.len());
    for ((_, got), want) in p.fields.iter().zip(&want) {
        assert!(got.same_bits(want), "{got:?} != {want:?}");
    }
}

#[test]
fn duplicate_fields_last_wins_and_tags_come_out_sorted() {
    let p = one("m,zz=1,b=2,a=3 x=1,y=2i,x=3");
    assert_eq!(p.tags, tags(&[("a", "3"), ("b", "2"), ("zz", "1")]));
    assert_eq!(p.fields, [(s("x"), float(3.0)), (s("y"), FieldValue::Integer(2))]);
}

#[test]
fn precision_scales_timestamps_but_not_the_default_time() {
    // The documented example: `precision=s`.
    let b =
        parse_lines(b"mymeas,mytag=1 myfield=90 1463683075", Precision::Seconds, 0, &LineLimits::default());
    assert_eq!(b.points[0].timestamp_ns, 1_463_683_075_000_000_000);
    for precision in Precision::ALL {
        let b = parse_lines(b"m v=1 -2\nm v=1", precision, 7, &LineLimits::default());
        assert!(b.errors.is_empty(), "{precision:?}: {:?}", b.errors);
        assert_eq!(b.points[0].timestamp_ns, -2 * precision.nanos_per_unit(), "{precision:?}");
        assert_eq!(b.points[1].timestamp_ns, 7, "{precision:?}");
    }
    let b = parse_lines(
        b"m v=1 2562047\nm v=1 2562048\nm v=1 -2562048",
        Precision::Hours,
        0,
        &LineLimits::default(),
    );
    assert_eq!(b.points.len(), 1);
    assert_eq!(b.points[0].timestamp_ns, 2_562_047 * 3_600_000_000_000);
    let reasons: Vec<_> = b.errors.iter().map(|e| (e.line, e.message.rsplit(": ").next().unwrap())).collect();
    let range = "time outside range -9223372036854775806 - 9223372036854775806";
    assert_eq!(reasons, [(2, range), (3, range)]);
    // InfluxDB's range is i64 without the two values at each end.
    let b = parse(
        "m v=1 -9223372036854775806\nm v=1 9223372036854775806\nm v=1 -9223372036854775807\n\
         m v=1 9223372036854775807\nm v=1 -9223372036854775808\nm v=1 9223372036854775808",
    );
    let times: Vec<i64> = b.points.iter().map(|p| p.timestamp_ns).collect();
    assert_eq!(times, [i64::MIN + 2, i64::MAX - 1]);
    assert_eq!(b.errors.iter().map(|e| e.line).collect::<Vec<_>>(), [3, 4, 5, 6]);
    assert!(b.errors.iter().all(|e| e.message.ends_with(range)), "{:?}", b.errors);
}

#[test]
fn blank_lines_comments_whitespace_and_crlf() {
    let body = "\n   \n# comment\n  \t# indented comment\r\n\r\n  \tcpu  v=1   5  \r\ncpu v=2 \n\n";
    let b = parse(body);
    assert!(b.errors.is_empty(), "{:?}", b.errors);
    assert_eq!(b.line_numbers, [6, 7]);
    assert_eq!(b.points[0], point("cpu", &[], &[("v", float(1.0))], 5));
    assert_eq!(b.points[1], point("cpu", &[], &[("v", float(2.0))], DEFAULT_TIME_NS));
    assert!(parse("").points.is_empty());
}

/// Bad lines of every kind, each with the reason InfluxDB-style.
const BAD_LINES: &[(&[u8], &str)] = &[
    (b"cpu", "missing fields"),
    (b"cpu,host=a", "missing fields"),
    (b"cpu   ", "missing fields"),
    (b",host=a v=1", "missing measurement"),
    (b"   ,x=y v=1", "missing measurement"),
    (b"cpu,=a v=1", "missing tag key"),
    (b"cpu, v=1", "missing tag key"),
    (b"cpu,a=1, v=1", "missing tag key"),
    (b"cpu,host v=1", "missing tag value"),
    (b"cpu,host= v=1", "missing tag value"),
    (b"cpu,host=a=b v=1", "invalid tag format"),
    (b"cpu,b=1,a=1,b=2 v=1", "duplicate tags"),
    (b"cpu,host=a\\", "bad escape: trailing backslash"),
    (b"cpu v\\", "bad escape: trailing backslash"),
    (b"cpu =1", "missing field key"),
    (b"cpu v=1,", "missing field key"),
    (b"cpu v=1,,w=2", "missing field key"),
    (b"cpu v", "missing field value"),
    (b"cpu v=", "missing field value"),
    (b"cpu v=,w=1", "missing field value"),
    (b"cpu v= 1", "missing field value"),
    (b"cpu v,w=1", "missing field value"),
    (b"cpu v=1x", "invalid number"),
    (b"cpu v=nan", "invalid number"),
    (b"cpu v=NaN", "invalid number"),
    (b"cpu v=inf", "invalid number"),
    (b"cpu v=-inf", "invalid number"),
    (b"cpu v=+1", "invalid number"),
    (b"cpu v=1.5i", "invalid number"),
    (b"cpu v=1e3i", "invalid number"),
    (b"cpu v=-", "invalid number"),
    (b"cpu v=1..2", "invalid number"),
    (b"cpu v='1'", "invalid number"),
    (b"cpu v=i", "invalid number"),
    (b"cpu v=1\\", "invalid number"),
    (b"cpu v=9223372036854775808i", "invalid integer: value out of range"),
    (b"cpu v=-9223372036854775809i", "invalid integer: value out of range"),
    (b"cpu v=-1u", "invalid unsigned: value is negative"),
    (b"cpu v=18446744073709551616u", "invalid unsigned: value out of range"),
    (b"cpu v=1e400", "invalid float: value out of range"),
    (b"cpu v=-1e309", "invalid float: value out of range"),
    (b"cpu v=tru", "invalid boolean"),
    (b"cpu v=FaLsE", "invalid boolean"),
    (b"cpu v=\"abc", "unbalanced quotes"),
    (b"cpu v=\"abc\\\"", "unbalanced quotes"),
    (b"cpu v=\"abc\\", "unbalanced quotes"),
    (b"cpu v=\"a\"b", "invalid field format"),
    (b"cpu v=1 12a", "bad timestamp"),
    (b"cpu v=1 \"123\"", "bad timestamp"),
    (b"cpu v=1 1.5", "bad timestamp"),
    (b"cpu v=1 -", "bad timestamp"),
    (b"cpu v=1 +5", "bad timestamp"),
    (b"cpu v=1 1 2", "bad timestamp: unexpected text after the timestamp"),
    (b"cpu v=1 9223372036854775808", "time outside range -9223372036854775806 - 9223372036854775806"),
    (b"cpu v=1 9223372036854775807", "time outside range -9223372036854775806 - 9223372036854775806"),
    (b"cpu time=1", "invalid field name: input field \"time\" on measurement \"cpu\" is invalid"),
    (b"cpu,time=a v=1", "invalid tag key: input tag \"time\" on measurement \"cpu\" is invalid"),
    (b"cpu,host=\xff v=1", "invalid UTF-8 at byte 9"),
    (b"cpu v=\"\xe2\x82\"", "invalid UTF-8 at byte 7"),
];

#[test]
fn every_error_kind_fails_only_its_own_line() {
    let mut body = Vec::new();
    let mut good_lines = Vec::new();
    let mut bad_lines = Vec::new();
    let mut line = 0;
    for (i, (bad, _)) in BAD_LINES.iter().enumerate() {
        line += 1;
        body.extend_from_slice(format!("good,i={i} v={i}i {i}\n").as_bytes());
        good_lines.push(line);
        line += 1;
        body.extend_from_slice(bad);
        body.extend_from_slice(if i % 2 == 0 { b"\n" } else { b"\r\n" });
        bad_lines.push(line);
    }
    body.extend_from_slice(b"good,i=last v=0i 0"); // no final newline
    good_lines.push(line + 1);

    let b = parse_lines(&body, Precision::Nanoseconds, DEFAULT_TIME_NS, &LineLimits::default());
    assert_eq!(b.line_numbers, good_lines);
    for (i, p) in b.points.iter().take(BAD_LINES.len()).enumerate() {
        assert_eq!(
            p,
            &point("good", &[("i", &i.to_string())], &[("v", FieldValue::Integer(i as i64))], i as i64)
        );
    }
    assert_eq!(b.errors.len(), BAD_LINES.len(), "{:?}", b.errors);
    for ((error, (bad, reason)), line) in b.errors.iter().zip(BAD_LINES).zip(bad_lines) {
        let quoted = String::from_utf8_lossy(bad);
        assert_eq!(error.line, line, "{quoted}");
        assert_eq!(error.message, format!("unable to parse '{quoted}': {reason}"));
        assert_eq!(error.to_string(), format!("line {line}: {}", error.message));
    }
}

#[test]
fn limits_reject_long_lines_and_many_fields() {
    let limits = LineLimits { max_line_bytes: 20, max_fields_per_line: 2 };
    let body = "m a=1,b=2 1\nm a=1,b=2,c=3\nm a=1,a=2,a=3\nm,long=xxxxxxxxxxxxx v=1\nm v=1";
    let b = parse_lines(body.as_bytes(), Precision::Nanoseconds, 0, &limits);
    assert_eq!(b.line_numbers, [1, 5]);
    let messages: Vec<_> = b.errors.iter().map(|e| (e.line, e.message.as_str())).collect();
    assert_eq!(
        messages,
        [
            (2, "unable to parse 'm a=1,b=2,c=3': too many fields (more than 2)"),
            (3, "unable to parse 'm a=1,a=2,a=3': too many fields (more than 2)"),
            (4, "unable to parse 'm,long=xxxxxxxxxxxxx v=1': line too long (24 bytes, at most 20)"),
        ]
    );
    let d = LineLimits::default();
    assert_eq!((d.max_line_bytes, d.max_fields_per_line), (1 << 20, 1000));
}

#[test]
fn error_messages_quote_at_most_100_characters() {
    let long = format!("{}é v=oops", "ü".repeat(150));
    let b = parse(&long);
    let quoted: String = long.chars().take(100).collect();
    assert_eq!(b.errors[0].message, format!("unable to parse '{quoted}': invalid number"));
    let short = parse("m v=x");
    assert_eq!(short.errors[0].message, "unable to parse 'm v=x': invalid number");
}

/// A valid body with escapes, strings, unicode and `\r\n` line ends.
fn sample_body() -> String {
    let mut body = String::from("# header comment\n");
    for i in 0..6 {
        body.push_str(&format!(
            "wé\\ ather,loc=us\\,mid{i},z=☃ temp={i}.5,n={i}i,u={i}u,ok=t,s=\"a \\\"q\\\" ü{i}\" 14658398301004002{i}0{}",
            if i % 2 == 0 { "\n" } else { "\r\n" }
        ));
    }
    body.push_str("last v=1");
    body
}

#[test]
fn a_body_cut_at_every_byte_keeps_its_complete_lines() {
    let body = sample_body();
    let full = parse(&body);
    assert!(full.errors.is_empty(), "{:?}", full.errors);
    assert_eq!(full.points.len(), 7);
    for cut in 0..=body.len() {
        let prefix = &body.as_bytes()[..cut];
        let b = parse_lines(prefix, Precision::Nanoseconds, DEFAULT_TIME_NS, &LineLimits::default());
        let complete = prefix.iter().filter(|&&c| c == b'\n').count();
        for (p, &line) in b.points.iter().zip(&b.line_numbers) {
            assert!(line <= complete + 1, "cut {cut}: line {line}");
            if line <= complete {
                let i = full.line_numbers.iter().position(|&l| l == line).unwrap();
                assert!(same_point(p, &full.points[i]), "cut {cut}: line {line} changed");
            }
        }
        let kept = b.line_numbers.iter().filter(|&&l| l <= complete).count();
        assert_eq!(kept, full.line_numbers.iter().filter(|&&l| l <= complete).count(), "cut {cut}");
        assert!(b.errors.iter().all(|e| e.line == complete + 1), "cut {cut}: {:?}", b.errors);
        assert!(b.errors.len() + b.line_numbers.iter().filter(|&&l| l > complete).count() <= 1, "cut {cut}");
    }
}

#[test]
fn a_body_cut_mid_field_reports_the_last_line() {
    let b = parse("m v=1\nm v");
    assert_eq!(b.line_numbers, [1]);
    assert_eq!(b.errors, [LineError { line: 2, message: s("unable to parse 'm v': missing field value") }]);
    let b = parse("m v=1\nm v=\"unfinished");
    assert_eq!(b.errors[0].message, "unable to parse 'm v=\"unfinished': unbalanced quotes");
}

#[test]
fn invalid_utf8_rejects_only_its_line() {
    let body = sample_body().into_bytes();
    // Line 3's tag key gets a stray continuation byte; line 5's string a
    // truncated three-byte character.
    let mut broken = Vec::new();
    for (i, line) in body.split(|&c| c == b'\n').enumerate() {
        if i > 0 {
            broken.push(b'\n');
        }
        let mut line = line.to_vec();
        if i == 2 {
            line.splice(14..14, [0x80]);
        }
        if i == 4 {
            let quote = line.iter().position(|&c| c == b'"').unwrap();
            line.splice(quote + 1..quote + 1, [0xe2, 0x82]);
        }
        broken.extend_from_slice(&line);
    }
    let full = parse_lines(&body, Precision::Nanoseconds, 0, &LineLimits::default());
    let b = parse_lines(&broken, Precision::Nanoseconds, 0, &LineLimits::default());
    assert_eq!(b.errors.iter().map(|e| e.line).collect::<Vec<_>>(), [3, 5]);
    assert!(b.errors.iter().all(|e| e.message.contains("invalid UTF-8") && e.message.contains('\u{fffd}')));
    let kept: Vec<_> = full.line_numbers.iter().copied().filter(|l| *l != 3 && *l != 5).collect();
    assert_eq!(b.line_numbers, kept);
    for (p, line) in b.points.iter().zip(&b.line_numbers) {
        let i = full.line_numbers.iter().position(|l| l == line).unwrap();
        assert_eq!(p, &full.points[i]);
    }
}

#[test]
fn written_points_parse_back_in_every_precision() {
    let p = point(
        r"we\ird,m",
        &[("a b", r"c\,d"), ("k=", "v")],
        &[("s", string("q\"\\ \r\t")), ("f", float(-0.0)), ("i", FieldValue::Integer(-1))],
        -7_200_000_000_000,
    );
    assert_eq!(check_writable(&p), Ok(()));
    for precision in Precision::ALL {
        let mut line = String::new();
        write_point(&p, precision, &mut line);
        let b = parse_lines(line.as_bytes(), precision, 0, &LineLimits::default());
        assert!(b.errors.is_empty(), "{line}: {:?}", b.errors);
        assert!(same_point(&b.points[0], &p), "{precision:?}: {line}");
    }
}

/// Parses `text` into `batch` (nanoseconds, the default time, default limits).
fn parse_into(text: &str, batch: &mut ParsedBatch) {
    parse_lines_into(text.as_bytes(), Precision::Nanoseconds, DEFAULT_TIME_NS, &LineLimits::default(), batch);
}

/// A batch parsed into again reuses its points: a shorter line after a
/// longer one keeps none of the longer one's tags or fields, and a broken
/// line in between leaves nothing of itself.
#[test]
fn a_recycled_batch_keeps_nothing_of_earlier_lines() {
    let mut batch = ParsedBatch::default();
    let first = "cpu,host=a,region=eu,rack=7 u=1,s=2,i=3i 10\nmem,z=1 free=5 20\n";
    parse_into(first, &mut batch);
    assert_eq!(batch.points.len(), 2);
    let second = "disk,host=b x=1.5 30\nbroken line\nnet y=true\n";
    parse_into(second, &mut batch);
    assert_eq!(
        batch.points,
        vec![
            point("disk", &[("host", "b")], &[("x", FieldValue::Float(1.5))], 30),
            point("net", &[], &[("y", FieldValue::Boolean(true))], DEFAULT_TIME_NS),
        ]
    );
    assert_eq!(batch.line_numbers, vec![1, 3]);
    assert_eq!(batch.errors.len(), 1);
    assert_eq!(batch.errors[0].line, 2);
    assert_eq!(batch.points, parse(second).points, "the same as a fresh parse");
    assert_eq!(batch.spare_points(), 0, "both points of the first body were parsed into again");
    batch.recycle();
    assert_eq!((batch.points.len(), batch.spare_points()), (0, 2), "recycled points are kept");
}
