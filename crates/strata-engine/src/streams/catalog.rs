//! The catalog file of one event stream (`docs/format/events-catalog.md`):
//! which database and name the stream has, its schema, and the placement
//! and capacities it was created with (fixed for its lifetime, so a later
//! configuration change never reinterprets existing files). Encoded
//! little-endian with a CRC32C over everything before it; written
//! atomically (temp file, fsync, rename, fsync of the directory). A bad
//! CRC, magic or version on open is `Corruption`, never ignored.

use std::io::Write;
use std::path::Path;

use strata_events::schema::StreamSchema;
use strata_series::EngineError;

use crate::tables::streams::StreamError;

/// The ASCII bytes `STCA` read as a little-endian u32.
pub const CATALOG_MAGIC: u32 = u32::from_le_bytes(*b"STCA");
/// The catalog format version; decode rejects any other.
pub const CATALOG_VERSION: u16 = 1;
/// Bytes of the fixed header (before the names).
pub const CATALOG_HEADER_BYTES: usize = 64;
/// Bytes of the CRC32C at the end.
pub const CATALOG_CRC_BYTES: usize = 4;
/// Longest database or stream name, in bytes.
pub const MAX_NAME_BYTES: usize = 64;
/// Name of the catalog file in a stream's directory.
pub const CATALOG_FILE: &str = "stream.catalog";

pub const OFFSET_MAGIC: usize = 0;
pub const OFFSET_VERSION: usize = 4;
pub const OFFSET_PLACEMENT: usize = 6;
pub const OFFSET_RESERVED: usize = 7;
pub const OFFSET_TOTAL_BYTES: usize = 8;
pub const OFFSET_FLANK_BATCH_EVENTS: usize = 12;
pub const OFFSET_MAX_LEAF_NODES: usize = 16;
pub const OFFSET_MAX_INDEX_NODES: usize = 24;
pub const OFFSET_QUEUE_CAPACITY_BYTES: usize = 32;
pub const OFFSET_REGION_BYTES: usize = 40;
pub const OFFSET_CREATED_UNIX_NS: usize = 48;
pub const OFFSET_DB_NAME_BYTES: usize = 56;
pub const OFFSET_STREAM_NAME_BYTES: usize = 58;
pub const OFFSET_SCHEMA_BYTES: usize = 60;

/// Placement code: PMem flank, aggregates inline, index nodes on SSD, PMem
/// translation array, PMem indexed queue; the region in the engine's PMem mode.
pub const PLACEMENT_PMEM: u8 = 1;
/// Placement code: the same tree with its region file persisted by msync
/// (power-safe on any SSD) and a flash indexed queue.
pub const PLACEMENT_SSD: u8 = 2;

/// Where a stream's structures live (see the placement codes).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    Pmem,
    Ssd,
}

impl Placement {
    pub fn code(self) -> u8 {
        match self {
            Placement::Pmem => PLACEMENT_PMEM,
            Placement::Ssd => PLACEMENT_SSD,
        }
    }

    pub fn from_code(code: u8) -> Option<Placement> {
        match code {
            PLACEMENT_PMEM => Some(Placement::Pmem),
            PLACEMENT_SSD => Some(Placement::Ssd),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Placement::Pmem => "pmem",
            Placement::Ssd => "ssd",
        }
    }
}

/// The decoded catalog of one stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Catalog {
    pub db: String,
    pub name: String,
    pub schema: StreamSchema,
    pub placement: Placement,
    pub flank_batch_events: u32,
    pub max_leaf_nodes: u64,
    pub max_index_nodes: u64,
    pub queue_capacity_bytes: u64,
    /// Size of the stream's mapped region file.
    pub region_bytes: u64,
    pub created_unix_ns: u64,
}

fn corrupt(what: impl Into<String>) -> EngineError {
    EngineError::corruption(CATALOG_FILE, what)
}

impl Catalog {
    /// The encoded bytes: header, names, schema, CRC32C.
    pub fn encode(&self) -> Vec<u8> {
        let schema = self.schema.encode();
        let total = CATALOG_HEADER_BYTES + self.db.len() + self.name.len() + schema.len() + CATALOG_CRC_BYTES;
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&CATALOG_MAGIC.to_le_bytes());
        out.extend_from_slice(&CATALOG_VERSION.to_le_bytes());
        out.push(self.placement.code());
        out.push(0);
        out.extend_from_slice(&(total as u32).to_le_bytes());
        out.extend_from_slice(&self.flank_batch_events.to_le_bytes());
        out.extend_from_slice(&self.max_leaf_nodes.to_le_bytes());
        out.extend_from_slice(&self.max_index_nodes.to_le_bytes());
        out.extend_from_slice(&self.queue_capacity_bytes.to_le_bytes());
        out.extend_from_slice(&self.region_bytes.to_le_bytes());
        out.extend_from_slice(&self.created_unix_ns.to_le_bytes());
        out.extend_from_slice(&(self.db.len() as u16).to_le_bytes());
        out.extend_from_slice(&(self.name.len() as u16).to_le_bytes());
        out.extend_from_slice(&(schema.len() as u32).to_le_bytes());
        debug_assert_eq!(out.len(), CATALOG_HEADER_BYTES);
        out.extend_from_slice(self.db.as_bytes());
        out.extend_from_slice(self.name.as_bytes());
        out.extend_from_slice(&schema);
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        debug_assert_eq!(out.len(), total);
        out
    }

    /// Decodes a whole catalog file. Never panics; damage is `Corruption`.
    pub fn decode(bytes: &[u8]) -> Result<Catalog, EngineError> {
        if bytes.len() < CATALOG_HEADER_BYTES + CATALOG_CRC_BYTES {
            return Err(corrupt(format!("{} bytes are too short for a catalog", bytes.len())));
        }
        let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let magic = u32_at(OFFSET_MAGIC);
        if magic != CATALOG_MAGIC {
            return Err(corrupt(format!("bad magic {magic:#010x}")));
        }
        let total = u32_at(OFFSET_TOTAL_BYTES) as usize;
        if total != bytes.len() {
            return Err(corrupt(format!("the header says {total} bytes, the file has {}", bytes.len())));
        }
        let body = &bytes[..total - CATALOG_CRC_BYTES];
        let stored = u32_at(total - CATALOG_CRC_BYTES);
        let crc = crc32c::crc32c(body);
        if stored != crc {
            return Err(corrupt(format!("CRC mismatch: stored {stored:#010x}, computed {crc:#010x}")));
        }
        let version = u16_at(OFFSET_VERSION);
        if version != CATALOG_VERSION {
            return Err(corrupt(format!("unknown version {version}, expected {CATALOG_VERSION}")));
        }
        let placement = Placement::from_code(bytes[OFFSET_PLACEMENT])
            .ok_or_else(|| corrupt(format!("unknown placement code {}", bytes[OFFSET_PLACEMENT])))?;
        if bytes[OFFSET_RESERVED] != 0 {
            return Err(corrupt("reserved byte is not zero"));
        }
        let db_len = u16_at(OFFSET_DB_NAME_BYTES) as usize;
        let name_len = u16_at(OFFSET_STREAM_NAME_BYTES) as usize;
        let schema_len = u32_at(OFFSET_SCHEMA_BYTES) as usize;
        if CATALOG_HEADER_BYTES + db_len + name_len + schema_len != body.len() {
            return Err(corrupt(format!(
                "names ({db_len} + {name_len} bytes) and schema ({schema_len} bytes) do not fill the {} bytes",
                body.len()
            )));
        }
        let text = |range: std::ops::Range<usize>, what: &str| -> Result<String, EngineError> {
            let s = std::str::from_utf8(&body[range]).map_err(|_| corrupt(format!("{what} is not UTF-8")))?;
            check_name(s, what).map_err(|e| corrupt(e.to_string()))?;
            Ok(s.to_string())
        };
        let db = text(CATALOG_HEADER_BYTES..CATALOG_HEADER_BYTES + db_len, "database name")?;
        let name_at = CATALOG_HEADER_BYTES + db_len;
        let name = text(name_at..name_at + name_len, "stream name")?;
        let schema =
            StreamSchema::decode(&body[name_at + name_len..]).map_err(|e| corrupt(format!("schema: {e}")))?;
        let catalog = Catalog {
            db,
            name,
            schema,
            placement,
            flank_batch_events: u32_at(OFFSET_FLANK_BATCH_EVENTS),
            max_leaf_nodes: u64_at(OFFSET_MAX_LEAF_NODES),
            max_index_nodes: u64_at(OFFSET_MAX_INDEX_NODES),
            queue_capacity_bytes: u64_at(OFFSET_QUEUE_CAPACITY_BYTES),
            region_bytes: u64_at(OFFSET_REGION_BYTES),
            created_unix_ns: u64_at(OFFSET_CREATED_UNIX_NS),
        };
        if catalog.flank_batch_events == 0 || catalog.max_leaf_nodes == 0 || catalog.max_index_nodes == 0 {
            return Err(corrupt("batch size and node capacities must be at least 1"));
        }
        Ok(catalog)
    }

    /// Writes the catalog into `dir` atomically: a temp file, fsync, rename,
    /// fsync of `dir`.
    pub fn write_atomic(&self, dir: &Path) -> Result<(), EngineError> {
        let tmp = dir.join(format!("{CATALOG_FILE}.tmp"));
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&self.encode())?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, dir.join(CATALOG_FILE))?;
        sync_dir(dir)
    }

    /// Reads and decodes the catalog in `dir`.
    pub fn read(dir: &Path) -> Result<Catalog, EngineError> {
        let path = dir.join(CATALOG_FILE);
        let bytes = std::fs::read(&path)?;
        Catalog::decode(&bytes).map_err(|e| match e {
            EngineError::Corruption { what, .. } => EngineError::corruption(path.display().to_string(), what),
            other => other,
        })
    }
}

/// fsyncs a directory (its entries: creations, renames, removals).
pub fn sync_dir(dir: &Path) -> Result<(), EngineError> {
    std::fs::File::open(dir)?.sync_all()?;
    Ok(())
}

/// Database and stream names that may name directories: 1..=64 bytes of
/// ASCII letters, digits, `_`, `-` and `.`, starting with a letter, digit
/// or `_`.
pub fn check_name(name: &str, what: &str) -> Result<(), StreamError> {
    let ok_first = name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    let ok_rest = name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if name.is_empty() || name.len() > MAX_NAME_BYTES || !ok_first || !ok_rest {
        return Err(StreamError::Invalid(format!(
            "{what} {name:?}: use 1..={MAX_NAME_BYTES} ASCII letters, digits, '_', '-' or '.', starting with a \
             letter, digit or '_'"
        )));
    }
    Ok(())
}

/// The fuzz entry (`fuzz/fuzz_targets/events_catalog_decode.rs`). Input:
/// `flags (1) | file`. With flag bit 0 the entry first rewrites
/// `total_bytes` and the CRC as the format document specifies, so the
/// fuzzer gets past them to the field checks. Decoding never panics, and
/// whatever decodes re-encodes to the same bytes.
#[cfg(any(test, feature = "fuzz"))]
pub fn fuzz_catalog_decode(data: &[u8]) {
    let Some((&flags, file)) = data.split_first() else { return };
    let mut file = file.to_vec();
    if flags & 1 != 0 && file.len() >= CATALOG_HEADER_BYTES + CATALOG_CRC_BYTES {
        let total = file.len();
        file[OFFSET_TOTAL_BYTES..OFFSET_TOTAL_BYTES + 4].copy_from_slice(&(total as u32).to_le_bytes());
        let crc = crc32c::crc32c(&file[..total - CATALOG_CRC_BYTES]);
        file[total - CATALOG_CRC_BYTES..].copy_from_slice(&crc.to_le_bytes());
    }
    if let Ok(catalog) = Catalog::decode(&file) {
        assert_eq!(catalog.encode(), file, "a decoded catalog re-encodes to its bytes");
    }
}
