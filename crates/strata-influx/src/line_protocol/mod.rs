//! InfluxDB 1.x line protocol (DESIGN.md section 4): the parser of `/write`
//! bodies into [`Point`]s and the writer of points as lines.
//!
//! `measurement[,tag=value...] field=value[,field=value...] [timestamp]`,
//! one point per line. The rules this module implements, where InfluxDB
//! leaves a choice or this module differs:
//!
//! - Lines end at every `\n`; a trailing `\r` is stripped. A raw newline
//!   therefore always ends a line, even inside a quoted string (InfluxDB 1.x
//!   would keep it there): an unterminated string fails only its own line
//!   instead of swallowing the rest of the body, and a string field value
//!   cannot contain a newline.
//! - Leading spaces and tabs are skipped; lines that are then empty or start
//!   with `#` are skipped. Sections are separated by one or more spaces;
//!   trailing spaces are ignored, any other trailing text is a bad timestamp.
//! - Escapes (`escapes.rs`): measurement `\,` `\ `; tag keys, tag values and
//!   field keys `\,` `\=` `\ `; strings `\"` `\\`. Any other backslash is an
//!   ordinary character; a backslash ending the line is a bad escape.
//! - Values: floats `-?(d+(.d*)?|.d+)([eE][+-]?d+)?` (finite only: no NaN or
//!   infinity, overflow is an error), integers `-?d+i` (i64), unsigned
//!   `d+u` (u64), booleans `t T true True TRUE f F false False FALSE`,
//!   strings in double quotes.
//! - Duplicate field keys: the last value wins, at the first one's position.
//!   Duplicate tag keys: the line is rejected. Tags come out sorted by key.
//! - The timestamp is an i64 in the batch's precision, scaled to
//!   nanoseconds with an overflow check (the full i64 range is allowed); a
//!   line without one gets the batch's default time, which is already in
//!   nanoseconds and is not scaled.
//! - Errors are per line and never abort the batch: `unable to parse
//!   '<line, first 100 chars>': <reason>`, with the 1-based line number.
//! - [`write_point`] output parses back to the same point whenever
//!   [`check_writable`] accepts it; line protocol cannot express names
//!   ending in a backslash, newlines, NaN or infinity, a measurement starting
//!   with `#` or a tab, empty names, unsorted or repeated keys.

pub(crate) mod escapes;
#[cfg(any(test, feature = "fuzz"))]
mod fuzz;
mod parser;
mod precision;
mod writer;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

#[cfg(any(test, feature = "fuzz"))]
pub use fuzz::fuzz_line_protocol;
pub use precision::Precision;
pub use writer::{check_writable, write_point};

use strata_series::Point;

use parser::{parse_line_into, LineContext, Reason};

/// Bounds on one line, so a hostile body cannot make one point huge.
#[derive(Clone, Debug)]
pub struct LineLimits {
    /// Longest accepted line in bytes, without its `\n` and `\r`.
    pub max_line_bytes: usize,
    /// Most `key=value` pairs in one field set (repeated keys count each time).
    pub max_fields_per_line: usize,
}

impl Default for LineLimits {
    /// 1 MiB per line (room for InfluxDB's 64 KiB string field values; the
    /// server's default too) and 1000 fields per line.
    fn default() -> Self {
        LineLimits { max_line_bytes: 1 << 20, max_fields_per_line: 1000 }
    }
}

/// One rejected line.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct LineError {
    /// 1-based line number in the body.
    pub line: usize,
    /// `unable to parse '<line, first 100 chars>': <reason>`.
    pub message: String,
}

/// The outcome of parsing one body: the points of the good lines and an
/// error for each bad one.
#[derive(Clone, Debug, Default)]
pub struct ParsedBatch {
    pub points: Vec<Point>,
    /// 1-based line number of each point, parallel to `points`.
    pub line_numbers: Vec<usize>,
    pub errors: Vec<LineError>,
    /// Points of an earlier parse, whose strings and vectors the next
    /// parse reuses ([`ParsedBatch::recycle`]).
    spare: Vec<Point>,
}

impl ParsedBatch {
    /// Empties the batch, keeping its points to be parsed into again: a
    /// server parsing request after request then allocates nearly nothing
    /// per line (the same few names, the same room).
    pub fn recycle(&mut self) {
        self.spare.append(&mut self.points);
        self.line_numbers.clear();
        self.errors.clear();
    }

    /// Points kept for reuse.
    pub fn spare_points(&self) -> usize {
        self.spare.len()
    }
}

/// Characters of the offending line quoted in an error message.
const QUOTED_LINE_CHARS: usize = 100;

/// Parses a line protocol body. Never panics and never stops early: each bad
/// line becomes a [`LineError`] and the other lines still parse.
pub fn parse_lines(
    body: &[u8],
    precision: Precision,
    default_time_ns: i64,
    limits: &LineLimits,
) -> ParsedBatch {
    let mut batch = ParsedBatch::default();
    parse_lines_into(body, precision, default_time_ns, limits, &mut batch);
    batch
}

/// [`parse_lines`] into `batch` (recycled first), so a server can keep the
/// vectors and points of one request for the next: a request's vector of
/// points is megabytes, a fresh one faults in fresh pages, and each fresh
/// point allocates every name of its line.
pub fn parse_lines_into(
    body: &[u8],
    precision: Precision,
    default_time_ns: i64,
    limits: &LineLimits,
    batch: &mut ParsedBatch,
) {
    let ctx = LineContext { precision, default_time_ns, max_fields_per_line: limits.max_fields_per_line };
    batch.recycle();
    // Sized once for every line (grown by doubling, each step a copy).
    let lines = body.iter().filter(|&&b| b == b'\n').count() + 1;
    batch.points.reserve(lines);
    batch.line_numbers.reserve(lines);
    let mut rest = body;
    let mut line_number = 0;
    while !rest.is_empty() {
        line_number += 1;
        let (raw, after) = match rest.iter().position(|&b| b == b'\n') {
            Some(newline) => (&rest[..newline], &rest[newline + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = after;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        let start = line.iter().position(|&b| b != b' ' && b != b'\t').unwrap_or(line.len());
        if start == line.len() || line[start] == b'#' {
            continue;
        }
        let mut point = batch.spare.pop().unwrap_or_else(empty_point);
        match parse_one(line, start, &ctx, limits, &mut point) {
            Ok(()) => {
                batch.points.push(point);
                batch.line_numbers.push(line_number);
            }
            Err(reason) => {
                batch.spare.push(point);
                batch.errors.push(LineError { line: line_number, message: message(line, &reason) })
            }
        }
    }
}

fn empty_point() -> Point {
    Point { measurement: String::new(), tags: Vec::new(), fields: Vec::new(), timestamp_ns: 0 }
}

fn parse_one(
    line: &[u8],
    start: usize,
    ctx: &LineContext,
    limits: &LineLimits,
    point: &mut Point,
) -> Result<(), Reason> {
    if line.len() > limits.max_line_bytes {
        return Err(format!("line too long ({} bytes, at most {})", line.len(), limits.max_line_bytes).into());
    }
    let text = std::str::from_utf8(line).map_err(|e| format!("invalid UTF-8 at byte {}", e.valid_up_to()))?;
    parse_line_into(text, start, ctx, point)
}

/// InfluxDB's error text, quoting at most the first 100 characters of the
/// line (invalid UTF-8 shown as U+FFFD).
fn message(line: &[u8], reason: &str) -> String {
    // 100 characters take at most 400 bytes.
    let head = &line[..line.len().min(4 * QUOTED_LINE_CHARS)];
    let head = String::from_utf8_lossy(head);
    let quoted = match head.char_indices().nth(QUOTED_LINE_CHARS) {
        Some((cut, _)) => &head[..cut],
        None => &head[..],
    };
    format!("unable to parse '{quoted}': {reason}")
}
