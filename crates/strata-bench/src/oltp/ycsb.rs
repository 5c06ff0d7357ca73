//! YCSB as taurus.txt section 5 runs it: one table of rows with 10 fields
//! of 100 bytes, keys drawn from a Zipf distribution (θ 0.6 by default), a
//! number of accesses per transaction (2 by default), each a read or (half
//! the time by default) an update of one field. A transaction is the stored
//! procedure [`YCSB_TXN`] (so command logging logs only its arguments):
//! the arguments carry every random choice, the procedure derives the new
//! field's bytes from them.

use rand::Rng;
use strata_txn::{ProcId, Procedures, RowAccess, RowKey, RowLoader, TableId, TableSchema, TxnError};

use crate::ycsb_ts::zipf::ZipfianGenerator;

pub const TABLE: TableId = TableId(0);
pub const FIELDS: usize = 10;
pub const FIELD_BYTES: usize = 100;
pub const ROW_BYTES: usize = FIELDS * FIELD_BYTES;
/// The stored procedure of one YCSB transaction.
pub const YCSB_TXN: ProcId = ProcId(1);

/// The workload's shape.
#[derive(Clone, Debug)]
pub struct YcsbShape {
    pub rows: u64,
    pub theta: f64,
    pub accesses: usize,
    /// Share of accesses that read.
    pub read_ratio: f64,
}

pub fn schemas() -> Vec<TableSchema> {
    vec![TableSchema { name: "usertable".into(), row_bytes: ROW_BYTES }]
}

pub fn procedures() -> Procedures {
    let mut p = Procedures::new();
    p.register(YCSB_TXN, run_ycsb);
    p
}

/// The initial row of `key` (the same in the live run and at recovery).
pub fn initial_row(key: u64) -> Vec<u8> {
    let mut row = vec![0u8; ROW_BYTES];
    fill(&mut row, key);
    row
}

/// Bytes from a 64-bit xorshift seeded by `seed`.
fn fill(out: &mut [u8], seed: u64) {
    let mut x = seed | 1;
    for chunk in out.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let b = x.to_le_bytes();
        chunk.copy_from_slice(&b[..chunk.len()]);
    }
}

/// Loads the table (the base every variant starts from).
pub fn load(db: &mut dyn RowLoader, rows: u64) -> Result<(), TxnError> {
    for key in 0..rows {
        db.load_row(TABLE, RowKey(key), &initial_row(key))?;
    }
    Ok(())
}

/// One transaction's arguments: a seed, then per access the key and
/// whether it writes.
pub fn next_args(shape: &YcsbShape, zipf: &ZipfianGenerator, rng: &mut impl Rng, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&rng.gen::<u64>().to_le_bytes());
    let mut keys: Vec<u64> = Vec::with_capacity(shape.accesses);
    while keys.len() < shape.accesses.min(shape.rows as usize) {
        // Scrambled so the hot keys spread over the table.
        let k = zipf.sample(rng).wrapping_mul(0x9E37_79B9_7F4A_7C15) % shape.rows;
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for k in keys {
        out.extend_from_slice(&k.to_le_bytes());
        out.push(u8::from(!rng.gen_bool(shape.read_ratio)));
    }
}

/// The stored procedure: reads each key, updates one field of the written ones.
pub fn run_ycsb(txn: &mut dyn RowAccess, args: &[u8]) -> Result<(), TxnError> {
    let seed = u64::from_le_bytes(args[..8].try_into().expect("a seed"));
    for (n, access) in args[8..].chunks_exact(9).enumerate() {
        let key = RowKey(u64::from_le_bytes(access[..8].try_into().expect("a key")));
        let row = txn.get(TABLE, key)?.ok_or(TxnError::NotFound { table: TABLE, key })?;
        if access[8] == 1 {
            let mut row = row;
            let field = (seed as usize + n) % FIELDS;
            fill(&mut row[field * FIELD_BYTES..(field + 1) * FIELD_BYTES], seed ^ key.0);
            txn.put(TABLE, key, &row)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn arguments_name_distinct_keys_and_the_procedure_is_deterministic() {
        let shape = YcsbShape { rows: 50, theta: 0.6, accesses: 4, read_ratio: 0.5 };
        let zipf = ZipfianGenerator::new(shape.rows, shape.theta).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut args = Vec::new();
        for _ in 0..100 {
            next_args(&shape, &zipf, &mut rng, &mut args);
            assert_eq!(args.len(), 8 + 9 * 4);
            let keys: Vec<u64> =
                args[8..].chunks_exact(9).map(|a| u64::from_le_bytes(a[..8].try_into().unwrap())).collect();
            assert!(keys.iter().all(|k| *k < 50));
            let mut d = keys.clone();
            d.sort();
            d.dedup();
            assert_eq!(d.len(), 4, "distinct keys: {keys:?}");
        }
        let mut a = initial_row(7);
        let mut b = initial_row(7);
        fill(&mut a[..100], 9);
        fill(&mut b[..100], 9);
        assert_eq!(a, b);
        assert_ne!(initial_row(7), initial_row(8));
    }
}
