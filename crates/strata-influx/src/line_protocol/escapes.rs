//! Backslash escapes of line protocol, both ways, following InfluxDB 1.x
//! (`models/points.go`):
//!
//! - measurement: `\,` and `\ `;
//! - tag keys, tag values, field keys: `\,`, `\=` and `\ `;
//! - string field values (between double quotes): `\"` and `\\`.
//!
//! A backslash before any other character is an ordinary character, and so
//! is `\\` outside string values (InfluxDB 1.x has no escape for the
//! backslash in names). The writer therefore escapes only the special
//! characters; the one string it cannot express is a name ending in a
//! backslash (that backslash would escape the delimiter after it), so the
//! parser never produces one and rejects a backslash at the end of a line.

/// What kind of name a byte run is, which decides its special characters.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum NameKind {
    /// Special: `,` and space.
    Measurement,
    /// Tag keys, tag values and field keys. Special: `,`, `=` and space.
    Key,
}

/// Bytes that stop the fast scan of a name: its special characters and the
/// backslash.
const MEASUREMENT_STOPS: [bool; 256] = stops(b", \\");
const KEY_STOPS: [bool; 256] = stops(b",= \\");

const fn stops(bytes: &[u8]) -> [bool; 256] {
    let mut table = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        table[bytes[i] as usize] = true;
        i += 1;
    }
    table
}

impl NameKind {
    fn stops(self) -> &'static [bool; 256] {
        match self {
            NameKind::Measurement => &MEASUREMENT_STOPS,
            NameKind::Key => &KEY_STOPS,
        }
    }

    /// Whether `b` is one of this kind's special characters.
    pub(crate) fn is_special(self, b: u8) -> bool {
        b != b'\\' && self.stops()[b as usize]
    }
}

/// The reason given for a backslash that ends a line outside a string.
pub(crate) const TRAILING_BACKSLASH: &str = "bad escape: trailing backslash";

/// A scanned name: it ends at `end` (exclusive), the first unescaped special
/// character or the end of the line, and `escaped` says whether it holds an
/// escape pair to remove.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct ScannedName {
    pub end: usize,
    pub escaped: bool,
}

/// Scans the name of kind `kind` that starts at `start` in `line`.
/// Fails only on a backslash that is the last byte of the line.
pub(crate) fn scan_name(line: &[u8], start: usize, kind: NameKind) -> Result<ScannedName, &'static str> {
    let stops = kind.stops();
    let mut i = start;
    let mut escaped = false;
    loop {
        while i < line.len() && !stops[line[i] as usize] {
            i += 1;
        }
        match line.get(i) {
            None => return Ok(ScannedName { end: i, escaped }),
            Some(b'\\') => match line.get(i + 1) {
                None => return Err(TRAILING_BACKSLASH),
                Some(&next) if kind.is_special(next) => {
                    escaped = true;
                    i += 2;
                }
                Some(_) => i += 1,
            },
            Some(_) => return Ok(ScannedName { end: i, escaped }),
        }
    }
}

/// The value of a scanned name `raw` (its escape pairs removed) into `out`
/// (emptied first), reusing its room.
pub(crate) fn unescape_name_into(raw: &str, kind: NameKind, escaped: bool, out: &mut String) {
    unescape_into(raw, escaped, |b| kind.is_special(b), out)
}

/// Appends `name` escaped as a name of kind `kind`.
pub(crate) fn escape_name(name: &str, kind: NameKind, out: &mut String) {
    escape_into(name, out, |b| kind.is_special(b));
}

/// The special characters of string field values.
fn is_string_special(b: u8) -> bool {
    b == b'"' || b == b'\\'
}

/// Scans a string field value whose opening quote is just before `start`:
/// returns the index of the closing quote and whether the content holds
/// escape pairs, or `None` when the line ends first (unbalanced quotes).
pub(crate) fn scan_string(line: &[u8], start: usize) -> Option<(usize, bool)> {
    let mut i = start;
    let mut escaped = false;
    loop {
        while i < line.len() && !is_string_special(line[i]) {
            i += 1;
        }
        match line.get(i)? {
            b'"' => return Some((i, escaped)),
            _ => {
                if line.get(i + 1).is_some_and(|&next| is_string_special(next)) {
                    escaped = true;
                    i += 2;
                } else {
                    i += 1;
                }
            }
        }
    }
}

/// The value of scanned string content `raw` (`\"` and `\\` unescaped).
pub(crate) fn unescape_string(raw: &str, escaped: bool) -> String {
    unescape(raw, escaped, is_string_special)
}

/// Appends `value` as a quoted string field value.
pub(crate) fn escape_string(value: &str, out: &mut String) {
    out.push('"');
    escape_into(value, out, is_string_special);
    out.push('"');
}

/// `raw` without the backslash of each escape pair: a backslash followed by
/// a byte `is_escapable` accepts (always ASCII). `escaped` false says the
/// scan found no pair, so `raw` is copied as is.
fn unescape(raw: &str, escaped: bool, is_escapable: impl Fn(u8) -> bool) -> String {
    let mut out = String::with_capacity(raw.len());
    unescape_into(raw, escaped, is_escapable, &mut out);
    out
}

/// [`unescape`] into `out` (emptied first).
fn unescape_into(raw: &str, escaped: bool, is_escapable: impl Fn(u8) -> bool, out: &mut String) {
    out.clear();
    if !escaped {
        out.push_str(raw);
        return;
    }
    let bytes = raw.as_bytes();
    let mut from = 0;
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'\\' && is_escapable(bytes[i + 1]) {
            // Both bytes are ASCII, so `i` and `i + 1` are char boundaries.
            out.push_str(&raw[from..i]);
            from = i + 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    out.push_str(&raw[from..]);
}

/// Appends `text` with a backslash before each byte `needs_escape` accepts
/// (always ASCII, so every split is at a char boundary).
fn escape_into(text: &str, out: &mut String, needs_escape: impl Fn(u8) -> bool) {
    let mut from = 0;
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if needs_escape(b) {
            out.push_str(&text[from..i]);
            out.push('\\');
            from = i;
        }
    }
    out.push_str(&text[from..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(raw: &str, kind: NameKind) -> (String, usize) {
        let scanned = scan_name(raw.as_bytes(), 0, kind).unwrap();
        let mut out = String::from("stale");
        unescape_name_into(&raw[..scanned.end], kind, scanned.escaped, &mut out);
        (out, scanned.end)
    }

    #[test]
    fn measurement_escapes_comma_and_space_only() {
        assert_eq!(name(r"cpu\,x\ y z", NameKind::Measurement), ("cpu,x y".to_owned(), 9));
        assert_eq!(name(r"a\=b=c,t", NameKind::Measurement), (r"a\=b=c".to_owned(), 6));
        assert_eq!(name(r"a\\b ", NameKind::Measurement), (r"a\\b".to_owned(), 4));
        assert_eq!(name(r"a\\,b ", NameKind::Measurement), (r"a\,b".to_owned(), 5));
    }

    #[test]
    fn keys_escape_comma_equals_and_space() {
        assert_eq!(name(r"k\=1\,2\ 3=v", NameKind::Key), ("k=1,2 3".to_owned(), 10));
        assert_eq!(name(r"a\xb,", NameKind::Key), (r"a\xb".to_owned(), 4));
        assert_eq!(name("häß lich", NameKind::Key), ("häß".to_owned(), 5));
    }

    #[test]
    fn backslash_at_end_of_line_is_a_bad_escape() {
        assert_eq!(scan_name(br"cpu\", 0, NameKind::Measurement), Err(TRAILING_BACKSLASH));
        assert_eq!(scan_name(br"k\\", 0, NameKind::Key), Err(TRAILING_BACKSLASH));
    }

    #[test]
    fn names_escape_and_unescape_to_themselves() {
        for kind in [NameKind::Measurement, NameKind::Key] {
            for original in ["plain", "a b,c=d", r"x\,y", r"\ \\ \=", "ü, ß=", "=", r"\a"] {
                let mut written = String::new();
                escape_name(original, kind, &mut written);
                written.push(' ');
                assert_eq!(name(&written, kind).0, original, "{kind:?} {written:?}");
            }
        }
    }

    #[test]
    fn strings_unescape_quote_and_backslash_only() {
        let line = br#"a\"b\\c\nd" rest"#;
        assert_eq!(scan_string(line, 0), Some((10, true)));
        let raw = std::str::from_utf8(&line[..10]).unwrap();
        assert_eq!(unescape_string(raw, true), r#"a"b\c\nd"#);
        assert_eq!(scan_string(br#"abc\""#, 0), None);
        assert_eq!(scan_string(br"abc\", 0), None);
        for original in ["", r#"\"#, r#"""#, r#"x\"y\\z"#, "sp ace,=ü"] {
            let mut written = String::new();
            escape_string(original, &mut written);
            let (end, escaped) = scan_string(written.as_bytes(), 1).unwrap();
            assert_eq!(end, written.len() - 1);
            assert_eq!(unescape_string(&written[1..end], escaped), original);
        }
    }
}
