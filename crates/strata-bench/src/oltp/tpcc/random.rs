//! TPC-C's random values (clause 2.1.6 NURand, 4.3.2 strings and last
//! names), shared by the loader and the input generation.

use rand::{Rng, RngCore};

/// `C` of NURand for `C_LAST` at load and at run time, and for `C_ID` and
/// `OL_I_ID` (clause 2.1.6.1: the run's `C_LAST` constant differs from the
/// load's by 65 to 119, not 96 or 112).
pub const C_LAST_LOAD: u32 = 157;
pub const C_LAST_RUN: u32 = 223;
pub const C_ID: u32 = 259;
pub const C_OL_I_ID: u32 = 7911;

/// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
pub fn nurand(rng: &mut impl Rng, a: u32, c: u32, x: u32, y: u32) -> u32 {
    (((rng.gen_range(0..=a) | rng.gen_range(x..=y)) + c) % (y - x + 1)) + x
}

const SYLLABLES: [&[u8]; 10] =
    [b"BAR", b"OUGHT", b"ABLE", b"PRI", b"PRES", b"ESE", b"ANTI", b"CALLY", b"ATION", b"EING"];

/// The last name of number `n` (0-999): its three digits' syllables (clause 4.3.2.3).
pub fn last_name(n: u32) -> Vec<u8> {
    debug_assert!(n < 1000);
    let mut s = Vec::with_capacity(15);
    for digit in [n / 100, n / 10 % 10, n % 10] {
        s.extend_from_slice(SYLLABLES[digit as usize]);
    }
    s
}

const ALNUM: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// a-string[lo..hi]: `lo` to `hi` random alphanumeric characters, zero-padded to `N`.
pub fn a_string<const N: usize>(rng: &mut impl RngCore, lo: usize, hi: usize) -> [u8; N] {
    debug_assert!(lo <= hi && hi <= N);
    let mut a = [0u8; N];
    let len = rng.gen_range(lo..=hi);
    rng.fill_bytes(&mut a[..len]);
    for b in &mut a[..len] {
        *b = ALNUM[usize::from(*b) % ALNUM.len()];
    }
    a
}

/// n-string: `N` random digits.
pub fn n_string<const N: usize>(rng: &mut impl RngCore) -> [u8; N] {
    let mut a = [0u8; N];
    for b in &mut a {
        *b = b'0' + rng.gen_range(0..10u8);
    }
    a
}

/// `data` (an a-string of 26 to 50) with "ORIGINAL" at a random place in
/// 10 % of the rows (I_DATA and S_DATA, clause 4.3.3.1).
pub fn data_with_original(rng: &mut impl RngCore) -> [u8; 50] {
    let mut d: [u8; 50] = a_string(rng, 26, 50);
    if rng.gen_range(0..10) == 0 {
        let len = d.iter().position(|b| *b == 0).unwrap_or(50);
        let at = rng.gen_range(0..=len - 8);
        d[at..at + 8].copy_from_slice(b"ORIGINAL");
    }
    d
}

/// A zip code: 4 random digits and "11111" (clause 4.3.2.7).
pub fn zip(rng: &mut impl RngCore) -> [u8; 9] {
    let mut z = [b'1'; 9];
    z[..4].copy_from_slice(&n_string::<4>(rng));
    z
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    #[test]
    fn last_names_are_the_spec_s_syllables() {
        assert_eq!(last_name(0), b"BARBARBAR");
        assert_eq!(last_name(371), b"PRICALLYOUGHT");
        assert_eq!(last_name(999), b"EINGEINGEING");
        assert!((0..1000).all(|n| last_name(n).len() <= 16));
        assert_eq!(C_LAST_RUN - C_LAST_LOAD, 66);
    }

    #[test]
    fn nurand_stays_in_range_and_strings_have_their_lengths() {
        let seed = 0x7a_2d;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for _ in 0..10_000 {
            let v = nurand(&mut rng, 1023, C_ID, 1, 3000);
            assert!((1..=3000).contains(&v), "seed {seed:#x}: {v}");
            let n = nurand(&mut rng, 255, C_LAST_RUN, 0, 999);
            assert!(n < 1000, "seed {seed:#x}: {n}");
            let s: [u8; 24] = a_string(&mut rng, 14, 24);
            let len = s.iter().position(|b| *b == 0).unwrap_or(24);
            assert!((14..=24).contains(&len), "seed {seed:#x}: {s:?}");
            assert!(s[..len].iter().all(u8::is_ascii_alphanumeric), "seed {seed:#x}: {s:?}");
            let z = zip(&mut rng);
            assert!(z.iter().all(u8::is_ascii_digit) && &z[4..] == b"11111", "seed {seed:#x}: {z:?}");
        }
        let originals =
            (0..10_000).filter(|_| data_with_original(&mut rng).windows(8).any(|w| w == b"ORIGINAL"));
        let n = originals.count();
        assert!((800..1200).contains(&n), "seed {seed:#x}: {n} of 10,000 with ORIGINAL");
    }
}
