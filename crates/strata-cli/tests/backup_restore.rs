//! `strata backup` against a running `strata serve` (it asks the server,
//! with the auth token, over `POST /debug/backup`), then `strata restore`
//! into a new data directory and a server started on it answers every point
//! written before the backup. Restore refuses a non-empty directory without
//! `--force`; the backup route refuses a request without the token.

mod common;
use std::process::Command;

use common::{free_port, http, query_rows, start};

fn strata(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_strata")).args(args).output().expect("run strata")
}

#[test]
fn an_online_backup_restores_into_a_new_data_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let port = free_port();
    let mut server = start(&data, "[server]\nauth_token = \"s3cret\"\n", "", port);
    let lines: String = (0..200).map(|i| format!("cpu,host=h{} v={i}i {}\n", i % 4, 1_000 + i)).collect();
    let write = "/write?db=strata&u=x&p=s3cret";
    assert_eq!(http(port, "POST", write, lines.as_bytes()).unwrap().0, 204);
    let backup_dir = tmp.path().join("backup");
    let (status, _) =
        http(port, "POST", &format!("/debug/backup?dir={}", backup_dir.display()), b"").unwrap();
    assert_eq!(status, 401, "the backup route is behind the auth layer");

    let out = strata(&[
        "backup".as_ref(),
        "--data-dir".as_ref(),
        data.as_os_str(),
        "--server".as_ref(),
        format!("127.0.0.1:{port}").as_ref(),
        "--auth-token".as_ref(),
        "s3cret".as_ref(),
        backup_dir.as_os_str(),
    ]);
    let said = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("asking the server"), "{said}");
    assert!(backup_dir.join("BACKUP").exists(), "{said}");
    // Writes after the backup are not in it.
    assert_eq!(http(port, "POST", write, b"cpu,host=late v=1i 5000\n").unwrap().0, 204);
    server.kill().unwrap();
    server.wait().unwrap();

    let fresh_tmp = tempfile::tempdir().unwrap();
    let restored = fresh_tmp.path().join("data");
    let restore = |force: bool| {
        let mut args: Vec<&std::ffi::OsStr> =
            vec!["restore".as_ref(), "--data-dir".as_ref(), restored.as_os_str(), backup_dir.as_os_str()];
        if force {
            args.push("--force".as_ref());
        }
        strata(&args)
    };
    assert!(restore(false).status.success());
    let again = restore(false);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"), "{again:?}");
    assert!(restore(true).status.success());

    let port = free_port();
    let mut copy = start(&restored, "", "", port);
    let rows = query_rows(port, "strata", "SELECT v FROM cpu");
    copy.kill().unwrap();
    copy.wait().unwrap();
    assert_eq!(rows.len(), 200, "{rows:?}");
    assert!(rows.iter().all(|r| r[0].as_i64().unwrap() < 5000), "the late point is not in the backup");
}
