//! Executor tests of SELECT on event streams (`exec/stream.rs`): what the
//! store is asked, how its answer is shaped, and how a raw SELECT streams
//! piece by piece to a sink (issue 22 item 3), against a fake catalog.

use std::sync::Mutex;

use serde_json::json;
use strata_engine::tables::streams::{
    AggRow, EventAgg, EventCmp, EventFilter, EventPieces, EventQuery, EventRows, EventSelect, EventWindow,
    StreamAttr, StreamError, StreamInfo, StreamTables,
};
use strata_engine::{TableKind, Tables};
use strata_series::reference::MemStore;
use strata_series::{EngineError, FieldValue, Point, SeriesStore, TimeRange, WriteOutcome};

use super::sink::{ResultSink, SeriesHead, SinkStop};
use super::{execute, execute_into, QueryParams};

/// A catalog with one stream `s` (price f64, n i32, sym string) that
/// records the query it is asked and answers with canned rows.
struct Fake {
    series: MemStore,
    asked: Mutex<Vec<EventSelect>>,
    answer: Mutex<Option<EventRows>>,
    /// Pieces [`StreamTables::scan_events`] handed on (two rows each).
    pieces: Mutex<usize>,
}

impl Fake {
    fn new(answer: EventRows) -> Fake {
        let series = MemStore::new();
        series.create_database("db").unwrap();
        Fake {
            series,
            asked: Mutex::new(Vec::new()),
            answer: Mutex::new(Some(answer)),
            pieces: Mutex::new(0),
        }
    }
}

impl Tables for Fake {
    fn series_store(&self) -> &dyn SeriesStore {
        &self.series
    }
    fn stream_tables(&self) -> Option<&dyn StreamTables> {
        Some(self)
    }
    fn kind_of(&self, db: &str, name: &str) -> Option<TableKind> {
        if self.stream_schema(db, name).is_some() {
            return Some(TableKind::EventStream);
        }
        Tables::kind_of(&self.series, db, name)
    }
    fn tables(&self, db: &str) -> Result<Vec<(String, TableKind)>, EngineError> {
        let mut out = Tables::tables(&self.series, db)?;
        out.push(("s".to_string(), TableKind::EventStream));
        out.sort();
        Ok(out)
    }
    fn write_request(&self, db: &str, points: &[Point]) -> Result<WriteOutcome, EngineError> {
        self.series.write(db, points)
    }
    fn drop_table(&self, db: &str, m: &str) -> Result<(), EngineError> {
        self.series.drop_measurement(db, m)
    }
}

impl StreamTables for Fake {
    fn create_stream(&self, _: &str, _: &str, _: &[StreamAttr]) -> Result<StreamInfo, StreamError> {
        Err(StreamError::Invalid("not in this fake".into()))
    }
    fn list_streams(&self, _: Option<&str>) -> Vec<StreamInfo> {
        Vec::new()
    }
    fn stream_schema(&self, db: &str, m: &str) -> Option<Vec<StreamAttr>> {
        use strata_engine::tables::streams::StreamAttrType as T;
        let a = |name: &str, ty| StreamAttr { name: name.into(), ty };
        (db == "db" && m == "s")
            .then(|| vec![a("price", T::F64), a("n", T::I32), a("sym", T::Str { len_bytes: 4 })])
    }
    fn drop_stream(&self, _: &str, _: &str) -> Result<(), StreamError> {
        Ok(())
    }
    fn select_events(&self, _: &str, _: &str, s: &EventSelect) -> Result<EventRows, StreamError> {
        self.asked.lock().unwrap().push(s.clone());
        Ok(self.answer.lock().unwrap().take().expect("one query per fake"))
    }
    fn scan_events(
        &self,
        db: &str,
        name: &str,
        s: &EventSelect,
        each: &mut EventPieces<'_>,
    ) -> Result<(), StreamError> {
        let EventRows::Raw(rows) = self.select_events(db, name, s)? else {
            return Err(StreamError::Invalid("a scan of an aggregate query".into()));
        };
        for piece in rows.chunks(2) {
            *self.pieces.lock().unwrap() += 1;
            if each(piece.to_vec()).is_break() {
                break;
            }
        }
        Ok(())
    }
}

/// The calls a sink saw, as text.
#[derive(Default)]
struct Calls(Vec<String>);

impl ResultSink for Calls {
    fn begin_series(&mut self, id: usize, head: &SeriesHead) -> Result<(), SinkStop> {
        self.0.push(format!("begin {id} {:?}", head.columns));
        Ok(())
    }
    fn rows(&mut self, rows: Vec<Vec<serde_json::Value>>) -> Result<(), SinkStop> {
        self.0.push(format!("rows {}", serde_json::Value::from(rows)));
        Ok(())
    }
    fn end_series(&mut self) -> Result<(), SinkStop> {
        self.0.push("end series".into());
        Ok(())
    }
    fn end_statement(&mut self, id: usize, error: Option<&str>) -> Result<(), SinkStop> {
        self.0.push(format!("end {id} {error:?}"));
        Ok(())
    }
}

fn events(n: i64) -> EventRows {
    EventRows::Raw((1..=n).map(|t| (t, vec![FieldValue::Integer(t * 10)])).collect())
}

#[test]
fn raw_selects_stream_piece_by_piece_and_stop_at_their_limit() {
    let store = Fake::new(events(10));
    let mut calls = Calls::default();
    execute_into(&store, "SELECT n FROM s LIMIT 3 OFFSET 1", &params(), &mut calls).unwrap();
    assert_eq!(
        calls.0,
        vec![
            "begin 0 [\"time\", \"n\"]".to_string(),
            "rows [[2,20]]".into(),
            "rows [[3,30],[4,40]]".into(),
            "end series".into(),
            "end 0 None".into(),
        ],
        "each piece of the store goes out as it comes, OFFSET and LIMIT across pieces"
    );
    assert_eq!(*store.pieces.lock().unwrap(), 2, "the scan stops once LIMIT is reached");

    // ORDER BY time DESC is answered whole, newest first.
    let store = Fake::new(events(4));
    let out = run(&store, "SELECT n FROM s ORDER BY time DESC");
    assert_eq!(out["series"][0]["values"], json!([[4, 40], [3, 30], [2, 20], [1, 10]]), "{out}");
    assert_eq!(*store.pieces.lock().unwrap(), 0, "not scanned in pieces");
}

#[test]
fn a_streamed_scan_past_the_memory_bound_ends_in_an_error_after_its_rows() {
    let store = Fake::new(events(10));
    let bound = 3 * crate::influxql::exec::ESTIMATED_BYTES_PER_POINT_READ;
    let params = QueryParams { max_memory_bytes: bound, ..params() };
    let mut calls = Calls::default();
    execute_into(&store, "SELECT n FROM s", &params, &mut calls).unwrap();
    assert_eq!(&calls.0[..2], ["begin 0 [\"time\", \"n\"]", "rows [[1,10],[2,20]]"], "{:?}", calls.0);
    assert_eq!(calls.0.len(), 3, "{:?}", calls.0);
    assert!(calls.0[2].contains("max_query_memory_bytes"), "{:?}", calls.0);
    assert_eq!(*store.pieces.lock().unwrap(), 2, "the scan stops at the error");

    // Answered whole (ORDER BY time DESC), the bound is checked once read.
    let store = Fake::new(events(10));
    let out = execute(&store, "SELECT n FROM s ORDER BY time DESC", &params).unwrap();
    let error = out["results"][0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("max_query_memory_bytes"), "{out}");
}

fn params() -> QueryParams {
    QueryParams { db: Some("db".into()), epoch: Some("ns".into()), now_ns: 1000, ..Default::default() }
}

fn run(store: &Fake, q: &str) -> serde_json::Value {
    execute(store, q, &params()).unwrap()["results"][0].clone()
}

#[test]
fn raw_queries_become_one_event_select_and_keep_equal_timestamps() {
    let answer = EventRows::Raw(vec![
        (5, vec![FieldValue::Integer(1), FieldValue::Float(2.5), FieldValue::String("AB".into())]),
        (5, vec![FieldValue::Integer(2), FieldValue::Float(3.5), FieldValue::String("AB".into())]),
    ]);
    let store = Fake::new(answer);
    let out = run(&store, "SELECT * FROM s WHERE price > 2 AND 'AB' = sym AND time >= 3 AND time < 9");
    let asked = store.asked.lock().unwrap()[0].clone();
    assert_eq!(asked.range, TimeRange { min_ns: 3, max_ns: 8 });
    let attrs = vec!["n".into(), "price".into(), "sym".into()];
    assert_eq!(asked.query, EventQuery::Raw { attrs, limit: None, newest: false });
    assert_eq!(
        asked.filters,
        vec![
            EventFilter { attr: "price".into(), op: EventCmp::Gt, value: FieldValue::Integer(2) },
            EventFilter { attr: "sym".into(), op: EventCmp::Eq, value: FieldValue::String("AB".into()) },
        ]
    );
    assert_eq!(out["series"][0]["values"], json!([[5, 1, 2.5, "AB"], [5, 2, 3.5, "AB"]]), "{out}");
    assert_eq!(out["series"][0]["columns"], json!(["time", "n", "price", "sym"]));
}

#[test]
fn limits_go_to_the_store_which_answers_the_newest_in_time_order_for_desc() {
    let ev = |t: i64| (t, vec![FieldValue::Integer(t)]);
    // The store's answer to "the newest 3": in time order.
    let store = Fake::new(EventRows::Raw(vec![ev(7), ev(8), ev(9)]));
    let out = run(&store, "SELECT n FROM s ORDER BY time DESC LIMIT 2 OFFSET 1");
    let asked = store.asked.lock().unwrap()[0].clone();
    assert_eq!(asked.query, EventQuery::Raw { attrs: vec!["n".into()], limit: Some(3), newest: true });
    assert_eq!(out["series"][0]["values"], json!([[8, 8], [7, 7]]), "{out}");
    let store = Fake::new(EventRows::Raw(vec![ev(1), ev(2)]));
    let out = run(&store, "SELECT n FROM s LIMIT 2");
    let asked = store.asked.lock().unwrap()[0].clone();
    assert_eq!(asked.query, EventQuery::Raw { attrs: vec!["n".into()], limit: Some(2), newest: false });
    assert_eq!(out["series"][0]["values"], json!([[1, 1], [2, 2]]), "{out}");
}

#[test]
fn windows_are_filled_and_selectors_carry_their_time() {
    let row = |start_ns, v: f64| AggRow {
        start_ns,
        values: vec![Some(FieldValue::Integer(2)), Some(FieldValue::Float(v))],
        selected_ns: None,
    };
    let store = Fake::new(EventRows::Aggregate(vec![row(0, 1.0), row(20_000_000_000, 3.0)]));
    let out = run(
        &store,
        "SELECT count(price), max(price) FROM s WHERE time >= 0 AND time < 30s GROUP BY time(10s)",
    );
    let asked = store.asked.lock().unwrap()[0].clone();
    let window = Some(EventWindow { interval_ns: 10_000_000_000, offset_ns: 0 });
    assert_eq!(
        asked.query,
        EventQuery::Aggregate {
            columns: vec![(EventAgg::Count, "price".into()), (EventAgg::Max, "price".into())],
            window
        }
    );
    assert_eq!(
        out["series"][0]["values"],
        json!([[0, 2, 1.0], [10_000_000_000i64, 0, null], [20_000_000_000i64, 2, 3.0]]),
        "the empty window is filled (count 0, max null)"
    );

    let store = Fake::new(EventRows::Aggregate(vec![AggRow {
        start_ns: 0,
        values: vec![Some(FieldValue::Float(9.0))],
        selected_ns: Some(7),
    }]));
    let out = run(&store, "SELECT max(price) FROM s");
    assert_eq!(out["series"][0]["values"], json!([[7, 9.0]]), "a lone selector reports its event's time");
}

#[test]
fn what_the_stream_path_cannot_answer_is_an_error() {
    for (q, message) in [
        ("SELECT price FROM s GROUP BY sym", "GROUP BY tags is not supported"),
        ("SELECT first(price) FROM s", "first() is not supported"),
        ("SELECT * FROM s WHERE price > 1 OR n < 2", "OR in WHERE is not supported"),
        ("SELECT * FROM s WHERE sym =~ /a/", "unsupported operator"),
        ("SELECT nope FROM s", "no attribute 'nope'"),
        ("SELECT sum(sym) FROM s", "unsupported sum()"),
        ("SELECT * FROM s WHERE price > n", "compare attributes with constants"),
    ] {
        let store = Fake::new(EventRows::Raw(Vec::new()));
        let out = run(&store, q);
        let error = out["error"].as_str().unwrap_or_else(|| panic!("{q}: {out}"));
        assert!(error.contains(message), "{q}: {error}");
        assert!(store.asked.lock().unwrap().is_empty(), "{q}: nothing was read");
    }
}
