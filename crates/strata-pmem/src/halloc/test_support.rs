//! Shared fixtures of the Halloc unit tests.

use std::sync::Arc;

use super::{Halloc, HallocConfig, PoolSpec};
use crate::offset::RegionOffset;
use crate::region::Region;

/// A simulated region with a Halloc at offset 0: pool 0 holds 8 objects of 64
/// bytes, pool 1 holds 4 objects of 200 (slot 256) bytes, plus the zone pool.
pub(crate) fn small_halloc(zone_size_bytes: u64, zone_count: u64) -> (Arc<Region>, Halloc) {
    let config = HallocConfig::new(
        vec![
            PoolSpec { object_size_bytes: 64, object_count: 8 },
            PoolSpec { object_size_bytes: 200, object_count: 4 },
        ],
        zone_size_bytes,
        zone_count,
    );
    let len = Halloc::required_len_bytes(&config);
    let region = Arc::new(Region::sim(len));
    let h = Halloc::format(&region, RegionOffset(0), len, &config).expect("format");
    (region, h)
}
