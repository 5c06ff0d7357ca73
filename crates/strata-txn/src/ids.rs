//! Identifiers of the transactional layer: a table, a row's primary key, a
//! worker (a thread running transactions, mapped to one log), a log.

/// A table, by its position in the schemas given at open.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableId(pub u32);

/// A row's primary key.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RowKey(pub u64);

/// A worker: each runs one transaction at a time and maps to one log
/// (`worker % logs`, the fixed mapping of 3.2).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct WorkerId(pub u32);

/// A log (and its log manager), `0..logs`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct LogId(pub u32);

impl LogId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
