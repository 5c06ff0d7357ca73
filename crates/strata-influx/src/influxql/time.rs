//! Time values of InfluxQL: duration literals (`90m`, `1h30m`, `10ns`),
//! time strings in WHERE clauses (RFC3339, `2006-01-02 15:04:05`,
//! `2006-01-02`), and the RFC3339 form InfluxDB 1.x prints in responses
//! (nanoseconds with trailing zeros trimmed, `Z` for UTC).

pub const NS_PER_US: i64 = 1_000;
pub const NS_PER_MS: i64 = 1_000_000;
pub const NS_PER_S: i64 = 1_000_000_000;
pub const NS_PER_M: i64 = 60 * NS_PER_S;
pub const NS_PER_H: i64 = 60 * NS_PER_M;
pub const NS_PER_D: i64 = 24 * NS_PER_H;
pub const NS_PER_W: i64 = 7 * NS_PER_D;

/// Units, largest first, as `FormatDuration` in InfluxQL picks them.
const UNITS_LARGEST_FIRST: [(&str, i64); 8] = [
    ("w", NS_PER_W),
    ("d", NS_PER_D),
    ("h", NS_PER_H),
    ("m", NS_PER_M),
    ("s", NS_PER_S),
    ("ms", NS_PER_MS),
    ("u", NS_PER_US),
    ("ns", 1),
];

/// Parses a duration literal such as `15m`, `1h30m`, `100ms`, `5µ`: one or
/// more `<digits><unit>` pairs, units ns, u, µ, ms, s, m, h, d, w.
/// Returns nanoseconds; `negative` negates before range checks so that
/// the most negative value is representable.
pub fn parse_duration(text: &str, negative: bool) -> Result<i64, DurationError> {
    let chars: Vec<char> = text.chars().collect();
    let invalid = || DurationError::Invalid(text.to_string());
    if chars.len() < 2 {
        return Err(invalid());
    }
    let mut total_ns: i128 = 0;
    let mut i = 0;
    while i < chars.len() {
        let start = i;
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
        if i == start || i >= chars.len() {
            return Err(invalid());
        }
        let digits: String = chars[start..i].iter().collect();
        let measure: i128 = digits.parse().map_err(|_| invalid())?;
        let (unit_ns, unit_len) = match chars[i] {
            'n' if chars.get(i + 1) == Some(&'s') => (1, 2),
            'u' | 'µ' => (NS_PER_US, 1),
            'm' if chars.get(i + 1) == Some(&'s') => (NS_PER_MS, 2),
            'm' => (NS_PER_M, 1),
            's' => (NS_PER_S, 1),
            'h' => (NS_PER_H, 1),
            'd' => (NS_PER_D, 1),
            'w' => (NS_PER_W, 1),
            _ => return Err(invalid()),
        };
        i += unit_len;
        total_ns = measure
            .checked_mul(unit_ns as i128)
            .and_then(|v| total_ns.checked_add(v))
            .filter(|v| *v <= i64::MAX as i128 + 1)
            .ok_or_else(|| DurationError::Overflow(text.to_string()))?;
    }
    let signed = if negative { -total_ns } else { total_ns };
    i64::try_from(signed).map_err(|_| DurationError::Overflow(text.to_string()))
}

/// Why a duration literal is not one (the literal's text inside).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("invalid duration {0}")]
    Invalid(String),
    #[error("overflowed duration {0}")]
    Overflow(String),
}

/// Formats nanoseconds with the largest unit that divides them exactly
/// (`5400000000000` -> `90m`, `0` -> `0s`); the result parses back to the
/// same value.
pub fn format_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".to_string();
    }
    for (unit, unit_ns) in UNITS_LARGEST_FIRST {
        if ns % unit_ns == 0 {
            return format!("{}{unit}", ns / unit_ns);
        }
    }
    format!("{ns}ns")
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day) of a day count since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// A small cursor over the bytes of a time string.
struct TimeText<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl TimeText<'_> {
    fn digits(&mut self, count: usize) -> Option<i64> {
        let end = self.at.checked_add(count)?;
        let slice = self.bytes.get(self.at..end)?;
        if !slice.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.at = end;
        Some(slice.iter().fold(0i64, |acc, b| acc * 10 + i64::from(b - b'0')))
    }

    /// `separator`, then `count` digits.
    fn digits_after(&mut self, separator: u8, count: usize) -> Option<i64> {
        if !self.eat(separator) {
            return None;
        }
        self.digits(count)
    }

    fn eat(&mut self, byte: u8) -> bool {
        if self.bytes.get(self.at) == Some(&byte) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn done(&self) -> bool {
        self.at == self.bytes.len()
    }
}

/// Parses a time string of a WHERE clause into nanoseconds since the epoch:
/// RFC3339 with optional fraction and a `Z` or `±hh:mm` zone,
/// `2006-01-02 15:04:05[.fraction]` (UTC), or `2006-01-02` (midnight UTC).
pub fn parse_time(text: &str) -> Option<i64> {
    let mut t = TimeText { bytes: text.as_bytes(), at: 0 };
    let year = t.digits(4)?;
    let month = t.digits_after(b'-', 2)?;
    let day = t.digits_after(b'-', 2)?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let mut seconds = days_from_civil(year, month, day) * 86_400;
    let mut nanos: i64 = 0;
    if !t.done() {
        let rfc3339 = if t.eat(b'T') {
            true
        } else if t.eat(b' ') {
            false
        } else {
            return None;
        };
        let hour = t.digits(2)?;
        let minute = t.digits_after(b':', 2)?;
        let second = t.digits_after(b':', 2)?;
        if hour > 23 || minute > 59 || second > 59 {
            return None;
        }
        seconds += hour * 3600 + minute * 60 + second;
        if t.eat(b'.') {
            let start = t.at;
            let mut scale = 100_000_000;
            while let Some(d) = t.digits(1) {
                nanos += d * scale;
                scale /= 10;
                if t.at - start > 9 {
                    return None;
                }
            }
            if t.at == start {
                return None;
            }
        }
        // RFC3339 needs a zone: `Z` or `±hh:mm`.
        if rfc3339 && !(t.eat(b'Z') || t.eat(b'z')) {
            let sign = if t.eat(b'+') {
                1
            } else if t.eat(b'-') {
                -1
            } else {
                return None;
            };
            let zone_hours = t.digits(2)?;
            let zone_minutes = t.digits_after(b':', 2)?;
            if zone_hours > 23 || zone_minutes > 59 {
                return None;
            }
            seconds -= sign * (zone_hours * 3600 + zone_minutes * 60);
        }
        if !t.done() {
            return None;
        }
    }
    i64::try_from(i128::from(seconds) * i128::from(NS_PER_S) + i128::from(nanos)).ok()
}

/// Formats nanoseconds since the epoch like Go's `time.RFC3339Nano` in UTC:
/// `2020-01-01T00:00:00Z`, `2020-01-01T00:00:00.5Z`.
pub fn format_rfc3339(ns: i64) -> String {
    let seconds = ns.div_euclid(NS_PER_S);
    let nanos = ns.rem_euclid(NS_PER_S);
    let days = seconds.div_euclid(86_400);
    let second_of_day = seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let mut out = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    );
    if nanos != 0 {
        let fraction = format!("{nanos:09}");
        out.push('.');
        out.push_str(fraction.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_every_unit_and_combinations() {
        assert_eq!(parse_duration("10ns", false), Ok(10));
        assert_eq!(parse_duration("3u", false), Ok(3_000));
        assert_eq!(parse_duration("3µ", false), Ok(3_000));
        assert_eq!(parse_duration("7ms", false), Ok(7 * NS_PER_MS));
        assert_eq!(parse_duration("2s", false), Ok(2 * NS_PER_S));
        assert_eq!(parse_duration("90m", false), Ok(90 * NS_PER_M));
        assert_eq!(parse_duration("1h30m", false), Ok(90 * NS_PER_M));
        assert_eq!(parse_duration("2d", false), Ok(2 * NS_PER_D));
        assert_eq!(parse_duration("1w", false), Ok(NS_PER_W));
        assert_eq!(parse_duration("1h", true), Ok(-NS_PER_H));
        assert!(parse_duration("1x", false).is_err());
        assert!(parse_duration("1", false).is_err());
        assert!(parse_duration("h1", false).is_err());
        assert_eq!(
            parse_duration("99999999999999w", false),
            Err(DurationError::Overflow("99999999999999w".into()))
        );
        assert_eq!(parse_duration("9223372036854775808ns", true), Ok(i64::MIN));
        assert!(parse_duration("9223372036854775808ns", false).is_err());
    }

    #[test]
    fn durations_format_with_the_largest_exact_unit_and_round_trip() {
        assert_eq!(format_duration(90 * NS_PER_M), "90m");
        assert_eq!(format_duration(NS_PER_W), "1w");
        assert_eq!(format_duration(1500 * NS_PER_MS), "1500ms");
        assert_eq!(format_duration(0), "0s");
        assert_eq!(format_duration(-NS_PER_H), "-1h");
        for ns in [1, 999, 1_000, 61 * NS_PER_S, i64::MAX, i64::MIN + 1, -7 * NS_PER_D] {
            let text = format_duration(ns);
            let (negative, body) = match text.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, text.as_str()),
            };
            assert_eq!(parse_duration(body, negative), Ok(ns), "{text}");
        }
    }

    #[test]
    fn time_strings_parse_in_the_three_influx_forms() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_time("2020-01-01T00:00:00Z"), Some(1_577_836_800 * NS_PER_S));
        assert_eq!(parse_time("2020-01-01T00:00:00.5Z"), Some(1_577_836_800 * NS_PER_S + 500_000_000));
        assert_eq!(parse_time("2020-01-01T01:00:00+01:00"), Some(1_577_836_800 * NS_PER_S));
        assert_eq!(parse_time("2020-01-01 00:00:01"), Some(1_577_836_801 * NS_PER_S));
        assert_eq!(parse_time("2020-01-01"), Some(1_577_836_800 * NS_PER_S));
        assert_eq!(parse_time("1969-12-31T23:59:59.999999999Z"), Some(-1));
        assert_eq!(parse_time("2020-02-30"), None);
        assert_eq!(parse_time("2020-01-01T00:00:00"), None);
        assert_eq!(parse_time("2020-01-01T00:00:00.Z"), None);
        assert_eq!(parse_time("2020-01-01T00:00:00.1234567890Z"), None);
        assert_eq!(parse_time("now"), None);
    }

    #[test]
    fn rfc3339_output_trims_trailing_zeros_like_go() {
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(1_577_836_800 * NS_PER_S + 500_000_000), "2020-01-01T00:00:00.5Z");
        assert_eq!(format_rfc3339(1), "1970-01-01T00:00:00.000000001Z");
        assert_eq!(format_rfc3339(-1), "1969-12-31T23:59:59.999999999Z");
        assert_eq!(format_rfc3339(i64::MAX), "2262-04-11T23:47:16.854775807Z");
        assert_eq!(format_rfc3339(i64::MIN), "1677-09-21T00:12:43.145224192Z");
        for ns in [0, 1, -1, 1_577_836_800_123_456_789, i64::MAX, i64::MIN] {
            assert_eq!(parse_time(&format_rfc3339(ns)), Some(ns));
        }
    }
}
