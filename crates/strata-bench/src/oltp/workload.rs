//! The workloads of `strata bench oltp` (taurus.txt 5.1 and 5.5): YCSB
//! ([`super::ycsb`]) and TPC-C ([`super::tpcc`]: Payment only, New-Order
//! only, the full mix). [`Workload`] names one; [`Bench`] is one ready to
//! run: the tables, the procedures, the loader (the same in the child's
//! run and at recovery) and each worker's transaction inputs.

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use rand::Rng;
use serde::{Deserialize, Serialize};
use strata_txn::{ProcId, Procedures, RowLoader, TableSchema, TxnError, WorkerId};

use super::tpcc::{self, Mix, TpccShape, TxnGen, TxnKind};
use super::ycsb::{self, YcsbShape};
use crate::ycsb_ts::zipf::ZipfianGenerator;

/// Which transactions `strata bench oltp` runs (`--workload`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Workload {
    Ycsb,
    TpccPayment,
    TpccNewOrder,
    TpccMix,
}

impl Workload {
    pub const ALL: [Workload; 4] =
        [Workload::Ycsb, Workload::TpccPayment, Workload::TpccNewOrder, Workload::TpccMix];

    /// The name `--workload` takes and the report shows.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Ycsb => "ycsb",
            Workload::TpccPayment => "tpcc-payment",
            Workload::TpccNewOrder => "tpcc-neworder",
            Workload::TpccMix => "tpcc-mix",
        }
    }

    pub fn parse(name: &str) -> anyhow::Result<Workload> {
        Workload::ALL.into_iter().find(|w| w.name() == name).with_context(|| {
            let names: Vec<_> = Workload::ALL.iter().map(|w| w.name()).collect();
            format!("unknown workload `{name}` ({})", names.join(", "))
        })
    }

    /// The TPC-C mix, if it is TPC-C.
    pub fn tpcc_mix(self) -> Option<Mix> {
        match self {
            Workload::Ycsb => None,
            Workload::TpccPayment => Some(Mix::Payment),
            Workload::TpccNewOrder => Some(Mix::NewOrder),
            Workload::TpccMix => Some(Mix::Full),
        }
    }
}

/// A workload with its shape, ready to load and run.
pub(crate) enum Bench {
    Ycsb { shape: YcsbShape, zipf: ZipfianGenerator },
    Tpcc { shape: TpccShape, mix: Mix },
}

/// One transaction to run: its procedure (arguments beside it) and
/// whether it is a New-Order (TPC-C's throughput, tpmC, counts those).
#[derive(Copy, Clone, Debug)]
pub(crate) struct Next {
    pub proc: ProcId,
    pub new_order: bool,
}

impl Bench {
    pub(crate) fn new(workload: Workload, ycsb: &YcsbShape, tpcc: &TpccShape) -> anyhow::Result<Bench> {
        Ok(match workload.tpcc_mix() {
            None => Bench::Ycsb {
                shape: ycsb.clone(),
                zipf: ZipfianGenerator::new(ycsb.rows, ycsb.theta).context("the Zipf distribution")?,
            },
            Some(mix) => {
                tpcc.validate()?;
                Bench::Tpcc { shape: tpcc.clone(), mix }
            }
        })
    }

    pub(crate) fn schemas(&self) -> Vec<TableSchema> {
        match self {
            Bench::Ycsb { .. } => ycsb::schemas(),
            Bench::Tpcc { .. } => tpcc::schemas(),
        }
    }

    pub(crate) fn procedures(&self) -> Procedures {
        match self {
            Bench::Ycsb { .. } => ycsb::procedures(),
            Bench::Tpcc { .. } => tpcc::procedures(),
        }
    }

    /// The base state (the same at every call).
    pub(crate) fn load(&self, db: &mut dyn RowLoader) -> Result<(), TxnError> {
        match self {
            Bench::Ycsb { shape, .. } => ycsb::load(db, shape.rows),
            Bench::Tpcc { shape, .. } => tpcc::load(db, shape),
        }
    }

    /// What one worker generates its transactions with.
    pub(crate) fn inputs(&self, worker: WorkerId) -> Inputs<'_> {
        match self {
            Bench::Ycsb { shape, zipf } => Inputs::Ycsb { shape, zipf },
            Bench::Tpcc { shape, mix } => Inputs::Tpcc(TxnGen::new(shape, *mix, worker.0)),
        }
    }

    /// A TPC-C New-Order that rolled back (clause 2.4.2.3): an outcome of
    /// the workload, neither a commit nor a conflict to retry.
    pub(crate) fn is_rollback(&self, e: &TxnError) -> bool {
        match self {
            Bench::Ycsb { .. } => false,
            Bench::Tpcc { .. } => tpcc::is_rollback(e),
        }
    }
}

/// One worker's transaction inputs.
pub(crate) enum Inputs<'a> {
    Ycsb { shape: &'a YcsbShape, zipf: &'a ZipfianGenerator },
    Tpcc(TxnGen),
}

impl Inputs<'_> {
    /// The next transaction, its arguments in `out`.
    pub(crate) fn next(&self, rng: &mut impl Rng, out: &mut Vec<u8>) -> Next {
        match self {
            Inputs::Ycsb { shape, zipf } => {
                ycsb::next_args(shape, zipf, rng, out);
                Next { proc: ycsb::YCSB_TXN, new_order: false }
            }
            Inputs::Tpcc(gen) => {
                // The date is an argument: a re-run at recovery writes the same one.
                let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
                let kind = gen.next(rng, now, out);
                Next { proc: kind.proc_id(), new_order: kind == TxnKind::NewOrder }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_parse_by_name_and_unknown_ones_are_refused() {
        for w in Workload::ALL {
            assert_eq!(Workload::parse(w.name()).unwrap(), w);
        }
        assert_eq!(Workload::TpccMix.tpcc_mix(), Some(Mix::Full));
        assert_eq!(Workload::Ycsb.tpcc_mix(), None);
        let e = Workload::parse("tpcc").unwrap_err().to_string();
        assert!(e.contains("tpcc-neworder"), "{e}");
    }
}
