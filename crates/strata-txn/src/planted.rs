//! Bugs the crash lines plant (feature `crashtest`, and unit tests) to
//! show that the oracle catches them (issue 16: a transaction acknowledged
//! before it committed, and a read that does not fold the tuple's
//! `writeLV` into `T.LV`). Set per database in `TxnDbOptions::planted_bug`.

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum PlantedBug {
    #[default]
    None,
    /// `wait_committed` returns once the record is in the log buffer,
    /// before `CLV` covers it.
    AckBeforeCommitted,
    /// A shared lock leaves the tuple's `writeLV` out of `T.LV` (RAW
    /// dependencies are lost).
    ReadSkipsWriteLv,
}
