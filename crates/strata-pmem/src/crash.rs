//! Crash images of one crash point (DESIGN.md section 3): exhaustively every
//! combination when the count is at most the exhaustive limit (about 12
//! uncertain two-valued words), otherwise a seeded sample. Image `i` of a
//! point is a pure function of (point, seed, i), so a failure reproduces.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::offset::CACHE_LINE_BYTES;
use crate::sim::SimOpKind;

/// A word whose post-crash value is not determined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UncertainWord {
    pub word_offset: u64,
    /// The persisted value.
    pub old: u64,
    /// Values that may have reached media instead, oldest first, distinct, none equal to `old`.
    pub new_values: Vec<u64>,
}

impl UncertainWord {
    fn choices(&self) -> u64 {
        1 + self.new_values.len() as u64
    }

    fn value(&self, choice: u64) -> u64 {
        if choice == 0 {
            self.old
        } else {
            self.new_values[(choice - 1) as usize]
        }
    }
}

/// The state of a simulated region right after one flush or fence.
#[derive(Clone, Debug)]
pub struct CrashPoint {
    /// Position of this point in the run (0-based).
    pub index: u64,
    /// Flushes and fences completed when the point was taken.
    pub op: u64,
    pub kind: SimOpKind,
    pub persistent: Arc<Vec<u8>>,
    pub uncertain: Vec<UncertainWord>,
}

impl CrashPoint {
    /// Every image the model allows, saturating at `u64::MAX`.
    pub fn possible_images(&self) -> u64 {
        self.uncertain.iter().fold(1u64, |acc, w| acc.saturating_mul(w.choices()))
    }

    /// How many images to check here: all of them when at most
    /// `exhaustive_limit`, otherwise `samples`.
    pub fn planned_images(&self, exhaustive_limit: u64, samples: u64) -> u64 {
        let all = self.possible_images();
        if all <= exhaustive_limit {
            all
        } else {
            samples.max(2)
        }
    }

    /// Image `index` under the same plan as [`CrashPoint::planned_images`].
    ///
    /// Exhaustive: a mixed-radix decomposition of `index`. Sampled: image 0
    /// keeps every old value, image 1 takes every newest value, and each later
    /// image draws a probability `p`; even images take a new value for each
    /// word with probability `p`, odd images take each cache line's newest
    /// values with probability `p`. So mostly-old, mostly-new and line-granular
    /// images all occur. Pass `exhaustive_limit = 0` to force sampling.
    pub fn image(&self, exhaustive_limit: u64, seed: u64, index: u64) -> Vec<u8> {
        let mut image = self.persistent.as_ref().clone();
        let mut put = |w: &UncertainWord, v: u64| {
            let at = w.word_offset as usize;
            image[at..at + 8].copy_from_slice(&v.to_le_bytes());
        };
        if self.possible_images() <= exhaustive_limit {
            let mut rest = index;
            for w in &self.uncertain {
                put(w, w.value(rest % w.choices()));
                rest /= w.choices();
            }
        } else if index == 1 {
            for w in &self.uncertain {
                put(w, *w.new_values.last().expect("uncertain word has a new value"));
            }
        } else if index > 1 {
            let mut rng = ChaCha8Rng::seed_from_u64(image_seed(seed, self.index, index));
            let p: f64 = rng.gen();
            if index.is_multiple_of(2) {
                // Words independently: a line may be half written back.
                for w in &self.uncertain {
                    if rng.gen_bool(p) {
                        put(w, w.value(rng.gen_range(1..w.choices())));
                    }
                }
            } else {
                // Whole cache lines: a line is written back with all of its
                // newest words or none, as eviction usually does; this finds
                // "this line reached media, that one did not" orderings that
                // per-word draws over many words almost never produce.
                let mut line = u64::MAX;
                let mut take = false;
                for w in &self.uncertain {
                    if w.word_offset / CACHE_LINE_BYTES != line {
                        line = w.word_offset / CACHE_LINE_BYTES;
                        take = rng.gen_bool(p);
                    }
                    if take {
                        put(w, *w.new_values.last().expect("uncertain word has a new value"));
                    }
                }
            }
        }
        image
    }
}

/// The seed of one sampled image, derived from the run's seed.
pub fn image_seed(seed: u64, point: u64, image: u64) -> u64 {
    // SplitMix64 finaliser over the three coordinates.
    let mut z = seed ^ point.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ image.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(words: usize) -> CrashPoint {
        CrashPoint {
            index: 3,
            op: 7,
            kind: SimOpKind::Fence,
            persistent: Arc::new(vec![0; words * 8]),
            uncertain: (0..words as u64)
                .map(|w| UncertainWord { word_offset: w * 8, old: 0, new_values: vec![w + 1] })
                .collect(),
        }
    }

    #[test]
    fn exhaustive_images_are_all_distinct_combinations() {
        let p = point(3);
        assert_eq!(p.planned_images(4096, 10), 8);
        let mut seen: Vec<Vec<u8>> = (0..8).map(|i| p.image(4096, 1, i)).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 8);
    }

    #[test]
    fn sampled_images_reproduce_from_seed() {
        let p = point(20);
        assert_eq!(p.planned_images(4096, 50), 50);
        assert_eq!(p.image(4096, 9, 17), p.image(4096, 9, 17));
        assert_eq!(p.image(4096, 9, 0), vec![0; 160], "image 0 keeps old values");
        let newest = p.image(4096, 9, 1);
        assert_eq!(newest[19 * 8], 20, "image 1 takes newest values");
    }
}
