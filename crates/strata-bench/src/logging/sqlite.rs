//! SQLite as `bench logging` measures it: the bundled SQLite (rusqlite,
//! `bundled` feature), one database file per window, `journal_mode=WAL`,
//! `synchronous=FULL` (WAL synced at every commit) or `NORMAL` (WAL synced
//! only at checkpoints: a commit survives a process crash but not a power
//! loss), default auto-checkpoint (1000 pages).
//!
//! Every thread has its own connection and commits one row per transaction:
//! `BEGIN IMMEDIATE; INSERT INTO kv(key, value) VALUES (?, ?); COMMIT`.
//! Writers are serialized by SQLite's WAL write lock; a waiting writer's busy
//! handler retries at once (yield, then 20 µs sleeps) instead of SQLite's
//! default back-off of milliseconds, so contention costs what the lock costs.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use rusqlite::{params, Connection, TransactionBehavior};

use super::record::key_of;
use super::window::{run_window, WindowOutcome};

/// The `synchronous` setting of a run.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SqliteSync {
    Full,
    Normal,
}

impl SqliteSync {
    pub fn pragma_value(self) -> &'static str {
        match self {
            SqliteSync::Full => "FULL",
            SqliteSync::Normal => "NORMAL",
        }
    }

    /// SQLite's numeric code of the setting (`PRAGMA synchronous` reads it back).
    fn code(self) -> i64 {
        match self {
            SqliteSync::Full => 2,
            SqliteSync::Normal => 1,
        }
    }
}

/// Busy-handler attempts after which a writer gives up (minutes of waiting).
const MAX_BUSY_ATTEMPTS: i32 = 10_000_000;
const SPIN_ATTEMPTS: i32 = 100;

/// The SQLite library version linked in (the bundled amalgamation).
pub fn sqlite_version() -> &'static str {
    rusqlite::version()
}

/// Opens `path` as the benchmark configures every connection.
pub fn open_connection(path: &Path, sync: SqliteSync) -> anyhow::Result<Connection> {
    let mut conn = Connection::open(path).with_context(|| format!("opening SQLite at {}", path.display()))?;
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
    anyhow::ensure!(mode.eq_ignore_ascii_case("wal"), "{}: journal_mode is {mode}, not wal", path.display());
    conn.pragma_update(None, "synchronous", sync.pragma_value())?;
    let code: i64 = conn.query_row("PRAGMA synchronous", [], |row| row.get(0))?;
    anyhow::ensure!(code == sync.code(), "{}: synchronous is {code}, wanted {:?}", path.display(), sync);
    conn.busy_handler(Some(|attempts: i32| {
        if attempts < SPIN_ATTEMPTS {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(20));
        }
        attempts < MAX_BUSY_ATTEMPTS
    }))?;
    Ok(conn)
}

/// Creates the database at `path` (which must not exist) with its one table.
pub fn create_database(path: &Path, sync: SqliteSync) -> anyhow::Result<()> {
    anyhow::ensure!(!path.exists(), "{} already exists", path.display());
    let conn = open_connection(path, sync)?;
    conn.execute_batch("CREATE TABLE kv (key BLOB PRIMARY KEY, value BLOB NOT NULL)")?;
    Ok(())
}

/// One window of `threads` connections committing one row per transaction
/// into a new database at `path`.
pub fn sqlite_window(
    path: &Path,
    sync: SqliteSync,
    threads: usize,
    window: Duration,
    value: &[u8],
) -> anyhow::Result<WindowOutcome> {
    create_database(path, sync)?;
    run_window(
        threads,
        window,
        |_| open_connection(path, sync),
        |conn, t, seq| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.prepare_cached("INSERT INTO kv (key, value) VALUES (?1, ?2)")?
                .execute(params![&key_of(t, seq)[..], value])?;
            tx.commit()?;
            Ok(())
        },
    )
}

/// Rows in the table of the database at `path`.
pub fn count_rows(path: &Path) -> anyhow::Result<u64> {
    let conn = Connection::open(path).with_context(|| format!("opening SQLite at {}", path.display()))?;
    let n: i64 = conn.query_row("SELECT count(*) FROM kv", [], |row| row.get(0))?;
    Ok(n as u64)
}
