//! Loading a [`Dataset`] into any endpoint: the [`IngestEndpoint`] trait
//! (an HTTP server speaking InfluxDB v1, or a store called in-process) and
//! the parallel driver. N workers, each with its own connection, take the
//! next batch (a stored one by a shared counter, a streamed one from a
//! bounded channel that one more thread generates into) until none is
//! left; each request's latency (send to acknowledgement) goes into an
//! HdrHistogram. The first error stops every worker and fails the load.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use hdrhistogram::Histogram;
use indicatif::ProgressBar;
use serde_json::Value;

use super::dataset::{Batch, BatchStream, Dataset};
use super::generator::{FIELDS_PER_ROW, FIELD_NAMES, MEASUREMENT};

/// Highest latency the histogram resolves (longer requests saturate).
const MAX_LATENCY_NS: u64 = 600_000_000_000;
/// Bodies a streamed load generates ahead, per connection: enough that a
/// worker never waits for the generator while it keeps up, few enough that
/// memory stays a handful of bodies.
pub const STREAM_LOOKAHEAD_PER_CONNECTION: usize = 2;

/// Something that accepts line protocol batches.
pub trait IngestEndpoint: Sync {
    /// One worker's connection (a keep-alive socket, or nothing in-process).
    type Connection: Send;
    /// For messages: where the data goes.
    fn describe(&self) -> String;
    /// Makes the target database exist.
    fn prepare(&self) -> anyhow::Result<()>;
    fn connect(&self) -> anyhow::Result<Self::Connection>;
    /// Writes one batch; returns once the endpoint acknowledged it.
    fn write_batch(&self, connection: &mut Self::Connection, batch: &Batch) -> anyhow::Result<()>;
    /// Rows of the measurement as the endpoint counts them ([`count_query`]).
    fn count_rows(&self) -> anyhow::Result<u64>;
}

/// The InfluxQL statement that counts the rows of the data set.
pub fn count_query() -> String {
    count_query_of(MEASUREMENT)
}

/// The InfluxQL statement that counts the rows of `measurement`.
pub fn count_query_of(measurement: &str) -> String {
    format!("SELECT count({}) FROM {measurement}", FIELD_NAMES[0])
}

/// The count of an InfluxDB 1.x `/query` answer to [`count_query`]:
/// `results[0].series[0].values[0][1]`; no series means 0.
pub fn count_in_influx_response(v: &Value) -> anyhow::Result<u64> {
    let result = v.get("results").and_then(|r| r.get(0)).context("no results[0] in the query answer")?;
    if let Some(e) = result.get("error") {
        anyhow::bail!("the count query failed: {e}");
    }
    let Some(series) = result.get("series").and_then(|s| s.get(0)) else {
        return Ok(0);
    };
    let count = series
        .get("values")
        .and_then(|v| v.get(0))
        .and_then(|row| row.get(1))
        .context("no values[0][1] in the count answer")?;
    count
        .as_u64()
        .or_else(|| count.as_f64().filter(|c| *c >= 0.0 && c.fract() == 0.0).map(|c| c as u64))
        .with_context(|| format!("the count {count} is not a whole number"))
}

/// What one load achieved.
#[derive(Clone, Debug)]
pub struct LoadOutcome {
    pub rows: u64,
    pub requests: u64,
    pub body_bytes: u64,
    /// From the moment all workers were connected to the last acknowledgement.
    pub elapsed: Duration,
    pub latency_ns: Histogram<u64>,
    /// A streamed load: the time its generating thread spent generating
    /// bodies, on the same cores while the clock ran (`None`: generated
    /// before the load).
    pub generating: Option<Duration>,
}

impl LoadOutcome {
    pub fn values(&self) -> u64 {
        self.rows * FIELDS_PER_ROW
    }

    pub fn rows_per_s(&self) -> f64 {
        self.rows as f64 / self.elapsed.as_secs_f64()
    }

    pub fn values_per_s(&self) -> f64 {
        self.values() as f64 / self.elapsed.as_secs_f64()
    }

    /// Request latency at `quantile`, in milliseconds.
    pub fn latency_ms(&self, quantile: f64) -> f64 {
        self.latency_ns.value_at_quantile(quantile) as f64 / 1e6
    }
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid histogram bounds")
}

/// One worker's share of a load.
struct WorkerTotals {
    rows: u64,
    requests: u64,
    body_bytes: u64,
    latency_ns: Histogram<u64>,
}

/// Where the workers take their next body from: the stored bodies by a
/// shared index, or a streamed data set's channel (filled by a generating
/// thread at most [`STREAM_LOOKAHEAD_PER_CONNECTION`] bodies per connection
/// ahead; `None` once the load is over, which stops that thread).
enum Feed<'a> {
    Stored { batches: &'a [Batch], next: AtomicUsize },
    Streamed { rx: Mutex<Option<Receiver<Batch>>>, next: AtomicUsize },
}

impl<'a> Feed<'a> {
    /// The next body and its index, `None` when every body was taken.
    fn next(&self) -> Option<(usize, Cow<'a, Batch>)> {
        match self {
            Feed::Stored { batches, next } => {
                let i = next.fetch_add(1, Ordering::Relaxed);
                batches.get(i).map(|b| (i, Cow::Borrowed(b)))
            }
            Feed::Streamed { rx, next } => {
                let rx = rx.lock().unwrap_or_else(|e| e.into_inner());
                let batch = rx.as_ref()?.recv().ok()?;
                Some((next.fetch_add(1, Ordering::Relaxed), Cow::Owned(batch)))
            }
        }
    }

    /// Ends a streamed feed: the generating thread's next send fails.
    fn close(&self) {
        if let Feed::Streamed { rx, .. } = self {
            rx.lock().unwrap_or_else(|e| e.into_inner()).take();
        }
    }
}

/// Generates `stream` into `tx` until it ends or the receiver is gone;
/// returns the time spent generating (not waiting for room).
fn generate_into(mut stream: BatchStream, tx: SyncSender<Batch>) -> Duration {
    let mut generating = Duration::ZERO;
    loop {
        let t0 = Instant::now();
        let Some(batch) = stream.next() else { break };
        generating += t0.elapsed();
        if tx.send(batch).is_err() {
            break;
        }
    }
    generating
}

/// Loads every batch of `dataset` into `endpoint` over `connections`
/// workers: its stored bodies, or (streamed) bodies generated by one more
/// thread while the load runs.
pub fn load<E: IngestEndpoint>(
    endpoint: &E,
    dataset: &Dataset,
    connections: usize,
    progress: &ProgressBar,
) -> anyhow::Result<LoadOutcome> {
    anyhow::ensure!(connections >= 1, "at least one connection");
    let mut conns = Vec::with_capacity(connections);
    for _ in 0..connections {
        conns.push(endpoint.connect().with_context(|| format!("connecting to {}", endpoint.describe()))?);
    }
    let (feed, producer) = match dataset.stored() {
        Some(batches) => (Feed::Stored { batches, next: AtomicUsize::new(0) }, None),
        None => {
            let (tx, rx) = sync_channel(connections * STREAM_LOOKAHEAD_PER_CONNECTION);
            (
                Feed::Streamed { rx: Mutex::new(Some(rx)), next: AtomicUsize::new(0) },
                Some((dataset.stream(), tx)),
            )
        }
    };
    let failed = AtomicBool::new(false);
    let ready = Barrier::new(connections + 1);
    let (per_worker, elapsed, generating) = std::thread::scope(|s| {
        let generator = producer.map(|(stream, tx)| s.spawn(move || generate_into(stream, tx)));
        let handles: Vec<_> = conns
            .into_iter()
            .map(|mut conn| {
                let (feed, failed, ready) = (&feed, &failed, &ready);
                s.spawn(move || -> anyhow::Result<WorkerTotals> {
                    let mut totals =
                        WorkerTotals { rows: 0, requests: 0, body_bytes: 0, latency_ns: new_histogram() };
                    ready.wait();
                    while !failed.load(Ordering::Relaxed) {
                        let Some((i, batch)) = feed.next() else {
                            break;
                        };
                        let t0 = Instant::now();
                        if let Err(e) = endpoint.write_batch(&mut conn, &batch) {
                            failed.store(true, Ordering::Relaxed);
                            return Err(e.context(format!("batch {i} of {} lines", batch.lines)));
                        }
                        totals.latency_ns.saturating_record(t0.elapsed().as_nanos() as u64);
                        totals.rows += batch.lines;
                        totals.requests += 1;
                        totals.body_bytes += batch.body.len() as u64;
                        progress.inc(batch.lines);
                    }
                    Ok(totals)
                })
            })
            .collect();
        ready.wait();
        let start = Instant::now();
        let joined: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        let elapsed = start.elapsed();
        // Closed before any panic is passed on: a generating thread blocked on
        // a full channel would otherwise keep the scope from ending.
        feed.close();
        let generating = generator.map(|g| g.join().expect("the generating thread panicked"));
        let results: Vec<_> = joined.into_iter().map(|r| r.expect("load worker panicked")).collect();
        (results, elapsed, generating)
    });
    let mut outcome =
        LoadOutcome { rows: 0, requests: 0, body_bytes: 0, elapsed, latency_ns: new_histogram(), generating };
    for w in per_worker {
        let w = w.with_context(|| format!("loading into {}", endpoint.describe()))?;
        outcome.rows += w.rows;
        outcome.requests += w.requests;
        outcome.body_bytes += w.body_bytes;
        outcome.latency_ns.add(&w.latency_ns).expect("histograms with equal bounds add");
    }
    anyhow::ensure!(
        outcome.rows == dataset.rows(),
        "loaded {} rows of {}: some batches were not sent",
        outcome.rows,
        dataset.rows()
    );
    Ok(outcome)
}
