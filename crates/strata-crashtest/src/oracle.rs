//! The crash oracle of DESIGN.md section 3, shared by every crash test
//! (moved here from `strata-media`; [`TxnId`] stays there, the log layers
//! record it).
//!
//! After recovery: (1) every acknowledged transaction is present ("lost" counts
//! violations); (2) no transaction is partially present ("partial"); (3) what is
//! present is closed under dependencies ("order_violations"); (4) for
//! unacknowledged transactions either outcome is allowed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

pub use strata_media::TxnId;

/// Violations found in one recovered image.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct OracleCounts {
    /// Acknowledged transactions missing after recovery.
    pub lost: u64,
    /// Transactions recovered with some but not all of their effects, or with
    /// contents that differ from what was written.
    pub partial: u64,
    /// Present transactions with a dependency that is not present.
    pub order_violations: u64,
}

impl OracleCounts {
    pub fn is_clean(&self) -> bool {
        self.lost == 0 && self.partial == 0 && self.order_violations == 0
    }

    pub fn add(&mut self, other: OracleCounts) {
        self.lost += other.lost;
        self.partial += other.partial;
        self.order_violations += other.order_violations;
    }
}

/// What a workload wrote: each transaction's expected content and the
/// transactions it depends on. Content is compared as opaque bytes.
#[derive(Clone, Debug, Default)]
pub struct TxnOracle {
    expected: BTreeMap<TxnId, Vec<u8>>,
    deps: BTreeMap<TxnId, Vec<TxnId>>,
}

impl TxnOracle {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a transaction the workload attempted, with its full content.
    pub fn attempt(&mut self, txn: TxnId, content: Vec<u8>, deps: Vec<TxnId>) {
        self.expected.insert(txn, content);
        self.deps.insert(txn, deps);
    }

    pub fn attempted(&self) -> usize {
        self.expected.len()
    }

    /// Checks a recovered state against the oracle.
    ///
    /// `acked` are the transactions acknowledged before the crash point;
    /// `recovered` maps each transaction found after recovery to the content
    /// found for it (a transaction recovered twice must be reported by the
    /// caller as partial via `extra_partial`). Also returns a description of the
    /// first violation, for failure reports.
    pub fn check(
        &self,
        acked: &BTreeSet<TxnId>,
        recovered: &BTreeMap<TxnId, Vec<u8>>,
    ) -> (OracleCounts, Option<String>) {
        let mut counts = OracleCounts::default();
        let mut first: Option<String> = None;
        for txn in acked {
            if !recovered.contains_key(txn) {
                counts.lost += 1;
                first.get_or_insert_with(|| format!("acknowledged {txn} lost"));
            }
        }
        for (txn, content) in recovered {
            match self.expected.get(txn) {
                Some(expected) if expected == content => {}
                Some(_) => {
                    counts.partial += 1;
                    first.get_or_insert_with(|| format!("{txn} recovered with wrong content"));
                }
                None => {
                    counts.partial += 1;
                    first.get_or_insert_with(|| format!("{txn} recovered but never written"));
                }
            }
            for dep in self.deps.get(txn).map(Vec::as_slice).unwrap_or(&[]) {
                if !recovered.contains_key(dep) {
                    counts.order_violations += 1;
                    first.get_or_insert_with(|| format!("{txn} present without its dependency {dep}"));
                }
            }
        }
        (counts, first)
    }
}

/// Acknowledgements of a crash-test run, each stamped with the medium's
/// operation counter at the moment of acknowledgement. A crash after operation
/// `k` must preserve every transaction acknowledged at a stamp `<= k`: such a
/// transaction was already durable when that operation completed.
pub struct AckLog {
    clock: Box<dyn Fn() -> u64 + Send + Sync>,
    entries: parking_lot::Mutex<Vec<(TxnId, u64)>>,
}

impl AckLog {
    /// `clock` returns the number of medium operations (flushes and fences, or
    /// file-system calls) performed so far.
    pub fn new(clock: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        AckLog { clock: Box::new(clock), entries: parking_lot::Mutex::new(Vec::new()) }
    }

    /// Records that `txn` was acknowledged to its client now.
    pub fn ack(&self, txn: TxnId) {
        let stamp = (self.clock)();
        self.entries.lock().push((txn, stamp));
    }

    /// Transactions acknowledged by the time operation `op` had completed.
    pub fn acked_by(&self, op: u64) -> BTreeSet<TxnId> {
        self.entries.lock().iter().filter(|(_, s)| *s <= op).map(|(t, _)| *t).collect()
    }

    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A reproducible failing image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrashFailure {
    /// Seed of the whole run.
    pub seed: u64,
    /// Index of the crash point within the run.
    pub point: u64,
    /// Index of the image within the crash point.
    pub image: u64,
    pub description: String,
}

impl fmt::Display for CrashFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seed={} point={} image={}: {}", self.seed, self.point, self.image, self.description)
    }
}

/// The outcome of crashing one protocol at every crash point.
#[derive(Clone, Debug, Default)]
pub struct CrashReport {
    pub protocol: String,
    /// `pmem` or `ssd`.
    pub medium: String,
    pub crash_points: u64,
    pub images: u64,
    pub counts: OracleCounts,
    /// Recovery returned an error (for example `Corruption`) on an image the
    /// model allows; counted into `partial` as well.
    pub recovery_errors: u64,
    pub first_failure: Option<CrashFailure>,
}

impl CrashReport {
    pub fn new(protocol: &str, medium: &str) -> Self {
        CrashReport { protocol: protocol.to_string(), medium: medium.to_string(), ..Default::default() }
    }

    pub fn is_clean(&self) -> bool {
        self.counts.is_clean()
    }

    /// Records the verdict for one image.
    pub fn record(&mut self, seed: u64, point: u64, image: u64, counts: OracleCounts, why: Option<String>) {
        self.images += 1;
        self.counts.add(counts);
        if !counts.is_clean() && self.first_failure.is_none() {
            self.first_failure = Some(CrashFailure {
                seed,
                point,
                image,
                description: why.unwrap_or_else(|| format!("{counts:?}")),
            });
        }
    }

    /// The line `strata crashtest` prints, in the exact format of issue 2.
    pub fn line(&self) -> String {
        format!(
            "CRASHTEST protocol={} medium={} images={} lost={} partial={} order_violations={}",
            self.protocol,
            self.medium,
            self.images,
            self.counts.lost,
            self.counts.partial,
            self.counts.order_violations
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oracle() -> TxnOracle {
        let mut o = TxnOracle::new();
        o.attempt(TxnId(1), b"a".to_vec(), vec![]);
        o.attempt(TxnId(2), b"b".to_vec(), vec![TxnId(1)]);
        o
    }

    #[test]
    fn clean_prefix_passes() {
        let acked: BTreeSet<_> = [TxnId(1)].into();
        let rec: BTreeMap<_, _> = [(TxnId(1), b"a".to_vec())].into();
        let (c, why) = oracle().check(&acked, &rec);
        assert!(c.is_clean(), "{why:?}");
    }

    #[test]
    fn lost_partial_and_order_are_counted() {
        let acked: BTreeSet<_> = [TxnId(1), TxnId(2)].into();
        let rec: BTreeMap<_, _> = [(TxnId(2), b"x".to_vec())].into();
        let (c, why) = oracle().check(&acked, &rec);
        assert_eq!(c, OracleCounts { lost: 1, partial: 1, order_violations: 1 });
        assert_eq!(why.as_deref(), Some("acknowledged T1 lost"));
    }

    #[test]
    fn report_line_has_exact_format() {
        let mut r = CrashReport::new("serial", "pmem");
        r.record(7, 0, 0, OracleCounts::default(), None);
        assert_eq!(
            r.line(),
            "CRASHTEST protocol=serial medium=pmem images=1 lost=0 partial=0 order_violations=0"
        );
    }
}
