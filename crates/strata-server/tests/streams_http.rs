//! Event streams over real HTTP, on the engine `strata serve` uses
//! (`strata_engine::Db::store`): create (201, 409, 400), list, write good
//! and misfit lines (partial write naming each line), query time ranges,
//! windowed aggregates and attribute filters and compare with a naive model
//! computed here (equal timestamps and late events included), restart the
//! server on the same data directory and see the stream and its events
//! again, then drop it (204, then 404).

mod common;

use std::path::Path;

use common::{encode, DbServer, Response};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use strata_engine::Config;

const SEED: u64 = 0x0057_4EA3;
const BASE_NS: i64 = 1_600_000_000_000_000_000;

/// One event of the model: (ts, sequence, price, volume).
type Ev = (i64, i64, f64, i64);

struct Server(DbServer);

impl Server {
    fn start(dir: &Path) -> Server {
        let mut config = Config { data_dir: dir.to_path_buf(), ..Config::default() };
        config.storage.protocol = "serial-ssd".into();
        config.streams.placement = "pmem".into();
        config.streams.max_leaf_nodes = 4096;
        config.streams.max_index_nodes = 256;
        Server(DbServer::start(&config))
    }

    fn stop(self) {
        self.0.stop()
    }

    fn call(&self, method: &str, path: &str, body: &[u8]) -> Response {
        self.0.call(method, path, body)
    }

    fn query(&self, q: &str) -> Value {
        let response = self.call("GET", &format!("/query?db=mydb&epoch=ns&q={}", encode(q)), b"");
        assert_eq!(response.status, 200, "{q}: {}", response.text());
        response.json()
    }

    /// The values of the first series of the first result (empty if none).
    fn rows(&self, q: &str) -> Vec<Value> {
        let body = self.query(q);
        let result = &body["results"][0];
        assert!(result.get("error").is_none(), "{q}: {result}");
        result["series"][0]["values"].as_array().cloned().unwrap_or_default()
    }
}

/// Timestamps repeat and some events arrive late.
fn events(rng: &mut ChaCha8Rng, n: i64) -> Vec<Ev> {
    let mut ts = BASE_NS;
    (0..n)
        .map(|seq| {
            let t = match rng.gen_range(0..10) {
                0 | 1 => ts,
                2 => ts - rng.gen_range(1..20) * 1_000_000_000,
                _ => {
                    ts += rng.gen_range(1..4) * 1_000_000_000;
                    ts
                }
            };
            (t, seq, rng.gen_range(0..8000) as f64 / 4.0, rng.gen_range(1..500))
        })
        .collect()
}

fn line((t, seq, price, volume): &Ev) -> String {
    format!("stock sequence={seq}i,symbol=7i,price={price:?},volume={volume}i {t}")
}

#[test]
fn streams_round_trip_over_http_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let schema = json!({"db": "mydb", "name": "stock", "attributes": [
        {"name": "sequence", "type": "i64"}, {"name": "symbol", "type": "i32"},
        {"name": "price", "type": "f64"}, {"name": "volume", "type": "i32"}]});
    let missing_db = server.call("POST", "/api/v1/streams", schema.to_string().as_bytes());
    assert_eq!(missing_db.status, 404, "a stream needs its database: {}", missing_db.text());
    assert_eq!(server.call("POST", "/query?q=CREATE+DATABASE+mydb", b"").status, 200);
    let created = server.call("POST", "/api/v1/streams", schema.to_string().as_bytes());
    assert_eq!(created.status, 201, "{}", created.text());
    assert_eq!(created.json()["events"], 0);
    assert_eq!(server.call("POST", "/api/v1/streams", schema.to_string().as_bytes()).status, 409);
    let bad = json!({"db": "mydb", "name": "s2", "attributes": [{"name": "x", "type": "u8"}]});
    let bad = server.call("POST", "/api/v1/streams", bad.to_string().as_bytes());
    assert_eq!(bad.status, 400);
    assert!(bad.error().contains("unknown attribute type"), "{}", bad.text());

    // Writes: every good line, and misfits rejected with their line numbers.
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let model = events(&mut rng, 1200);
    for chunk in model.chunks(300) {
        let body: Vec<String> = chunk.iter().map(line).collect();
        let response = server.call("POST", "/write?db=mydb", body.join("\n").as_bytes());
        assert_eq!(response.status, 204, "seed {SEED:#x}: {}", response.text());
    }
    let misfits = [
        format!("stock,host=a sequence=1i,symbol=1i,price=1.0,volume=1i {BASE_NS}"),
        format!("stock sequence=1i,symbol=1i,price=1i,volume=1i {BASE_NS}"),
        format!("stock sequence=1i,symbol=1i,price=1.0 {BASE_NS}"),
        format!("stock sequence=1i,symbol=1i,price=1.0,volume=1i,extra=2 {BASE_NS}"),
        format!("cpu value=1 {BASE_NS}"),
    ];
    let response = server.call("POST", "/write?db=mydb", misfits.join("\n").as_bytes());
    assert_eq!(response.status, 400);
    let error = response.error();
    for (reason, line) in [
        ("takes no tags", 1),
        ("attribute 'price' of stream 'stock' is f64", 2),
        ("missing attribute 'volume'", 3),
        ("has no attribute 'extra'", 4),
    ] {
        assert!(error.contains(&format!("(line {line})")) && error.contains(reason), "{reason}: {error}");
    }
    assert!(error.starts_with("partial write:") && error.ends_with("dropped=4"), "{error}");

    let mut sorted = model.clone();
    sorted.sort_by_key(|e| e.0);
    let (lo, hi) = (BASE_NS + 100_000_000_000, BASE_NS + 900_000_000_000);
    let in_range: Vec<_> = sorted.iter().filter(|e| (lo..hi).contains(&e.0)).collect();

    let check = |server: &Server| {
        // Time range: every event once, in time order, equal timestamps kept.
        let rows =
            server.rows(&format!("SELECT sequence, price FROM stock WHERE time >= {lo} AND time < {hi}"));
        let want: Vec<Value> = in_range.iter().map(|e| json!([e.0, e.1, e.2])).collect();
        assert_eq!(rows, want, "seed {SEED:#x}: range");
        // Windows: count, mean, min, max, sum per minute.
        let q = format!(
            "SELECT count(price), mean(price), min(price), max(price), sum(volume) FROM stock \
             WHERE time >= {lo} AND time < {hi} GROUP BY time(1m) fill(none)"
        );
        let rows = server.rows(&q);
        let mut want: Vec<(i64, Vec<&Ev>)> = Vec::new();
        for e in &in_range {
            let start = e.0 - e.0.rem_euclid(60_000_000_000);
            match want.last_mut() {
                Some((s, list)) if *s == start => list.push(e),
                _ => want.push((start, vec![e])),
            }
        }
        assert_eq!(rows.len(), want.len(), "seed {SEED:#x}: windows");
        for (row, (start, list)) in rows.iter().zip(&want) {
            let prices: Vec<f64> = list.iter().map(|e| e.2).collect();
            let mean = prices.iter().sum::<f64>() / prices.len() as f64;
            assert_eq!(row[0], json!(start));
            assert_eq!(row[1], json!(list.len()), "seed {SEED:#x}: count at {start}");
            assert!((row[2].as_f64().unwrap() - mean).abs() < 1e-9, "seed {SEED:#x}: mean at {start}");
            assert_eq!(row[3], json!(prices.iter().cloned().fold(f64::INFINITY, f64::min)));
            assert_eq!(row[4], json!(prices.iter().cloned().fold(f64::NEG_INFINITY, f64::max)));
            assert_eq!(
                row[5],
                json!(list.iter().map(|e| e.3).sum::<i64>()),
                "seed {SEED:#x}: sum at {start}"
            );
        }
        // Attribute filter (min/max pruning in the tree).
        let rows = server
            .rows(&format!("SELECT sequence FROM stock WHERE price > 1500 AND time >= {lo} AND time < {hi}"));
        let want: Vec<Value> = in_range.iter().filter(|e| e.2 > 1500.0).map(|e| json!([e.0, e.1])).collect();
        assert_eq!(rows, want, "seed {SEED:#x}: filter");
        let rows = server.rows("SELECT count(sequence) FROM stock");
        assert_eq!(rows[0][1], json!(model.len()), "seed {SEED:#x}: every event counted");
        let fields = server.rows("SHOW FIELD KEYS FROM stock");
        assert!(
            fields.contains(&json!(["price", "float"])) && fields.contains(&json!(["symbol", "integer"]))
        );
        let names = server.rows("SHOW MEASUREMENTS");
        assert!(names.contains(&json!(["stock"])) && names.contains(&json!(["cpu"])), "{names:?}");
        let tags = server.query("SELECT price FROM stock GROUP BY symbol");
        assert!(tags["results"][0]["error"].as_str().unwrap().contains("GROUP BY tags is not supported"));
    };
    check(&server);
    server.stop();

    let server = Server::start(dir.path());
    check(&server);
    let list = server.call("GET", "/api/v1/streams?db=mydb", b"").json();
    assert_eq!(list["streams"][0]["events"], json!(model.len()), "{list}");
    assert_eq!(list["streams"][0]["attributes"][2], json!({"name": "price", "type": "f64"}));
    assert_eq!(server.call("DELETE", "/api/v1/streams/mydb/stock", b"").status, 204);
    assert_eq!(server.call("DELETE", "/api/v1/streams/mydb/stock", b"").status, 404);
    assert!(server.rows("SELECT count(sequence) FROM stock").is_empty(), "the stream is gone");
    server.stop();
    let server = Server::start(dir.path());
    assert_eq!(server.call("GET", "/api/v1/streams", b"").json(), json!({"streams": []}));
    server.stop();
}

/// A raw SELECT of a stream larger than a scan chunk streams out of
/// `/query` (issue 22 item 3): as one document sent in transfer-encoded
/// pieces, and with `chunked=true` as InfluxDB's lines, both with every
/// event once in time order; OFFSET and LIMIT cross the chunks.
#[test]
fn a_large_raw_select_of_a_stream_streams_out_of_query() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    assert_eq!(server.call("POST", "/query?q=CREATE+DATABASE+mydb", b"").status, 200);
    let schema = json!({"db": "mydb", "name": "stock", "attributes": [
        {"name": "sequence", "type": "i64"}, {"name": "symbol", "type": "i32"},
        {"name": "price", "type": "f64"}, {"name": "volume", "type": "i32"}]});
    assert_eq!(server.call("POST", "/api/v1/streams", schema.to_string().as_bytes()).status, 201);
    let mut rng = ChaCha8Rng::seed_from_u64(SEED ^ 0x5E);
    let model = events(&mut rng, 10_000);
    for chunk in model.chunks(2_500) {
        let body: Vec<String> = chunk.iter().map(line).collect();
        let response = server.call("POST", "/write?db=mydb", body.join("\n").as_bytes());
        assert_eq!(response.status, 204, "seed {SEED:#x}: {}", response.text());
    }
    let mut sorted = model.clone();
    sorted.sort_by_key(|e| e.0);
    let want: Vec<Value> = sorted.iter().map(|e| json!([e.0, e.1])).collect();

    let q = encode("SELECT sequence FROM stock");
    let whole = server.call("GET", &format!("/query?db=mydb&epoch=ns&q={q}"), b"");
    assert_eq!(whole.status, 200, "{}", whole.text());
    assert_eq!(whole.header("transfer-encoding"), Some("chunked"), "sent as it is read");
    assert_eq!(whole.json()["results"][0]["series"][0]["values"], json!(want), "seed {SEED:#x}");

    let lines =
        server.call("GET", &format!("/query?db=mydb&epoch=ns&chunked=true&chunk_size=3000&q={q}"), b"");
    assert_eq!(lines.status, 200, "{}", lines.text());
    let mut got = Vec::new();
    for line in lines.text().lines() {
        let piece: Value = serde_json::from_str(line).unwrap();
        let values = piece["results"][0]["series"][0]["values"].as_array().cloned().unwrap_or_default();
        assert!(values.len() <= 3000, "a piece holds at most chunk_size rows");
        got.extend(values);
    }
    assert_eq!(got, want, "seed {SEED:#x}: chunked lines hold every event once, in order");

    let rows = server.rows("SELECT sequence FROM stock LIMIT 5 OFFSET 4094");
    assert_eq!(rows, want[4094..4099].to_vec(), "seed {SEED:#x}: OFFSET and LIMIT past the first chunk");
    server.stop();
}
