//! Reading fuzz bytes as a recipe: the fuzz entries that build a valid file
//! from their input (`block_file::fuzz_block_file_parse`,
//! `manifest::fuzz_manifest_decode`) take its numbers from here, so every
//! input, however short, gives a recipe.

/// Reads fuzz bytes as little-endian integers; zero once exhausted.
pub(crate) struct Recipe<'a>(pub(crate) &'a [u8]);

impl Recipe<'_> {
    pub(crate) fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    pub(crate) fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    pub(crate) fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | u64::from(self.u32()) << 32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_little_endian_then_zeros() {
        let mut r = Recipe(&[1, 2, 0, 0, 0, 3, 1, 0, 0, 0, 0, 0, 0, 0xFF]);
        assert_eq!(r.u8(), 1);
        assert_eq!(r.u32(), 2);
        assert_eq!(r.u64(), 0x0103);
        assert_eq!(r.u32(), 0xFF, "bytes past the end read as zero");
        assert_eq!((r.u8(), r.u64()), (0, 0));
    }
}
