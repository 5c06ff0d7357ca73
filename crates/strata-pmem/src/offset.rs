//! Positions inside a persistent region. PMem never stores pointers, only
//! offsets from the start of the region (DESIGN.md section 1), so a region can
//! be mapped at a different address after a restart.

use std::fmt;
use std::ops::Add;

/// CPU cache line: the unit of `clwb`/`clflushopt`/`clflush`.
pub const CACHE_LINE_BYTES: u64 = 64;
/// Optane media write unit (XPLine): a 64-byte write costs a 256-byte media write.
pub const MEDIA_BLOCK_BYTES: u64 = 256;
/// The failure-atomic store unit: an aligned 8-byte word.
pub const WORD_BYTES: u64 = 8;

/// A byte offset from the start of a [`crate::Region`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct RegionOffset(pub u64);

impl RegionOffset {
    pub const ZERO: RegionOffset = RegionOffset(0);

    pub const fn new(offset: u64) -> Self {
        RegionOffset(offset)
    }

    pub const fn get(self) -> u64 {
        self.0
    }

    pub const fn is_aligned(self, alignment: u64) -> bool {
        self.0.is_multiple_of(alignment)
    }

    /// Rounds up to a multiple of `alignment` (a power of two).
    pub const fn align_up(self, alignment: u64) -> Self {
        RegionOffset((self.0 + alignment - 1) & !(alignment - 1))
    }
}

impl Add<u64> for RegionOffset {
    type Output = RegionOffset;
    fn add(self, rhs: u64) -> RegionOffset {
        RegionOffset(self.0 + rhs)
    }
}

impl fmt::Display for RegionOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn align_up_rounds_to_power_of_two() {
        assert_eq!(RegionOffset(0).align_up(256), RegionOffset(0));
        assert_eq!(RegionOffset(1).align_up(256), RegionOffset(256));
        assert_eq!(RegionOffset(256).align_up(256), RegionOffset(256));
        assert_eq!(RegionOffset(257).align_up(64), RegionOffset(320));
        assert!(RegionOffset(512).is_aligned(256));
    }
}
