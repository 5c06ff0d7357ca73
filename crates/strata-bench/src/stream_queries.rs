//! `strata bench stream-queries`: event-stream queries at scale (issue
//! "Event streams at scale", item 3; chronicledb-pmem.txt section 2.2, R2
//! and R3 on a large stream) through the engine and InfluxQL, as `strata
//! serve` answers them (without HTTP):
//! - `limit10-oldest` / `limit10-newest`: `SELECT * FROM stock LIMIT 10`
//!   and `... ORDER BY time DESC LIMIT 10` (the store reads only the first,
//!   or the last, events);
//! - `count`: `SELECT count(price) FROM stock` (the TAB+-tree's aggregates);
//! - `full-scan`: `SELECT price` of every event through the engine;
//! - `writer-*`: the acknowledgement latency of a writer appending one
//!   event per request, alone, during a full scan (the stream's lock held
//!   one chunk at a time), and during a scan that holds the lock for the
//!   whole scan (the previous behaviour, for comparison);
//! - `streamed-query`: `SELECT price FROM stock` through InfluxQL into a
//!   sink, as `/query` streams it: the time to its first and last row, the
//!   largest piece it was handed (what the response holds at once), and a
//!   writer's acknowledgements meanwhile.
//!
//! One stream of Stock-like events (price f64, volume i64, sym string) on
//! the PMem placement, loaded in time order; medians of the rounds.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use hdrhistogram::Histogram;
use serde_json::{json, Value};
use strata_engine::tables::streams::{EventQuery, EventRows, EventSelect, StreamAttr, StreamAttrType};
use strata_engine::{Config, Db, Tables};
use strata_influx::influxql::sink::{ResultSink, SeriesHead, SinkStop};
use strata_influx::influxql::{execute, execute_into, QueryParams};
use strata_pmem::PmemMode;
use strata_series::{FieldValue, Point, TimeRange};

use crate::machine::Machine;
use crate::measure::Samples;
use crate::report::BenchReport;

const DB: &str = "bench";
const STREAM: &str = "stock";
/// Points per load request.
const LOAD_BATCH: usize = 20_000;
/// Runs of each query per round.
const QUERY_RUNS: usize = 20;
/// How long the writer runs alone per round.
const WRITER_ALONE: Duration = Duration::from_millis(1000);

#[derive(Clone, Debug)]
pub struct StreamQueriesOptions {
    pub events: u64,
    pub rounds: usize,
    /// Where the data directory goes (a disk file system).
    pub dir: PathBuf,
    pub json_path: Option<PathBuf>,
    pub print: bool,
}

impl StreamQueriesOptions {
    /// 10^7 events, 3 rounds.
    pub fn full() -> Self {
        StreamQueriesOptions {
            events: 10_000_000,
            rounds: 3,
            dir: std::env::temp_dir(),
            json_path: None,
            print: true,
        }
    }

    /// 10^6 events.
    pub fn quick() -> Self {
        StreamQueriesOptions { events: 1_000_000, ..StreamQueriesOptions::full() }
    }
}

fn attrs() -> Vec<StreamAttr> {
    let a = |name: &str, ty| StreamAttr { name: name.into(), ty };
    vec![
        a("price", StreamAttrType::F64),
        a("volume", StreamAttrType::I64),
        a("sym", StreamAttrType::Str { len_bytes: 4 }),
    ]
}

/// Event `i`: one per microsecond from 2020-01-01.
fn point(i: u64) -> Point {
    Point {
        measurement: STREAM.into(),
        tags: vec![],
        fields: vec![
            ("price".into(), FieldValue::Float(100.0 + (i % 1000) as f64 / 8.0)),
            ("volume".into(), FieldValue::Integer((i % 5000) as i64)),
            ("sym".into(), FieldValue::String(["AAPL", "MSFT", "X"][(i % 3) as usize].into())),
        ],
        timestamp_ns: 1_577_836_800_000_000_000 + i as i64 * 1000,
    }
}

fn open_db(o: &StreamQueriesOptions, dir: &std::path::Path) -> anyhow::Result<Db> {
    let mut c = Config { data_dir: dir.to_path_buf(), ..Config::default() };
    c.storage.protocol = "serial-ssd".into();
    c.streams.placement = "pmem".into();
    c.streams.max_leaf_nodes = o.events / 64 + 4096;
    c.streams.max_index_nodes = o.events / 2048 + 1024;
    let db = Db::open(&c, &|_, _, _| {}).context("opening the data directory")?;
    Ok(db)
}

/// Milliseconds of `f`, and its result.
fn timed<T>(f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<(f64, T)> {
    let t = Instant::now();
    let out = f()?;
    Ok((t.elapsed().as_secs_f64() * 1e3, out))
}

/// Rows of the first series of an InfluxQL answer.
fn row_count(answer: &Value) -> usize {
    answer["results"][0]["series"][0]["values"].as_array().map_or(0, Vec::len)
}

/// A writer appending one event per request from `next` on until `stop`;
/// returns its acknowledgement latencies (ns).
fn writer(db: Arc<Db>, mut next: u64, stop: Arc<AtomicBool>) -> anyhow::Result<(Histogram<u64>, u64)> {
    let mut h = Histogram::<u64>::new(3)?;
    while !stop.load(Ordering::Relaxed) {
        let t = Instant::now();
        db.tables().write_request(DB, &[point(next)])?;
        h.record(t.elapsed().as_nanos() as u64)?;
        next += 1;
    }
    Ok((h, next))
}

/// Runs `during` while a writer appends from `next`; the writer's
/// histogram, where it stopped, and `during`'s result.
fn with_writer<T>(
    db: &Arc<Db>,
    next: u64,
    during: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<(Histogram<u64>, u64, T)> {
    let stop = Arc::new(AtomicBool::new(false));
    let handle = {
        let (db, stop) = (Arc::clone(db), Arc::clone(&stop));
        std::thread::spawn(move || writer(db, next, stop))
    };
    std::thread::sleep(Duration::from_millis(20));
    let out = during();
    stop.store(true, Ordering::Relaxed);
    let (h, next) = handle.join().map_err(|_| anyhow::anyhow!("the writer panicked"))??;
    Ok((h, next, out?))
}

fn push_writer(s: &mut Samples, h: &Histogram<u64>) {
    s.push("ack_us_p50", h.value_at_quantile(0.5) as f64 / 1e3);
    s.push("ack_us_p99", h.value_at_quantile(0.99) as f64 / 1e3);
    s.push("ack_ms_max", h.max() as f64 / 1e6);
    s.push("writes", h.len() as f64);
}

pub fn run_stream_queries_bench(o: &StreamQueriesOptions) -> anyhow::Result<BenchReport> {
    BenchReport::check_json_path(o.json_path.as_deref())?;
    let tmp = tempfile::Builder::new().prefix("strata-stream-queries-").tempdir_in(&o.dir)?;
    let db = Arc::new(open_db(o, tmp.path())?);
    db.tables().add_database(DB)?;
    let streams = db.tables().stream_tables().context("the engine has event streams")?;
    streams.create_stream(DB, STREAM, &attrs())?;
    let started = Instant::now();
    let mut batch = Vec::with_capacity(LOAD_BATCH);
    for i in 0..o.events {
        batch.push(point(i));
        if batch.len() == LOAD_BATCH || i + 1 == o.events {
            db.tables().write_request(DB, &batch)?;
            batch.clear();
        }
    }
    let load_s = started.elapsed().as_secs_f64();
    if o.print {
        eprintln!("stream-queries: loaded {} events in {load_s:.1} s", o.events);
    }
    let params =
        QueryParams { db: Some(DB.into()), epoch: Some("ns".into()), now_ns: 0, ..Default::default() };
    let query = |q: &str| -> anyhow::Result<Value> { Ok(execute(db.tables().as_ref(), q, &params)?) };
    let scan = EventSelect {
        range: TimeRange::ALL,
        filters: vec![],
        query: EventQuery::Raw { attrs: vec!["price".into()], limit: None, newest: false },
    };
    let names = [
        "limit10-oldest",
        "limit10-newest",
        "count",
        "full-scan",
        "writer-alone",
        "writer-during-chunked-scan",
        "writer-during-one-lock-scan",
        "streamed-query",
    ];
    let mut samples: Vec<Samples> = names.iter().map(|_| Samples::default()).collect();
    let mut next = o.events;
    for round in 0..o.rounds {
        for (q, i) in
            [("SELECT * FROM stock LIMIT 10", 0), ("SELECT * FROM stock ORDER BY time DESC LIMIT 10", 1)]
        {
            for _ in 0..QUERY_RUNS {
                let (ms, answer) = timed(|| query(q))?;
                anyhow::ensure!(row_count(&answer) == 10, "{q}: {answer}");
                samples[i].push("latency_ms", ms);
            }
        }
        for _ in 0..QUERY_RUNS {
            let (ms, answer) = timed(|| query("SELECT count(price) FROM stock"))?;
            anyhow::ensure!(
                answer["results"][0]["series"][0]["values"][0][1].as_u64() >= Some(o.events),
                "{answer}"
            );
            samples[2].push("latency_ms", ms);
        }
        // The writer alone, then during each kind of full scan (alternating).
        let (h, n, ()) = with_writer(&db, next, || {
            std::thread::sleep(WRITER_ALONE);
            Ok(())
        })?;
        next = n;
        push_writer(&mut samples[4], &h);
        let (h, n, (ms, rows)) =
            with_writer(&db, next, || timed(|| Ok(streams.select_events(DB, STREAM, &scan)?)))?;
        next = n;
        let EventRows::Raw(rows) = rows else { anyhow::bail!("a raw scan answered aggregates") };
        anyhow::ensure!(rows.len() as u64 >= o.events, "the scan read {} of {} events", rows.len(), o.events);
        samples[3].push("latency_ms", ms);
        samples[3].push("events", rows.len() as f64);
        drop(rows);
        push_writer(&mut samples[5], &h);
        samples[5].push("scan_ms", ms);
        let open = db.streams().get(DB, STREAM).context("the stream is open")?;
        let (h, n, ms) = with_writer(&db, next, || {
            timed(|| {
                let stream = open.stream.lock();
                let rows = strata_engine::streams::query::select(STREAM, &stream, &scan)?;
                Ok(matches!(rows, EventRows::Raw(_)))
            })
            .map(|(ms, _)| ms)
        })?;
        next = n;
        push_writer(&mut samples[6], &h);
        samples[6].push("scan_ms", ms);
        let (h, n, (ms, sink)) = with_writer(&db, next, || {
            timed(|| {
                let mut sink = Counting::new();
                execute_into(db.tables().as_ref(), "SELECT price FROM stock", &params, &mut sink)?;
                Ok(sink)
            })
        })?;
        next = n;
        anyhow::ensure!(sink.error.is_none(), "the streamed query failed: {:?}", sink.error);
        anyhow::ensure!(
            sink.rows >= o.events,
            "the streamed query sent {} of {} events",
            sink.rows,
            o.events
        );
        push_writer(&mut samples[7], &h);
        samples[7].push("latency_ms", ms);
        samples[7].push("first_row_ms", sink.first_row_ms.unwrap_or(ms));
        samples[7].push("events", sink.rows as f64);
        samples[7].push("largest_piece_rows", sink.largest_piece as f64);
        if o.print {
            eprintln!("stream-queries: round {round} done ({next} events)");
        }
    }
    let machine = Machine::detect(
        PmemMode::Emulated,
        format!("the stream's PMem region is a mapped file in {}", o.dir.display()),
        strata_pmem::detected_flush_instruction(),
    );
    let config = json!({
        "events": o.events, "rounds": o.rounds, "query_runs": QUERY_RUNS, "load_s": load_s,
        "scan_chunk_events": strata_engine::streams::query::SCAN_CHUNK_EVENTS, "placement": "pmem", "dir": o.dir,
    });
    let mut report = BenchReport::new("stream-queries", machine, config);
    for (name, s) in names.iter().zip(&samples) {
        report.results.push(s.median_row(name));
    }
    report.columns = [
        "latency_ms",
        "first_row_ms",
        "events",
        "largest_piece_rows",
        "scan_ms",
        "ack_us_p50",
        "ack_us_p99",
        "ack_ms_max",
        "writes",
    ]
    .map(String::from)
    .to_vec();
    report.notes.push(format!(
        "{} Stock-like events in one stream (PMem placement, loaded in {load_s:.1} s); queries through InfluxQL (limit, count) or the engine (full scan of one attribute); medians of {} rounds, {QUERY_RUNS} runs per query and round",
        o.events, o.rounds
    ));
    report.notes.push("writer: one event per request, acknowledged when durable; during a chunked scan it waits for at most one chunk of the scan; the one-lock scan (the previous behaviour) blocks it for the whole scan".into());
    report.notes.push("streamed-query: SELECT price FROM stock through InfluxQL into a sink that counts rows (as /query streams a response); largest_piece_rows is the most rows the sink was handed at once".into());
    report.publish(o.print, o.json_path.as_deref())
}

/// Counts what a streamed query hands it, as `/query` writing it out sees it.
struct Counting {
    started: Instant,
    first_row_ms: Option<f64>,
    rows: u64,
    largest_piece: usize,
    error: Option<String>,
}

impl Counting {
    fn new() -> Counting {
        Counting { started: Instant::now(), first_row_ms: None, rows: 0, largest_piece: 0, error: None }
    }
}

impl ResultSink for Counting {
    fn begin_series(&mut self, _: usize, _: &SeriesHead) -> Result<(), SinkStop> {
        Ok(())
    }

    fn rows(&mut self, rows: Vec<Vec<Value>>) -> Result<(), SinkStop> {
        self.first_row_ms.get_or_insert_with(|| self.started.elapsed().as_secs_f64() * 1e3);
        self.rows += rows.len() as u64;
        self.largest_piece = self.largest_piece.max(rows.len());
        Ok(())
    }

    fn end_series(&mut self) -> Result<(), SinkStop> {
        Ok(())
    }

    fn end_statement(&mut self, _: usize, error: Option<&str>) -> Result<(), SinkStop> {
        self.error = error.map(String::from);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tiny_run_reports_every_variant_and_the_writer_is_not_blocked_by_a_chunked_scan() {
        let dir = tempfile::tempdir().unwrap();
        let o = StreamQueriesOptions {
            events: 30_000,
            rounds: 1,
            dir: dir.path().to_path_buf(),
            json_path: Some(dir.path().join("r.json")),
            print: false,
        };
        let report = run_stream_queries_bench(&o).unwrap();
        let metric = |v: &str, m: &str| report.result(v).and_then(|r| r.get(m)).and_then(Value::as_f64);
        for v in ["limit10-oldest", "limit10-newest", "count", "full-scan"] {
            assert!(metric(v, "latency_ms").is_some_and(|ms| ms > 0.0), "{v}");
        }
        assert!(metric("full-scan", "events").unwrap() >= 30_000.0);
        for v in
            ["writer-alone", "writer-during-chunked-scan", "writer-during-one-lock-scan", "streamed-query"]
        {
            assert!(metric(v, "writes").unwrap() > 0.0, "{v}: the writer wrote");
        }
        assert!(metric("streamed-query", "events").unwrap() >= 30_000.0);
        let piece = metric("streamed-query", "largest_piece_rows").unwrap();
        let chunk = strata_engine::streams::query::SCAN_CHUNK_EVENTS as f64;
        assert!(
            piece > 0.0 && piece <= chunk,
            "a streamed query is handed one chunk at a time, not {piece} rows"
        );
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
        assert_eq!(json["benchmark"], "stream-queries");
    }
}
