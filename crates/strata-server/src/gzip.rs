//! Gzip request bodies (`Content-Encoding: gzip`), decompressed with a limit
//! on the output so a small "gzip bomb" cannot exhaust memory.

use std::io::Read;

use flate2::read::MultiGzDecoder;

/// Why a gzip body was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum GzipError {
    #[error("decompressed body is larger than {max_bytes} bytes")]
    TooLarge { max_bytes: usize },
    #[error("invalid gzip body: {0}")]
    Invalid(String),
}

/// Decompresses `compressed` (one or more concatenated gzip members) and
/// stops with [`GzipError::TooLarge`] as soon as the output would exceed
/// `max_bytes`; never allocates more than `max_bytes + 1` bytes of output.
pub fn decompress_limited(compressed: &[u8], max_bytes: usize) -> Result<Vec<u8>, GzipError> {
    let mut out = Vec::with_capacity(compressed.len().saturating_mul(4).min(max_bytes));
    let limit = u64::try_from(max_bytes).unwrap_or(u64::MAX).saturating_add(1);
    MultiGzDecoder::new(compressed)
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|e| GzipError::Invalid(e.to_string()))?;
    if out.len() > max_bytes {
        return Err(GzipError::TooLarge { max_bytes });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use flate2::Compression;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn round_trips_and_concatenated_members() {
        let mut two = gzip(b"cpu value=1\n");
        two.extend(gzip(b"cpu value=2\n"));
        assert_eq!(decompress_limited(&two, 1000).unwrap(), b"cpu value=1\ncpu value=2\n");
        assert_eq!(decompress_limited(&gzip(b"exactly10!"), 10).unwrap(), b"exactly10!");
    }

    #[test]
    fn bomb_stops_at_the_limit() {
        let bomb = gzip(&vec![b'a'; 10 << 20]);
        assert!(bomb.len() < 20_000, "{} compressed bytes", bomb.len());
        assert_eq!(decompress_limited(&bomb, 1 << 20), Err(GzipError::TooLarge { max_bytes: 1 << 20 }));
        assert_eq!(decompress_limited(&gzip(b"elevenbytes"), 10), Err(GzipError::TooLarge { max_bytes: 10 }));
    }

    #[test]
    fn garbage_and_truncation_are_invalid() {
        assert!(matches!(decompress_limited(b"not gzip at all", 100), Err(GzipError::Invalid(_))));
        let full = gzip(b"cpu value=1\n");
        let cut = &full[..full.len() - 4];
        assert!(matches!(decompress_limited(cut, 100), Err(GzipError::Invalid(_))));
    }
}
