//! The LV micro-benchmark in the shape of taurus.txt Fig. 16: the time of
//! one transaction's LV work (fold two tuples' LVs into `T.LV`, one of them
//! written so its `readLV` too, then the commit check `T.LV ≤ CLV`) by
//! number of logs, with the vectorised [`Lv`] operations and with the
//! element-by-element ones ([`strata_txn::lv::scalar`], "SIMD off").
//! Medians of rounds; the tuples' LVs are random, so nothing folds away.

use std::hint::black_box;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use strata_txn::lv::scalar;
use strata_txn::Lv;

use crate::machine::Machine;
use crate::measure::Samples;
use crate::report::BenchReport;

/// Tuples whose LVs the transactions fold (more than fit in L1, as tuples are).
const TUPLES: usize = 4096;
const TXNS_PER_ROUND: usize = 2_000_000;
const ROUNDS: usize = 5;
pub const LOG_COUNTS: [usize; 5] = [1, 2, 4, 8, 16];

fn one_round(logs: usize, vectorised: bool, tuples: &[(Lv, Lv)], clv: &Lv, rng_seed: u64) -> f64 {
    let mut rng = ChaCha8Rng::seed_from_u64(rng_seed);
    let picks: Vec<usize> = (0..1024).map(|_| rng.gen_range(0..tuples.len())).collect();
    let started = Instant::now();
    let mut committed = 0u64;
    for t in 0..TXNS_PER_ROUND {
        let (a, b) = (&tuples[picks[t % 1024]], &tuples[picks[(t * 7 + 3) % 1024]]);
        let mut lv = Lv::ZERO;
        if vectorised {
            lv.max_in_place(&a.1);
            lv.max_in_place(&b.1);
            lv.max_in_place(&b.0);
            committed += u64::from(black_box(&lv).le(clv));
        } else {
            scalar::max_in_place(&mut lv, &a.1, logs);
            scalar::max_in_place(&mut lv, &b.1, logs);
            scalar::max_in_place(&mut lv, &b.0, logs);
            committed += u64::from(scalar::le(black_box(&lv), clv, logs));
        }
    }
    black_box(committed);
    started.elapsed().as_nanos() as f64 / TXNS_PER_ROUND as f64
}

/// Runs the micro-benchmark and reports ns per transaction per log count.
pub fn run(print: bool) -> anyhow::Result<BenchReport> {
    let machine = Machine::detect(
        strata_pmem::PmemMode::Emulated,
        "not used",
        strata_pmem::detected_flush_instruction(),
    );
    let mut report = BenchReport::new(
        "oltp-lv-micro",
        machine,
        json!({"tuples": TUPLES, "txns_per_round": TXNS_PER_ROUND, "rounds": ROUNDS, "log_counts": LOG_COUNTS}),
    );
    for logs in LOG_COUNTS {
        let mut rng = ChaCha8Rng::seed_from_u64(0x16 + logs as u64);
        let mut random_lv =
            || Lv::from_slice(&(0..logs).map(|_| rng.gen_range(0..1u64 << 40)).collect::<Vec<_>>());
        let tuples: Vec<(Lv, Lv)> = (0..TUPLES).map(|_| (random_lv(), random_lv())).collect();
        let clv = Lv::from_slice(&vec![1u64 << 41; logs]);
        let mut s = Samples::default();
        for round in 0..ROUNDS {
            // Alternating, the scalar one first in odd rounds.
            let order = if round % 2 == 0 { [true, false] } else { [false, true] };
            for vectorised in order {
                let ns = one_round(logs, vectorised, &tuples, &clv, round as u64);
                s.push(if vectorised { "vectorised_ns_per_txn" } else { "scalar_ns_per_txn" }, ns);
            }
        }
        let mut row = s.median_row(&format!("{logs} logs"));
        let v = row["vectorised_ns_per_txn"].as_f64().unwrap_or(f64::NAN);
        let sc = row["scalar_ns_per_txn"].as_f64().unwrap_or(f64::NAN);
        row.insert("saving_pct".into(), json!(100.0 * (1.0 - v / sc)));
        if print {
            eprintln!("oltp lv-micro: {logs} logs: vectorised {v:.1} ns, scalar {sc:.1} ns per transaction");
        }
        report.results.push(row);
    }
    report.columns = ["vectorised_ns_per_txn", "scalar_ns_per_txn", "saving_pct"].map(String::from).to_vec();
    report.notes.push(format!(
        "per transaction: 3 element-wise maxima (two tuples' writeLV, one readLV) and the commit check; {TUPLES} tuples of random LVs; medians of {ROUNDS} rounds of {TXNS_PER_ROUND} transactions, the two versions alternating; the vectorised one always works on all 16 elements"
    ));
    Ok(report)
}
