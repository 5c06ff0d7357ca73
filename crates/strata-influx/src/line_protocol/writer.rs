//! Writes a [`Point`] as one line of line protocol, escaped so that
//! [`parse_lines`](super::parse_lines) reads it back as the same point
//! whenever [`check_writable`] accepts it.

use std::fmt::Write as _;

use strata_series::{FieldValue, Point};

use super::escapes::{escape_name, escape_string, NameKind};
use super::Precision;

/// Appends `p` to `out` as one line (no trailing newline): escaped
/// measurement, tags in the order given, fields in the order given, and the
/// timestamp divided by the precision's unit (truncated toward zero, as
/// InfluxDB's clients do). Floats are written in Rust's shortest round-trip
/// form (`1.0`, `1e300`, `-0.0`); integers get `i`, unsigned `u`, booleans
/// `true`/`false`, strings are quoted with `\"` and `\\` escaped.
///
/// Points that [`check_writable`] rejects (a name ending in a backslash, a
/// newline, NaN, ...) are still written, but will not parse back to
/// themselves.
pub fn write_point(p: &Point, precision: Precision, out: &mut String) {
    escape_name(&p.measurement, NameKind::Measurement, out);
    for (key, value) in &p.tags {
        out.push(',');
        escape_name(key, NameKind::Key, out);
        out.push('=');
        escape_name(value, NameKind::Key, out);
    }
    for (i, (key, value)) in p.fields.iter().enumerate() {
        out.push(if i == 0 { ' ' } else { ',' });
        escape_name(key, NameKind::Key, out);
        out.push('=');
        write_field_value(value, out);
    }
    // Writing into a String cannot fail.
    let _ = write!(out, " {}", precision.nanos_to_units(p.timestamp_ns));
}

fn write_field_value(value: &FieldValue, out: &mut String) {
    // Writing into a String cannot fail.
    let _ = match value {
        FieldValue::Float(v) => write!(out, "{v:?}"),
        FieldValue::Integer(v) => write!(out, "{v}i"),
        FieldValue::Unsigned(v) => write!(out, "{v}u"),
        FieldValue::Boolean(v) => write!(out, "{v}"),
        FieldValue::String(v) => {
            escape_string(v, out);
            Ok(())
        }
    };
}

/// Whether line protocol can express `p` so that it parses back to the same
/// point; `Err` names the first obstacle. Line protocol cannot express: an
/// empty measurement, tag key, tag value or field key; a point without
/// fields; tags not sorted by key or with a repeated key; repeated field
/// keys; a newline anywhere; a name ending in a backslash (it would escape
/// the delimiter after it); a measurement starting with `#` (a comment) or
/// a tab (leading whitespace is skipped); NaN or infinite floats.
pub fn check_writable(p: &Point) -> Result<(), &'static str> {
    check_name(&p.measurement, "measurement")?;
    if p.measurement.starts_with('#') {
        return Err("measurement starts with '#'");
    }
    if p.measurement.starts_with('\t') {
        return Err("measurement starts with a tab");
    }
    for (key, value) in &p.tags {
        check_name(key, "tag key")?;
        check_name(value, "tag value")?;
    }
    if p.tags.windows(2).any(|w| w[0].0 >= w[1].0) {
        return Err("tags are not sorted by key or repeat a key");
    }
    if p.fields.is_empty() {
        return Err("no fields");
    }
    for (i, (key, value)) in p.fields.iter().enumerate() {
        check_name(key, "field key")?;
        if p.fields[..i].iter().any(|f| f.0 == *key) {
            return Err("repeated field key");
        }
        match value {
            FieldValue::Float(v) if !v.is_finite() => return Err("float field is NaN or infinite"),
            FieldValue::String(s) if s.contains('\n') => return Err("string field contains a newline"),
            _ => {}
        }
    }
    Ok(())
}

fn check_name(name: &str, what: &'static str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err(match what {
            "measurement" => "empty measurement",
            "tag key" => "empty tag key",
            "tag value" => "empty tag value",
            _ => "empty field key",
        });
    }
    if name.ends_with('\\') {
        return Err("a name ends in a backslash");
    }
    if name.contains('\n') {
        return Err("a name contains a newline");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point() -> Point {
        Point {
            measurement: "my measurement,x".to_owned(),
            tags: vec![("a=b".to_owned(), "c d".to_owned()), ("t".to_owned(), r"v\,w".to_owned())],
            fields: vec![
                ("f".to_owned(), FieldValue::Float(1.0)),
                ("g".to_owned(), FieldValue::Float(-0.0)),
                ("i".to_owned(), FieldValue::Integer(i64::MIN)),
                ("u".to_owned(), FieldValue::Unsigned(u64::MAX)),
                ("b".to_owned(), FieldValue::Boolean(false)),
                ("s".to_owned(), FieldValue::String(r#"say "hi" \o/"#.to_owned())),
            ],
            timestamp_ns: 1_500_000_000,
        }
    }

    #[test]
    fn writes_escaped_line_with_typed_values() {
        let mut out = String::new();
        write_point(&point(), Precision::Nanoseconds, &mut out);
        assert_eq!(
            out,
            r#"my\ measurement\,x,a\=b=c\ d,t=v\\,w f=1.0,g=-0.0,i=-9223372036854775808i,u=18446744073709551615u,b=false,s="say \"hi\" \\o/" 1500000000"#
        );
        assert_eq!(check_writable(&point()), Ok(()));
    }

    #[test]
    fn timestamp_is_divided_by_the_precision() {
        let mut out = String::new();
        write_point(&point(), Precision::Seconds, &mut out);
        assert!(out.ends_with(" 1"), "{out}");
        out.clear();
        write_point(&point(), Precision::Milliseconds, &mut out);
        assert!(out.ends_with(" 1500"), "{out}");
    }

    #[test]
    fn unwritable_points_are_named() {
        type Breakage = fn(&mut Point);
        let cases: [(Breakage, &str); 9] = [
            (|p| p.measurement.clear(), "empty measurement"),
            (|p| p.measurement = "#cpu".to_owned(), "measurement starts with '#'"),
            (|p| p.tags[0].1.push('\\'), "a name ends in a backslash"),
            (|p| p.tags.swap(0, 1), "tags are not sorted by key or repeat a key"),
            (|p| p.fields.clear(), "no fields"),
            (|p| p.fields[1].0 = "f".to_owned(), "repeated field key"),
            (|p| p.fields[0].1 = FieldValue::Float(f64::NAN), "float field is NaN or infinite"),
            (|p| p.fields[5].1 = FieldValue::String("a\nb".to_owned()), "string field contains a newline"),
            (|p| p.fields[2].0 = "x\ny".to_owned(), "a name contains a newline"),
        ];
        for (break_it, reason) in cases {
            let mut p = point();
            break_it(&mut p);
            assert_eq!(check_writable(&p), Err(reason));
        }
    }
}
