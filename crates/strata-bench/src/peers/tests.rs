//! Tests of peer management. Without peers: names, generated configuration,
//! version strings, count queries and answers, directory sizes, the settle
//! rule, where each peer keeps a warm-up apart, and the process lifecycle
//! with ordinary programs (`sh`, `sleep`). With a peer binary present (never
//! installed from here): start it, warm it up in another database and
//! measurement, load a tiny data set, quiesce, count exactly the counted
//! rows, stop and leave nothing behind; skipped with a printed reason when
//! the peer is absent.

use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::ProgressBar;
use serde_json::json;

use super::config::{
    influxdb_launch, influxdb_toml, questdb_launch, questdb_server_conf, victoriametrics_launch, Launch,
};
use super::count::{
    count_in_prometheus_response, count_in_questdb_response, questdb_count_sql, questdb_count_sql_of,
    questdb_exec_path, victoriametrics_count_path,
};
use super::disk::{allocated_bytes, wait_until_stable};
use super::install::{
    java_major, parse_influxd_version, parse_java_version, questdb_jar_url, tail, Installed,
};
use super::interrupt;
use super::kind::{parse_peer_list, PeerKind, QUESTDB_VERSION};
use super::process::{free_port, PeerProcess};
use super::server::{warmup_bytes_at_rest, RunningPeer};
use super::{ensure_installed, why_not_installed};
use crate::ingest::dataset::Dataset;
use crate::ingest::generator::{CpuSpec, MEASUREMENT, WARMUP_MEASUREMENT};
use crate::ingest::load::{load, IngestEndpoint};
use crate::ingest::queries::{compare_answers, run_queries, tsbs_queries};
use crate::ingest::queries_tests::expected_answers;

#[test]
fn peer_names_parse_in_order_without_duplicates() {
    assert_eq!(parse_peer_list("").unwrap(), PeerKind::ALL);
    assert_eq!(parse_peer_list("all").unwrap(), PeerKind::ALL);
    assert_eq!(
        parse_peer_list("questdb, InfluxDB,questdb").unwrap(),
        [PeerKind::QuestDb, PeerKind::InfluxDb]
    );
    assert_eq!(parse_peer_list("victoria-metrics").unwrap(), [PeerKind::VictoriaMetrics]);
    assert!(parse_peer_list("influxdb,rocksdb").unwrap_err().contains("rocksdb"));
    assert!(parse_peer_list(",").is_err());
    for k in PeerKind::ALL {
        assert_eq!(k.name().parse::<PeerKind>().unwrap(), k);
        assert!(!k.durability().is_empty() && !k.source().is_empty());
    }
    assert!(PeerKind::InfluxDb.durability().contains("wal-fsync-delay = \"0s\""));
    assert!(PeerKind::QuestDb.durability().contains("nosync"));
}

#[test]
fn influxdb_config_keeps_everything_in_the_root_on_loopback_with_fsync_per_write() {
    let root = Path::new("/tmp/peer \"x\"");
    let toml = influxdb_toml(root, 18086, 18088);
    for want in [
        "reporting-enabled = false",
        "bind-address = \"127.0.0.1:18088\"",
        "bind-address = \"127.0.0.1:18086\"",
        "dir = \"/tmp/peer \\\"x\\\"/meta\"",
        "wal-dir = \"/tmp/peer \\\"x\\\"/wal\"",
        "wal-fsync-delay = \"0s\"",
        "store-enabled = false",
        "cache-snapshot-write-cold-duration = \"1s\"",
    ] {
        assert!(toml.contains(want), "missing {want} in\n{toml}");
    }
    assert!(!toml.contains(":8086"), "never InfluxDB's default port");
    // Every section header appears once (TOML forbids repeats).
    for section in ["[meta]", "[data]", "[http]", "[monitor]", "[continuous_queries]", "[logging]"] {
        assert_eq!(toml.matches(section).count(), 1, "{section}");
    }
    let l = influxdb_launch(Path::new("/usr/bin/influxd"), Path::new("/r"), 1, 2);
    assert_eq!(l.args, ["-config", "/r/influxdb.conf"]);
    assert_eq!(l.files[0].0, PathBuf::from("/r/influxdb.conf"));
    assert_eq!((l.health_path, l.http_port, l.data_dir.as_path()), ("/ping", 1, Path::new("/r")));
}

#[test]
fn victoriametrics_keeps_old_samples_and_listens_on_loopback() {
    let l = victoriametrics_launch(Path::new("/usr/bin/victoria-metrics"), Path::new("/r"), 18428);
    assert!(l.args.contains(&"-retentionPeriod=100y".to_string()), "{:?}", l.args);
    assert!(l.args.contains(&"-httpListenAddr=127.0.0.1:18428".to_string()));
    assert!(l.args.contains(&"-storageDataPath=/r/data".to_string()));
    assert_eq!((l.health_path, l.data_dir.as_path()), ("/health", Path::new("/r/data")));
    assert!(l.files.is_empty());
}

#[test]
fn questdb_runs_as_a_module_with_its_own_server_conf() {
    let conf = questdb_server_conf(19000);
    for want in [
        "http.bind.to=127.0.0.1:19000",
        "pg.enabled=false",
        "line.tcp.enabled=false",
        "telemetry.enabled=false",
        "cairo.commit.mode=nosync",
    ] {
        assert!(conf.lines().any(|l| l == want), "missing {want} in\n{conf}");
    }
    let l: Launch = questdb_launch(Path::new("/usr/bin/java"), Path::new("/c/q.jar"), Path::new("/r"), 19000);
    assert_eq!(l.args, ["-p", "/c/q.jar", "-m", "io.questdb/io.questdb.ServerMain", "-d", "/r"]);
    assert_eq!(l.files[0].0, PathBuf::from("/r/conf/server.conf"));
    assert_eq!(l.data_dir, PathBuf::from("/r/db"));
    let (file, url) = questdb_jar_url("9.3.4");
    assert_eq!(file, "questdb-9.3.4.jar");
    assert_eq!(url, "https://repo1.maven.org/maven2/org/questdb/questdb/9.3.4/questdb-9.3.4.jar");
}

#[test]
fn versions_are_read_from_tool_output() {
    assert_eq!(
        parse_influxd_version("InfluxDB v1.6.7~rc0 (git: unknown unknown)\n").as_deref(),
        Some("1.6.7~rc0")
    );
    assert_eq!(parse_influxd_version("nothing"), None);
    let java = "openjdk version \"17.0.15\" 2025-04-15\nOpenJDK Runtime Environment (build 17.0.15+6)\n";
    assert_eq!(parse_java_version(java).as_deref(), Some("17.0.15"));
    assert_eq!(java_major("17.0.15"), Some(17));
    assert_eq!(java_major("1.8.0_392"), Some(8));
    assert_eq!(java_major("21"), Some(21));
    assert_eq!(java_major("x"), None);
    assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
}

#[test]
fn victoriametrics_counts_over_exactly_the_data_sets_time_range() {
    // 2016-01-01T00:00:00Z, 360 rows 10 s apart: the last at +3590 s.
    let spec = CpuSpec::new(1, 100, 360);
    let path = victoriametrics_count_path(&spec, MEASUREMENT);
    let start_s = 1_451_606_400;
    let at = start_s + 3590 + 1;
    assert!(path.starts_with("/api/v1/query?query=sum%28count_over_time%28cpu_usage_user%5B"), "{path}");
    assert!(
        path.contains(&format!("%5B{}s%5D", at - (start_s - 1))),
        "window from 1 s before the first row: {path}"
    );
    assert!(path.ends_with(&format!("&time={at}")), "{path}");
    let warm = victoriametrics_count_path(&spec, WARMUP_MEASUREMENT);
    assert!(warm.contains("count_over_time%28cpu_warmup_usage_user%5B"), "the warm-up's own metric: {warm}");
}

#[test]
fn counts_are_read_from_prometheus_and_questdb_answers() {
    let ok = json!({"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1451610000, "36000"]}]}});
    assert_eq!(count_in_prometheus_response(&ok).unwrap(), 36000);
    let empty = json!({"status": "success", "data": {"resultType": "vector", "result": []}});
    assert_eq!(count_in_prometheus_response(&empty).unwrap(), 0);
    let bad = json!({"status": "error", "errorType": "bad_data", "error": "unknown function"});
    assert!(count_in_prometheus_response(&bad).unwrap_err().to_string().contains("unknown function"));
    let two = json!({"status": "success", "data": {"result": [{"value": [0, "1"]}, {"value": [0, "2"]}]}});
    assert!(count_in_prometheus_response(&two).is_err(), "an unsummed answer is not a count");
    let frac = json!({"status": "success", "data": {"result": [{"value": [0, "1.5"]}]}});
    assert!(count_in_prometheus_response(&frac).is_err());

    let q = json!({"query": "select count() from cpu", "columns": [{"name": "count()", "type": "LONG"}], "dataset": [[36000]], "count": 1});
    assert_eq!(count_in_questdb_response(&q).unwrap(), 36000);
    let missing = json!({"query": "select count() from cpu", "error": "table does not exist [table=cpu]", "position": 21});
    assert!(count_in_questdb_response(&missing).unwrap_err().to_string().contains("does not exist"));
    assert!(count_in_questdb_response(&json!({"dataset": []})).is_err());
    assert_eq!(questdb_count_sql(), "select count() from cpu");
    assert_eq!(questdb_count_sql_of(WARMUP_MEASUREMENT), "select count() from cpu_warmup");
    assert_eq!(questdb_exec_path("select 1"), "/exec?query=select%201");
}

#[test]
fn allocated_bytes_sum_a_tree_and_skip_holes() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(allocated_bytes(&dir.path().join("absent")).unwrap(), 0);
    let empty = allocated_bytes(dir.path()).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/a"), vec![7u8; 100_000]).unwrap();
    let sparse = std::fs::File::create(dir.path().join("sparse")).unwrap();
    sparse.set_len(64 << 20).unwrap();
    drop(sparse);
    let total = allocated_bytes(dir.path()).unwrap();
    let grown = total - empty;
    assert!(grown >= 100_000, "the written file counts: {grown}");
    assert!(grown < 16 << 20, "a 64 MiB hole allocates (almost) nothing: {grown}");
}

#[test]
fn a_warmup_kept_apart_is_measured_by_its_own_directories() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |rel: &str, bytes: usize| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, vec![1u8; bytes]).unwrap();
    };
    // InfluxDB: data/<db> and wal/<db> per database.
    write("data/warmup/autogen/1/000001.tsm", 50_000);
    write("wal/warmup/autogen/1/_00001.wal", 20_000);
    write("data/benchmark/autogen/2/000001.tsm", 300_000);
    let influx =
        warmup_bytes_at_rest(PeerKind::InfluxDb, root, "warmup", WARMUP_MEASUREMENT).unwrap().unwrap();
    assert!((70_000..300_000).contains(&influx), "the warm-up database only: {influx}");
    assert_eq!(warmup_bytes_at_rest(PeerKind::InfluxDb, root, "nothing", WARMUP_MEASUREMENT).unwrap(), None);
    // QuestDB: one directory per table, `<name>~<id>`; `cpu~1` is not the warm-up's.
    write("cpu_warmup~2/2016-01-01/usage_user.d", 40_000);
    write("cpu_warmup~2/wal1/0/usage_user.d", 10_000);
    write("cpu~1/2016-01-01/usage_user.d", 400_000);
    let quest = warmup_bytes_at_rest(PeerKind::QuestDb, root, "warmup", WARMUP_MEASUREMENT).unwrap().unwrap();
    assert!((50_000..400_000).contains(&quest), "the warm-up table only: {quest}");
    let counted = warmup_bytes_at_rest(PeerKind::QuestDb, root, "benchmark", MEASUREMENT).unwrap().unwrap();
    assert!(
        counted >= 400_000 && counted < 400_000 + quest,
        "`cpu` is not a prefix match of `cpu_warmup`: {counted}"
    );
    // VictoriaMetrics keeps every series in shared parts.
    assert_eq!(
        warmup_bytes_at_rest(PeerKind::VictoriaMetrics, root, "warmup", WARMUP_MEASUREMENT).unwrap(),
        None
    );
}

#[test]
fn settling_waits_for_repeated_equal_sizes_or_gives_up() {
    let mut sizes = vec![1u64, 5, 5, 9, 9, 9, 9].into_iter();
    let s = wait_until_stable(|| Ok(sizes.next().unwrap_or(9)), Duration::ZERO, 3, Duration::from_secs(5))
        .unwrap();
    assert!(s.stable);
    assert_eq!(s.bytes, 9);
    let mut n = 0u64;
    let s = wait_until_stable(
        || {
            n += 1;
            Ok(n)
        },
        Duration::from_millis(1),
        3,
        Duration::from_millis(30),
    )
    .unwrap();
    assert!(!s.stable, "an always-growing directory never settles");
    assert!(s.bytes >= 2);
}

fn shell_launch(root: &Path, script: &str) -> Launch {
    Launch {
        program: PathBuf::from("/bin/sh"),
        args: vec!["-c".into(), script.into()],
        files: vec![(root.join("conf/x.conf"), "hello\n".into())],
        data_dir: root.join("data"),
        http_port: free_port().unwrap(),
        health_path: "/health",
    }
}

#[test]
fn a_peer_that_exits_fails_its_start_with_its_output() {
    let root = tempfile::tempdir().unwrap();
    let path = root.path().to_path_buf();
    let launch = shell_launch(&path, "cat conf/x.conf; echo boom >&2; exit 3");
    let mut p = PeerProcess::spawn("fake", root, &launch).unwrap();
    assert_eq!(std::fs::read_to_string(path.join("conf/x.conf")).unwrap(), "hello\n");
    assert!(path.join("data").is_dir());
    let err = format!("{:#}", p.wait_healthy(launch.health_path, Duration::from_secs(30)).unwrap_err());
    assert!(err.contains("exited") && err.contains("boom") && err.contains("hello"), "{err}");
    drop(p);
    assert!(!path.exists(), "the root directory is removed");
}

#[test]
fn dropping_a_peer_kills_it_and_removes_its_directory() {
    let root = tempfile::tempdir().unwrap();
    let path = root.path().to_path_buf();
    let launch = shell_launch(&path, "exec sleep 60");
    let p = PeerProcess::spawn("sleeper", root, &launch).unwrap();
    let pid = p.pid().unwrap();
    assert!(interrupt::registered_pids().contains(&pid));
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    drop(p);
    assert!(!interrupt::registered_pids().contains(&pid));
    assert!(!Path::new(&format!("/proc/{pid}")).exists(), "killed and reaped");
    assert!(!path.exists());
}

#[test]
fn stopping_a_peer_sends_sigterm_first() {
    let root = tempfile::tempdir().unwrap();
    let path = root.path().to_path_buf();
    let marks = tempfile::tempdir().unwrap();
    let mark = marks.path().join("term-mark");
    // The shell traps TERM and exits 0 leaving a mark; a SIGKILL would leave none.
    let script =
        format!("trap 'echo got-term > {}; exit 0' TERM; while :; do sleep 0.05; done", mark.display());
    let launch = shell_launch(&path, &script);
    let p = PeerProcess::spawn("trapper", root, &launch).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    p.stop().unwrap();
    assert_eq!(std::fs::read_to_string(&mark).unwrap().trim(), "got-term");
    assert!(!path.exists());
}

/// What one load into a real peer showed.
struct RealPeerRun {
    rows_loaded: u64,
    rows_counted: u64,
    data_bytes: u64,
    dir_removed: bool,
}

/// Starts `kind` if it is on the machine, warms it up with 2 hosts x 15
/// rows in database `warmup` as `cpu_warmup`, loads 3 hosts x 20 rows,
/// checks that the count and the query answers see only those, stops it;
/// None (and why, printed) when it is not installed. A peer that does not
/// show the rows it acknowledged within the quiesce step's wait (QuestDB
/// applies its WAL asynchronously, and once took longer than that on a
/// loaded CI machine) gets one more try on a fresh instance, its diagnosis
/// printed; answers that differ once it settled fail at once.
fn load_into_real_peer(kind: PeerKind) -> Option<RealPeerRun> {
    if let Some(why) = why_not_installed(kind) {
        eprintln!("SKIPPED: {kind} is not installed here ({why}); this test never installs it");
        return None;
    }
    let installed = ensure_installed(kind).unwrap();
    assert!(!installed.version.is_empty());
    let mut unsettled = Vec::new();
    for attempt in 1..=2 {
        match try_real_peer(kind, &installed) {
            Ok(run) => return Some(run),
            Err(e) => {
                let PeerRunError::Unsettled { step, diagnosis } = &e;
                eprintln!("{kind}, attempt {attempt}: the {step} did not settle: {diagnosis}");
                unsettled.push(e);
            }
        }
    }
    panic!("{kind} did not show its acknowledged rows in time, twice: {unsettled:#?}");
}

/// One run of [`load_into_real_peer`] on a fresh instance; `Err` with the
/// peer's diagnosis if a quiesce step did not settle.
/// Why a run of [`try_real_peer`] did not count.
#[derive(Debug)]
enum PeerRunError {
    /// A quiesce step did not settle; the peer's diagnosis.
    Unsettled { step: &'static str, diagnosis: String },
}

fn try_real_peer(kind: PeerKind, installed: &Installed) -> Result<RealPeerRun, PeerRunError> {
    let parent = tempfile::tempdir().unwrap();
    let spec = CpuSpec::new(11, 3, 20);
    let data = Dataset::generate(&spec, 7).unwrap();
    let mut peer = RunningPeer::start(installed, parent.path(), "benchmark", &spec).unwrap();
    let root = peer.process.root().to_path_buf();
    assert!(root.starts_with(parent.path()));
    let warm_spec = CpuSpec::new(11, 2, 15);
    let warm_data = Dataset::generate_as(&warm_spec, 7, WARMUP_MEASUREMENT).unwrap();
    let warm = peer.endpoint.for_warmup("warmup", warm_spec, WARMUP_MEASUREMENT);
    warm.prepare().unwrap();
    load(&warm, &warm_data, 2, &ProgressBar::hidden()).unwrap();
    if !peer.quiesce_after(&warm, 30).unwrap().settled {
        let diagnosis = peer.diagnosis(&warm);
        peer.stop().unwrap();
        return Err(PeerRunError::Unsettled { step: "warm-up", diagnosis });
    }
    assert_eq!(warm.count_rows().unwrap(), 30, "{kind}: the warm-up's rows are in its own place");
    peer.endpoint.prepare().unwrap();
    let outcome = load(&peer.endpoint, &data, 2, &ProgressBar::hidden()).unwrap();
    let q = peer.quiesce(60).unwrap();
    if !q.settled {
        let diagnosis = peer.diagnosis(&peer.endpoint);
        peer.stop().unwrap();
        return Err(PeerRunError::Unsettled { step: "load", diagnosis });
    }
    let rows_counted = peer.endpoint.count_rows().unwrap();
    if kind == PeerKind::QuestDb {
        let d = peer.diagnosis(&peer.endpoint);
        assert!(d.starts_with("count 60; wal_tables(): name=\"cpu\" suspended=false"), "{d}");
    }
    // The TSBS-style queries give the answers computed from the data (no queries for VictoriaMetrics).
    if let Some(target) = kind.query_target(&peer.endpoint.http.url) {
        let expected = expected_answers(&data, 11);
        for o in run_queries(&target, "benchmark", &tsbs_queries(&spec, 11), 1) {
            let (answer, _) = o.result.unwrap_or_else(|e| panic!("{kind} {}: {e}", o.kind.name()));
            if let Err(diff) = compare_answers(&expected[&o.kind], &answer) {
                panic!(
                    "{kind} {}: differs from the data: {diff}; {}",
                    o.kind.name(),
                    peer.diagnosis(&peer.endpoint)
                );
            }
        }
    }
    peer.stop().unwrap();
    Ok(RealPeerRun {
        rows_loaded: outcome.rows,
        rows_counted,
        data_bytes: q.bytes,
        dir_removed: !root.exists(),
    })
}

#[test]
fn real_influxdb_loads_counts_and_cleans_up() {
    let run = load_into_real_peer(PeerKind::InfluxDb);
    if let Some(run) = &run {
        assert_eq!((run.rows_loaded, run.rows_counted), (60, 60), "InfluxDB holds every row");
        assert!(run.data_bytes > 0, "InfluxDB: the data directory held something");
        assert!(run.dir_removed, "InfluxDB: the temporary directory is removed");
    }
}

#[test]
fn real_victoriametrics_loads_counts_and_cleans_up() {
    let run = load_into_real_peer(PeerKind::VictoriaMetrics);
    if let Some(run) = &run {
        assert_eq!((run.rows_loaded, run.rows_counted), (60, 60), "VictoriaMetrics holds every row");
        assert!(run.data_bytes > 0, "VictoriaMetrics: the data directory held something");
        assert!(run.dir_removed, "VictoriaMetrics: the temporary directory is removed");
    }
}

#[test]
fn real_questdb_loads_counts_and_cleans_up() {
    assert_eq!(QUESTDB_VERSION.split('.').count(), 3);
    let run = load_into_real_peer(PeerKind::QuestDb);
    if let Some(run) = &run {
        assert_eq!((run.rows_loaded, run.rows_counted), (60, 60), "QuestDB holds every row");
        assert!(run.data_bytes > 0, "QuestDB: the data directory held something");
        assert!(run.dir_removed, "QuestDB: the temporary directory is removed");
    }
}
