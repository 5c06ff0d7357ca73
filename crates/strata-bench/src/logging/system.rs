//! The systems `strata bench logging` compares (issue 6, item 4; DESIGN.md
//! section 6, "Peers"): Strata's two log devices and the peers a user would
//! pick instead, with what a commit of each means: whether it survives a
//! power loss on a disk file system, and whether concurrent committers share
//! one device sync (group commit).

use std::fmt;

/// One system under test.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum System {
    /// Strata's SSD log device: one file, group commit with `fdatasync`.
    StrataSsd,
    /// Strata's serial PMem log (strict ordering) on an emulated PMem region.
    StrataPmem,
    /// RocksDB `db_bench fillrandom --sync=1`, WAL beside the data.
    RocksDb,
    /// SQLite, WAL mode, `synchronous=FULL`.
    SqliteFull,
    /// SQLite, WAL mode, `synchronous=NORMAL` (syncs only at checkpoints).
    SqliteNormal,
}

impl System {
    /// Every system, in round order.
    pub const ALL: [System; 5] =
        [System::StrataSsd, System::StrataPmem, System::RocksDb, System::SqliteFull, System::SqliteNormal];

    /// Name in variant names, tables and `--systems`.
    pub fn name(self) -> &'static str {
        match self {
            System::StrataSsd => "strata-ssd",
            System::StrataPmem => "strata-pmem",
            System::RocksDb => "rocksdb",
            System::SqliteFull => "sqlite-full",
            System::SqliteNormal => "sqlite-normal",
        }
    }

    /// Parses one name of [`System::name`].
    pub fn parse(name: &str) -> Result<System, String> {
        let name = name.trim();
        System::ALL.into_iter().find(|s| s.name() == name).ok_or_else(|| {
            let known: Vec<&str> = System::ALL.iter().map(|s| s.name()).collect();
            format!("unknown system {name:?}: expected one of {}", known.join(", "))
        })
    }

    /// Parses a list of names; empty means every system. Duplicates are an error.
    pub fn parse_list(names: &[String]) -> Result<Vec<System>, String> {
        if names.is_empty() {
            return Ok(System::ALL.to_vec());
        }
        let mut out = Vec::new();
        for n in names {
            let s = System::parse(n)?;
            if out.contains(&s) {
                return Err(format!("system {} listed twice", s.name()));
            }
            out.push(s);
        }
        Ok(out)
    }

    /// Whether concurrent committers can share one device sync.
    pub fn group_commit(self) -> bool {
        match self {
            // Appenders join the batch of the running leader; one fdatasync covers it.
            System::StrataSsd => true,
            // One mutex around head, flush, fence, tail, flush, fence per entry.
            System::StrataPmem => false,
            // The write-group leader writes and syncs the WAL records of all waiting writers.
            System::RocksDb => true,
            // One writer at a time (the WAL write lock); every FULL commit syncs the WAL itself.
            System::SqliteFull | System::SqliteNormal => false,
        }
    }

    /// Whether an acknowledged commit is meant to survive a power loss when
    /// the medium is a disk file system (on tmpfs nothing survives one).
    pub fn syncs_every_commit(self) -> bool {
        match self {
            System::StrataSsd | System::RocksDb | System::SqliteFull => true,
            // Survives a process crash; power-safe only with real PMem (dax).
            System::StrataPmem => false,
            // The WAL is synced only at checkpoints.
            System::SqliteNormal => false,
        }
    }

    /// The durability setting, as the report states it next to the figure.
    pub fn durability_setting(self) -> &'static str {
        match self {
            System::StrataSsd => "append returns after the fdatasync covering the record (group commit)",
            System::StrataPmem => {
                "serial PMem log: body flush+fence, tail flush+fence per commit, on an emulated region (a mapped file on tmpfs)"
            }
            System::RocksDb => "db_bench --sync=1: WriteOptions.sync, WAL fdatasync per write group",
            System::SqliteFull => "journal_mode=WAL, synchronous=FULL: WAL synced at every commit",
            System::SqliteNormal => {
                "journal_mode=WAL, synchronous=NORMAL: WAL synced only at checkpoints (not durable per commit on power loss)"
            }
        }
    }

    /// What survives after an acknowledged commit on a medium of `fs_type`:
    /// `power loss` or `process crash`.
    pub fn survives(self, fs_type: &str) -> &'static str {
        let memory_backed = matches!(fs_type, "tmpfs" | "ramfs");
        if self.syncs_every_commit() && !memory_backed {
            "power loss"
        } else {
            "process crash"
        }
    }
}

impl fmt::Display for System {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
