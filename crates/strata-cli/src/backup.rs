//! `strata backup DIR` and `strata restore DIR`. Backup opens the data
//! directory itself when no server holds it (recovery, checkpoint, copy);
//! when a running server holds it, it asks that server with
//! `POST /debug/backup?dir=DIR` (plain HTTP to `server.bind`, with the auth
//! token), which takes the backup while writes go on. Restore writes into
//! a stopped server's data directory (it takes the directory's lock).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use strata_engine::backup::restore_backup;
use strata_engine::{Db, DbError};

use crate::open_args::{open_db, OpenArgs};

#[derive(Args)]
pub struct BackupArgs {
    #[command(flatten)]
    open: OpenArgs,
    /// Directory to write the backup into (created; must be empty).
    dir: PathBuf,
    /// Address of the running server (default: `server.bind` of the configuration).
    #[arg(long)]
    server: Option<String>,
    /// Token of the running server (`server.auth_token`).
    #[arg(long, env = "STRATA_AUTH_TOKEN")]
    auth_token: Option<String>,
}

#[derive(Args)]
pub struct RestoreArgs {
    #[command(flatten)]
    open: OpenArgs,
    /// Backup directory (written by `strata backup`).
    dir: PathBuf,
    /// Replace the contents of a non-empty data directory.
    #[arg(long)]
    force: bool,
}

pub fn run_backup(args: BackupArgs) -> anyhow::Result<()> {
    let config = args.open.load()?;
    let dir = std::path::absolute(&args.dir).with_context(|| format!("{}", args.dir.display()))?;
    match open_db(&config) {
        Ok(db) => {
            let m = db.backup(&dir)?;
            println!(
                "backup of checkpoint {} ({} files) written to {}",
                m.checkpoint_seq,
                m.files.len(),
                dir.display()
            );
            Ok(())
        }
        Err(e) if matches!(e.downcast_ref::<DbError>(), Some(DbError::Locked { .. })) => {
            let server = args.server.unwrap_or(config.server.bind.clone());
            let token = args.auth_token.or(config.server.auth_token.clone());
            println!("{} is in use; asking the server at {server}", config.data_dir.display());
            ask_server(&server, token.as_deref(), &dir)
        }
        Err(e) => Err(e),
    }
}

/// `POST /debug/backup` over plain HTTP/1.1; prints the server's answer.
fn ask_server(server: &str, token: Option<&str>, dir: &Path) -> anyhow::Result<()> {
    let mut stream = TcpStream::connect(server).with_context(|| format!("connecting to {server}"))?;
    let query: String = url_encode(&dir.display().to_string());
    let auth = token.map(|t| format!("Authorization: Token {t}\r\n")).unwrap_or_default();
    write!(
        stream,
        "POST /debug/backup?dir={query} HTTP/1.1\r\nHost: {server}\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head.split_whitespace().nth(1).unwrap_or("");
    if status != "200" {
        bail!("the server answered {status}: {}", body.trim());
    }
    println!("{}", body.trim());
    Ok(())
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub fn run_restore(args: RestoreArgs) -> anyhow::Result<()> {
    let config = args.open.load()?;
    // Hold the data directory's lock while restoring: a running server must
    // not see its files replaced.
    std::fs::create_dir_all(&config.data_dir).with_context(|| format!("{}", config.data_dir.display()))?;
    let _lock = Db::lock_data_dir(&config)?;
    let m = restore_backup(&args.dir, &config.data_dir, args.force)?;
    println!(
        "restored checkpoint {} ({} files, every CRC32C checked) into {}",
        m.checkpoint_seq,
        m.files.len(),
        config.data_dir.display()
    );
    Ok(())
}
