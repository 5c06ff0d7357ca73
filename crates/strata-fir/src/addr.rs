//! Logical addresses of tuple versions (fir.txt 4.1): region (16 bits),
//! block within the region (32 bits, the tile's number too), slot in the
//! block (16 bits). An address names a version of one table; the index
//! keeps the table beside it.

/// A version's logical address.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct VersionAddr {
    pub region: u16,
    pub block: u32,
    pub slot: u16,
}

impl VersionAddr {
    pub fn to_raw(self) -> u64 {
        (u64::from(self.region) << 48) | (u64::from(self.block) << 16) | u64::from(self.slot)
    }

    pub fn from_raw(raw: u64) -> Self {
        VersionAddr { region: (raw >> 48) as u16, block: (raw >> 16) as u32, slot: raw as u16 }
    }

    /// Stored in a header's `prev`/`next`: raw + 1, so 0 is "none".
    pub fn link(this: Option<Self>) -> u64 {
        this.map_or(0, |a| a.to_raw() + 1)
    }

    pub fn unlink(word: u64) -> Option<Self> {
        word.checked_sub(1).map(Self::from_raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_pack_region_block_and_slot() {
        let a = VersionAddr { region: 3, block: 70_000, slot: 2047 };
        assert_eq!(a.to_raw(), (3 << 48) | (70_000 << 16) | 2047);
        assert_eq!(VersionAddr::from_raw(a.to_raw()), a);
        assert_eq!(VersionAddr::unlink(VersionAddr::link(Some(a))), Some(a));
        assert_eq!(VersionAddr::unlink(VersionAddr::link(None)), None);
    }
}
