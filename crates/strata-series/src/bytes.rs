//! Little-endian byte encoding shared by the manifest
//! (`docs/format/manifest.md`) and the series WAL records
//! (`docs/format/series-wal.md`): appending integers, u32-length-prefixed
//! UTF-8 strings and series keys, and [`ByteReader`], which reads them back from untrusted
//! bytes with every read bounds-checked, never panicking, and list counts
//! bounded by the bytes left so that a corrupt count cannot make a decoder
//! allocate more than its input justifies.

use crate::error::FormatError;
use crate::model::SeriesKey;

/// The smallest encoding of a string: its length.
pub(crate) const STRING_MIN_BYTES: usize = 4;

pub(crate) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// A u32 byte length, then the bytes.
pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u32(out, s.len() as u32);
    out.extend_from_slice(s.as_bytes());
}

/// A series key: its measurement, a u32 tag count, each tag's key and
/// value, and its field key.
pub(crate) fn put_series_key(out: &mut Vec<u8>, key: &SeriesKey) {
    put_str(out, &key.measurement);
    put_u32(out, key.tags.len() as u32);
    for (k, v) in &key.tags {
        put_str(out, k);
        put_str(out, v);
    }
    put_str(out, &key.field);
}

/// Reads little-endian values from a byte slice. Errors name the position as
/// `<place> <offset>` (e.g. "body offset 12").
pub(crate) struct ByteReader<'a> {
    bytes: &'a [u8],
    at: usize,
    /// What offsets count from, for error messages ("body offset").
    place: &'static str,
}

impl<'a> ByteReader<'a> {
    pub(crate) fn new(bytes: &'a [u8], place: &'static str) -> ByteReader<'a> {
        ByteReader { bytes, at: 0, place }
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    /// Ok if every byte was read, else "`N` trailing bytes after the `what`".
    pub(crate) fn finish(&self, what: &'static str) -> Result<(), FormatError> {
        match self.remaining() {
            0 => Ok(()),
            left => Err(FormatError::TrailingBytes { left, what }),
        }
    }

    pub(crate) fn take(&mut self, len: usize) -> Result<&'a [u8], FormatError> {
        let end = self.at.checked_add(len).filter(|&end| end <= self.bytes.len());
        let end = end.ok_or(FormatError::Truncated { need: len, place: self.place, at: self.at })?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, FormatError> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn u32(&mut self) -> Result<u32, FormatError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, FormatError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    /// A string written by [`put_str`]; `what` names it in errors.
    pub(crate) fn string(&mut self, what: &'static str) -> Result<String, FormatError> {
        let at = self.at;
        let len = self.u32()? as usize;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| FormatError::NotUtf8 { what, place: self.place, at })
    }

    /// A series key written by [`put_series_key`].
    pub(crate) fn series_key(&mut self) -> Result<SeriesKey, FormatError> {
        let measurement = self.string("measurement")?;
        let count = self.count("tags", 2 * STRING_MIN_BYTES)?;
        let mut tags = Vec::with_capacity(count);
        for _ in 0..count {
            tags.push((self.string("tag key")?, self.string("tag value")?));
        }
        let field = self.string("field key")?;
        Ok(SeriesKey { measurement, tags, field })
    }

    /// A u32 list count, checked against the bytes left given that each item
    /// takes at least `item_min_bytes`.
    pub(crate) fn count(&mut self, what: &'static str, item_min_bytes: usize) -> Result<usize, FormatError> {
        let at = self.at;
        let count = self.u32()? as usize;
        let left = self.remaining();
        if count > left / item_min_bytes.max(1) {
            return Err(FormatError::BadCount { count, what, left, place: self.place, at });
        }
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_consume_exactly_their_bytes() {
        let mut out = Vec::new();
        out.push(7);
        put_u32(&mut out, 0xDEAD_BEEF);
        put_u64(&mut out, u64::MAX - 1);
        put_str(&mut out, "naïve");
        assert_eq!(out.len(), 1 + 4 + 8 + 4 + "naïve".len());
        let key = SeriesKey {
            measurement: "cpu".into(),
            tags: vec![("host".into(), "a".into()), ("region".into(), "".into())],
            field: "usage".into(),
        };
        put_series_key(&mut out, &key);
        let mut r = ByteReader::new(&out, "offset");
        assert_eq!(r.u8(), Ok(7));
        assert_eq!(r.u32(), Ok(0xDEAD_BEEF));
        assert_eq!(r.u64(), Ok(u64::MAX - 1));
        assert_eq!(r.string("name").as_deref(), Ok("naïve"));
        assert_eq!(r.series_key(), Ok(key));
        assert_eq!(r.remaining(), 0);
        assert_eq!(r.finish("record"), Ok(()));
    }

    #[test]
    fn errors_name_the_place_and_offset() {
        let mut r = ByteReader::new(&[1, 0, 0, 0, 0xFF, 9], "body offset");
        let msg = |e: Result<_, FormatError>| e.map(|_: ()| ()).unwrap_err().to_string();
        assert_eq!(msg(r.string("tag key").map(drop)), "tag key at body offset 0 is not UTF-8");
        assert_eq!(msg(r.finish("tombstones")), "1 trailing bytes after the tombstones");
        assert_eq!(r.u32(), Err(FormatError::Truncated { need: 4, place: "body offset", at: 5 }));
        assert_eq!(msg(r.u32().map(drop)), "truncated: 4 bytes needed at body offset 5");
        let mut r = ByteReader::new(&[3, 0, 0, 0, 1, 2, 3, 4, 5], "record offset");
        assert_eq!(
            msg(r.count("series", 2).map(drop)),
            "3 series cannot fit in the 5 bytes left (count at record offset 0)"
        );
        let mut r = ByteReader::new(&[2, 0, 0, 0, 1, 2, 3, 4], "record offset");
        assert_eq!(r.count("series", 2), Ok(2));
        let mut r = ByteReader::new(&[u8::MAX; 4], "offset");
        assert!(r.count("zero-sized items", 0).is_err(), "a zero item size does not divide by zero");
    }
}
