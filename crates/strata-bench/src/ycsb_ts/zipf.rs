//! Zipfian key popularity for YCSB-TS (DecLog section 5.1, Table 1: theta 0.9
//! for workloads B and C, 1.1 for D).
//!
//! [`ZipfianGenerator`] is YCSB's `ZipfianGenerator`, the method of Gray et
//! al., "Quickly Generating Billion-Record Synthetic Databases" (SIGMOD 1994):
//! `zeta(n, theta) = sum_{i=1..n} 1 / i^theta` is precomputed once, then each
//! draw takes one uniform `u` in `[0, 1)` and returns rank 0 when
//! `u * zeta_n < 1`, rank 1 when `u * zeta_n < 1 + 0.5^theta`, and otherwise
//! `floor(n * (eta * u - eta + 1)^alpha)` with `alpha = 1 / (1 - theta)` and
//! `eta = (1 - (2 / n)^(1 - theta)) / (1 - zeta(2, theta) / zeta_n)`. The same
//! formula holds for theta > 1 (alpha and eta are then negative), which
//! workload D needs; theta = 1 is a pole and is rejected.
//!
//! Gray's method is exact for ranks 0 and 1 and approximate beyond:
//! [`ZipfianGenerator::sampled_probability`] gives the probability the
//! sampler really returns each rank, [`ZipfianGenerator::zipf_probability`]
//! the ideal `1 / (rank + 1)^theta / zeta_n`. For 1000 items rank 2 comes out
//! about 16 % (theta 0.9) to 18 % (theta 1.1) too often and the tail about
//! 3-5 % too rarely; the tests pin both.
//!
//! [`ScrambledZipfian`] spreads the popular ranks over the key space with a
//! seeded random permutation, so the hottest keys are not keys 0, 1, 2 ...
//! (which would put them in the same tag group and, under range partitioning,
//! in the same log stream). YCSB's own `ScrambledZipfianGenerator` instead
//! draws from 10^16 items with a zeta precomputed for theta 0.99 only and
//! folds them onto the key space with `fnv64(rank) % n`; that cannot be
//! computed for Table 1's thetas and its hash collisions change the shape of
//! the distribution, whereas a permutation keeps each key's probability
//! exactly that of its rank.

use std::fmt;

use rand::seq::SliceRandom;
use rand::Rng;

/// Largest item count of a [`ScrambledZipfian`]: its permutation stores key
/// indices as `u32`.
pub const MAX_SCRAMBLED_ITEMS: u64 = 1 << 32;

/// Why a Zipfian generator cannot be built.
#[derive(Clone, Debug, PartialEq)]
pub enum ZipfError {
    /// There must be at least one item.
    NoItems,
    /// Theta must be finite, at least 0 (0: uniform) and not 1 (the pole
    /// of Gray's formula).
    BadTheta(f64),
    /// More items than [`MAX_SCRAMBLED_ITEMS`].
    TooManyItems(u64),
}

impl fmt::Display for ZipfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZipfError::NoItems => write!(f, "a Zipfian distribution needs at least one item"),
            ZipfError::BadTheta(theta) => {
                write!(f, "Zipfian theta must be finite, at least 0 and not 1 (got {theta})")
            }
            ZipfError::TooManyItems(n) => {
                write!(f, "a scrambled Zipfian supports at most {MAX_SCRAMBLED_ITEMS} items (got {n})")
            }
        }
    }
}

impl std::error::Error for ZipfError {}

/// `zeta(n, theta) = sum_{i=1..n} 1 / i^theta`, summed in YCSB's order.
pub fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

/// Ranks `0..n`, rank 0 the most popular, by Gray et al.'s method (YCSB's
/// `ZipfianGenerator` with a fixed item count).
#[derive(Clone, Debug)]
pub struct ZipfianGenerator {
    items: u64,
    theta: f64,
    zeta_n: f64,
    zeta_2: f64,
    alpha: f64,
    eta: f64,
}

impl ZipfianGenerator {
    /// Precomputes zeta over `items` items: O(items) `powf` calls.
    pub fn new(items: u64, theta: f64) -> Result<ZipfianGenerator, ZipfError> {
        if items == 0 {
            return Err(ZipfError::NoItems);
        }
        if !theta.is_finite() || theta < 0.0 || (theta - 1.0).abs() < 1e-9 {
            return Err(ZipfError::BadTheta(theta));
        }
        let zeta_n = zeta(items, theta);
        let zeta_2 = zeta(2, theta);
        let alpha = 1.0 / (1.0 - theta);
        // With one or two items every draw ends in the first two branches;
        // the formula would divide 0 by 0.
        let eta = if items >= 3 {
            (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta_2 / zeta_n)
        } else {
            0.0
        };
        Ok(ZipfianGenerator { items, theta, zeta_n, zeta_2, alpha, eta })
    }

    pub fn items(&self) -> u64 {
        self.items
    }

    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// `zeta(items, theta)`.
    pub fn zeta_n(&self) -> f64 {
        self.zeta_n
    }

    /// One rank in `0..items`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let u: f64 = rng.gen();
        self.rank_for(u)
    }

    /// The rank Gray's method maps the uniform `u` in `[0, 1)` to.
    pub fn rank_for(&self, u: f64) -> u64 {
        let uz = u * self.zeta_n;
        if uz < 1.0 || self.items == 1 {
            return 0;
        }
        if uz < self.zeta_2 || self.items == 2 {
            return 1;
        }
        let rank = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        // u close to 1 can round up to `items`; the cast saturates NaN to 0.
        rank.clamp(2, self.items - 1)
    }

    /// The ideal Zipf probability of `rank`: `1 / (rank + 1)^theta / zeta_n`.
    pub fn zipf_probability(&self, rank: u64) -> f64 {
        if rank >= self.items {
            return 0.0;
        }
        1.0 / ((rank + 1) as f64).powf(self.theta) / self.zeta_n
    }

    /// The probability that [`Self::sample`] returns `rank`, i.e. the measure
    /// of the `u` that [`Self::rank_for`] maps to it (Gray's approximation).
    pub fn sampled_probability(&self, rank: u64) -> f64 {
        if rank >= self.items {
            return 0.0;
        }
        if rank <= 1 || self.items <= 2 {
            return self.zipf_probability(rank);
        }
        // For rank >= 2 the formula is increasing in u and equals 2 at
        // u = zeta_2 / zeta_n, so rank r takes [u(r), u(r + 1)).
        let u_at = |r: u64| -> f64 {
            if r >= self.items {
                return 1.0;
            }
            let x = (r as f64 / self.items as f64).powf(1.0 / self.alpha);
            (1.0 + (x - 1.0) / self.eta).clamp(0.0, 1.0)
        };
        (u_at(rank + 1) - u_at(rank)).max(0.0)
    }
}

/// A [`ZipfianGenerator`] whose ranks are mapped to items by a seeded random
/// permutation: item `permutation[rank]` has rank `rank`'s probability.
#[derive(Clone)]
pub struct ScrambledZipfian {
    ranks: ZipfianGenerator,
    item_of_rank: Vec<u32>,
}

impl fmt::Debug for ScrambledZipfian {
    /// The generator and the hottest items, not the whole permutation.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hottest = &self.item_of_rank[..self.item_of_rank.len().min(4)];
        f.debug_struct("ScrambledZipfian").field("ranks", &self.ranks).field("hottest", &hottest).finish()
    }
}

impl ScrambledZipfian {
    /// Precomputes zeta and a Fisher-Yates permutation of `0..items` drawn
    /// from `permutation_rng`: O(items) time, 4 bytes per item.
    pub fn new<R: Rng + ?Sized>(
        items: u64,
        theta: f64,
        permutation_rng: &mut R,
    ) -> Result<ScrambledZipfian, ZipfError> {
        if items > MAX_SCRAMBLED_ITEMS {
            return Err(ZipfError::TooManyItems(items));
        }
        let ranks = ZipfianGenerator::new(items, theta)?;
        // items <= 2^32, so every index fits a u32.
        let mut item_of_rank: Vec<u32> = (0..items).map(|i| i as u32).collect();
        item_of_rank.shuffle(permutation_rng);
        Ok(ScrambledZipfian { ranks, item_of_rank })
    }

    /// The unscrambled rank generator.
    pub fn ranks(&self) -> &ZipfianGenerator {
        &self.ranks
    }

    /// The item that has rank `rank` (0 = most popular).
    pub fn item_of_rank(&self, rank: u64) -> u64 {
        self.item_of_rank[rank as usize] as u64
    }

    /// One item in `0..items`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.item_of_rank(self.ranks.sample(rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    const SAMPLES: usize = 200_000;

    /// Log-spaced rank bins [0,1), [1,3), [3,7), ... covering 0..items.
    fn log_bins(items: u64) -> Vec<(u64, u64)> {
        let mut bins = Vec::new();
        let (mut lo, mut width) = (0, 1);
        while lo < items {
            let hi = (lo + width).min(items);
            bins.push((lo, hi));
            lo = hi;
            width *= 2;
        }
        bins
    }

    fn rank_counts(generator: &ZipfianGenerator, seed: u64) -> Vec<u64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut counts = vec![0u64; generator.items() as usize];
        for _ in 0..SAMPLES {
            counts[generator.sample(&mut rng) as usize] += 1;
        }
        counts
    }

    /// Pearson chi-square of the binned counts against `probability`.
    fn chi_square(counts: &[u64], bins: &[(u64, u64)], probability: impl Fn(u64) -> f64) -> f64 {
        bins.iter()
            .map(|&(lo, hi)| {
                let observed: u64 = counts[lo as usize..hi as usize].iter().sum();
                let expected = (lo..hi).map(&probability).sum::<f64>() * SAMPLES as f64;
                (observed as f64 - expected).powi(2) / expected
            })
            .sum()
    }

    #[test]
    fn rejects_bad_parameters() {
        assert_eq!(ZipfianGenerator::new(0, 0.9).unwrap_err(), ZipfError::NoItems);
        assert_eq!(ZipfianGenerator::new(10, 1.0).unwrap_err(), ZipfError::BadTheta(1.0));
        assert_eq!(ZipfianGenerator::new(10, -0.1).unwrap_err(), ZipfError::BadTheta(-0.1));
        // Theta 0 is the uniform distribution (Gray's formula reduces to it).
        let uniform = ZipfianGenerator::new(10, 0.0).unwrap();
        for u in 0..100 {
            assert_eq!(uniform.rank_for(u as f64 / 100.0), u / 10, "u = {u} %");
        }
        assert!(matches!(ZipfianGenerator::new(10, f64::NAN), Err(ZipfError::BadTheta(_))));
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let err = ScrambledZipfian::new(MAX_SCRAMBLED_ITEMS + 1, 0.9, &mut rng).unwrap_err();
        assert_eq!(err, ZipfError::TooManyItems(MAX_SCRAMBLED_ITEMS + 1));
        assert!(err.to_string().contains("at most"));
    }

    #[test]
    fn tiny_item_counts_stay_in_range() {
        for items in 1..=3 {
            let generator = ZipfianGenerator::new(items, 1.1).unwrap();
            for u in [0.0, 0.3, 0.5, 0.9, 1.0 - f64::EPSILON] {
                assert!(generator.rank_for(u) < items, "items {items} u {u}");
            }
        }
    }

    #[test]
    fn sampled_probabilities_sum_to_one_and_match_zipf_for_the_first_two_ranks() {
        for theta in [0.5, 0.9, 0.99, 1.1, 1.5] {
            let generator = ZipfianGenerator::new(1000, theta).unwrap();
            let total: f64 = (0..1000).map(|r| generator.sampled_probability(r)).sum();
            assert!((total - 1.0).abs() < 1e-9, "theta {theta}: total {total}");
            for rank in [0, 1] {
                let (sampled, ideal) =
                    (generator.sampled_probability(rank), generator.zipf_probability(rank));
                assert!((sampled - ideal).abs() < 1e-12, "theta {theta} rank {rank}");
            }
        }
    }

    #[test]
    fn samples_fit_grays_distribution_and_approximate_zipf() {
        for (theta, seed) in [(0.9, 0x9a11_u64), (1.1, 0x11a1)] {
            let generator = ZipfianGenerator::new(1000, theta).unwrap();
            let counts = rank_counts(&generator, seed);
            let bins = log_bins(1000);

            // The most popular rank: exactly 1 / zeta_n in expectation.
            let top = counts[0] as f64 / SAMPLES as f64;
            let expected_top = 1.0 / generator.zeta_n();
            assert!(
                (top / expected_top - 1.0).abs() < 0.03,
                "seed {seed:#x} theta {theta}: top rank {top} vs {expected_top}"
            );
            assert_eq!(counts.iter().enumerate().max_by_key(|(_, c)| **c).unwrap().0, 0);

            // Against what Gray's method produces: a real goodness-of-fit
            // test, 10 bins = 9 degrees of freedom (p = 0.001 at 27.9).
            let chi2 = chi_square(&counts, &bins, |r| generator.sampled_probability(r));
            assert!(chi2 < 27.9, "seed {seed:#x} theta {theta}: chi-square {chi2} vs Gray's distribution");

            // Against the ideal Zipf distribution: Gray's approximation is
            // off by under 10 % per bin, under 0.035 in total variation.
            let mut total_variation = 0.0;
            for &(lo, hi) in &bins {
                let observed = counts[lo as usize..hi as usize].iter().sum::<u64>() as f64 / SAMPLES as f64;
                let ideal: f64 = (lo..hi).map(|r| generator.zipf_probability(r)).sum();
                total_variation += (observed - ideal).abs() / 2.0;
                assert!(
                    (observed / ideal - 1.0).abs() < 0.10,
                    "seed {seed:#x} theta {theta}: bin [{lo},{hi}) {observed} vs Zipf {ideal}"
                );
            }
            assert!(total_variation < 0.035, "seed {seed:#x} theta {theta}: TV {total_variation}");
        }
    }

    #[test]
    fn higher_theta_is_more_skewed() {
        let mild = ZipfianGenerator::new(1000, 0.9).unwrap();
        let steep = ZipfianGenerator::new(1000, 1.1).unwrap();
        let (mild_counts, steep_counts) = (rank_counts(&mild, 7), rank_counts(&steep, 7));
        let top10 = |c: &[u64]| c[..10].iter().sum::<u64>();
        assert!(top10(&steep_counts) > top10(&mild_counts) + SAMPLES as u64 / 10);
    }

    #[test]
    fn scrambling_is_a_permutation_that_moves_the_hot_ranks() {
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        let scrambled = ScrambledZipfian::new(1000, 0.9, &mut rng).unwrap();
        let mut seen = vec![false; 1000];
        for rank in 0..1000 {
            let item = scrambled.item_of_rank(rank) as usize;
            assert!(!seen[item], "item {item} appears twice");
            seen[item] = true;
        }
        let hottest: Vec<u64> = (0..5).map(|r| scrambled.item_of_rank(r)).collect();
        assert_ne!(hottest, vec![0, 1, 2, 3, 4]);

        let mut draw_rng = ChaCha8Rng::seed_from_u64(43);
        let mut counts = vec![0u64; 1000];
        for _ in 0..SAMPLES {
            counts[scrambled.sample(&mut draw_rng) as usize] += 1;
        }
        let busiest = counts.iter().enumerate().max_by_key(|(_, c)| **c).unwrap().0 as u64;
        assert_eq!(busiest, scrambled.item_of_rank(0), "seed 43");
    }
}
