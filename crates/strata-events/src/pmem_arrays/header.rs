//! The 64-byte header both PMem arrays start with
//! (`docs/format/events-pmem-arrays.md`, "Header"): magic, version, slot
//! layout and sizes, capacity, area size, table and slot offsets, CRC32C.
//!
//! Decoding checks what the bytes alone can tell (magic, CRC, version,
//! reserved word); each array then checks that the fields are the ones its
//! `format` would have written for that area ([`ArrayHeader::expect_equal`]),
//! so no offset read from PMem is ever used unchecked.

use crate::ids::EventError;

pub const PMEM_ARRAYS_VERSION: u32 = 1;
pub const HEADER_BYTES: u64 = 64;
/// The header CRC covers bytes 0..60 (everything before it).
pub const HEADER_CRC_COVERED_BYTES: u64 = 60;
pub const HEADER_OFFSET_MAGIC: u64 = 0;
pub const HEADER_OFFSET_VERSION: u64 = 8;
pub const HEADER_OFFSET_LAYOUT: u64 = 12;
pub const HEADER_OFFSET_RECORD_BYTES: u64 = 16;
pub const HEADER_OFFSET_STRIDE_BYTES: u64 = 20;
pub const HEADER_OFFSET_CAPACITY: u64 = 24;
pub const HEADER_OFFSET_AREA_BYTES: u64 = 32;
pub const HEADER_OFFSET_TABLE_OFFSET: u64 = 40;
pub const HEADER_OFFSET_SLOTS_OFFSET: u64 = 48;
pub const HEADER_OFFSET_RESERVED: u64 = 56;
pub const HEADER_OFFSET_CRC: u64 = 60;
/// `layout` code: slots packed back to back.
pub const LAYOUT_DENSE: u32 = 1;
/// `layout` code: slots on 64-byte boundaries (index nodes always use it).
pub const LAYOUT_ALIGNED: u32 = 2;

/// The decoded header.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArrayHeader {
    pub magic: u64,
    pub version: u32,
    pub layout: u32,
    pub record_bytes: u32,
    pub stride_bytes: u32,
    pub capacity: u64,
    pub area_bytes: u64,
    pub table_offset: u64,
    pub slots_offset: u64,
}

fn u32_at(b: &[u8], at: u64) -> u32 {
    let at = at as usize;
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: u64) -> u64 {
    let at = at as usize;
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

fn put_u32(b: &mut [u8], at: u64, v: u32) {
    b[at as usize..at as usize + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_u64(b: &mut [u8], at: u64, v: u64) {
    b[at as usize..at as usize + 8].copy_from_slice(&v.to_le_bytes());
}

/// CRC32C of the covered bytes of a header.
pub(crate) fn header_crc(bytes: &[u8; HEADER_BYTES as usize]) -> u32 {
    crc32c::crc32c(&bytes[..HEADER_CRC_COVERED_BYTES as usize])
}

impl ArrayHeader {
    /// The 64 header bytes, CRC included.
    pub(crate) fn encode(&self) -> [u8; HEADER_BYTES as usize] {
        let mut b = [0u8; HEADER_BYTES as usize];
        put_u64(&mut b, HEADER_OFFSET_MAGIC, self.magic);
        put_u32(&mut b, HEADER_OFFSET_VERSION, self.version);
        put_u32(&mut b, HEADER_OFFSET_LAYOUT, self.layout);
        put_u32(&mut b, HEADER_OFFSET_RECORD_BYTES, self.record_bytes);
        put_u32(&mut b, HEADER_OFFSET_STRIDE_BYTES, self.stride_bytes);
        put_u64(&mut b, HEADER_OFFSET_CAPACITY, self.capacity);
        put_u64(&mut b, HEADER_OFFSET_AREA_BYTES, self.area_bytes);
        put_u64(&mut b, HEADER_OFFSET_TABLE_OFFSET, self.table_offset);
        put_u64(&mut b, HEADER_OFFSET_SLOTS_OFFSET, self.slots_offset);
        // Bytes 56..60 are reserved and zero.
        let crc = header_crc(&b);
        put_u32(&mut b, HEADER_OFFSET_CRC, crc);
        b
    }

    /// Decodes and checks magic, CRC, version and the reserved word.
    /// `location` names the area in errors.
    pub(crate) fn decode(
        bytes: &[u8; HEADER_BYTES as usize],
        expected_magic: u64,
        location: &str,
    ) -> Result<ArrayHeader, EventError> {
        let bad = |what: String| Err(EventError::corruption(location, what));
        let magic = u64_at(bytes, HEADER_OFFSET_MAGIC);
        if magic == 0 {
            return bad("magic is 0: the area was never formatted, or a format did not complete".into());
        }
        if magic != expected_magic {
            return bad(format!(
                "magic {magic:#018x} is not {expected_magic:#018x} ({:?})",
                String::from_utf8_lossy(&expected_magic.to_le_bytes())
            ));
        }
        let stored_crc = u32_at(bytes, HEADER_OFFSET_CRC);
        let crc = header_crc(bytes);
        if stored_crc != crc {
            return bad(format!("header CRC {stored_crc:#010x} does not match the header ({crc:#010x})"));
        }
        let version = u32_at(bytes, HEADER_OFFSET_VERSION);
        if version != PMEM_ARRAYS_VERSION {
            return bad(format!("format version {version} is not {PMEM_ARRAYS_VERSION}"));
        }
        let reserved = u32_at(bytes, HEADER_OFFSET_RESERVED);
        if reserved != 0 {
            return bad(format!("reserved header word is {reserved:#x}, not 0"));
        }
        Ok(ArrayHeader {
            magic,
            version,
            layout: u32_at(bytes, HEADER_OFFSET_LAYOUT),
            record_bytes: u32_at(bytes, HEADER_OFFSET_RECORD_BYTES),
            stride_bytes: u32_at(bytes, HEADER_OFFSET_STRIDE_BYTES),
            capacity: u64_at(bytes, HEADER_OFFSET_CAPACITY),
            area_bytes: u64_at(bytes, HEADER_OFFSET_AREA_BYTES),
            table_offset: u64_at(bytes, HEADER_OFFSET_TABLE_OFFSET),
            slots_offset: u64_at(bytes, HEADER_OFFSET_SLOTS_OFFSET),
        })
    }

    /// `Corruption` naming the first field where `self` (read from PMem)
    /// differs from `expected` (what format would have written).
    pub(crate) fn expect_equal(&self, expected: &ArrayHeader, location: &str) -> Result<(), EventError> {
        let fields: [(&str, u64, u64); 7] = [
            ("area_bytes", self.area_bytes, expected.area_bytes),
            ("layout", self.layout.into(), expected.layout.into()),
            ("record_bytes", self.record_bytes.into(), expected.record_bytes.into()),
            ("stride_bytes", self.stride_bytes.into(), expected.stride_bytes.into()),
            ("capacity", self.capacity, expected.capacity),
            ("table_offset", self.table_offset, expected.table_offset),
            ("slots_offset", self.slots_offset, expected.slots_offset),
        ];
        for (name, found, want) in fields {
            if found != want {
                return Err(EventError::corruption(
                    location,
                    format!("header field {name} is {found}, but this area's layout needs {want}"),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> ArrayHeader {
        ArrayHeader {
            magic: u64::from_le_bytes(*b"TESTMAGC"),
            version: PMEM_ARRAYS_VERSION,
            layout: LAYOUT_DENSE,
            record_bytes: 28,
            stride_bytes: 28,
            capacity: 100,
            area_bytes: 4096,
            table_offset: 192,
            slots_offset: 1024,
        }
    }

    #[test]
    fn header_round_trips_and_every_byte_flip_is_corruption() {
        let h = header();
        let bytes = h.encode();
        assert_eq!(ArrayHeader::decode(&bytes, h.magic, "t").unwrap(), h);
        for at in 0..HEADER_BYTES as usize {
            for bit in [0x01u8, 0x80] {
                let mut b = bytes;
                b[at] ^= bit;
                let err = ArrayHeader::decode(&b, h.magic, "t").err();
                assert!(err.is_some_and(|e| e.is_corruption()), "flip of bit {bit:#x} in byte {at} accepted");
            }
        }
    }

    #[test]
    fn zero_magic_says_not_formatted_and_field_mismatches_are_named() {
        let err = ArrayHeader::decode(&[0; 64], 7, "area @0").unwrap_err();
        assert!(err.to_string().contains("never formatted"), "{err}");
        let mut other = header();
        other.capacity = 99;
        let err = header().expect_equal(&other, "area @0").unwrap_err();
        assert!(err.is_corruption() && err.to_string().contains("capacity is 100"), "{err}");
    }
}
