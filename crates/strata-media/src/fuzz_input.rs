//! The byte reader of the fuzz entries: reads fuzz bytes as a recipe of
//! little-endian integers, zero once exhausted, so every input, however
//! short, gives a recipe. One reader for the fuzz entries of every crate
//! (it replaces `strata-series`' `Recipe` and `strata-declog`'s `Input`).
//!
//! Why here: the fuzz entries are compiled into their libraries under the
//! `fuzz` feature (for the cargo-fuzz crate in `fuzz/`), not only as tests,
//! so they cannot use the dev-only `strata-testkit`; this is the lowest
//! crate they all depend on. Compiled only for tests and under `fuzz`.

/// Reads fuzz bytes as little-endian integers; zero once exhausted.
#[derive(Clone, Debug)]
pub struct FuzzInput<'a>(pub &'a [u8]);

impl FuzzInput<'_> {
    pub fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | u64::from(self.u32()) << 32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_little_endian_then_zeros() {
        let mut r = FuzzInput(&[1, 2, 0, 0, 0, 3, 1, 0, 0, 0, 0, 0, 0, 0xFF, 4, 1]);
        assert_eq!(r.u8(), 1);
        assert_eq!(r.u32(), 2);
        assert_eq!(r.u64(), 0x0103);
        assert_eq!(r.u8(), 0xFF);
        assert_eq!(r.u16(), 0x0104);
        assert_eq!(r.u32(), 0, "bytes past the end read as zero");
        assert_eq!((r.u8(), r.u64()), (0, 0));
    }
}
