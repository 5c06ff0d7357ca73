//! What every load of the ingest benchmark must show, and the figures it
//! hands on: its rows counted back (else a loud verification failure), each
//! query's answer equal to the first system's answer to it on the same data
//! (else a loud failure), a query a system cannot run noted (a warning, not
//! a failure); then the load's figures as (metric, value) pairs, query
//! latencies and SQL-over-InfluxQL ratios included. Shared by the rounds
//! ([`super::runner`]) and the `--scale large` loads ([`super::scale`]),
//! each with answers of its own data set ([`ReferenceAnswers`]).

use std::collections::BTreeMap;

use super::queries::{compare_answers, Answer, Language, QueryKind, QueryOutcome};
use super::report::{Counted, VariantResult};
use super::runner::Variant;

/// The first answer to each query on one data set, and whose it was.
#[derive(Default)]
pub(super) struct ReferenceAnswers(BTreeMap<QueryKind, (String, Answer)>);

impl ReferenceAnswers {
    /// Rows of each reference answer and whose it is.
    pub fn rows(&self) -> Vec<(&'static str, usize, String)> {
        self.0.iter().map(|(k, (by, a))| (k.name(), a.rows.len(), by.clone())).collect()
    }
}

/// Failures and query errors of a whole run.
#[derive(Default)]
pub(super) struct Checks {
    /// Loads that did not hold every row, or answered differently.
    pub failures: Vec<String>,
    /// Queries a system could not run.
    pub query_errors: Vec<String>,
}

impl Checks {
    /// Checks `result` of a load of `expected_rows` rows into `v` (named
    /// `label` in messages) and returns its figures.
    pub fn check(
        &mut self,
        v: &Variant,
        label: &str,
        result: &VariantResult,
        expected_rows: u64,
        answers: &mut ReferenceAnswers,
        print: bool,
    ) -> Vec<(&'static str, f64)> {
        if let Some(failure) = result.counted.failure(expected_rows) {
            // A remote target may not speak InfluxQL: only a count it gave must match.
            let query_failed = matches!(result.counted, Counted::Failed(_));
            if v.count_required() || !query_failed {
                eprintln!("ingest bench: !!!!! VERIFICATION FAILED: {label}: {failure} !!!!!");
                self.failures.push(format!("{label}: {failure}"));
            } else if print {
                eprintln!("ingest bench: warning: {label}: {failure}");
            }
        }
        let mut figures: Vec<(&'static str, f64)> = QueryKind::ALL
            .into_iter()
            .filter_map(|kind| sql_to_influxql(&result.queries, kind).map(|r| (kind.sql_ratio_metric(), r)))
            .collect();
        for q in &result.queries {
            match &q.result {
                Ok((answer, ms)) => {
                    figures.push((q.metric(), *ms));
                    match answers.0.get(&q.kind) {
                        None => {
                            answers.0.insert(q.kind, (v.name(), answer.clone()));
                        }
                        Some((by, reference)) => {
                            if let Err(diff) = compare_answers(reference, answer) {
                                let f = format!(
                                    "{label}: query {} answers differently from {by}: {diff}",
                                    q.kind.name()
                                );
                                eprintln!("ingest bench: !!!!! QUERY ANSWERS DIFFER: {f} !!!!!");
                                self.failures.push(f);
                            }
                        }
                    }
                }
                Err(e) => {
                    let f = format!("{label}: query {} failed: {e}", q.kind.name());
                    eprintln!("ingest bench: warning: {f}");
                    self.query_errors.push(f);
                }
            }
        }
        figures.extend(result.metrics.iter().copied());
        if print {
            let get = |m: &str| figures.iter().find(|(k, _)| *k == m).map_or(f64::NAN, |(_, v)| *v);
            eprintln!(
                "ingest bench: {label}: {:.0} rows/s, ack p50 {:.2} ms, p99 {:.2} ms, {:.2} disk bytes/point, peak RSS {:.0} MiB",
                get("rows_per_s"),
                get("latency_ms_p50"),
                get("latency_ms_p99"),
                get("disk_bytes_per_point"),
                get("peak_rss_mib"),
            );
            for note in &result.notes {
                eprintln!("ingest bench: note: {note}");
            }
        }
        figures
    }
}

/// One system's SQL latency for `kind` over its InfluxQL latency, when it
/// answered in both.
fn sql_to_influxql(outcomes: &[QueryOutcome], kind: QueryKind) -> Option<f64> {
    let ms = |language: Language| {
        outcomes.iter().find(|o| o.kind == kind && o.language == language)?.result.as_ref().ok().map(|r| r.1)
    };
    Some(ms(Language::Sql)? / ms(Language::InfluxQl)?)
}
