//! Bugs the crash tests plant in the right flank (`flank`, `flank_pmem`) to
//! check that their oracle catches them (section 4.1's protocols, broken on
//! purpose). Test builds and the `crashtest` feature only; its own module
//! so both flank files can ask without depending on each other.

/// Bugs the crash tests must catch (planted by those tests only).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PlantedBug {
    None,
    /// Report appended events durable before their batch is persisted.
    AckBeforePersist,
    /// Trust the leaf commit word's count at recovery without checking the
    /// CRC of its batch.
    UncheckedLeafCommit,
    /// Commit a write-out journal record with the format-2 state word under
    /// the record's own fence: a torn record reads as committed.
    JournalWithoutCrc,
    /// At recovery, take an ended write-out journal (flank format 4) as a
    /// finished write-out without checking the parent's entry.
    TrustEndedJournal,
}

thread_local! {
    pub static PLANTED_BUG: std::cell::Cell<PlantedBug> = const { std::cell::Cell::new(PlantedBug::None) };
}

/// Whether the running test planted `bug`.
pub(crate) fn planted(bug: PlantedBug) -> bool {
    PLANTED_BUG.with(|b| b.get()) == bug
}
