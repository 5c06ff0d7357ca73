//! HTTPS with InfluxDB's own Python client (`influxdb` on PyPI, `.ci/run`
//! installs it): `strata serve` with `https_enabled` and a self-signed
//! certificate; the client connects with `ssl=True`, writes and queries,
//! also with `chunked=True` (docs/http-api.md, "HTTPS" and `/query`). The script is `influx_python_https.py`
//! beside this file.

use std::process::{Command, Stdio};

mod common;
use common::free_port;

#[test]
fn the_python_influx_client_writes_and_queries_over_https() {
    let tmp = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap().self_signed(&key).unwrap();
    let (cert_path, key_path) = (tmp.path().join("cert.pem"), tmp.path().join("key.pem"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    let config = tmp.path().join("strata.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nhttps_enabled = true\nhttps_certificate = {:?}\nhttps_private_key = {:?}\n",
            cert_path.display().to_string(),
            key_path.display().to_string()
        ),
    )
    .unwrap();
    let port = free_port();
    let stderr_path = tmp.path().join("serve-stderr.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .args(["--protocol", "serial-ssd", "--no-sql", "--bind", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .expect("spawn strata serve");

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/influx_python_https.py");
    let ran = Command::new("python3")
        .args([script, &port.to_string()])
        .output()
        .expect("run python3 (the influxdb package: `python3 -m pip install influxdb`, as .ci/run does)");
    child.kill().unwrap();
    child.wait().unwrap();
    let log = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    assert!(
        ran.status.success(),
        "the Python client failed: {}\nserver log:\n{log}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert!(log.contains(&format!("listening on https://127.0.0.1:{port}")), "{log}");
    let points: serde_json::Value = serde_json::from_slice(&ran.stdout).expect("the script prints JSON");
    let expected = serde_json::json!([
        {"time": 1_000_000_000, "v": 1.5, "host": "a"},
        {"time": 2_000_000_000, "v": 2.5, "host": "b"}
    ]);
    assert_eq!(points["points"], expected);
    assert_eq!(points["chunked"], expected, "chunked=true, one row per chunk, joined by the client");
}
