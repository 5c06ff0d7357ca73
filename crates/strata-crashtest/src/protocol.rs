//! The builder setters the crash protocols share (issue 13 item 5): the
//! knobs every workload has ([`Knobs`]: seed, size, planted bug) and one
//! trait, [`CrashBuilder`], whose default methods are the `with_*` setters,
//! so a protocol only says where its knobs are instead of repeating them.

/// Seed, workload size and planted bug of a crash protocol.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Knobs<B> {
    /// Seeds the workload (printed with every failure).
    pub seed: u64,
    /// Events (or transactions, operations) of the workload.
    pub size: u64,
    /// A bug the crash tests plant to show the oracle catches it, set on
    /// whichever thread runs or recovers (the "no bug" value in the suite).
    pub bug: B,
}

/// The shared `with_*` setters of a crash protocol built by value.
pub trait CrashBuilder: Sized {
    /// The structure's planted-bug type (from its `crashtest_hooks`).
    type Bug: Copy;

    /// Where the protocol keeps its knobs.
    fn knobs_mut(&mut self) -> &mut Knobs<Self::Bug>;

    /// The workload of seed `seed`.
    fn with_seed(mut self, seed: u64) -> Self {
        self.knobs_mut().seed = seed;
        self
    }

    /// A workload of `size` events (transactions, operations).
    fn with_size(mut self, size: u64) -> Self {
        self.knobs_mut().size = size;
        self
    }

    /// Runs and recovers with `bug` planted.
    fn with_planted_bug(mut self, bug: Self::Bug) -> Self {
        self.knobs_mut().bug = bug;
        self
    }
}
