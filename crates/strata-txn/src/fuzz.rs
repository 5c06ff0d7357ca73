//! Fuzz entries (feature `fuzz`, for the cargo-fuzz crate in `fuzz/`; the
//! smoke tests run them on the stable toolchain).

use crate::record::{decode, encode_masked};
use crate::recovery::decode_log;

/// Decodes one record; one that decodes re-encodes to the same bytes (the
/// format is canonical), and never panics on any input.
pub fn fuzz_record_decode(data: &[u8]) {
    if let Ok(Some((rec, len))) = decode(data, 0) {
        let mut again = Vec::new();
        encode_masked(&rec.lv, rec.lv_len, rec.lv_mask, rec.body(), &mut again);
        assert_eq!(again, data[..len], "a decoded record re-encodes to its bytes");
    }
}

/// Decodes a whole log and computes its committed prefix, as recovery does.
pub fn fuzz_log_decode(data: &[u8]) {
    let log = decode_log(data);
    assert!(log.valid_end as usize <= data.len());
    let (kept, ends) = crate::recovery::committed_prefixes(std::slice::from_ref(&log));
    assert!(kept[0] <= log.records.len() && ends[0] <= log.valid_end);
}
