//! Parses one line of line protocol (already split off its body, `\r`
//! stripped, checked for UTF-8 and length) into a [`Point`]: measurement,
//! tag set, field set with its value types, optional timestamp. Scans bytes
//! once and allocates only the output strings.

use std::borrow::Cow;

use strata_series::{FieldValue, Point};

use super::escapes::{scan_name, scan_string, unescape_name_into, unescape_string, NameKind};
use super::Precision;

/// Why a line was rejected (the text after `unable to parse '...': `).
pub(crate) type Reason = Cow<'static, str>;

/// What a line is parsed with.
#[derive(Copy, Clone, Debug)]
pub(crate) struct LineContext {
    pub precision: Precision,
    pub default_time_ns: i64,
    pub max_fields_per_line: usize,
}

/// Parses `line`, whose measurement starts at byte `start` (leading
/// whitespace already skipped).
#[cfg(test)]
pub(crate) fn parse_line(line: &str, start: usize, ctx: &LineContext) -> Result<Point, Reason> {
    let mut point =
        Point { measurement: String::new(), tags: Vec::new(), fields: Vec::new(), timestamp_ns: 0 };
    parse_line_into(line, start, ctx, &mut point)?;
    Ok(point)
}

/// [`parse_line`] into `point`, reusing the room of its strings and
/// vectors (a server parses millions of lines of the same few names).
/// Every part of `point` is overwritten on success; on an error it holds
/// a mix of the line's and its earlier contents, to be parsed into again.
pub(crate) fn parse_line_into(
    line: &str,
    start: usize,
    ctx: &LineContext,
    point: &mut Point,
) -> Result<(), Reason> {
    let b = line.as_bytes();

    let mut pos = scan_nonempty_name_into(
        line,
        start,
        NameKind::Measurement,
        "missing measurement",
        &mut point.measurement,
    )?;

    if b.get(pos) == Some(&b',') {
        pos = parse_tags(line, pos + 1, &mut point.tags)?;
    } else {
        point.tags.clear();
    }
    // Here `pos` is at a space or the end of the line.
    pos = skip_spaces(b, pos);
    if pos == b.len() {
        return Err("missing fields".into());
    }

    pos = parse_fields(line, pos, ctx.max_fields_per_line, &mut point.fields)?;
    point.timestamp_ns = parse_timestamp(b, pos, ctx)?;

    sort_tags(&mut point.tags)?;
    dedup_fields_last_wins(&mut point.fields);
    reject_time_keys(&point.measurement, &point.tags, &point.fields)
}

/// Scans the name of kind `kind` that starts at `start` into `out`
/// (emptied first); returns its end, or `missing` when it is empty.
fn scan_nonempty_name_into(
    line: &str,
    start: usize,
    kind: NameKind,
    missing: &'static str,
    out: &mut String,
) -> Result<usize, Reason> {
    let scanned = scan_name(line.as_bytes(), start, kind)?;
    if scanned.end == start {
        return Err(missing.into());
    }
    unescape_name_into(&line[start..scanned.end], kind, scanned.escaped, out);
    Ok(scanned.end)
}

/// The slot for the `n`-th entry of `items`, reusing one left by an
/// earlier line (its strings keep their room) or adding one.
fn slot<T>(items: &mut Vec<T>, n: usize, empty: impl FnOnce() -> T) -> &mut T {
    if n == items.len() {
        items.push(empty());
    }
    &mut items[n]
}

fn skip_spaces(b: &[u8], mut pos: usize) -> usize {
    while b.get(pos) == Some(&b' ') {
        pos += 1;
    }
    pos
}

/// Parses `key=value[,key=value...]` starting at `pos` (just after the comma
/// that follows the measurement) into `tags` (reusing its entries, the
/// extra ones dropped); returns the position of the space after it.
fn parse_tags(line: &str, mut pos: usize, tags: &mut Vec<(String, String)>) -> Result<usize, Reason> {
    let b = line.as_bytes();
    let mut n = 0;
    loop {
        let (key, value) = slot(tags, n, Default::default);
        let key_end = scan_nonempty_name_into(line, pos, NameKind::Key, "missing tag key", key)?;
        if b.get(key_end) != Some(&b'=') {
            return Err("missing tag value".into());
        }
        let value_end =
            scan_nonempty_name_into(line, key_end + 1, NameKind::Key, "missing tag value", value)?;
        match b.get(value_end) {
            Some(b'=') => return Err("invalid tag format".into()),
            None => return Err("missing fields".into()),
            _ => {}
        }
        n += 1;
        pos = value_end;
        if b[pos] == b' ' {
            tags.truncate(n);
            return Ok(pos);
        }
        pos += 1; // the comma before the next tag
    }
}

/// Parses the field set starting at `pos` into `fields` (reusing its
/// entries' names, the extra ones dropped); returns the position after it
/// (a space or the end of the line).
fn parse_fields(
    line: &str,
    mut pos: usize,
    max_fields: usize,
    fields: &mut Vec<(String, FieldValue)>,
) -> Result<usize, Reason> {
    let b = line.as_bytes();
    let mut n = 0;
    loop {
        if n == max_fields {
            // One more name follows: over the limit if it is a field at all.
            let mut name = String::new();
            let key_end = scan_nonempty_name_into(line, pos, NameKind::Key, "missing field key", &mut name)?;
            if b.get(key_end) != Some(&b'=') {
                return Err("missing field value".into());
            }
            return Err(format!("too many fields (more than {max_fields})").into());
        }
        let (name, value) = slot(fields, n, || (String::new(), FieldValue::Boolean(false)));
        let key_end = scan_nonempty_name_into(line, pos, NameKind::Key, "missing field key", name)?;
        if b.get(key_end) != Some(&b'=') {
            return Err("missing field value".into());
        }
        let end;
        (*value, end) = parse_field_value(line, key_end + 1)?;
        n += 1;
        match b.get(end) {
            None | Some(b' ') => {
                fields.truncate(n);
                return Ok(end);
            }
            Some(b',') => pos = end + 1,
            Some(_) => return Err("invalid field format".into()),
        }
    }
}

/// Parses the field value starting at `start`; returns it and the position
/// just after it.
fn parse_field_value(line: &str, start: usize) -> Result<(FieldValue, usize), Reason> {
    let b = line.as_bytes();
    match b.get(start) {
        None | Some(b',' | b' ') => Err("missing field value".into()),
        Some(b'"') => {
            let (close, escaped) = scan_string(b, start + 1).ok_or("unbalanced quotes")?;
            let value = unescape_string(&line[start + 1..close], escaped);
            Ok((FieldValue::String(value), close + 1))
        }
        Some(&first) => {
            let mut end = start;
            while end < b.len() && b[end] != b',' && b[end] != b' ' {
                end += 1;
            }
            let token = &b[start..end];
            let value = match first {
                b't' | b'T' | b'f' | b'F' => parse_boolean(token)?,
                _ => parse_number(token)?,
            };
            Ok((value, end))
        }
    }
}

fn parse_boolean(token: &[u8]) -> Result<FieldValue, Reason> {
    match token {
        b"t" | b"T" | b"true" | b"True" | b"TRUE" => Ok(FieldValue::Boolean(true)),
        b"f" | b"F" | b"false" | b"False" | b"FALSE" => Ok(FieldValue::Boolean(false)),
        _ => Err("invalid boolean".into()),
    }
}

/// Integer `-?[0-9]+i`, unsigned `[0-9]+u`, or float
/// `-?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?` (finite).
fn parse_number(token: &[u8]) -> Result<FieldValue, Reason> {
    match token.split_last() {
        Some((b'i', digits)) => parse_i64(digits).map(FieldValue::Integer),
        Some((b'u', digits)) => parse_u64(digits).map(FieldValue::Unsigned),
        _ => parse_f64(token).map(FieldValue::Float),
    }
}

fn parse_i64(text: &[u8]) -> Result<i64, Reason> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err("invalid number".into());
    }
    let mut acc: i64 = 0;
    for &d in digits {
        let d = i64::from(d - b'0');
        let next =
            acc.checked_mul(10).and_then(|v| if negative { v.checked_sub(d) } else { v.checked_add(d) });
        acc = next.ok_or("invalid integer: value out of range")?;
    }
    Ok(acc)
}

fn parse_u64(digits: &[u8]) -> Result<u64, Reason> {
    if digits.first() == Some(&b'-') {
        return Err("invalid unsigned: value is negative".into());
    }
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err("invalid number".into());
    }
    let mut acc: u64 = 0;
    for &d in digits {
        let next = acc.checked_mul(10).and_then(|v| v.checked_add(u64::from(d - b'0')));
        acc = next.ok_or("invalid unsigned: value out of range")?;
    }
    Ok(acc)
}

fn parse_f64(token: &[u8]) -> Result<f64, Reason> {
    if !is_float_syntax(token) {
        return Err("invalid number".into());
    }
    // Only ASCII passed the syntax check.
    let text = std::str::from_utf8(token).map_err(|_| "invalid number")?;
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err("invalid float: value out of range".into()),
        Err(_) => Err("invalid number".into()),
    }
}

/// `-?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?`: InfluxDB's float
/// syntax (no `+` sign, no `nan` or `inf`).
fn is_float_syntax(token: &[u8]) -> bool {
    let mut i = usize::from(token.first() == Some(&b'-'));
    let int_digits = count_digits(&token[i..]);
    i += int_digits;
    let mut frac_digits = 0;
    if token.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = count_digits(&token[i..]);
        i += frac_digits;
    }
    if int_digits + frac_digits == 0 {
        return false;
    }
    if matches!(token.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(token.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp_digits = count_digits(&token[i..]);
        if exp_digits == 0 {
            return false;
        }
        i += exp_digits;
    }
    i == token.len()
}

fn count_digits(b: &[u8]) -> usize {
    b.iter().take_while(|c| c.is_ascii_digit()).count()
}

/// Parses the optional timestamp after the field set (`pos` is at a space or
/// the end); trailing spaces are allowed, anything else after it is not.
fn parse_timestamp(b: &[u8], pos: usize, ctx: &LineContext) -> Result<i64, Reason> {
    let start = skip_spaces(b, pos);
    let mut end = start;
    while end < b.len() && b[end] != b' ' {
        end += 1;
    }
    if skip_spaces(b, end) != b.len() {
        return Err("bad timestamp: unexpected text after the timestamp".into());
    }
    if start == end {
        return Ok(ctx.default_time_ns);
    }
    let units = match parse_i64(&b[start..end]) {
        Ok(units) => units,
        Err(_) if is_integer_syntax(&b[start..end]) => return Err(TIME_OUTSIDE_RANGE.into()),
        Err(_) => return Err("bad timestamp".into()),
    };
    match ctx.precision.units_to_nanos(units) {
        Some(ns) if (MIN_NANO_TIME..=MAX_NANO_TIME).contains(&ns) => Ok(ns),
        _ => Err(TIME_OUTSIDE_RANGE.into()),
    }
}

/// InfluxDB's range of timestamps (`models.MinNanoTime`, `MaxNanoTime`):
/// the two values at each end of i64 are reserved.
pub const MIN_NANO_TIME: i64 = i64::MIN + 2;
pub const MAX_NANO_TIME: i64 = i64::MAX - 1;
const TIME_OUTSIDE_RANGE: &str = "time outside range -9223372036854775806 - 9223372036854775806";

fn is_integer_syntax(b: &[u8]) -> bool {
    let digits = b.strip_prefix(b"-").unwrap_or(b);
    !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
}

/// `time` names the timestamp column in every query, so InfluxDB refuses it
/// as a tag key or field key (with these messages).
fn reject_time_keys(
    measurement: &str,
    tags: &[(String, String)],
    fields: &[(String, FieldValue)],
) -> Result<(), Reason> {
    if tags.iter().any(|(k, _)| k == "time") {
        return Err(format!(
            "invalid tag key: input tag \"time\" on measurement \"{measurement}\" is invalid"
        )
        .into());
    }
    if fields.iter().any(|(k, _)| k == "time") {
        return Err(format!(
            "invalid field name: input field \"time\" on measurement \"{measurement}\" is invalid"
        )
        .into());
    }
    Ok(())
}

/// Sorts tags by key (byte order, as InfluxDB) and rejects repeated keys.
fn sort_tags(tags: &mut [(String, String)]) -> Result<(), Reason> {
    if !tags.windows(2).all(|w| w[0].0 < w[1].0) {
        tags.sort_by(|a, b| a.0.cmp(&b.0));
        if tags.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err("duplicate tags".into());
        }
    }
    Ok(())
}

/// Fields with the same key collapse into one, at the first one's position
/// with the last one's value (InfluxDB: the last value wins).
fn dedup_fields_last_wins(fields: &mut Vec<(String, FieldValue)>) {
    const QUADRATIC_MAX: usize = 16;
    if fields.len() <= QUADRATIC_MAX {
        let mut i = 1;
        while i < fields.len() {
            match fields[..i].iter().position(|f| f.0 == fields[i].0) {
                Some(first) => {
                    let (_, value) = fields.remove(i);
                    fields[first].1 = value;
                }
                None => i += 1,
            }
        }
        return;
    }
    let mut order: Vec<usize> = (0..fields.len()).collect();
    order.sort_by(|&a, &b| fields[a].0.cmp(&fields[b].0).then(a.cmp(&b)));
    let mut keep = vec![true; fields.len()];
    let mut swaps = Vec::new();
    for group in order.chunk_by(|&a, &b| fields[a].0 == fields[b].0) {
        if let [first, .., last] = *group {
            swaps.push((first, last));
            for &later in &group[1..] {
                keep[later] = false;
            }
        }
    }
    for (first, last) in swaps {
        fields.swap(first, last);
    }
    let mut index = 0;
    fields.retain(|_| {
        index += 1;
        keep[index - 1]
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> LineContext {
        LineContext { precision: Precision::Nanoseconds, default_time_ns: 7, max_fields_per_line: 1000 }
    }

    #[test]
    fn float_syntax_follows_influxdb() {
        for ok in ["1", "-1.5", "1e3", "1E3", "1e+3", "1e-3", ".5", "-.5", "5.", "0", "-0", "007"] {
            assert!(is_float_syntax(ok.as_bytes()), "{ok}");
        }
        for bad in
            ["", "-", ".", "+1", "1e", "e3", "1..2", "1.2.3", "nan", "inf", "-inf", "1e3.5", "0x10", "1_0"]
        {
            assert!(!is_float_syntax(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn integers_are_range_checked() {
        assert_eq!(parse_i64(b"-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775807"), Ok(i64::MAX));
        assert!(parse_i64(b"9223372036854775808").is_err());
        assert!(parse_i64(b"-9223372036854775809").is_err());
        assert_eq!(parse_u64(b"18446744073709551615"), Ok(u64::MAX));
        assert!(parse_u64(b"18446744073709551616").is_err());
        assert!(parse_u64(b"-1").is_err());
    }

    #[test]
    fn many_duplicate_fields_keep_first_position_and_last_value() {
        let mut fields: Vec<(String, FieldValue)> =
            (0..40).map(|i| (format!("k{}", i % 20), FieldValue::Integer(i))).collect();
        dedup_fields_last_wins(&mut fields);
        assert_eq!(fields.len(), 20);
        for (i, (key, value)) in fields.iter().enumerate() {
            assert_eq!(key, &format!("k{i}"));
            assert_eq!(value, &FieldValue::Integer(i as i64 + 20));
        }
        let mut small = vec![
            ("a".to_owned(), FieldValue::Integer(1)),
            ("b".to_owned(), FieldValue::Integer(2)),
            ("a".to_owned(), FieldValue::Integer(3)),
        ];
        dedup_fields_last_wins(&mut small);
        assert_eq!(
            small,
            [("a".to_owned(), FieldValue::Integer(3)), ("b".to_owned(), FieldValue::Integer(2))]
        );
    }

    #[test]
    fn a_line_parses_into_sorted_tags_and_typed_fields() {
        let p = parse_line("  cpu,z=1,a=2 f=1,i=-2i,u=3u,b=T,s=\"x y\" 99  ", 2, &ctx()).unwrap();
        assert_eq!(p.measurement, "cpu");
        assert_eq!(p.tags, [("a".to_owned(), "2".to_owned()), ("z".to_owned(), "1".to_owned())]);
        assert_eq!(
            p.fields,
            [
                ("f".to_owned(), FieldValue::Float(1.0)),
                ("i".to_owned(), FieldValue::Integer(-2)),
                ("u".to_owned(), FieldValue::Unsigned(3)),
                ("b".to_owned(), FieldValue::Boolean(true)),
                ("s".to_owned(), FieldValue::String("x y".to_owned())),
            ]
        );
        assert_eq!(p.timestamp_ns, 99);
        assert_eq!(parse_line("cpu f=1", 0, &ctx()).unwrap().timestamp_ns, 7);
    }
}
