//! The LSN Vector (taurus.txt 3.1): one LSN per log. `T.LV[i] = x` says
//! that T depends on no transaction of log i with an LSN above x.
//!
//! Fixed at [`MAX_LOGS`] elements (unused ones stay 0), so element-wise max
//! and comparison are straight loops over one array that the compiler
//! vectorises (4.2, the SIMD optimisation); [`scalar`] is the element by
//! element version `strata bench oltp --lv-micro` times them against
//! (Fig. 16).

/// Most logs a database may have.
pub const MAX_LOGS: usize = 16;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Lv {
    lsn: [u64; MAX_LOGS],
}

impl Lv {
    pub const ZERO: Lv = Lv { lsn: [0; MAX_LOGS] };

    /// From the first `values.len()` elements (the rest 0).
    pub fn from_slice(values: &[u64]) -> Lv {
        assert!(values.len() <= MAX_LOGS, "an LV has at most {MAX_LOGS} elements");
        let mut lv = Lv::ZERO;
        lv.lsn[..values.len()].copy_from_slice(values);
        lv
    }

    pub fn get(&self, log: usize) -> u64 {
        self.lsn[log]
    }

    pub fn set(&mut self, log: usize, lsn: u64) {
        self.lsn[log] = lsn;
    }

    /// The first `logs` elements.
    pub fn as_slice(&self, logs: usize) -> &[u64] {
        &self.lsn[..logs]
    }

    /// `self = ElemWiseMax(self, other)`.
    #[inline]
    pub fn max_in_place(&mut self, other: &Lv) {
        for (a, b) in self.lsn.iter_mut().zip(other.lsn.iter()) {
            *a = (*a).max(*b);
        }
    }

    /// `self ≤ other` element-wise (no early exit, so it vectorises).
    #[inline]
    pub fn le(&self, other: &Lv) -> bool {
        let mut all = true;
        for (a, b) in self.lsn.iter().zip(other.lsn.iter()) {
            all &= a <= b;
        }
        all
    }
}

impl Lv {
    /// Algorithm 5's `Compress` against the log's last anchor: the mask of
    /// the elements of the first `n` that must be stored (those above the
    /// anchor's; the others decompress to the anchor's, at least as large).
    pub fn compress_mask(&self, anchor: &Lv, n: usize) -> u32 {
        let mut mask = 0u32;
        for j in 0..n {
            mask |= u32::from(self.lsn[j] > anchor.lsn[j]) << j;
        }
        mask
    }

    /// Algorithm 5's `Decompress`: the elements in `mask` from `self`, the
    /// rest of the first `n` from `anchor`.
    pub fn decompressed(&self, mask: u32, anchor: &Lv, n: usize) -> Lv {
        let mut out = *self;
        for j in 0..n {
            if mask & (1 << j) == 0 {
                out.lsn[j] = anchor.lsn[j];
            }
        }
        out
    }
}

/// The same operations element by element over the first `logs` elements,
/// with an early exit, as a straightforward implementation writes them:
/// the baseline of the vectorisation micro-benchmark (Fig. 16's "SIMD
/// off"), and the reference the tests compare [`Lv`] against.
pub mod scalar {
    use super::Lv;

    pub fn max_in_place(a: &mut Lv, b: &Lv, logs: usize) {
        for j in 0..logs {
            if b.get(j) > a.get(j) {
                a.set(j, b.get(j));
            }
        }
    }

    pub fn le(a: &Lv, b: &Lv, logs: usize) -> bool {
        (0..logs).all(|j| a.get(j) <= b.get(j))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_and_le_are_element_wise() {
        let mut a = Lv::from_slice(&[4, 2]);
        let b = Lv::from_slice(&[3, 7]);
        a.max_in_place(&b);
        assert_eq!(a, Lv::from_slice(&[4, 7]));
        assert!(b.le(&a));
        assert!(!a.le(&b));
        assert!(Lv::ZERO.le(&b));
        // Incomparable vectors: neither is ≤ the other.
        let c = Lv::from_slice(&[5, 0]);
        assert!(!c.le(&b) && !b.le(&c));
    }

    #[test]
    fn the_vectorised_operations_agree_with_the_scalar_ones() {
        use rand::{Rng, SeedableRng};
        let seed = 0x1f16;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        for _ in 0..2_000 {
            let logs = rng.gen_range(1..=MAX_LOGS);
            let v = |rng: &mut rand_chacha::ChaCha8Rng| {
                Lv::from_slice(&(0..logs).map(|_| rng.gen_range(0..8u64)).collect::<Vec<_>>())
            };
            let (a, b) = (v(&mut rng), v(&mut rng));
            let (mut x, mut y) = (a, a);
            x.max_in_place(&b);
            scalar::max_in_place(&mut y, &b, logs);
            assert_eq!(x, y, "seed {seed:#x}");
            assert_eq!(a.le(&b), scalar::le(&a, &b, logs), "seed {seed:#x}");
        }
    }

    #[test]
    fn compression_keeps_the_elements_above_the_anchor_and_decompression_only_grows_them() {
        // Fig. 4: T.LV = [4, 45, 1, 2] against LPLV = [7, 16, 2, 4] stores only the 2nd.
        let t = Lv::from_slice(&[4, 45, 1, 2]);
        let anchor = Lv::from_slice(&[7, 16, 2, 4]);
        let mask = t.compress_mask(&anchor, 4);
        assert_eq!(mask, 0b0010);
        let stored = Lv::from_slice(&[0, 45, 0, 0]);
        let back = stored.decompressed(mask, &anchor, 4);
        assert_eq!(back, Lv::from_slice(&[7, 45, 2, 4]));
        assert!(t.le(&back), "decompression never loses a dependency");
    }

    #[test]
    fn the_papers_figure_3_example() {
        // T1 writes A (writeLV [4,2], readLV [3,7]), then reads B (writeLV [8,6]).
        let mut t1 = Lv::ZERO;
        t1.max_in_place(&Lv::from_slice(&[4, 2]));
        t1.max_in_place(&Lv::from_slice(&[3, 7]));
        assert_eq!(t1, Lv::from_slice(&[4, 7]));
        t1.max_in_place(&Lv::from_slice(&[8, 6]));
        assert_eq!(t1, Lv::from_slice(&[8, 7]));
        // Its record in log 1 gets LSN 16.
        t1.set(0, 16);
        assert_eq!(t1.as_slice(2), &[16, 7]);
    }
}
