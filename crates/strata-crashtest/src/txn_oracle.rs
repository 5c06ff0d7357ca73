//! The DESIGN.md section 3 oracle for the transactional-table crash lines,
//! judged from a recovered database's rows and the workload's model
//! (`crate::txn_workload`), never from the logs.
//!
//! Which transactions are present: those whose receipt is there, and those
//! whose receipt a present transaction deleted (only a later transaction
//! deletes a receipt, and it depends on the receipt's writer). Then
//! (1) `lost`: acknowledged, not present; (3) `order_violations`: present
//! while a dependency is not: the last writer of a row it read or wrote,
//! and under command logging also a transaction that read a row it wrote
//! since that row's last write (write-after-read: Taurus orders the
//! overwriter after the reader, so recovery keeps it only with the
//! reader); (2) `partial`: a row that differs from what the present
//! transactions leave when applied in commit order (a transaction half
//! there, a write lost or replayed out of order, a row nobody wrote, a
//! command re-run against other rows than it first read, which changes
//! what it writes), one per row.

use std::collections::{BTreeMap, BTreeSet};

use strata_media::TxnId;
use strata_txn::RowKey;

use crate::oracle::OracleCounts;
use crate::txn_workload::{expected_rows, SessionPlan, COUNTERS, RECEIPTS, TABLES};

/// The transactions of `plan` present in `rows` (per table, as
/// `TxnDb::rows` returns them).
pub(crate) fn present(plan: &SessionPlan, rows: &[BTreeMap<RowKey, Vec<u8>>]) -> BTreeSet<u64> {
    let receipts = &rows[RECEIPTS.0 as usize];
    let deleter: BTreeMap<u64, u64> =
        plan.txns.iter().filter_map(|t| t.deletes_receipt.map(|r| (r, t.id))).collect();
    let mut present = BTreeSet::new();
    for t in plan.txns.iter().rev() {
        let deleted_by_present = deleter.get(&t.id).is_some_and(|d| present.contains(d));
        if receipts.contains_key(&RowKey(t.id)) || deleted_by_present {
            present.insert(t.id);
        }
    }
    present
}

/// The writer a row names (counters keep it second, items and receipts first).
fn writer(table: usize, row: &[u8]) -> Option<u64> {
    let at = if table == COUNTERS.0 as usize { 8 } else { 0 };
    row.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

/// Checks recovered `rows` against `plan` and the transactions acknowledged
/// before the crash (those of other sessions are ignored).
pub(crate) fn check(
    plan: &SessionPlan,
    rows: &[BTreeMap<RowKey, Vec<u8>>],
    acked: &BTreeSet<TxnId>,
) -> (OracleCounts, Option<String>) {
    let mut counts = OracleCounts::default();
    let mut first: Option<String> = None;
    let present = present(plan, rows);
    let ids = plan.ids();
    for a in acked.iter().filter(|a| ids.contains(&a.0)) {
        if !present.contains(&a.0) {
            counts.lost += 1;
            first.get_or_insert_with(|| format!("acknowledged {a} lost"));
        }
    }
    for id in &present {
        let spec = plan.txn(*id).expect("present transactions are the plan's");
        for d in spec.deps.iter().filter(|d| !present.contains(d)) {
            counts.order_violations += 1;
            first.get_or_insert_with(|| {
                format!("T{id} present without T{d}, whose write it read or overwrote")
            });
        }
        let war = spec.war.iter().filter(|_| plan.counts_war);
        for d in war.filter(|d| !present.contains(d) && !spec.deps.contains(d)) {
            counts.order_violations += 1;
            first.get_or_insert_with(|| {
                format!("T{id} present without T{d}, which read a row T{id} overwrote (commands)")
            });
        }
    }
    let expected = expected_rows(plan, &present);
    for (i, table) in TABLES.iter().enumerate() {
        let got: BTreeMap<u64, &Vec<u8>> = rows[i].iter().map(|(k, v)| (k.0, v)).collect();
        let keys: BTreeSet<u64> = got.keys().chain(expected[i].keys()).copied().collect();
        for key in keys {
            let (g, e) = (got.get(&key).copied(), expected[i].get(&key));
            if g == e {
                continue;
            }
            counts.partial += 1;
            first.get_or_insert_with(|| {
                let by = |r: Option<&Vec<u8>>| {
                    r.and_then(|r| writer(i, r)).map_or("none".into(), |w| format!("T{w}"))
                };
                format!(
                    "table {} key {key}: row written by {}, the present transactions leave one by {}",
                    table.0,
                    by(g),
                    by(e)
                )
            });
        }
    }
    (counts, first.map(|f| format!("{f} ({} of T{}..T{} present)", present.len(), ids.start, ids.end - 1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn_lines::TxnLogging;

    fn rows_of(plan: &SessionPlan, present: &BTreeSet<u64>) -> Vec<BTreeMap<RowKey, Vec<u8>>> {
        expected_rows(plan, present)
            .into_iter()
            .map(|t| t.into_iter().map(|(k, v)| (RowKey(k), v)).collect())
            .collect()
    }

    #[test]
    fn prefixes_pass_and_holes_fail() {
        let plan = SessionPlan::generate(3, TxnLogging::Taurus { logs: 2 }, 0, 1, 40);
        let all: BTreeSet<u64> = plan.ids().collect();
        for end in [1, 10, 41] {
            let prefix: BTreeSet<u64> = (1..end).collect();
            let rows = rows_of(&plan, &prefix);
            assert_eq!(present(&plan, &rows), prefix);
            let acked = prefix.iter().map(|t| TxnId(*t)).collect();
            let (c, why) = check(&plan, &rows, &acked);
            assert!(c.is_clean(), "prefix to {end}: {why:?}");
        }
        // Drop a transaction others depend on: its dependants are out of order.
        let receipt_kept = |id: u64| plan.txns.iter().all(|u| u.deletes_receipt != Some(id));
        let depended_on = |id: u64| plan.txns.iter().any(|u| u.deps.contains(&id));
        let victim = plan.txns.iter().find(|t| t.id > 1 && receipt_kept(t.id) && depended_on(t.id));
        let victim = victim.expect("a transaction with dependants").id;
        let holed: BTreeSet<u64> = all.iter().copied().filter(|t| *t != victim).collect();
        let acked = all.iter().map(|t| TxnId(*t)).collect();
        let (c, why) = check(&plan, &rows_of(&plan, &holed), &acked);
        assert!(c.order_violations > 0, "{c:?} {why:?}");
        assert!(c.lost > 0, "{c:?} {why:?}");
        // Half a transaction: its receipt without its other writes.
        let last = plan.txns.last().expect("txns");
        let mut rows = rows_of(&plan, &(1..last.id).collect());
        rows[RECEIPTS.0 as usize].insert(RowKey(last.id), last.writes().last().unwrap().1.unwrap().to_vec());
        let (c, why) = check(&plan, &rows, &BTreeSet::new());
        assert!(c.partial > 0 || last.writes().count() == 1, "{c:?} {why:?}");
    }

    /// A transaction present without one that read a row it overwrote (and
    /// that it does not depend on otherwise): an order violation under
    /// command logging, nothing under data logging.
    #[test]
    fn a_missing_reader_counts_only_under_command_logging() {
        for (logging, violations) in
            [(TxnLogging::TaurusCommand { logs: 2 }, true), (TxnLogging::Taurus { logs: 2 }, false)]
        {
            let plan = SessionPlan::generate(3, logging, 0, 1, 60);
            // A reader that nobody depends on by RAW or WAW and whose
            // receipt stays; everything else present.
            let reader = plan.txns.iter().find(|r| {
                plan.txns.iter().all(|u| u.deletes_receipt != Some(r.id) && !u.deps.contains(&r.id))
                    && plan.txns.iter().any(|u| u.war.contains(&r.id))
            });
            let reader = reader.expect("a reader only overwritten after").id;
            let present: BTreeSet<u64> = plan.ids().filter(|t| *t != reader).collect();
            let (c, why) = check(&plan, &rows_of(&plan, &present), &BTreeSet::new());
            assert_eq!(c.partial, 0, "{why:?}");
            assert_eq!(c.order_violations > 0, violations, "{logging:?}: {c:?} {why:?}");
        }
    }
}
