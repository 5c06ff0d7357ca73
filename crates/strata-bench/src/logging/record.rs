//! What every system commits: one record of a 16-byte key and a value of
//! `--value-bytes` (db_bench's default shape: 16-byte key, 100-byte value).
//! Keys are unique per (thread, sequence number) and spread over the key
//! space in a scrambled order, as `fillrandom` writes in random key order.

/// Key bytes of every record (db_bench `--key_size=16`).
pub const KEY_BYTES: usize = 16;

/// SplitMix64's finalizer: a bijection on u64, so distinct inputs stay distinct.
fn scramble(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The key of the `seq`-th record of `thread`: 8 scrambled bytes (random
/// order) then the 8-byte identity (uniqueness), both big-endian.
pub fn key_of(thread: usize, seq: u64) -> [u8; KEY_BYTES] {
    let id = ((thread as u64) << 48) | (seq & ((1 << 48) - 1));
    let mut key = [0u8; KEY_BYTES];
    key[..8].copy_from_slice(&scramble(id).to_be_bytes());
    key[8..].copy_from_slice(&id.to_be_bytes());
    key
}

/// The value every record carries (its bytes do not matter to any system here).
pub fn value_of(value_bytes: usize) -> Vec<u8> {
    (0..value_bytes).map(|i| (i % 251) as u8).collect()
}

/// A Strata log payload: key then value.
pub fn payload_buffer(value: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; KEY_BYTES + value.len()];
    p[KEY_BYTES..].copy_from_slice(value);
    p
}

/// Puts `key` at the start of a [`payload_buffer`].
pub fn set_key(payload: &mut [u8], key: &[u8; KEY_BYTES]) {
    payload[..KEY_BYTES].copy_from_slice(key);
}
