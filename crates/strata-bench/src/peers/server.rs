//! A peer as the ingest benchmark uses it: [`PeerEndpoint`] writes the same
//! line protocol batches to its `/write` (InfluxDB v1 style, all three peers
//! accept `POST /write?db=..&precision=n`) and counts rows in the peer's own
//! language ([`super::count`]); [`RunningPeer`] starts a fresh instance in a
//! new temporary directory and defines the quiesce step after a load:
//!
//! - InfluxDB: wait until the cache was snapshotted to TSM files (the WAL
//!   segments are gone; `cache-snapshot-write-cold-duration` is 1 s);
//! - VictoriaMetrics: `GET /internal/force_flush` (its in-memory buffers to
//!   disk parts);
//! - QuestDB: wait until `select count() from cpu` sees every row (the WAL
//!   was applied to the table);
//!
//! then, for every peer, wait until the allocated size of the data
//! directory held still for 1.5 s (4 polls 0.5 s apart, at most 30 s).
//! That size, less the size before the load, is the running growth;
//! [`RunningPeer::stop_and_measure`] then stops the peer cleanly and measures
//! the directory at rest (QuestDB, for one, preallocates 16 MiB per column
//! file while running and truncates on shutdown), and with it the part the
//! uncounted warm-up left where the peer keeps it apart
//! ([`warmup_bytes_at_rest`]).
//!
//! The warm-up ([`PeerEndpoint::for_warmup`]) writes to another database
//! and measurement on the same instance: InfluxDB gets a database of its
//! own, QuestDB a table of its own (a table per measurement), and
//! VictoriaMetrics, which has no databases (the `db` argument becomes a
//! label), new metric names (`cpu_warmup_*`), so the counted load still
//! creates every one of its series and the counts see only its rows.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::config::{influxdb_launch, questdb_launch, victoriametrics_launch, Launch};
use super::count::{
    count_in_prometheus_response, count_in_questdb_response, questdb_count_sql_of, questdb_exec_path,
    victoriametrics_count_path,
};
use super::disk::{allocated_bytes, wait_until_stable, Settled};
use super::install::Installed;
use super::kind::PeerKind;
use super::process::{free_port, PeerProcess};
use crate::ingest::dataset::Batch;
use crate::ingest::generator::{CpuSpec, MEASUREMENT};
use crate::ingest::http_client::{HttpConnection, HttpUrl};
use crate::ingest::http_loader::HttpTarget;
use crate::ingest::load::{count_in_influx_response, count_query_of, IngestEndpoint};

/// Attempts to start a peer (another free port each time: a port picked
/// free may be taken before the peer binds it).
const START_ATTEMPTS: u32 = 3;
const SETTLE_POLL: Duration = Duration::from_millis(500);
const SETTLE_REPEATS: u32 = 4;
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait for a peer-specific flush condition (snapshot, WAL apply)
/// after a load of up to `FLUSH_TIMEOUT_ROWS_PER_S` x 90 s rows...
const FLUSH_TIMEOUT: Duration = Duration::from_secs(90);
/// ... and a second per this many rows for larger loads (`--scale large`:
/// 8.64 M rows, 432 s).
const FLUSH_TIMEOUT_ROWS_PER_S: u64 = 20_000;

/// How long the quiesce step waits for a peer's flush condition after a
/// load of `rows` rows.
pub fn flush_timeout(rows: u64) -> Duration {
    FLUSH_TIMEOUT.max(Duration::from_secs(rows / FLUSH_TIMEOUT_ROWS_PER_S))
}
/// InfluxDB's WAL directory counts as snapshotted below this many bytes of segments.
const INFLUX_WAL_EMPTY_BYTES: u64 = 64 << 10;

/// Writes and counts for one peer at one URL.
#[derive(Clone, Debug)]
pub struct PeerEndpoint {
    pub kind: PeerKind,
    pub http: HttpTarget,
    /// The data set loaded (VictoriaMetrics' count needs its time range).
    pub spec: CpuSpec,
    /// The measurement its lines name (the QuestDB table, the
    /// VictoriaMetrics metric prefix).
    pub measurement: String,
}

impl PeerEndpoint {
    pub fn new(kind: PeerKind, url: HttpUrl, db: &str, spec: CpuSpec) -> PeerEndpoint {
        PeerEndpoint { kind, http: HttpTarget::new(url, db), spec, measurement: MEASUREMENT.to_string() }
    }

    /// The same peer, writing `spec`'s rows as `measurement` into `db`:
    /// where the warm-up goes (module doc).
    pub fn for_warmup(&self, db: &str, spec: CpuSpec, measurement: &str) -> PeerEndpoint {
        PeerEndpoint {
            kind: self.kind,
            http: HttpTarget::new(self.http.url.clone(), db),
            spec,
            measurement: measurement.to_string(),
        }
    }

    /// `GET path` answered 2xx, as JSON.
    fn get_json(&self, path: &str) -> anyhow::Result<serde_json::Value> {
        let mut c = HttpConnection::connect(&self.http.url)?;
        let r = c.get(path)?;
        // QuestDB answers a failed query with 400 and a JSON error: keep its message.
        let v: Option<serde_json::Value> = serde_json::from_slice(&r.body).ok();
        match v {
            Some(v) if (200..300).contains(&r.status) || v.get("error").is_some() => Ok(v),
            _ => anyhow::bail!("GET {path}: HTTP {}: {}", r.status, r.body_text()),
        }
    }

    /// QuestDB: runs `sql` through `/exec`; its error if it failed.
    fn questdb_exec(&self, sql: &str) -> anyhow::Result<serde_json::Value> {
        let v = self.get_json(&questdb_exec_path(sql))?;
        if let Some(e) = v.get("error") {
            anyhow::bail!("QuestDB `{sql}` failed: {e}");
        }
        Ok(v)
    }

    /// QuestDB: the `wal_tables()` row of this endpoint's table as
    /// `column=value` pairs (`Null` before the table exists).
    fn questdb_wal_table(&self) -> anyhow::Result<String> {
        let v =
            self.questdb_exec(&format!("select * from wal_tables() where name = '{}'", self.measurement))?;
        let names: Vec<&str> = v["columns"]
            .as_array()
            .context("no columns in the wal_tables() answer")?
            .iter()
            .map(|c| c["name"].as_str().unwrap_or("?"))
            .collect();
        let row = &v["dataset"][0];
        Ok(names.iter().enumerate().map(|(i, n)| format!("{n}={}", row[i])).collect::<Vec<_>>().join(" "))
    }

    /// QuestDB: whether the apply job suspended this endpoint's table.
    fn questdb_table_suspended(&self) -> anyhow::Result<bool> {
        Ok(self.questdb_wal_table()?.contains("suspended=true"))
    }

    /// VictoriaMetrics: makes buffered samples searchable and writes them to disk.
    pub fn force_flush(&self) -> anyhow::Result<()> {
        if self.kind == PeerKind::VictoriaMetrics {
            let mut c = HttpConnection::connect(&self.http.url)?;
            let r = c.get("/internal/force_flush")?;
            anyhow::ensure!(r.status == 200, "force_flush: HTTP {}: {}", r.status, r.body_text());
        }
        Ok(())
    }
}

impl IngestEndpoint for PeerEndpoint {
    type Connection = HttpConnection;

    fn describe(&self) -> String {
        format!("{} at {}", self.kind, self.http.url)
    }

    fn prepare(&self) -> anyhow::Result<()> {
        match self.kind {
            // InfluxDB needs the database; the others create what they need on the first write.
            PeerKind::InfluxDb => self.http.prepare(),
            PeerKind::VictoriaMetrics | PeerKind::QuestDb => Ok(()),
        }
    }

    fn connect(&self) -> anyhow::Result<HttpConnection> {
        self.http.connect()
    }

    fn write_batch(&self, connection: &mut HttpConnection, batch: &Batch) -> anyhow::Result<()> {
        self.http.write_batch(connection, batch)
    }

    fn count_rows(&self) -> anyhow::Result<u64> {
        let m = &self.measurement;
        match self.kind {
            PeerKind::InfluxDb => count_in_influx_response(&self.http.query(&count_query_of(m))?),
            PeerKind::VictoriaMetrics => {
                self.force_flush()?;
                count_in_prometheus_response(&self.get_json(&victoriametrics_count_path(&self.spec, m))?)
            }
            PeerKind::QuestDb => {
                count_in_questdb_response(&self.get_json(&questdb_exec_path(&questdb_count_sql_of(m)))?)
            }
        }
    }
}

/// A fresh peer instance in its own temporary directory.
pub struct RunningPeer {
    pub endpoint: PeerEndpoint,
    pub process: PeerProcess,
    /// Allocated bytes of the data directory once it answered (before any write).
    pub empty_bytes: u64,
    /// How long it took to answer its health endpoint.
    pub start_time: Duration,
}

/// What the quiesce step found.
#[derive(Clone, Copy, Debug)]
pub struct Quiesced {
    pub bytes: u64,
    /// From the end of the load until the size held still.
    pub time: Duration,
    /// Whether the flush condition and the size both settled in time.
    pub settled: bool,
}

fn launch_for(installed: &Installed, root: &Path) -> anyhow::Result<Launch> {
    let port = free_port()?;
    Ok(match installed.kind {
        PeerKind::InfluxDb => influxdb_launch(&installed.program, root, port, free_port()?),
        PeerKind::VictoriaMetrics => victoriametrics_launch(&installed.program, root, port),
        PeerKind::QuestDb => {
            let jar = installed.jar.as_deref().context("QuestDB without its jar")?;
            questdb_launch(&installed.program, jar, root, port)
        }
    })
}

impl RunningPeer {
    /// Starts `installed` in a new directory under `parent` and waits until it answers.
    pub fn start(
        installed: &Installed,
        parent: &Path,
        db: &str,
        spec: &CpuSpec,
    ) -> anyhow::Result<RunningPeer> {
        let name = installed.kind.name();
        let mut last_error = None;
        for _ in 0..START_ATTEMPTS {
            let root = tempfile::Builder::new()
                .prefix(&format!("strata-peer-{name}-"))
                .tempdir_in(parent)
                .with_context(|| format!("creating a directory for {name} in {}", parent.display()))?;
            let launch = launch_for(installed, root.path())?;
            let started = Instant::now();
            match PeerProcess::start(name, root, &launch) {
                Ok(process) => {
                    let endpoint = PeerEndpoint::new(installed.kind, process.url.clone(), db, spec.clone());
                    let empty_bytes = allocated_bytes(&process.data_dir)?;
                    return Ok(RunningPeer { endpoint, process, empty_bytes, start_time: started.elapsed() });
                }
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.expect("at least one attempt").context(format!("starting {name}")))
    }

    /// The quiesce step of the module doc; `expected_rows` is what QuestDB waits to see.
    pub fn quiesce(&mut self, expected_rows: u64) -> anyhow::Result<Quiesced> {
        let endpoint = self.endpoint.clone();
        self.quiesce_after(&endpoint, expected_rows)
    }

    /// The quiesce step after a load through `endpoint` (the warm-up's, or
    /// [`RunningPeer::endpoint`]).
    pub fn quiesce_after(&mut self, endpoint: &PeerEndpoint, expected_rows: u64) -> anyhow::Result<Quiesced> {
        let started = Instant::now();
        let mut settled = true;
        let flush_timeout = flush_timeout(expected_rows);
        match endpoint.kind {
            PeerKind::InfluxDb => {
                let wal = self.process.root().join("wal");
                settled &= wait_for(flush_timeout, || Ok(wal_segment_bytes(&wal)? < INFLUX_WAL_EMPTY_BYTES))?;
            }
            PeerKind::VictoriaMetrics => endpoint.force_flush()?,
            PeerKind::QuestDb => {
                let sees_every_row = || Ok(endpoint.count_rows().ok() == Some(expected_rows));
                let mut applied = wait_for(flush_timeout, sees_every_row)?;
                // A WAL table whose apply job failed stays suspended until resumed:
                // resume it once (and say so on stderr) rather than measure a table
                // that never shows its rows.
                if !applied && endpoint.questdb_table_suspended()? {
                    eprintln!(
                        "QuestDB suspended {}; resuming it: {}",
                        endpoint.measurement,
                        self.diagnosis(endpoint)
                    );
                    endpoint.questdb_exec(&format!("alter table {} resume wal", endpoint.measurement))?;
                    applied = wait_for(flush_timeout, sees_every_row)?;
                }
                settled &= applied;
            }
        }
        self.process.check_alive()?;
        let data_dir = self.process.data_dir.clone();
        let Settled { bytes, stable, .. } =
            wait_until_stable(|| allocated_bytes(&data_dir), SETTLE_POLL, SETTLE_REPEATS, SETTLE_TIMEOUT)?;
        Ok(Quiesced { bytes, time: started.elapsed(), settled: settled && stable })
    }

    /// What the peer shows of `endpoint`'s table, for a message when it did
    /// not settle: the count (or why it failed), QuestDB's `wal_tables()` row
    /// of it, and the tail of the peer's log.
    pub fn diagnosis(&self, endpoint: &PeerEndpoint) -> String {
        let count = endpoint.count_rows().map_or_else(|e| format!("failed: {e:#}"), |n| n.to_string());
        let wal = match endpoint.kind {
            PeerKind::QuestDb => match endpoint.questdb_wal_table() {
                Ok(row) => format!("; wal_tables(): {row}"),
                Err(e) => format!("; wal_tables() failed: {e:#}"),
            },
            PeerKind::InfluxDb | PeerKind::VictoriaMetrics => String::new(),
        };
        format!("count {count}{wal}; log tail:\n{}", self.process.log_tail(30))
    }

    pub fn stop(self) -> anyhow::Result<()> {
        self.process.stop()
    }

    /// Stops the peer cleanly (SIGTERM; peers truncate preallocated files
    /// and flush on shutdown) and returns the allocated bytes of its data
    /// directory at rest, and of the part `warmup` wrote where the peer
    /// keeps it apart ([`warmup_bytes_at_rest`]), before the directory is
    /// removed.
    pub fn stop_and_measure(self, warmup: Option<&PeerEndpoint>) -> anyhow::Result<AtRest> {
        let kind = self.endpoint.kind;
        self.process.stop_then(|dir| -> anyhow::Result<AtRest> {
            let warmup_bytes = match warmup {
                Some(w) => warmup_bytes_at_rest(kind, dir, &w.http.db, &w.measurement)?,
                None => None,
            };
            Ok(AtRest { bytes: allocated_bytes(dir)?, warmup_bytes })
        })?
    }
}

/// A stopped peer's data directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtRest {
    /// Allocated bytes of the whole directory.
    pub bytes: u64,
    /// Of which the warm-up's own directories, where the peer keeps them apart.
    pub warmup_bytes: Option<u64>,
}

/// Allocated bytes in `data_dir` (the [`Launch::data_dir`]) of what was
/// written to database `db` as `measurement`, where the peer keeps it in
/// directories of its own: InfluxDB's `data/<db>` and `wal/<db>`, QuestDB's
/// table directory (`<measurement>~<id>`, or `<measurement>`, WAL inside).
/// `None` for VictoriaMetrics, whose parts hold every series, and when no
/// such directory is found.
pub fn warmup_bytes_at_rest(
    kind: PeerKind,
    data_dir: &Path,
    db: &str,
    measurement: &str,
) -> anyhow::Result<Option<u64>> {
    let dirs: Vec<std::path::PathBuf> = match kind {
        PeerKind::InfluxDb => [data_dir.join("data").join(db), data_dir.join("wal").join(db)]
            .into_iter()
            .filter(|d| d.exists())
            .collect(),
        PeerKind::QuestDb => match std::fs::read_dir(data_dir) {
            Ok(entries) => entries
                .flatten()
                .filter(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name == measurement
                        || name.strip_prefix(measurement).is_some_and(|rest| rest.starts_with('~'))
                })
                .map(|e| e.path())
                .collect(),
            Err(_) => Vec::new(),
        },
        PeerKind::VictoriaMetrics => Vec::new(),
    };
    if dirs.is_empty() {
        return Ok(None);
    }
    let mut total = 0;
    for d in &dirs {
        total += allocated_bytes(d)?;
    }
    Ok(Some(total))
}

/// Polls `done` every 200 ms until it is true (`Ok(true)`) or `timeout` passed (`Ok(false)`).
fn wait_for(timeout: Duration, mut done: impl FnMut() -> anyhow::Result<bool>) -> anyhow::Result<bool> {
    let started = Instant::now();
    loop {
        if done()? {
            return Ok(true);
        }
        if started.elapsed() >= timeout {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Apparent bytes of InfluxDB's `*.wal` segment files below `dir`.
fn wal_segment_bytes(dir: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(entry.path());
            } else if entry.path().extension().is_some_and(|e| e == "wal") {
                total += meta.len();
            }
        }
    }
    Ok(total)
}
