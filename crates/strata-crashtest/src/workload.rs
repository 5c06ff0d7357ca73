//! Deterministic transaction contents for crash-test workloads: transaction
//! `t` of a run with seed `s` always has the same payload, so the oracle knows
//! what every transaction wrote without recording it. [`SplitMix64`] is the
//! one small seeded generator of the log and event-store workloads.

use crate::oracle::TxnOracle;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
pub use strata_events::sample_events::SplitMix64;
use strata_media::TxnId;

/// Payload of transaction `txn`: 0..=`max_len` bytes, sizes chosen so records
/// straddle cache lines, media blocks and ring laps.
pub fn payload(seed: u64, txn: u64, max_len: usize) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ txn.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let len = rng.gen_range(0..=max_len);
    (0..len).map(|_| rng.gen()).collect()
}

/// The oracle of a serial workload of `txns` transactions numbered from 1:
/// strict ordering makes each depend on its predecessor.
pub fn serial_oracle(seed: u64, txns: u64, max_len: usize) -> TxnOracle {
    let mut o = TxnOracle::new();
    for t in 1..=txns {
        let deps = if t > 1 { vec![TxnId(t - 1)] } else { vec![] };
        o.attempt(TxnId(t), payload(seed, t, max_len), deps);
    }
    o
}
