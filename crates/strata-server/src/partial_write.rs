//! The text of a write that dropped lines (docs/http-api.md, "Partial
//! writes"): InfluxDB 1.x's `partial write: <reasons> dropped=<K>`, with each
//! reason naming its 1-based line number.

/// Most dropped lines described in one message; the rest are counted.
pub const MAX_REPORTED_LINES: usize = 100;

/// One line that was not written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DroppedLine {
    /// 1-based line number in the (decompressed) body.
    pub line: usize,
    /// Why, e.g. `unable to parse 'cpu value=': missing field value` or a
    /// `field type conflict: ...` from the store.
    pub reason: String,
}

/// What a write did with its lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// Whether any line parsed, so the store was asked to write.
    pub reached_store: bool,
    /// Points committed.
    pub points_written: usize,
    /// Lines dropped one by one (parse errors, type conflicts).
    pub dropped: Vec<DroppedLine>,
    /// Set when the store refused every parsed point at once (series limit):
    /// the reason and how many points that dropped.
    pub refused_whole: Option<(String, usize)>,
}

impl WriteReport {
    /// Lines (points) not written.
    pub fn dropped_count(&self) -> usize {
        self.dropped.len() + self.refused_whole.as_ref().map_or(0, |(_, n)| *n)
    }

    /// The error message, or `None` when every line was written.
    ///
    /// Format: `[partial write: ]<reason>[\n<reason>...] dropped=<K>` where
    /// each per-line reason ends in ` (line <N>)`, reasons are in line order,
    /// at most [`MAX_REPORTED_LINES`] are listed (then `... and <M> more
    /// lines`), and the `partial write: ` prefix is there exactly when the
    /// store was asked to write (as InfluxDB 1.x, whose bare parse error
    /// means no line parsed).
    pub fn message(&self) -> Option<String> {
        if self.dropped_count() == 0 {
            return None;
        }
        let mut reasons: Vec<String> = Vec::new();
        if let Some((reason, _)) = &self.refused_whole {
            reasons.push(reason.clone());
        }
        let mut dropped: Vec<&DroppedLine> = self.dropped.iter().collect();
        dropped.sort_by_key(|d| d.line);
        for d in dropped.iter().take(MAX_REPORTED_LINES) {
            reasons.push(format!("{} (line {})", d.reason, d.line));
        }
        if dropped.len() > MAX_REPORTED_LINES {
            reasons.push(format!("... and {} more lines", dropped.len() - MAX_REPORTED_LINES));
        }
        let prefix = if self.reached_store { "partial write: " } else { "" };
        Some(format!("{prefix}{} dropped={}", reasons.join("\n"), self.dropped_count()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(line: usize, reason: &str) -> DroppedLine {
        DroppedLine { line, reason: reason.to_string() }
    }

    #[test]
    fn nothing_dropped_is_no_message() {
        let report = WriteReport { reached_store: true, points_written: 3, ..Default::default() };
        assert_eq!(report.message(), None);
    }

    #[test]
    fn partial_write_lists_lines_in_order() {
        let report = WriteReport {
            reached_store: true,
            points_written: 1,
            dropped: vec![
                line(4, "field type conflict: x"),
                line(2, "unable to parse 'bad': missing fields"),
            ],
            refused_whole: None,
        };
        assert_eq!(
            report.message().unwrap(),
            "partial write: unable to parse 'bad': missing fields (line 2)\nfield type conflict: x (line 4) dropped=2"
        );
    }

    #[test]
    fn no_parsed_line_has_no_prefix() {
        let report = WriteReport {
            dropped: vec![line(1, "unable to parse 'x': missing fields")],
            ..Default::default()
        };
        assert_eq!(report.message().unwrap(), "unable to parse 'x': missing fields (line 1) dropped=1");
    }

    #[test]
    fn refused_whole_counts_every_point() {
        let report = WriteReport {
            reached_store: true,
            points_written: 0,
            dropped: vec![line(3, "unable to parse 'y': bad timestamp")],
            refused_whole: Some(("max-series-per-database limit exceeded: db d has 2 series".into(), 2)),
        };
        let message = report.message().unwrap();
        assert!(message.starts_with("partial write: max-series-per-database limit exceeded"), "{message}");
        assert!(message.ends_with("(line 3) dropped=3"), "{message}");
    }

    #[test]
    fn long_lists_are_cut() {
        let dropped = (1..=250).map(|n| line(n, "bad")).collect();
        let report = WriteReport { reached_store: false, points_written: 0, dropped, refused_whole: None };
        let message = report.message().unwrap();
        assert!(message.contains("bad (line 100)\n... and 150 more lines dropped=250"), "{message}");
        assert!(!message.contains("(line 101)"));
    }
}
