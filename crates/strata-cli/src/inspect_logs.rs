//! What `strata inspect` reads from the commit logs: a summary per log
//! (records, bytes, points, series, time range) and the first records, for
//! the DecLog file (its streams parsed as recovery parses them,
//! `strata_declog::parse`, from a private copy so nothing is written) and
//! for the serial logs' records (PMem pool and SSD segments).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use anyhow::Context;
use strata_declog::compress::{point_payload, points_payload, PointItem};
use strata_declog::{DecodeError, PayloadForm, Recovered, RecoveredEntry};
use strata_log::LogRecord;
use strata_pmem::{Region, RegionOffset};
use strata_series::declog::entry_key::{decode_key, decode_op, EntryOp};
use strata_series::wal::WalRecord;
use strata_series::{FieldValue, FormatError, TimestampNs};

/// Totals of one log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogSummary {
    pub records: usize,
    /// Records a checkpoint already covers (replay skips them).
    pub checkpointed: usize,
    pub payload_bytes: u64,
    pub points: u64,
    /// Per series (database and key): points and time range.
    pub series: BTreeMap<String, SeriesSpan>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeriesSpan {
    pub points: u64,
    pub min_ts: TimestampNs,
    pub max_ts: TimestampNs,
}

impl LogSummary {
    fn add_point(&mut self, series: String, ts: TimestampNs) {
        self.points += 1;
        let span = self.series.entry(series).or_insert(SeriesSpan { points: 0, min_ts: ts, max_ts: ts });
        span.points += 1;
        span.min_ts = span.min_ts.min(ts);
        span.max_ts = span.max_ts.max(ts);
    }

    /// The earliest and latest timestamp of any point (`None` without points).
    pub fn time_range(&self) -> Option<(TimestampNs, TimestampNs)> {
        let min = self.series.values().map(|s| s.min_ts).min()?;
        let max = self.series.values().map(|s| s.max_ts).max()?;
        Some((min, max))
    }

    /// One line per series: `db key: N points, ts [a, b]`.
    pub fn series_lines(&self) -> String {
        let mut out = String::new();
        for (name, s) in &self.series {
            out += &format!("  {name}: {} points, ts [{}, {}]\n", s.points, s.min_ts, s.max_ts);
        }
        out
    }
}

impl fmt::Display for LogSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} records ({} already checkpointed), {} payload bytes, {} points, {} series",
            self.records,
            self.checkpointed,
            self.payload_bytes,
            self.points,
            self.series.len()
        )?;
        match self.time_range() {
            Some((min, max)) => write!(f, ", time range [{min}, {max}]"),
            None => write!(f, ", no points"),
        }
    }
}

/// A DecLog file, parsed.
pub struct DeclogLog {
    pub file_bytes: u64,
    pub parsed: Option<Recovered>,
}

/// Parses the DecLog file at `path` from a copy in memory (read-only: a
/// torn last batch is reported, not sealed). `None` inside: a file that
/// was never formatted.
pub fn read_declog(path: &Path) -> anyhow::Result<DeclogLog> {
    let image = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let file_bytes = image.len() as u64;
    if image.len() < 8 || image[..8] == [0; 8] {
        return Ok(DeclogLog { file_bytes, parsed: None });
    }
    let region = Region::sim_from_image(image);
    let parsed = strata_declog::parse(&region, RegionOffset(0))
        .with_context(|| format!("parsing the DecLog streams of {}", path.display()))?;
    Ok(DeclogLog { file_bytes, parsed: Some(parsed) })
}

/// One entry, decoded: its series name (`db key field type`) and points.
struct DecodedEntry {
    series: String,
    points: Vec<(TimestampNs, Option<FieldValue>)>,
}

/// Why an entry's payload could not be shown.
#[derive(Debug, thiserror::Error)]
enum UndecodableEntry {
    #[error("payload: {0}")]
    Payload(#[from] DecodeError),
    #[error("series key or value: {0}")]
    Series(#[from] FormatError),
}

fn decode_entry(e: &RecoveredEntry) -> Result<DecodedEntry, UndecodableEntry> {
    let (key, items): (&[u8], Vec<PointItem<'_>>) = match e.form {
        PayloadForm::Single => {
            let p = point_payload::decode(&e.payload)?;
            (p.key, vec![PointItem { timestamp: p.timestamp, value_bits: p.value_bits, rest: p.rest }])
        }
        PayloadForm::PerKey => {
            let p = points_payload::decode(&e.payload)?;
            (p.key, p.points().collect())
        }
    };
    let k = decode_key(key)?;
    let series = format!("db {:?} {} {}", k.db, k.key, k.field_type.influx_name());
    let mut points = Vec::with_capacity(items.len());
    for PointItem { timestamp: ts, value_bits, rest } in items {
        let value = match decode_op(value_bits, rest, k.field_type)? {
            EntryOp::Write(v) => Some(v),
            EntryOp::Delete => None,
        };
        points.push((ts, value));
    }
    Ok(DecodedEntry { series, points })
}

/// The summary of a parsed DecLog (entries before `cut`, the manifest's
/// checkpoint cut per stream, count as checkpointed) and the first `max`
/// entries as lines, in transaction order.
pub fn summarize_declog(parsed: &Recovered, cut: &[u64], max: usize) -> (LogSummary, Vec<String>) {
    let mut summary = LogSummary::default();
    let mut lines = Vec::new();
    for (txn, entries) in parsed.txns() {
        for e in entries {
            summary.records += 1;
            summary.payload_bytes += e.payload.len() as u64;
            if cut.get(e.stream).is_some_and(|&c| e.pos < c) {
                summary.checkpointed += 1;
            }
            let decoded = decode_entry(e);
            if let Ok(d) = &decoded {
                for (ts, _) in &d.points {
                    summary.add_point(d.series.clone(), *ts);
                }
            }
            if lines.len() < max {
                let what = match &decoded {
                    Ok(d) => describe_points(&d.series, &d.points),
                    Err(why) => format!("undecodable payload: {why}"),
                };
                lines.push(format!(
                    "  {txn} entry {}/{} stream {} pos {} LSN {} {} bytes: {what}",
                    e.op_index + 1,
                    e.entry_count,
                    e.stream,
                    e.pos,
                    e.lsn,
                    e.payload.len()
                ));
            }
        }
    }
    (summary, lines)
}

fn describe_points(series: &str, points: &[(TimestampNs, Option<FieldValue>)]) -> String {
    let mut s = format!("{series}, {} points", points.len());
    for (ts, v) in points.iter().take(3) {
        match v {
            Some(v) => s += &format!("\n      t={ts} {v:?}"),
            None => s += &format!("\n      t={ts} delete"),
        }
    }
    if points.len() > 3 {
        s += &format!("\n      ... {} more", points.len() - 3);
    }
    s
}

/// The summary of serial-log records (the WAL records of `serial-pmem` and
/// `serial-ssd`); series are named by id (the manifest maps ids to keys).
/// Records at or below `checkpoint_lsn` (the manifest's, when it names
/// this log's protocol) count as checkpointed, as replay skips them.
pub fn summarize_wal(records: &[LogRecord], checkpoint_lsn: Option<u64>) -> LogSummary {
    let mut summary = LogSummary::default();
    for r in records {
        summary.records += 1;
        summary.payload_bytes += r.payload.len() as u64;
        if checkpoint_lsn.is_some_and(|lsn| r.lsn.0 <= lsn) {
            summary.checkpointed += 1;
        }
        if let Ok(WalRecord::Write { db, points, .. }) = WalRecord::decode(&r.payload) {
            for (id, ts, _) in &points {
                summary.add_point(format!("db {db:?} {id}"), *ts);
            }
        }
    }
    summary
}

/// One serial-log record as a line (with up to three of its points).
pub fn describe_wal_record(r: &LogRecord) -> String {
    let body = match WalRecord::decode(&r.payload) {
        Ok(WalRecord::CreateDatabase { db }) => format!("CREATE DATABASE {db}"),
        Ok(WalRecord::Write { db, new_series, points }) => {
            let mut s = format!("WRITE db={db} points={} new_series={}", points.len(), new_series.len());
            for n in new_series.iter().take(3) {
                s += &format!("\n      new {} {} {}", n.id, n.key, n.field_type.influx_name());
            }
            for (id, ts, v) in points.iter().take(3) {
                s += &format!("\n      {id} t={ts} {v:?}");
            }
            s
        }
        Ok(WalRecord::Delete { db, series, range }) => {
            format!("DELETE db={db} series={} range=[{}, {}]", series.len(), range.min_ns, range.max_ns)
        }
        Ok(WalRecord::DropMeasurement { db, measurement }) => {
            format!("DROP MEASUREMENT db={db} {measurement}")
        }
        Ok(WalRecord::DropDatabase { db }) => format!("DROP DATABASE {db}"),
        Ok(WalRecord::DropSeries { db, series }) => format!("DROP SERIES db={db} series={}", series.len()),
        Err(e) => format!("undecodable payload: {e}"),
    };
    format!("  LSN {:>12} {} {} bytes: {body}", r.lsn.0, r.txn, r.payload.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_points_series_and_the_time_range() {
        let mut s = LogSummary { records: 2, payload_bytes: 40, ..Default::default() };
        s.add_point("a".into(), 5);
        s.add_point("a".into(), -3);
        s.add_point("b".into(), 9);
        assert_eq!(s.points, 3);
        assert_eq!(s.time_range(), Some((-3, 9)));
        assert_eq!(
            s.to_string(),
            "2 records (0 already checkpointed), 40 payload bytes, 3 points, 2 series, time range [-3, 9]"
        );
        assert_eq!(s.series_lines(), "  a: 2 points, ts [-3, 5]\n  b: 1 points, ts [9, 9]\n");
        assert_eq!(LogSummary::default().time_range(), None);
    }
}
