//! The on-SSD layout of the flash OOO queue (`docs/format/events-ooo-queue.md`,
//! chronicledb-pmem.txt sections 4.3 and 5.4, "Flash with 8-KiB pages"):
//! a file `ooo-<generation>.q` of 8 KiB pages, each a 32-byte header and
//! packed events, written whole. Pure functions on byte slices.

/// `OOQF` in ASCII, little-endian.
pub const FLASH_PAGE_MAGIC: u32 = u32::from_le_bytes(*b"OOQF");
pub const FLASH_VERSION: u16 = 1;
/// The page: the unit written, synced and read.
pub const FLASH_PAGE_BYTES: u64 = 8192;
pub const FLASH_PAGE_HEADER_BYTES: u64 = 32;
/// Queue files are named `ooo-<generation as 16 hex digits>.q`.
pub const FLASH_FILE_PREFIX: &str = "ooo-";
pub const FLASH_FILE_SUFFIX: &str = ".q";

pub const PAGE_MAGIC_OFFSET: u64 = 0;
pub const PAGE_CRC_OFFSET: u64 = 4;
pub const PAGE_GENERATION_OFFSET: u64 = 8;
pub const PAGE_INDEX_OFFSET: u64 = 16;
pub const PAGE_VERSION_OFFSET: u64 = 24;
pub const PAGE_EVENT_COUNT_OFFSET: u64 = 26;
pub const PAGE_EVENT_BYTES_OFFSET: u64 = 28;
/// The page CRC covers bytes `[PAGE_CRC_COVERED_FROM, FLASH_PAGE_BYTES)`.
pub const PAGE_CRC_COVERED_FROM: u64 = 8;

/// Events of `event_bytes` bytes one page holds.
pub const fn events_per_page(event_bytes: usize) -> u64 {
    (FLASH_PAGE_BYTES - FLASH_PAGE_HEADER_BYTES) / event_bytes as u64
}

/// The file name of generation `generation`.
pub fn file_name(generation: u64) -> String {
    format!("{FLASH_FILE_PREFIX}{generation:016x}{FLASH_FILE_SUFFIX}")
}

/// The generation a queue file name names, if it is one.
pub fn parse_file_name(name: &str) -> Option<u64> {
    let hex = name.strip_prefix(FLASH_FILE_PREFIX)?.strip_suffix(FLASH_FILE_SUFFIX)?;
    if hex.len() != 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// What a page's header says.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PageHeader {
    pub generation: u64,
    pub page_index: u64,
    pub event_count: u16,
    pub event_bytes: u32,
}

/// Encodes a page holding `events` (packed `event_bytes`-byte events, at
/// most [`events_per_page`]) into `out` (`FLASH_PAGE_BYTES` long).
pub fn encode_page(out: &mut [u8], generation: u64, page_index: u64, event_bytes: usize, events: &[u8]) {
    debug_assert_eq!(out.len() as u64, FLASH_PAGE_BYTES);
    debug_assert!(events.len() as u64 <= FLASH_PAGE_BYTES - FLASH_PAGE_HEADER_BYTES);
    out.fill(0);
    let count = (events.len() / event_bytes) as u16;
    put(out, PAGE_MAGIC_OFFSET, &FLASH_PAGE_MAGIC.to_le_bytes());
    put(out, PAGE_GENERATION_OFFSET, &generation.to_le_bytes());
    put(out, PAGE_INDEX_OFFSET, &page_index.to_le_bytes());
    put(out, PAGE_VERSION_OFFSET, &FLASH_VERSION.to_le_bytes());
    put(out, PAGE_EVENT_COUNT_OFFSET, &count.to_le_bytes());
    put(out, PAGE_EVENT_BYTES_OFFSET, &(event_bytes as u32).to_le_bytes());
    put(out, FLASH_PAGE_HEADER_BYTES, events);
    let crc = crc32c::crc32c(&out[PAGE_CRC_COVERED_FROM as usize..]);
    put(out, PAGE_CRC_OFFSET, &crc.to_le_bytes());
}

/// Why a page is not a valid page of the expected file position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageFault {
    Length(usize),
    Magic(u32),
    Crc { found: u32, computed: u32 },
    Version(u16),
    Generation { found: u64, expected: u64 },
    Index { found: u64, expected: u64 },
    EventBytes { found: u32, expected: usize },
    EventCount(u16),
}

/// Decodes the header fields of `page` (at least its header) and checks them
/// against the expected generation, position and event size; the CRC is not
/// checked (see [`decode_page`]).
pub fn decode_page_header(
    page: &[u8],
    generation: u64,
    page_index: u64,
    event_bytes: usize,
) -> Result<PageHeader, PageFault> {
    if page.len() < FLASH_PAGE_HEADER_BYTES as usize {
        return Err(PageFault::Length(page.len()));
    }
    let magic = u32_at(page, PAGE_MAGIC_OFFSET);
    if magic != FLASH_PAGE_MAGIC {
        return Err(PageFault::Magic(magic));
    }
    let version = u16::from_le_bytes([page[24], page[25]]);
    if version != FLASH_VERSION {
        return Err(PageFault::Version(version));
    }
    let h = PageHeader {
        generation: u64_at(page, PAGE_GENERATION_OFFSET),
        page_index: u64_at(page, PAGE_INDEX_OFFSET),
        event_count: u16::from_le_bytes([page[26], page[27]]),
        event_bytes: u32_at(page, PAGE_EVENT_BYTES_OFFSET),
    };
    if h.generation != generation {
        return Err(PageFault::Generation { found: h.generation, expected: generation });
    }
    if h.page_index != page_index {
        return Err(PageFault::Index { found: h.page_index, expected: page_index });
    }
    if h.event_bytes as usize != event_bytes {
        return Err(PageFault::EventBytes { found: h.event_bytes, expected: event_bytes });
    }
    if h.event_count == 0 || h.event_count as u64 > events_per_page(event_bytes) {
        return Err(PageFault::EventCount(h.event_count));
    }
    Ok(h)
}

/// Decodes a whole page: header checks, then the CRC. Returns the header
/// and the packed events.
pub fn decode_page(
    page: &[u8],
    generation: u64,
    page_index: u64,
    event_bytes: usize,
) -> Result<(PageHeader, &[u8]), PageFault> {
    if page.len() as u64 != FLASH_PAGE_BYTES {
        return Err(PageFault::Length(page.len()));
    }
    let h = decode_page_header(page, generation, page_index, event_bytes)?;
    let found = u32_at(page, PAGE_CRC_OFFSET);
    let computed = crc32c::crc32c(&page[PAGE_CRC_COVERED_FROM as usize..]);
    if found != computed {
        return Err(PageFault::Crc { found, computed });
    }
    let start = FLASH_PAGE_HEADER_BYTES as usize;
    Ok((h, &page[start..start + h.event_count as usize * event_bytes]))
}

fn put(buf: &mut [u8], at: u64, bytes: &[u8]) {
    buf[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
}

fn u32_at(b: &[u8], at: u64) -> u32 {
    u32::from_le_bytes(b[at as usize..at as usize + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: u64) -> u64 {
    u64::from_le_bytes(b[at as usize..at as usize + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_round_trips_and_each_field_is_checked() {
        let events: Vec<u8> = (0..3i64).flat_map(|t| [t.to_le_bytes(), [7; 8]].concat()).collect();
        let mut page = vec![0xee; FLASH_PAGE_BYTES as usize];
        encode_page(&mut page, 4, 9, 16, &events);
        let (h, got) = decode_page(&page, 4, 9, 16).unwrap();
        assert_eq!(h, PageHeader { generation: 4, page_index: 9, event_count: 3, event_bytes: 16 });
        assert_eq!(got, &events[..]);
        assert!(matches!(decode_page(&page, 5, 9, 16), Err(PageFault::Generation { .. })));
        assert!(matches!(decode_page(&page, 4, 8, 16), Err(PageFault::Index { .. })));
        assert!(matches!(decode_page(&page, 4, 9, 8), Err(PageFault::EventBytes { .. })));
        assert!(matches!(decode_page(&page[..4096], 4, 9, 16), Err(PageFault::Length(4096))));
        let mut torn = page.clone();
        torn[4096..].fill(0xab);
        assert!(matches!(decode_page(&torn, 4, 9, 16), Err(PageFault::Crc { .. })));
        assert!(decode_page_header(&torn, 4, 9, 16).is_ok(), "the header alone does not see the tear");
        let mut bad_magic = page.clone();
        bad_magic[0] ^= 1;
        assert!(matches!(decode_page(&bad_magic, 4, 9, 16), Err(PageFault::Magic(_))));
    }

    #[test]
    fn file_names_round_trip_and_others_are_ignored() {
        assert_eq!(file_name(0x2a), "ooo-000000000000002a.q");
        assert_eq!(parse_file_name(&file_name(u64::MAX)), Some(u64::MAX));
        for other in
            ["ooo-2a.q", "ooo-000000000000002a.tmp", "x-000000000000002a.q", "ooo-00000000000000zz.q"]
        {
            assert_eq!(parse_file_name(other), None, "{other}");
        }
        assert_eq!(events_per_page(28), (8192 - 32) / 28);
    }
}
