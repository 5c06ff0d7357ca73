//! Property test: the durable engine against the in-memory reference model
//! (`strata_series::reference::MemStore`). Random requests (writes with
//! overwrites, out-of-order points and type conflicts; range deletes;
//! measurement drops), checkpoints and crash restarts; after every step both
//! stores must answer every read the same, and the engine's newest points
//! (its last-point cache) must equal the model's, which come from full reads.

mod common;

use common::{Harness, LogKind};
use proptest::prelude::*;
use strata_series::reference::MemStore;
use strata_series::{FieldType, FieldValue, Point, SeriesStore, TimeRange};

#[derive(Clone, Debug)]
enum Op {
    Write(Vec<Point>),
    Delete { measurement: &'static str, host: Option<&'static str>, range: TimeRange },
    Drop(&'static str),
    Checkpoint,
    Restart,
}

const MEASUREMENTS: [&str; 2] = ["cpu", "mem"];
const HOSTS: [&str; 3] = ["a", "b", "c"];

fn value() -> impl Strategy<Value = FieldValue> {
    prop_oneof![
        4 => (-1e6f64..1e6).prop_map(FieldValue::Float),
        1 => any::<i64>().prop_map(FieldValue::Integer),
        1 => any::<bool>().prop_map(FieldValue::Boolean),
        1 => "[a-c]{0,3}".prop_map(FieldValue::String),
    ]
}

fn point() -> impl Strategy<Value = Point> {
    (0..2usize, 0..3usize, prop::collection::vec((0..3usize, value()), 1..3), 0..60i64).prop_map(
        |(m, h, fields, ts)| {
            let mut fs: Vec<(String, FieldValue)> = Vec::new();
            for (f, v) in fields {
                let key = ["x", "y", "z"][f].to_string();
                fs.retain(|(k, _)| *k != key);
                fs.push((key, v));
            }
            Point {
                measurement: MEASUREMENTS[m].into(),
                tags: vec![("host".into(), HOSTS[h].into())],
                fields: fs,
                timestamp_ns: ts * 10,
            }
        },
    )
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => prop::collection::vec(point(), 1..5).prop_map(Op::Write),
        2 => (0..2usize, prop::option::of(0..3usize), 0..600i64, 0..300i64).prop_map(|(m, h, a, len)| Op::Delete {
            measurement: MEASUREMENTS[m],
            host: h.map(|h| HOSTS[h]),
            range: TimeRange { min_ns: a, max_ns: a + len },
        }),
        1 => (0..2usize).prop_map(|m| Op::Drop(MEASUREMENTS[m])),
        2 => Just(Op::Checkpoint),
        2 => Just(Op::Restart),
    ]
}

/// A series' newest point, in all time and in [`LAST_RANGE`].
type Newest = (Option<(i64, FieldValue)>, Option<(i64, FieldValue)>);

/// Per measurement, its tag index (the engine's is cached by series
/// version, the model's built per call), and per series (described as a
/// string) its points, its points at [`SOME_TIMES`] (the engine skips
/// blocks holding none) and its newest points (the engine answers those
/// from its last-point cache).
type Snapshot = Vec<(String, TagIndex, Vec<(String, (Points, Points), Newest)>)>;

type Points = Vec<(i64, FieldValue)>;

/// A range that ends inside the written times, so some newest points lie
/// past it and some series have none in it.
const LAST_RANGE: TimeRange = TimeRange { min_ns: 100, max_ns: 300 };

/// Times a read at chosen times asks for: some written, some not (points
/// are written at multiples of 10 in [0, 590]).
const SOME_TIMES: [i64; 6] = [0, 15, 40, 200, 205, 590];

/// A measurement's tag index without series ids (the two stores number
/// series differently): field types, tag keys, and per tag set its tags,
/// fields and, per tag, the tag sets its posting lists.
type TagIndex = (Vec<(String, FieldType)>, Vec<String>, Vec<TagSetView>);
type TagSetView = (Vec<(String, String)>, Vec<String>, Vec<Vec<u32>>);

fn tag_index(s: &dyn SeriesStore, m: &str) -> TagIndex {
    let index = s.measurement_tags("db", m).unwrap();
    let sets = index
        .tagsets
        .iter()
        .map(|set| {
            let postings = set.tags.iter().map(|(k, v)| index.with_tag(k, v).to_vec()).collect();
            (set.tags.to_vec(), set.fields.keys().cloned().collect(), postings)
        })
        .collect();
    (
        index.field_types.iter().map(|(f, t)| (f.clone(), *t)).collect(),
        index.tag_keys.iter().cloned().collect(),
        sets,
    )
}

fn snapshot(s: &dyn SeriesStore) -> Snapshot {
    let mut out = Vec::new();
    for m in s.measurements("db").unwrap() {
        let series = s.series("db", &m).unwrap();
        let ids: Vec<_> = series.iter().map(|x| x.id).collect();
        let newest = s.read_last("db", &ids, TimeRange::ALL).unwrap();
        let newest_in_range = s.read_last("db", &ids, LAST_RANGE).unwrap();
        let data = s.read("db", &ids, TimeRange::ALL).unwrap();
        // Reads at chosen times skip the engine's blocks that hold none.
        let at_times =
            s.read_at_times("db", &ids, TimeRange::ALL, &vec![&SOME_TIMES[..]; ids.len()]).unwrap();
        let data: Vec<_> = data.into_iter().zip(at_times).collect();
        let mut per: Vec<_> = series
            .iter()
            .zip(data)
            .zip(newest.into_iter().zip(newest_in_range))
            .map(|((x, d), last)| (format!("{:?}#{}:{:?}", x.tags, x.field, x.field_type), d, last))
            .collect();
        per.sort_by(|a, b| a.0.cmp(&b.0));
        let tags = tag_index(s, &m);
        out.push((m, tags, per));
    }
    out
}

fn apply(s: &dyn SeriesStore, op: &Op) -> String {
    match op {
        Op::Write(points) => match s.write("db", points) {
            Ok(o) => format!(
                "{} {} {:?}",
                o.points_written,
                o.values_written,
                o.rejected.iter().map(|r| r.0).collect::<Vec<_>>()
            ),
            Err(e) => format!("error {e}"),
        },
        Op::Delete { measurement, host, range } => {
            let ids: Vec<_> = s
                .series("db", measurement)
                .unwrap()
                .into_iter()
                .filter(|x| host.is_none_or(|h| x.tags[0].1 == h))
                .map(|x| x.id)
                .collect();
            format!("{:?}", s.delete("db", &ids, *range).map_err(|e| e.to_string()))
        }
        Op::Drop(m) => format!("{:?}", s.drop_measurement("db", m).map_err(|e| e.to_string())),
        Op::Checkpoint | Op::Restart => String::new(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn engine_matches_the_reference_model(ops in prop::collection::vec(op(), 1..40), kind in 0..3usize) {
        let mut h = Harness::new([LogKind::SerialPmem, LogKind::SerialSsd, LogKind::DeclogPmem][kind]);
        let model = MemStore::new();
        model.create_database("db").unwrap();
        for (i, op) in ops.iter().enumerate() {
            match op {
                Op::Checkpoint => { h.engine().checkpoint().unwrap(); }
                Op::Restart => h.crash_restart(),
                _ => {
                    let (got, want) = (apply(h.engine().as_ref(), op), apply(&model, op));
                    prop_assert_eq!(got, want, "outcome of step {} {:?}", i, op);
                }
            }
            let (got, want) = (snapshot(h.engine().as_ref()), snapshot(&model));
            prop_assert_eq!(got, want, "state after step {} {:?}", i, op);
        }
    }
}
