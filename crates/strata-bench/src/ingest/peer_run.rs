//! One load into a peer (`--peers`): a fresh instance in a new temporary
//! directory next to Strata's data directories, the uncounted warm-up
//! ([`super::warmup`]) into another database and measurement of it, that
//! load's quiesce step and the size of the data directory after it (the
//! baseline), then the same batches over the same number of keep-alive
//! connections to its `/write`, the peer's quiesce step
//! ([`crate::peers::server`]) and the allocated size of its data directory,
//! the row count in its own query language, a clean stop and the size at
//! rest less the warm-up's share (then the directory is removed; `Drop`
//! kills the process on any error). With `--queries`, the TSBS-style
//! queries run before the stop (InfluxDB: InfluxQL, QuestDB: SQL;
//! VictoriaMetrics: none). The peer process's peak RSS ([`super::rss`]) is
//! reset after the warm-up and read after the load's quiesce step and
//! count, before the queries.

use super::dataset::Dataset;
use super::load::IngestEndpoint;
use super::queries::{run_queries, tsbs_queries};
use super::report::{load_metrics, Metrics, VariantResult};
use super::rss::RssWatch;
use super::runner::{load_counted, progress_bar, IngestOptions};
use super::warmup::{counted_bytes_at_rest, warm_up, warmup_db};
use crate::peers::{Installed, PeerEndpoint, RunningPeer};

pub(super) fn run_peer(
    installed: &Installed,
    dataset: &Dataset,
    warmup: Option<&Dataset>,
    opts: &IngestOptions,
    label: String,
) -> anyhow::Result<VariantResult> {
    let mut peer = RunningPeer::start(installed, &opts.dirs.disk_dir, &opts.db, &dataset.spec)?;
    let mut baseline_bytes = peer.empty_bytes;
    let mut warmup_endpoint: Option<PeerEndpoint> = None;
    if let Some(w) = warmup {
        let endpoint = peer.endpoint.for_warmup(&warmup_db(&opts.db), w.spec.clone(), &w.measurement);
        warm_up(&endpoint, w, opts, &label)?;
        // Its flushes, WAL apply and compactions finish before the counted load starts.
        let settled = peer.quiesce_after(&endpoint, w.rows())?;
        if !settled.settled && opts.print {
            eprintln!(
                "ingest bench: warning: {label}: the data directory of {} had not settled {:.1} s after the warm-up",
                installed.kind,
                settled.time.as_secs_f64()
            );
        }
        baseline_bytes = settled.bytes;
        warmup_endpoint = Some(endpoint);
    }
    let rss = peer.process.pid().map(RssWatch::start);
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
    // Before the queries, as for Strata (whose process runs the query client).
    let (peak_rss, rss_note) = match rss {
        Some(rss) => rss.finish(&format!("{label} ({} process)", installed.kind)),
        None => (Vec::new(), Some(format!("{label}: no process id for the peak RSS"))),
    };
    let queries = match installed.kind.query_target(&peer.endpoint.http.url) {
        Some(target) if opts.queries => {
            run_queries(&target, &opts.db, &tsbs_queries(&dataset.spec, opts.seed), opts.query_runs)
        }
        _ => Vec::new(),
    };
    let warmup_growth = baseline_bytes.saturating_sub(peer.empty_bytes);
    let at_rest = peer.stop_and_measure(warmup_endpoint.as_ref())?;
    let at_rest_bytes = counted_bytes_at_rest(at_rest.bytes, at_rest.warmup_bytes, warmup_growth);
    let mut metrics = load_metrics(&outcome);
    metrics.extend(disk_metrics(at_rest_bytes, quiesced.bytes, baseline_bytes, outcome.values()));
    metrics.push(("quiesce_s", quiesced.time.as_secs_f64()));
    metrics.extend(peak_rss);
    Ok(VariantResult {
        metrics,
        checkpoints_during_load: 0,
        counted,
        queries,
        notes: rss_note.into_iter().collect(),
    })
}

/// `disk_bytes_per_point`: the data directory at rest after the load (the
/// database closed), the warm-up's share already taken out;
/// `disk_growth_bytes_per_point`: what the running database's directory
/// grew by from before the load (after the warm-up) to after its flush.
pub(super) fn disk_metrics(
    at_rest_bytes: u64,
    running_bytes: u64,
    baseline_bytes: u64,
    points: u64,
) -> Metrics {
    let points = points.max(1) as f64;
    vec![
        ("disk_bytes_per_point", at_rest_bytes as f64 / points),
        ("disk_growth_bytes_per_point", running_bytes.saturating_sub(baseline_bytes) as f64 / points),
    ]
}
