//! One load into a peer (`--peers`): a fresh instance in a new temporary
//! directory next to Strata's data directories, the same batches over the
//! same number of keep-alive connections to its `/write`, then the peer's
//! quiesce step ([`crate::peers::server`]) and the allocated size of its
//! data directory, the row count in its own query language, a clean stop
//! and the size at rest (then the directory is removed; `Drop` kills the
//! process on any error). With `--queries`, the TSBS-style queries run
//! before the stop (InfluxDB: InfluxQL, QuestDB: SQL; VictoriaMetrics: none).

use super::generator::Dataset;
use super::load::IngestEndpoint;
use super::queries::{run_queries, tsbs_queries, Dialect};
use super::report::{load_metrics, Metrics, VariantResult};
use super::runner::{load_counted, progress_bar, IngestOptions};
use crate::peers::{Installed, PeerKind, RunningPeer};

pub(super) fn run_peer(
    installed: &Installed,
    dataset: &Dataset,
    opts: &IngestOptions,
    label: String,
) -> anyhow::Result<VariantResult> {
    let mut peer = RunningPeer::start(installed, &opts.dirs.disk_dir, &opts.db, &dataset.spec)?;
    peer.endpoint.prepare()?;
    let progress = progress_bar(opts.print, dataset.rows(), label.clone());
    let endpoint = peer.endpoint.clone();
    let (outcome, quiesced, counted) =
        load_counted(&endpoint, dataset, opts, &progress, || peer.quiesce(dataset.rows()))?;
    if !quiesced.settled && opts.print {
        eprintln!(
            "ingest bench: warning: {label}: the data directory of {} had not settled after {:.1} s; its size is the last seen",
            installed.kind,
            quiesced.time.as_secs_f64()
        );
    }
    let dialect = match installed.kind {
        PeerKind::InfluxDb => Some(Dialect::InfluxQl),
        PeerKind::QuestDb => Some(Dialect::QuestDbSql),
        PeerKind::VictoriaMetrics => None,
    };
    let queries = match dialect {
        Some(d) if opts.queries => run_queries(
            &peer.endpoint.http.url,
            &opts.db,
            d,
            &tsbs_queries(&dataset.spec, opts.seed),
            opts.query_runs,
        ),
        _ => Vec::new(),
    };
    let empty_bytes = peer.empty_bytes;
    let at_rest_bytes = peer.stop_and_measure()?;
    let mut metrics = load_metrics(&outcome);
    metrics.extend(disk_metrics(at_rest_bytes, quiesced.bytes, empty_bytes, outcome.values()));
    metrics.push(("quiesce_s", quiesced.time.as_secs_f64()));
    Ok(VariantResult { metrics, checkpoints_during_load: 0, counted, queries })
}

/// `disk_bytes_per_point`: the data directory at rest after the load (the
/// database closed); `disk_growth_bytes_per_point`: what the running
/// database's directory grew by from its start to after the load's flush.
pub(super) fn disk_metrics(at_rest_bytes: u64, running_bytes: u64, empty_bytes: u64, points: u64) -> Metrics {
    let points = points.max(1) as f64;
    vec![
        ("disk_bytes_per_point", at_rest_bytes as f64 / points),
        ("disk_growth_bytes_per_point", running_bytes.saturating_sub(empty_bytes) as f64 / points),
    ]
}
