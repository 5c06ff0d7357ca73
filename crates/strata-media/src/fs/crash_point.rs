//! What survives a crash of a [`FaultFs`](super::FaultFs) (DESIGN.md section 3,
//! SSD): data not covered by a completed fsync/fdatasync may be lost, and the
//! last written sector may be torn. Owns [`Tear`], [`FsCrashPoint`] and the
//! construction of every crash image the model allows.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::fault::{FaultFs, Inode, InodeId, Tree};
use super::paged::PagedBytes;

/// The unit a device writes atomically or tears.
pub const SECTOR_BYTES: u64 = 512;
/// Sector-torn images per crash point, over all files.
const TORN_IMAGES_MAX: usize = 9;
/// Sector-torn images per file and crash point.
const TORN_IMAGES_PER_FILE_MAX: usize = 8;

/// How [`FaultFs::crash`](super::FaultFs::crash) treats unsynced data.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Tear {
    /// Every byte not covered by a sync is lost.
    None,
    /// The most recently written file keeps a seeded prefix of its unsynced
    /// tail: whole sectors up to a boundary, then one torn sector whose first
    /// bytes are new and the rest old (or zero past the durable length).
    LastSector { seed: u64 },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Image {
    /// Durable entries, durable content.
    UnsyncedDropped,
    /// Current entries, current content.
    AllKept,
    /// Current entries; `inode` keeps its unsynced tail up to `sector_start`
    /// plus the first `new_bytes` of that sector; other files durable content.
    SectorTorn { inode: InodeId, sector_start: u64, new_bytes: u64 },
    /// `Tear::LastSector` with the point's seed.
    SeededTear,
}

/// The state right after one mutating operation, and the crash images the
/// model allows there.
#[derive(Clone)]
pub struct FsCrashPoint {
    op: u64,
    tree: Tree,
    tear_seed: u64,
    images: Vec<Image>,
}

impl fmt::Debug for FsCrashPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FsCrashPoint").field("op", &self.op).field("images", &self.images).finish()
    }
}

impl FsCrashPoint {
    /// `run_tear_seed` is the seed of the whole run; the point's own seed
    /// mixes in `op`, so every point tears differently but reproducibly.
    pub(crate) fn new(op: u64, tree: Tree, run_tear_seed: u64) -> Self {
        let images = plan_images(&tree);
        let tear_seed = splitmix64(run_tear_seed ^ splitmix64(op));
        FsCrashPoint { op, tree, tear_seed, images }
    }

    /// The value of `ops()` right after the operation.
    pub fn op(&self) -> u64 {
        self.op
    }

    /// At most 12: (0) unsynced data and entries dropped, (1) everything
    /// kept, then sector-torn tails of files with unsynced data (most
    /// recently written first), then a seeded tear of the last written file.
    pub fn image_count(&self) -> u64 {
        self.images.len() as u64
    }

    /// Image `index` (< `image_count()`), the same every time. Images 2 and
    /// later keep the current directory entries, except the seeded tear,
    /// which keeps only durable ones, as [`Tear::LastSector`] does.
    pub fn image(&self, index: u64) -> FaultFs {
        let image = usize::try_from(index).ok().and_then(|i| self.images.get(i));
        let image =
            *image.unwrap_or_else(|| panic!("op {}: no image {index} of {}", self.op, self.images.len()));
        let tree = &self.tree;
        let out = match image {
            Image::UnsyncedDropped => crash_image(tree, Tear::None),
            Image::AllKept => settle(tree, &tree.names, |_, inode| inode.current.clone()),
            Image::SectorTorn { inode: torn, sector_start, new_bytes } => {
                settle(tree, &tree.names, |id, inode| {
                    if id == torn {
                        torn_content(inode, sector_start, new_bytes)
                    } else {
                        inode.durable.clone()
                    }
                })
            }
            Image::SeededTear => crash_image(tree, Tear::LastSector { seed: self.tear_seed }),
        };
        FaultFs::from_tree(out, 0)
    }
}

/// Durable entries and durable content, plus the tear `tear` asks for.
pub(crate) fn crash_image(tree: &Tree, tear: Tear) -> Tree {
    let torn = match tear {
        Tear::None => None,
        Tear::LastSector { seed } => tree.last_written.and_then(|id| {
            let inode = tree.inodes.get(&id)?;
            seeded_tear(inode, seed).map(|(sector_start, new_bytes)| (id, sector_start, new_bytes))
        }),
    };
    settle(tree, &tree.durable_names, |id, inode| match torn {
        Some((torn_id, sector_start, new_bytes)) if torn_id == id => {
            torn_content(inode, sector_start, new_bytes)
        }
        _ => inode.durable.clone(),
    })
}

fn plan_images(tree: &Tree) -> Vec<Image> {
    let mut images = vec![Image::UnsyncedDropped, Image::AllKept];
    let reachable: BTreeSet<InodeId> = tree.names.values().copied().collect();
    let mut dirty: Vec<(u64, InodeId, &Inode)> = reachable
        .iter()
        .filter_map(|id| tree.inodes.get(id).map(|inode| (inode.last_write_op, *id, &**inode)))
        .filter(|(_, _, inode)| inode.unsynced_tail().is_some())
        .collect();
    dirty.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut budget = TORN_IMAGES_MAX;
    for (_, id, inode) in dirty {
        let Some((first_sector, sector_count)) = tail_sectors(inode) else {
            continue;
        };
        let wanted = (sector_count as usize).min(TORN_IMAGES_PER_FILE_MAX).min(budget);
        for index in spread(sector_count, wanted) {
            let sector_start = first_sector + index * SECTOR_BYTES;
            let sector_len = sector_len(inode, sector_start);
            images.push(Image::SectorTorn { inode: id, sector_start, new_bytes: sector_len / 2 });
        }
        budget -= wanted;
    }
    let durable_ids: BTreeSet<InodeId> = tree.durable_names.values().copied().collect();
    let seeded = tree.last_written.filter(|id| durable_ids.contains(id));
    if seeded.and_then(|id| tree.inodes.get(&id)).is_some_and(|inode| inode.unsynced_tail().is_some()) {
        images.push(Image::SeededTear);
    }
    images
}

/// A file system state where everything is durable: the files reachable by
/// `names`, each with the content `content` picks.
fn settle(
    tree: &Tree,
    names: &Arc<BTreeMap<PathBuf, InodeId>>,
    content: impl Fn(InodeId, &Inode) -> PagedBytes,
) -> Tree {
    let mut inodes = BTreeMap::new();
    for id in names.values() {
        if let (false, Some(inode)) = (inodes.contains_key(id), tree.inodes.get(id)) {
            inodes.insert(*id, Arc::new(Inode::settled(content(*id, inode))));
        }
    }
    Tree {
        dirs: tree.dirs.clone(),
        names: names.clone(),
        durable_names: names.clone(),
        inodes: Arc::new(inodes),
        last_written: None,
        next_inode: tree.next_inode,
    }
}

/// Durable content with the unsynced tail kept up to `sector_start +
/// new_bytes`; the rest of that sector keeps its old bytes (zero past the
/// durable length).
fn torn_content(inode: &Inode, sector_start: u64, new_bytes: u64) -> PagedBytes {
    let mut out = inode.durable.clone();
    let Some((dirty_from, _)) = inode.unsynced_tail() else {
        return out;
    };
    let sector_end = sector_start + sector_len(inode, sector_start);
    let new_end = (sector_start + new_bytes).min(sector_end);
    if new_end > dirty_from {
        out.copy_range_from(&inode.current, dirty_from, new_end);
    }
    if out.len() < sector_end {
        out.set_len(sector_end);
    }
    out
}

/// First sector start and number of sectors of the unsynced tail.
fn tail_sectors(inode: &Inode) -> Option<(u64, u64)> {
    let (dirty_from, len) = inode.unsynced_tail()?;
    let first = dirty_from / SECTOR_BYTES * SECTOR_BYTES;
    let last = (len - 1) / SECTOR_BYTES * SECTOR_BYTES;
    Some((first, (last - first) / SECTOR_BYTES + 1))
}

/// Bytes of the sector at `sector_start` within the current length.
fn sector_len(inode: &Inode, sector_start: u64) -> u64 {
    (sector_start + SECTOR_BYTES).min(inode.current.len()).saturating_sub(sector_start)
}

/// A random sector of the unsynced tail and a random count of new bytes in
/// it, at least one and (when the sector has two bytes or more) not all.
fn seeded_tear(inode: &Inode, seed: u64) -> Option<(u64, u64)> {
    let (first_sector, sector_count) = tail_sectors(inode)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let sector_start = first_sector + rng.gen_range(0..sector_count) * SECTOR_BYTES;
    let len = sector_len(inode, sector_start);
    let new_bytes = if len >= 2 { rng.gen_range(1..len) } else { len };
    Some((sector_start, new_bytes))
}

/// `wanted` indices out of `0..count`, evenly spread, including the first and
/// the last when `wanted >= 2` (the last alone when `wanted == 1`).
fn spread(count: u64, wanted: usize) -> Vec<u64> {
    let wanted = (wanted as u64).min(count);
    match wanted {
        0 => Vec::new(),
        1 => vec![count - 1],
        _ => (0..wanted).map(|j| j * (count - 1) / (wanted - 1)).collect(),
    }
}

pub(crate) fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_includes_ends_and_is_strictly_increasing() {
        assert_eq!(spread(100, 8), vec![0, 14, 28, 42, 56, 70, 84, 99]);
        assert_eq!(spread(3, 8), vec![0, 1, 2]);
        assert_eq!(spread(5, 1), vec![4]);
        assert!(spread(5, 0).is_empty());
        for count in 1..50 {
            for wanted in 2..10 {
                let picked = spread(count, wanted);
                assert!(picked.windows(2).all(|w| w[0] < w[1]), "count {count} wanted {wanted}");
                assert_eq!(picked.last(), Some(&(count - 1)));
            }
        }
    }
}
