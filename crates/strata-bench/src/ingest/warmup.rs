//! The uncounted warm-up load (fair peers): before its counted load, every
//! system's fresh instance (each Strata variant's new engine and server,
//! each peer's new process) takes a load of the same shape into a database
//! of its own, `warmup`, as measurement `cpu_warmup`. The measurement name
//! gives new series on VictoriaMetrics, which has no databases, and a new
//! table on QuestDB, where a measurement is a table. Start-up costs (QuestDB's
//! JIT, allocators and caches, worker threads, the first files) are then
//! paid before the clock runs, and the counted load is still all new
//! inserts into a fresh database.
//!
//! The warm-up is the counted data set itself up to the `--quick` size
//! (100 hosts x 360 rows), and that size beyond. Nothing of it is counted:
//! not its time, not its rows, not its disk space (the runner takes the
//! warm-up's share out of the disk figures: `runner::run_local`,
//! `peer_run::run_peer`).

use anyhow::Context;

use super::dataset::Dataset;
use super::generator::{CpuSpec, WARMUP_MEASUREMENT};
use super::load::{load, IngestEndpoint};
use super::runner::{progress_bar, IngestOptions};

/// Database of the warm-up load (unless the counted load uses that name).
pub const WARMUP_DB: &str = "warmup";
/// Hosts of the largest warm-up (the `--quick` data set's).
pub const WARMUP_MAX_HOSTS: u32 = 100;
/// Rows per host of the largest warm-up (the `--quick` data set's).
pub const WARMUP_MAX_ROWS_PER_HOST: u64 = 360;

/// The warm-up's data: `spec` itself when it is no larger than the
/// `--quick` data set, else that size (same seed, start and interval).
pub fn warmup_spec(spec: &CpuSpec) -> CpuSpec {
    if spec.rows() <= WARMUP_MAX_HOSTS as u64 * WARMUP_MAX_ROWS_PER_HOST {
        spec.clone()
    } else {
        CpuSpec { hosts: WARMUP_MAX_HOSTS, rows_per_host: WARMUP_MAX_ROWS_PER_HOST, ..spec.clone() }
    }
}

/// The warm-up's database: [`WARMUP_DB`], or another name if the counted
/// load writes to `warmup`.
pub fn warmup_db(counted_db: &str) -> String {
    if counted_db == WARMUP_DB {
        format!("{WARMUP_DB}_2")
    } else {
        WARMUP_DB.to_string()
    }
}

/// The warm-up data set before loads of `spec` in a run (`None` when the
/// run has none).
pub fn warmup_dataset(opts: &IngestOptions, spec: &CpuSpec) -> anyhow::Result<Option<Dataset>> {
    if !opts.warmup || opts.target.is_some() {
        return Ok(None);
    }
    Dataset::generate_as(&warmup_spec(spec), opts.batch_lines, WARMUP_MEASUREMENT).map(Some)
}

/// Loads `data` into `endpoint` (its database created first) over the
/// run's connections; every request must be acknowledged. Not timed.
pub fn warm_up<E: IngestEndpoint>(
    endpoint: &E,
    data: &Dataset,
    opts: &IngestOptions,
    label: &str,
) -> anyhow::Result<()> {
    endpoint
        .prepare()
        .with_context(|| format!("{label}: preparing the warm-up in {}", endpoint.describe()))?;
    let progress = progress_bar(opts.print, data.rows(), format!("{label} warm-up"));
    load(endpoint, data, opts.connections, &progress)
        .with_context(|| format!("{label}: the warm-up load into {}", endpoint.describe()))?;
    progress.finish_and_clear();
    Ok(())
}

/// Bytes of a data directory at rest that belong to the counted load: the
/// whole directory less the warm-up's share, measured at rest where the
/// system keeps the warm-up apart (`warmup_at_rest`), else its growth
/// during the warm-up (`warmup_growth`: the size after the warm-up and its
/// flush less the size of the fresh instance).
pub fn counted_bytes_at_rest(total_at_rest: u64, warmup_at_rest: Option<u64>, warmup_growth: u64) -> u64 {
    total_at_rest.saturating_sub(warmup_at_rest.unwrap_or(warmup_growth))
}
