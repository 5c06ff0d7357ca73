//! The on-media layout of Halloc (lsm-pmem.txt section 3.4.1, "an object pool
//! consists of a metadata region ..., an objects array, and a log-free
//! freelist"): the header, the per-pool metadata blocks, the index-word arrays
//! and the object arrays, their byte offsets (documented field by field in
//! `docs/format/halloc.md`), the planning of a fresh layout and the strict
//! decoding of an existing one.
//!
//! Every offset stored on media is relative to the Halloc base (an "area
//! offset"), so the area can sit anywhere in a region shared with other
//! structures. Decoding never panics on media contents: anything out of range
//! is [`PmemError::Corruption`].

use crate::error::PmemError;
use crate::offset::{RegionOffset, CACHE_LINE_BYTES};
use crate::region::Region;

/// First word of the header: the ASCII bytes `STHALLOC` read as a little-endian u64.
pub const HALLOC_MAGIC: u64 = u64::from_le_bytes(*b"STHALLOC");
/// Format version written by this code; `open` rejects any other.
pub const HALLOC_VERSION: u32 = 1;

/// Size of the header at the Halloc base.
pub const HEADER_BYTES: u64 = 64;
pub const HEADER_MAGIC_OFFSET: u64 = 0;
pub const HEADER_VERSION_OFFSET: u64 = 8;
pub const HEADER_POOL_COUNT_OFFSET: u64 = 12;
pub const HEADER_AREA_LEN_OFFSET: u64 = 16;
pub const HEADER_POOL_TABLE_OFFSET: u64 = 24;
pub const HEADER_ZONE_SIZE_OFFSET: u64 = 32;
pub const HEADER_ZONE_COUNT_OFFSET: u64 = 40;
pub const HEADER_ZONE_META_OFFSET: u64 = 48;
pub const HEADER_RESERVED_OFFSET: u64 = 56;

/// Size of one pool metadata block (one cache line).
pub const POOL_META_BYTES: u64 = 64;
pub const META_POOL_ID_OFFSET: u64 = 0;
pub const META_KIND_OFFSET: u64 = 4;
pub const META_OBJECT_SIZE_OFFSET: u64 = 8;
pub const META_OBJECT_COUNT_OFFSET: u64 = 16;
pub const META_INDEX_WORDS_OFFSET: u64 = 24;
pub const META_OBJECTS_OFFSET: u64 = 32;
pub const META_HD_OFFSET: u64 = 40;
pub const META_RESERVED_OFFSET: u64 = 48;

/// `kind` of an object pool's metadata block.
pub const POOL_KIND_OBJECTS: u32 = 1;
/// `kind` of the zone pool's metadata block.
pub const POOL_KIND_ZONES: u32 = 2;
/// `pool_id` of the zone pool's metadata block.
pub const ZONE_POOL_ID: u32 = u32::MAX;

/// Bit 63 of an index word: the object is committed.
pub const COMMIT_BIT: u64 = 1 << 63;
/// Bits 0..=62 of an index word: freelist link, next index + 1 (0 = end).
pub const LINK_MASK: u64 = COMMIT_BIT - 1;
/// Size of one index word.
pub const INDEX_WORD_BYTES: u64 = 8;
/// Object slots are a multiple of this size, so every object is this aligned.
pub const OBJECT_ALIGN_BYTES: u64 = CACHE_LINE_BYTES;
/// Alignment of every index-word array and object array (one XPLine), relative
/// to the Halloc base (which itself must be this aligned).
pub const ARRAY_ALIGN_BYTES: u64 = 256;
/// Objects of one pool are indexed by a u32.
pub const MAX_OBJECT_COUNT: u64 = u32::MAX as u64;

/// One object pool to create at format time.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PoolSpec {
    /// Requested object size; the slot is rounded up to a multiple of 64 bytes.
    pub object_size_bytes: u64,
    pub object_count: u64,
}

/// What [`crate::halloc::Halloc::format`] creates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HallocConfig {
    /// Customized object pools; pool `i` gets `PoolId(i)`.
    pub pools: Vec<PoolSpec>,
    /// Size of one zone of the built-in zone pool (a multiple of 64 bytes).
    pub zone_size_bytes: u64,
    pub zone_count: u64,
}

/// Zone size used when the configuration does not say (4 MiB).
pub const DEFAULT_ZONE_SIZE_BYTES: u64 = 4 << 20;

impl HallocConfig {
    pub fn new(pools: Vec<PoolSpec>, zone_size_bytes: u64, zone_count: u64) -> Self {
        HallocConfig { pools, zone_size_bytes, zone_count }
    }

    /// Asserts what format requires of a configuration (a programming error otherwise).
    pub(crate) fn assert_valid(&self) {
        assert!(self.pools.len() < ZONE_POOL_ID as usize, "halloc: too many pools ({})", self.pools.len());
        for (i, p) in self.pools.iter().enumerate() {
            assert!(p.object_size_bytes > 0, "halloc: pool {i} has object size 0");
            assert!(
                p.object_count <= MAX_OBJECT_COUNT,
                "halloc: pool {i} has {} objects, more than {MAX_OBJECT_COUNT}",
                p.object_count
            );
        }
        assert!(
            self.zone_size_bytes > 0 && self.zone_size_bytes.is_multiple_of(OBJECT_ALIGN_BYTES),
            "halloc: zone size {} is not a positive multiple of {OBJECT_ALIGN_BYTES}",
            self.zone_size_bytes
        );
        assert!(self.zone_count <= MAX_OBJECT_COUNT, "halloc: too many zones ({})", self.zone_count);
    }
}

/// Rounds `v` up to a multiple of `align` (a power of two); `None` on overflow.
pub(crate) fn align_up(v: u64, align: u64) -> Option<u64> {
    debug_assert!(align.is_power_of_two());
    Some(v.checked_add(align - 1)? & !(align - 1))
}

/// Geometry of one pool (object pool or zone pool), in absolute region offsets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct PoolGeometry {
    /// `pool_id` field: the pool index, or [`ZONE_POOL_ID`].
    pub pool_id: u32,
    pub kind: u32,
    /// Slot size: a positive multiple of [`OBJECT_ALIGN_BYTES`].
    pub object_size_bytes: u64,
    pub object_count: u64,
    /// The metadata block.
    pub meta: RegionOffset,
    pub index_words: RegionOffset,
    pub objects: RegionOffset,
}

impl PoolGeometry {
    /// The freelist dummy head `hd`.
    pub fn hd_offset(&self) -> RegionOffset {
        self.meta + META_HD_OFFSET
    }

    #[track_caller]
    pub fn word_offset(&self, index: u32) -> RegionOffset {
        assert!(
            u64::from(index) < self.object_count,
            "halloc pool {}: index {index} out of {} objects",
            self.pool_id,
            self.object_count
        );
        self.index_words + u64::from(index) * INDEX_WORD_BYTES
    }

    #[track_caller]
    pub fn object_offset(&self, index: u32) -> RegionOffset {
        assert!(
            u64::from(index) < self.object_count,
            "halloc pool {}: index {index} out of {} objects",
            self.pool_id,
            self.object_count
        );
        self.objects + u64::from(index) * self.object_size_bytes
    }

    pub fn index_words_len_bytes(&self) -> u64 {
        self.object_count * INDEX_WORD_BYTES
    }

    pub fn objects_len_bytes(&self) -> u64 {
        self.object_count * self.object_size_bytes
    }

    /// The index of the object whose slot contains `offset`, if any.
    pub fn index_containing(&self, offset: RegionOffset) -> Option<u32> {
        let rel = offset.0.checked_sub(self.objects.0)?;
        let index = rel / self.object_size_bytes;
        (index < self.object_count).then_some(index as u32)
    }
}

/// The decoded (or planned) layout of a whole Halloc area.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub base: RegionOffset,
    pub area_len_bytes: u64,
    /// Bytes actually used from the base (header, metadata, arrays).
    pub used_len_bytes: u64,
    pub pools: Vec<PoolGeometry>,
    pub zones: PoolGeometry,
}

impl Layout {
    /// Plans a fresh layout for `config` at `base` (area-relative offsets are
    /// computed from the base, which must be [`ARRAY_ALIGN_BYTES`] aligned).
    /// `None` when the sizes overflow a u64.
    pub fn plan(base: RegionOffset, area_len_bytes: u64, config: &HallocConfig) -> Option<Layout> {
        let n = config.pools.len() as u64;
        let mut cursor = HEADER_BYTES.checked_add((n + 1).checked_mul(POOL_META_BYTES)?)?;
        let mut place = |pool_id: u32, kind: u32, slot: u64, count: u64| -> Option<PoolGeometry> {
            let words = align_up(cursor, ARRAY_ALIGN_BYTES)?;
            cursor = words.checked_add(count.checked_mul(INDEX_WORD_BYTES)?)?;
            let objects = align_up(cursor, ARRAY_ALIGN_BYTES)?;
            cursor = objects.checked_add(count.checked_mul(slot)?)?;
            let meta_index = if pool_id == ZONE_POOL_ID { n } else { u64::from(pool_id) };
            Some(PoolGeometry {
                pool_id,
                kind,
                object_size_bytes: slot,
                object_count: count,
                meta: RegionOffset(base.0.checked_add(HEADER_BYTES + meta_index * POOL_META_BYTES)?),
                index_words: RegionOffset(base.0.checked_add(words)?),
                objects: RegionOffset(base.0.checked_add(objects)?),
            })
        };
        let mut pools = Vec::with_capacity(config.pools.len());
        for (i, spec) in config.pools.iter().enumerate() {
            let slot = align_up(spec.object_size_bytes, OBJECT_ALIGN_BYTES)?;
            pools.push(place(i as u32, POOL_KIND_OBJECTS, slot, spec.object_count)?);
        }
        let zones = place(ZONE_POOL_ID, POOL_KIND_ZONES, config.zone_size_bytes, config.zone_count)?;
        Some(Layout { base, area_len_bytes, used_len_bytes: cursor, pools, zones })
    }

    fn rel(&self, at: RegionOffset) -> u64 {
        at.0 - self.base.0
    }

    /// Writes the header (all but the magic word) and every metadata block as
    /// plain stores; the caller persists them and writes the magic last.
    pub fn write_metadata(&self, region: &Region) {
        let b = self.base;
        region.write_u32(b + HEADER_VERSION_OFFSET, HALLOC_VERSION);
        region.write_u32(b + HEADER_POOL_COUNT_OFFSET, self.pools.len() as u32);
        region.store_u64(b + HEADER_AREA_LEN_OFFSET, self.area_len_bytes);
        region.store_u64(b + HEADER_POOL_TABLE_OFFSET, HEADER_BYTES);
        region.store_u64(b + HEADER_ZONE_SIZE_OFFSET, self.zones.object_size_bytes);
        region.store_u64(b + HEADER_ZONE_COUNT_OFFSET, self.zones.object_count);
        region.store_u64(b + HEADER_ZONE_META_OFFSET, self.rel(self.zones.meta));
        region.store_u64(b + HEADER_RESERVED_OFFSET, 0);
        for g in self.pools.iter().chain(std::iter::once(&self.zones)) {
            region.write_u32(g.meta + META_POOL_ID_OFFSET, g.pool_id);
            region.write_u32(g.meta + META_KIND_OFFSET, g.kind);
            region.store_u64(g.meta + META_OBJECT_SIZE_OFFSET, g.object_size_bytes);
            region.store_u64(g.meta + META_OBJECT_COUNT_OFFSET, g.object_count);
            region.store_u64(g.meta + META_INDEX_WORDS_OFFSET, self.rel(g.index_words));
            region.store_u64(g.meta + META_OBJECTS_OFFSET, self.rel(g.objects));
            region.store_u64(g.hd_offset(), 0);
            region.store_u64(g.meta + META_RESERVED_OFFSET, 0);
            region.store_u64(g.meta + META_RESERVED_OFFSET + 8, 0);
        }
    }

    /// Reads and validates the layout at `base`. Every inconsistency is
    /// `Corruption`; nothing here panics on media contents.
    pub fn decode(region: &Region, base: RegionOffset) -> Result<Layout, PmemError> {
        let corrupt = |at: RegionOffset, what: String| PmemError::Corruption { offset: at.0, what };
        if !base.is_aligned(ARRAY_ALIGN_BYTES) {
            return Err(corrupt(base, format!("halloc base {base} is not {ARRAY_ALIGN_BYTES}-byte aligned")));
        }
        region.check_range(base, HEADER_BYTES, "halloc header")?;
        let magic = region.load_u64(base + HEADER_MAGIC_OFFSET);
        if magic != HALLOC_MAGIC {
            return Err(corrupt(base, format!("halloc magic {magic:#018x}, expected {HALLOC_MAGIC:#018x}")));
        }
        let version = region.read_u32(base + HEADER_VERSION_OFFSET);
        if version != HALLOC_VERSION {
            return Err(corrupt(
                base + HEADER_VERSION_OFFSET,
                format!("halloc format version {version}, this build reads {HALLOC_VERSION}"),
            ));
        }
        let pool_count = u64::from(region.read_u32(base + HEADER_POOL_COUNT_OFFSET));
        let area_len_bytes = region.load_u64(base + HEADER_AREA_LEN_OFFSET);
        region.check_range(base, area_len_bytes, "halloc area")?;
        let table = region.load_u64(base + HEADER_POOL_TABLE_OFFSET);
        if table != HEADER_BYTES {
            return Err(corrupt(
                base + HEADER_POOL_TABLE_OFFSET,
                format!("halloc pool table at area offset {table}, expected {HEADER_BYTES}"),
            ));
        }
        if pool_count >= u64::from(ZONE_POOL_ID) {
            return Err(corrupt(base + HEADER_POOL_COUNT_OFFSET, format!("halloc pool count {pool_count}")));
        }
        let table_end = HEADER_BYTES + (pool_count + 1) * POOL_META_BYTES;
        if table_end > area_len_bytes {
            return Err(corrupt(
                base + HEADER_POOL_COUNT_OFFSET,
                format!("{pool_count} pool metadata blocks exceed the halloc area of {area_len_bytes} bytes"),
            ));
        }
        let zone_meta = region.load_u64(base + HEADER_ZONE_META_OFFSET);
        if zone_meta != HEADER_BYTES + pool_count * POOL_META_BYTES {
            return Err(corrupt(
                base + HEADER_ZONE_META_OFFSET,
                format!("zone pool metadata at area offset {zone_meta}, expected after {pool_count} pools"),
            ));
        }
        let mut layout = Layout {
            base,
            area_len_bytes,
            used_len_bytes: table_end,
            pools: Vec::with_capacity(pool_count as usize),
            zones: PoolGeometry {
                pool_id: ZONE_POOL_ID,
                kind: POOL_KIND_ZONES,
                object_size_bytes: OBJECT_ALIGN_BYTES,
                object_count: 0,
                meta: base,
                index_words: base,
                objects: base,
            },
        };
        // Occupied area-relative intervals, to reject overlapping arrays.
        let mut used: Vec<(u64, u64)> = vec![(0, table_end)];
        for i in 0..=pool_count {
            let meta = base + HEADER_BYTES + i * POOL_META_BYTES;
            let (want_id, want_kind) =
                if i == pool_count { (ZONE_POOL_ID, POOL_KIND_ZONES) } else { (i as u32, POOL_KIND_OBJECTS) };
            let g = decode_pool(region, &layout, meta, want_id, want_kind, &mut used)?;
            if i == pool_count {
                let zone_size = region.load_u64(base + HEADER_ZONE_SIZE_OFFSET);
                let zone_count = region.load_u64(base + HEADER_ZONE_COUNT_OFFSET);
                if (zone_size, zone_count) != (g.object_size_bytes, g.object_count) {
                    return Err(corrupt(
                        base + HEADER_ZONE_SIZE_OFFSET,
                        format!(
                            "header says {zone_count} zones of {zone_size} bytes, zone pool metadata says {} of {}",
                            g.object_count, g.object_size_bytes
                        ),
                    ));
                }
                layout.zones = g;
            } else {
                layout.pools.push(g);
            }
        }
        used.sort_unstable();
        for pair in used.windows(2) {
            if pair[1].0 < pair[0].1 {
                return Err(corrupt(
                    base + pair[1].0,
                    format!(
                        "halloc arrays overlap at area offsets {}..{} and {}..{}",
                        pair[0].0, pair[0].1, pair[1].0, pair[1].1
                    ),
                ));
            }
        }
        let array_ends = layout.pools.iter().chain(std::iter::once(&layout.zones)).map(|g| {
            let words_end = g.index_words.0 - base.0 + g.index_words_len_bytes();
            let objects_end = g.objects.0 - base.0 + g.objects_len_bytes();
            words_end.max(objects_end)
        });
        layout.used_len_bytes = array_ends.fold(table_end, u64::max);
        Ok(layout)
    }
}

/// Decodes and validates one pool metadata block at `meta`.
fn decode_pool(
    region: &Region,
    layout: &Layout,
    meta: RegionOffset,
    want_id: u32,
    want_kind: u32,
    used: &mut Vec<(u64, u64)>,
) -> Result<PoolGeometry, PmemError> {
    let corrupt = |field: u64, what: String| PmemError::Corruption { offset: meta.0 + field, what };
    let pool_id = region.read_u32(meta + META_POOL_ID_OFFSET);
    if pool_id != want_id {
        return Err(corrupt(
            META_POOL_ID_OFFSET,
            format!("pool metadata has pool id {pool_id}, expected {want_id}"),
        ));
    }
    let kind = region.read_u32(meta + META_KIND_OFFSET);
    if kind != want_kind {
        return Err(corrupt(
            META_KIND_OFFSET,
            format!("pool {pool_id} has kind {kind}, expected {want_kind}"),
        ));
    }
    let object_size_bytes = region.load_u64(meta + META_OBJECT_SIZE_OFFSET);
    if object_size_bytes == 0 || !object_size_bytes.is_multiple_of(OBJECT_ALIGN_BYTES) {
        return Err(corrupt(
            META_OBJECT_SIZE_OFFSET,
            format!("pool {pool_id} object size {object_size_bytes} is not a positive multiple of {OBJECT_ALIGN_BYTES}"),
        ));
    }
    let object_count = region.load_u64(meta + META_OBJECT_COUNT_OFFSET);
    if object_count > MAX_OBJECT_COUNT {
        return Err(corrupt(META_OBJECT_COUNT_OFFSET, format!("pool {pool_id} has {object_count} objects")));
    }
    let mut array = |field: u64, len: Option<u64>, what: &str| -> Result<u64, PmemError> {
        let rel = region.load_u64(meta + field);
        let end = len.and_then(|len| rel.checked_add(len));
        match end {
            Some(end) if rel.is_multiple_of(ARRAY_ALIGN_BYTES) && end <= layout.area_len_bytes => {
                if end > rel {
                    used.push((rel, end));
                }
                Ok(rel)
            }
            _ => Err(corrupt(
                field,
                format!(
                    "pool {pool_id} {what} at area offset {rel} is misaligned or exceeds the halloc area of {} bytes",
                    layout.area_len_bytes
                ),
            )),
        }
    };
    let words_rel =
        array(META_INDEX_WORDS_OFFSET, object_count.checked_mul(INDEX_WORD_BYTES), "index words")?;
    let objects_rel = array(META_OBJECTS_OFFSET, object_count.checked_mul(object_size_bytes), "objects")?;
    let hd = region.load_u64(meta + META_HD_OFFSET);
    if hd > object_count {
        return Err(corrupt(
            META_HD_OFFSET,
            format!("pool {pool_id} freelist head {hd} exceeds {object_count} objects"),
        ));
    }
    Ok(PoolGeometry {
        pool_id,
        kind,
        object_size_bytes,
        object_count,
        meta,
        index_words: layout.base + words_rel,
        objects: layout.base + objects_rel,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> HallocConfig {
        HallocConfig::new(
            vec![
                PoolSpec { object_size_bytes: 40, object_count: 5 },
                PoolSpec { object_size_bytes: 200, object_count: 3 },
            ],
            1024,
            2,
        )
    }

    #[test]
    fn plan_aligns_arrays_and_rounds_slots() {
        let l = Layout::plan(RegionOffset(512), 1 << 20, &config()).unwrap();
        assert_eq!(l.pools[0].object_size_bytes, 64);
        assert_eq!(l.pools[1].object_size_bytes, 256);
        for g in l.pools.iter().chain(std::iter::once(&l.zones)) {
            assert!(g.index_words.is_aligned(ARRAY_ALIGN_BYTES), "{g:?}");
            assert!(g.objects.is_aligned(ARRAY_ALIGN_BYTES), "{g:?}");
            assert!(g.objects.0 >= g.index_words.0 + g.index_words_len_bytes(), "{g:?}");
        }
        assert_eq!(l.zones.meta, RegionOffset(512 + HEADER_BYTES + 2 * POOL_META_BYTES));
        assert_eq!(l.used_len_bytes, l.zones.objects.0 + 2 * 1024 - 512);
    }

    #[test]
    fn plan_reports_overflow_as_none() {
        let huge =
            HallocConfig::new(vec![PoolSpec { object_size_bytes: u64::MAX / 2, object_count: 4 }], 64, 0);
        assert!(Layout::plan(RegionOffset(0), u64::MAX, &huge).is_none());
    }

    #[test]
    fn written_metadata_decodes_to_the_plan() {
        let region = Region::sim(16 << 10);
        let base = RegionOffset(256);
        let l = Layout::plan(base, 8 << 10, &config()).unwrap();
        l.write_metadata(&region);
        region.store_u64(base + HEADER_MAGIC_OFFSET, HALLOC_MAGIC);
        assert_eq!(Layout::decode(&region, base).unwrap(), l);
    }

    #[test]
    fn index_containing_maps_slots_back() {
        let l = Layout::plan(RegionOffset(0), 1 << 20, &config()).unwrap();
        let g = l.pools[1];
        assert_eq!(g.index_containing(g.object_offset(2) + 255), Some(2));
        assert_eq!(g.index_containing(g.object_offset(2) + 256), None);
        assert_eq!(g.index_containing(RegionOffset(g.objects.0 - 1)), None);
    }
}
