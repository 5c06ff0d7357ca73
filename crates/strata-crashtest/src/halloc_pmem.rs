//! The Halloc crash test (DESIGN.md section 3 applied to lsm-pmem.txt section
//! 3.4): [`HallocCrashProtocol`], a deterministic seeded workload of an
//! application that owns Halloc objects and zones through a persistent owner
//! table, run on the crash simulator, and the oracle checked on every crash
//! image.
//!
//! Region layout: word 0 is the application's "ready" word (written after
//! `format` is durable), then [`OBJECT_SLOTS`] object owner slots and
//! [`ZONE_SLOTS`] zone owner slots (8 bytes each: 0 = empty, otherwise the
//! raw id plus one), and a Halloc at offset 256 with one pool of 8 objects of
//! 64 bytes and 5 zones of 512 bytes.
//!
//! Workload (each persistent operation is transaction `TxnId(op number)`,
//! acknowledged when it returns):
//! - allocate an object: `get` → write `[txn][payload(txn)]` and persist →
//!   owner slot := id and persist → `commit`;
//! - free an object: `release` → clear the owner slot and persist;
//! - allocate a zone: `get_zone` → fill records through a `ZoneAppender` and
//!   persist → owner slot → `commit_zone`;
//! - batch-release zones: `release_zones` → clear their owner slots, persist;
//! - volatile: `VolatileAllocator::alloc` (takes uncommitted zones, writes a
//!   word without persisting it) and free-all (returns empty zones); these
//!   are not transactions.
//!
//! Check after a crash: if the ready word is absent, nothing may have been
//! acknowledged. Otherwise `Halloc::open` (recovery), then the application
//! drops every owner slot whose object or zone fails `check`. With `must` the
//! owner table after the acknowledged operations, and `may` the table after
//! the one operation in flight (each zone of an in-flight batch release
//! independently):
//! - `lost`: a slot differs from both where `must` holds an acknowledged
//!   allocation (the allocation is missing) or where the slot still holds an
//!   object whose free was acknowledged;
//! - `partial`: a slot holds an object with wrong contents or one never
//!   allocated into it; an object or zone leaked for good (neither on the
//!   freelist nor committed and owned); an object or zone owned twice (on the
//!   freelist and owned, or in two owner slots; twice on the freelist is a
//!   cycle, which recovery reports);
//! - `order_violations`: recovery (or the freelist traversal) failed.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::error::CheckResult;
use crate::oracle::{AckLog, OracleCounts};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata_media::TxnId;

use strata_pmem::halloc::{Halloc, HallocConfig, ObjectId, PoolId, PoolSpec, VolatileAllocator, ZoneId};
use strata_pmem::{PmemError, Region, RegionOffset, WORD_BYTES};

use crate::pmem_harness::PmemCrashProtocol;

/// Object owner slots of the application.
pub const OBJECT_SLOTS: usize = 6;
/// Zone owner slots of the application.
pub const ZONE_SLOTS: usize = 4;
const POOL_OBJECTS: u64 = 8;
const OBJECT_BYTES: u64 = 64;
const ZONES: u64 = 5;
const ZONE_BYTES: u64 = 512;
const READY_OFFSET: RegionOffset = RegionOffset(0);
const READY_MAGIC: u64 = u64::from_le_bytes(*b"APPREADY");
const HALLOC_BASE: RegionOffset = RegionOffset(256);
const POOL: PoolId = PoolId(0);
/// A zone's first record: `[txn u64][used bytes u64]`.
const ZONE_HEADER_BYTES: u64 = 16;

fn object_slot(slot: usize) -> RegionOffset {
    RegionOffset(WORD_BYTES * (1 + slot as u64))
}

fn zone_slot(slot: usize) -> RegionOffset {
    RegionOffset(WORD_BYTES * (1 + OBJECT_SLOTS as u64 + slot as u64))
}

fn config() -> HallocConfig {
    HallocConfig::new(
        vec![PoolSpec { object_size_bytes: OBJECT_BYTES, object_count: POOL_OBJECTS }],
        ZONE_BYTES,
        ZONES,
    )
}

/// Deterministic bytes of transaction `txn` at `position`.
fn pattern(txn: u64, position: u64) -> u8 {
    (txn.wrapping_mul(0x9E37_79B9).wrapping_add(position.wrapping_mul(31)) >> 3) as u8 | 1
}

fn object_content(txn: u64) -> Vec<u8> {
    let mut v = txn.to_le_bytes().to_vec();
    v.extend((8..OBJECT_BYTES).map(|p| pattern(txn, p)));
    v
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    AllocObject { slot: usize },
    FreeObject { slot: usize },
    AllocZone { slot: usize, record_lens_bytes: Vec<u64> },
    ReleaseZones { slots: Vec<usize> },
    VolatileAlloc { size_bytes: u64 },
    VolatileFreeAll,
}

impl Op {
    fn is_transaction(&self) -> bool {
        !matches!(self, Op::VolatileAlloc { .. } | Op::VolatileFreeAll)
    }
}

/// What a zone allocation writes, as (offset in the zone, bytes): the
/// header `[txn][used bytes]` then each record, 8-byte aligned. The padding
/// between records is never written (it keeps older bytes).
fn zone_records(txn: u64, record_lens_bytes: &[u64]) -> Vec<(u64, Vec<u8>)> {
    let mut records = Vec::with_capacity(record_lens_bytes.len() + 1);
    let mut used = ZONE_HEADER_BYTES;
    for &len in record_lens_bytes {
        let at = used.next_multiple_of(8);
        records.push((at, (at..at + len).map(|p| pattern(txn, p)).collect()));
        used = at + len;
    }
    let mut header = txn.to_le_bytes().to_vec();
    header.extend_from_slice(&used.to_le_bytes());
    records.insert(0, (0, header));
    records
}

/// Deliberate protocol errors the crash test must catch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
enum PlantedBug {
    None,
    /// Commits the object (or zone) before its owner slot is persisted.
    CommitBeforeOwnerPersisted,
    /// Release pushes onto the freelist before resetting the commit bit.
    PushBeforeResetCommitBit,
}

/// The application state of one execution of the workload.
struct App {
    halloc: Arc<Halloc>,
    volatile: VolatileAllocator,
    objects: [Option<ObjectId>; OBJECT_SLOTS],
    zones: [Option<ZoneId>; ZONE_SLOTS],
    volatile_live: Vec<(RegionOffset, u64)>,
}

/// A seeded Halloc workload with its owner-table oracle; see the module comment.
pub struct HallocCrashProtocol {
    seed: u64,
    ops: Vec<Op>,
    /// The raw id each operation obtained in the planning run (determinism check).
    planned_ids: Vec<Option<u64>>,
    bug: PlantedBug,
}

impl HallocCrashProtocol {
    /// The seed the workload was generated from (printed with failures).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// `ops` operations chosen by a ChaCha8 generator seeded with `seed`.
    pub fn new(seed: u64, ops: usize) -> Self {
        Self::build(seed, ops, PlantedBug::None)
    }

    #[cfg(test)]
    fn with_planted_bug(seed: u64, ops: usize, bug: PlantedBug) -> Self {
        Self::build(seed, ops, bug)
    }

    /// Plans the operations by running the workload once on a scratch region
    /// (the choices depend on free counts), recording the ids obtained.
    fn build(seed: u64, op_count: usize, bug: PlantedBug) -> Self {
        let mut proto = HallocCrashProtocol { seed, ops: Vec::new(), planned_ids: Vec::new(), bug };
        let region = Arc::new(Region::sim(proto.region_len()));
        let mut app = proto.start(&region);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for k in 0..op_count {
            let op = proto.choose(&mut rng, &app);
            let id = proto.execute(&region, &mut app, &op, k as u64 + 1);
            proto.ops.push(op);
            proto.planned_ids.push(id);
        }
        proto
    }

    /// Operations in the plan (for reports).
    pub fn op_count(&self) -> usize {
        self.ops.len()
    }

    fn choose(&self, rng: &mut ChaCha8Rng, app: &App) -> Op {
        let h = &app.halloc;
        let empty = |slots: &[bool]| -> Vec<usize> { (0..slots.len()).filter(|&i| !slots[i]).collect() };
        let obj_taken: Vec<bool> = app.objects.iter().map(Option::is_some).collect();
        let zone_taken: Vec<bool> = app.zones.iter().map(Option::is_some).collect();
        let obj_empty = empty(&obj_taken);
        let obj_full: Vec<usize> = (0..OBJECT_SLOTS).filter(|&i| obj_taken[i]).collect();
        let zone_empty = empty(&zone_taken);
        let zone_full: Vec<usize> = (0..ZONE_SLOTS).filter(|&i| zone_taken[i]).collect();
        let mut kinds: Vec<(u32, u8)> = Vec::new();
        if !obj_empty.is_empty() && h.free_objects(POOL) > 0 {
            kinds.push((4, 0));
        }
        if !obj_full.is_empty() {
            kinds.push((3, 1));
        }
        if !zone_empty.is_empty() && h.free_zones() > 0 {
            kinds.push((2, 2));
        }
        if !zone_full.is_empty() {
            kinds.push((2, 3));
        }
        if h.free_zones() >= 2 {
            kinds.push((1, 4));
        }
        if !app.volatile_live.is_empty() {
            kinds.push((1, 5));
        }
        let total: u32 = kinds.iter().map(|k| k.0).sum();
        let mut pick = rng.gen_range(0..total);
        let kind = kinds
            .iter()
            .find(|k| {
                if pick < k.0 {
                    true
                } else {
                    pick -= k.0;
                    false
                }
            })
            .expect("a kind")
            .1;
        let one = |rng: &mut ChaCha8Rng, v: &[usize]| v[rng.gen_range(0..v.len())];
        match kind {
            0 => Op::AllocObject { slot: one(rng, &obj_empty) },
            1 => Op::FreeObject { slot: one(rng, &obj_full) },
            2 => {
                let records = rng.gen_range(1..=3);
                Op::AllocZone {
                    slot: one(rng, &zone_empty),
                    record_lens_bytes: (0..records).map(|_| rng.gen_range(1..=40)).collect(),
                }
            }
            3 => {
                let mut slots: Vec<usize> = zone_full.iter().copied().filter(|_| rng.gen_bool(0.6)).collect();
                if slots.is_empty() {
                    slots.push(one(rng, &zone_full));
                }
                Op::ReleaseZones { slots }
            }
            4 => Op::VolatileAlloc { size_bytes: [24, 100][rng.gen_range(0..2)] },
            _ => Op::VolatileFreeAll,
        }
    }

    /// Formats the Halloc, then marks the application ready.
    fn start(&self, region: &Arc<Region>) -> App {
        let len = Halloc::required_len_bytes(&config());
        let halloc = Arc::new(Halloc::format(region, HALLOC_BASE, len, &config()).expect("format"));
        region.store_u64_persist(READY_OFFSET, READY_MAGIC);
        App {
            volatile: VolatileAllocator::new(halloc.clone()),
            halloc,
            objects: [None; OBJECT_SLOTS],
            zones: [None; ZONE_SLOTS],
            volatile_live: Vec::new(),
        }
    }

    /// Executes operation `txn`; returns the raw id it obtained, if any.
    fn execute(&self, r: &Region, app: &mut App, op: &Op, txn: u64) -> Option<u64> {
        let h = app.halloc.clone();
        let commit_first = self.bug == PlantedBug::CommitBeforeOwnerPersisted;
        match op {
            Op::AllocObject { slot } => {
                let id = h.get(POOL).expect("planned with a free object");
                r.write_persist(h.object_offset(id), &object_content(txn));
                if commit_first {
                    h.commit(id);
                }
                r.store_u64_persist(object_slot(*slot), id.to_raw() + 1);
                if !commit_first {
                    h.commit(id);
                }
                app.objects[*slot] = Some(id);
                Some(id.to_raw())
            }
            Op::FreeObject { slot } => {
                let id = app.objects[*slot].take().expect("planned on an owned slot");
                if self.bug == PlantedBug::PushBeforeResetCommitBit {
                    h.release_push_before_reset(id);
                } else {
                    h.release(id);
                }
                r.store_u64_persist(object_slot(*slot), 0);
                Some(id.to_raw())
            }
            Op::AllocZone { slot, record_lens_bytes } => {
                let zone = h.get_zone().expect("planned with a free zone");
                let records = zone_records(txn, record_lens_bytes);
                let start = h.zone_offset(zone);
                let mut appender = h.zone_appender(zone);
                for (rel, bytes) in &records {
                    let at = appender.alloc(bytes.len() as u64, 8).expect("records fit the zone");
                    assert_eq!(at, start + *rel, "the appender places records where the oracle expects");
                    r.write(at, bytes);
                    r.flush(at, bytes.len() as u64);
                }
                r.fence();
                if commit_first {
                    h.commit_zone(zone);
                }
                r.store_u64_persist(zone_slot(*slot), zone.to_raw() + 1);
                if !commit_first {
                    h.commit_zone(zone);
                }
                app.zones[*slot] = Some(zone);
                Some(zone.to_raw())
            }
            Op::ReleaseZones { slots } => {
                let zones: Vec<ZoneId> =
                    slots.iter().map(|&s| app.zones[s].take().expect("planned on owned slots")).collect();
                h.release_zones(&zones);
                for &s in slots {
                    r.store_u64(zone_slot(s), 0);
                    r.flush(zone_slot(s), WORD_BYTES);
                }
                r.fence();
                None
            }
            Op::VolatileAlloc { size_bytes } => {
                let at = app.volatile.alloc(*size_bytes)?;
                r.store_u64(at, txn); // volatile data: never persisted
                app.volatile_live.push((at, *size_bytes));
                Some(at.0)
            }
            Op::VolatileFreeAll => {
                for (at, size) in app.volatile_live.drain(..) {
                    app.volatile.free(at, size);
                }
                app.volatile.release_empty_zones();
                None
            }
        }
    }

    /// The owner table after applying `op` (transaction `txn`) to `objects`/`zones`.
    fn apply(op: &Op, txn: u64, objects: &mut [Option<u64>], zones: &mut [Option<u64>]) {
        match op {
            Op::AllocObject { slot } => objects[*slot] = Some(txn),
            Op::FreeObject { slot } => objects[*slot] = None,
            Op::AllocZone { slot, .. } => zones[*slot] = Some(txn),
            Op::ReleaseZones { slots } => slots.iter().for_each(|&s| zones[s] = None),
            Op::VolatileAlloc { .. } | Op::VolatileFreeAll => {}
        }
    }

    /// Which transaction's contents an owned object holds, if they are intact.
    fn object_txn(&self, r: &Region, h: &Halloc, id: ObjectId) -> Option<u64> {
        let bytes = r.read_vec(h.object_offset(id), OBJECT_BYTES as usize);
        let txn = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        (bytes == object_content(txn)).then_some(txn)
    }

    fn zone_txn(&self, r: &Region, h: &Halloc, zone: ZoneId) -> Option<u64> {
        let start = h.zone_offset(zone);
        let txn = r.load_u64(start);
        let Some(Op::AllocZone { record_lens_bytes, .. }) =
            txn.checked_sub(1).and_then(|k| self.ops.get(k as usize))
        else {
            return None;
        };
        let intact = zone_records(txn, record_lens_bytes)
            .iter()
            .all(|(rel, bytes)| r.read_vec(start + *rel, bytes.len()) == *bytes);
        intact.then_some(txn)
    }

    fn check(&self, r: &Arc<Region>, acked: &BTreeSet<TxnId>) -> (OracleCounts, Option<String>) {
        let mut counts = OracleCounts::default();
        let mut why: Option<String> = None;
        let note = |why: &mut Option<String>, s: String| {
            why.get_or_insert(s);
        };
        if r.load_u64(READY_OFFSET) != READY_MAGIC {
            counts.lost = acked.len() as u64;
            if !acked.is_empty() {
                note(
                    &mut why,
                    format!("application not ready but {} transactions acknowledged", acked.len()),
                );
            }
            return (counts, why);
        }
        let h = match Halloc::open(r, HALLOC_BASE) {
            Ok((h, _)) => h,
            Err(e) => {
                counts.order_violations += 1;
                return (counts, Some(format!("halloc recovery failed: {e}")));
            }
        };
        // Application restart: drop references that fail `check`.
        let objects = reload_owner_slots(
            r,
            OBJECT_SLOTS,
            object_slot,
            |raw| h.object_id_from_raw(raw),
            |id| h.check(id),
            &mut counts,
            &mut why,
        );
        let zones = reload_owner_slots(
            r,
            ZONE_SLOTS,
            zone_slot,
            |raw| h.zone_id_from_raw(raw),
            |z| h.check_zone(z),
            &mut counts,
            &mut why,
        );

        // Expected owner tables: `must` after the acknowledged operations,
        // `may` after the one in flight.
        let mut must_objects = vec![None; OBJECT_SLOTS];
        let mut must_zones = vec![None; ZONE_SLOTS];
        let mut in_flight: Option<(usize, &Op)> = None;
        for (k, op) in self.ops.iter().enumerate() {
            if !op.is_transaction() {
                continue;
            }
            if acked.contains(&TxnId(k as u64 + 1)) {
                Self::apply(op, k as u64 + 1, &mut must_objects, &mut must_zones);
            } else if in_flight.is_none() {
                in_flight = Some((k, op));
            }
        }
        let (mut may_objects, mut may_zones) = (must_objects.clone(), must_zones.clone());
        if let Some((k, op)) = in_flight {
            Self::apply(op, k as u64 + 1, &mut may_objects, &mut may_zones);
        }
        let allocated_into = |txn: u64, zone: bool, slot: usize| -> bool {
            match self.ops.get((txn as usize).wrapping_sub(1)) {
                Some(Op::AllocObject { slot: s }) => !zone && *s == slot,
                Some(Op::AllocZone { slot: s, .. }) => zone && *s == slot,
                _ => false,
            }
        };
        let mut judge = |kind: &str,
                         zone: bool,
                         slot: usize,
                         actual: Option<Option<u64>>,
                         must: Option<u64>,
                         may: Option<u64>| {
            // actual: None = empty slot, Some(None) = owned with bad contents, Some(Some(t)) = owned by t.
            let actual = match actual {
                None => None,
                Some(None) => {
                    counts.partial += 1;
                    note(&mut why, format!("{kind} slot {slot} owns something with wrong contents"));
                    return;
                }
                Some(Some(t)) => Some(t),
            };
            if actual == must || actual == may {
                return;
            }
            match (must, actual) {
                (Some(t), _) => {
                    counts.lost += 1;
                    note(
                        &mut why,
                        format!("{kind} slot {slot}: acknowledged allocation T{t} lost (found {actual:?})"),
                    );
                }
                (None, Some(t)) if acked.contains(&TxnId(t)) && allocated_into(t, zone, slot) => {
                    counts.lost += 1;
                    note(
                        &mut why,
                        format!("{kind} slot {slot}: still owns T{t} after its acknowledged free"),
                    );
                }
                (None, found) => {
                    counts.partial += 1;
                    note(&mut why, format!("{kind} slot {slot}: owns {found:?}, never allocated there"));
                }
            }
        };
        for s in 0..OBJECT_SLOTS {
            let actual = objects[s].map(|id| self.object_txn(r, &h, id));
            judge("object", false, s, actual, must_objects[s], may_objects[s]);
        }
        for s in 0..ZONE_SLOTS {
            let actual = zones[s].map(|z| self.zone_txn(r, &h, z));
            judge("zone", true, s, actual, must_zones[s], may_zones[s]);
        }

        // Allocator accounting: every object free xor (committed and owned once).
        match h.free_list(POOL) {
            Ok(free) => {
                let free: Vec<u32> = free.into_iter().map(|id| id.index()).collect();
                let owned: Vec<Option<u32>> = objects.iter().map(|o| o.map(|id| id.index())).collect();
                let committed = |i: u32| h.check(ObjectId::new(POOL, i));
                account("object", POOL_OBJECTS, &owned, &free, &committed, &mut counts, &mut why);
            }
            Err(e) => {
                counts.order_violations += 1;
                note(&mut why, format!("object freelist traversal failed: {e}"));
            }
        }
        match h.free_zone_list() {
            Ok(free) => {
                let free: Vec<u32> = free.into_iter().map(|z| z.0).collect();
                let owned: Vec<Option<u32>> = zones.iter().map(|z| z.map(|z| z.0)).collect();
                let committed = |i: u32| h.check_zone(ZoneId(i));
                account("zone", ZONES, &owned, &free, &committed, &mut counts, &mut why);
            }
            Err(e) => {
                counts.order_violations += 1;
                note(&mut why, format!("zone freelist traversal failed: {e}"));
            }
        }
        (counts, why)
    }
}

/// Allocator accounting of one pool: every object is free exactly once, or
/// committed and owned by exactly one slot (`partial` otherwise).
/// The application's restart step for one owner table: reads every slot
/// (an id + 1, 0 = empty), keeps the ids that pass Halloc's `check`, clears
/// (persistently) the ones that fail it, and counts undecodable ids as
/// partial.
fn reload_owner_slots<Id: Copy>(
    r: &Region,
    slots: usize,
    slot_offset: fn(usize) -> RegionOffset,
    from_raw: impl Fn(u64) -> Result<Id, PmemError>,
    committed: impl Fn(Id) -> bool,
    counts: &mut OracleCounts,
    why: &mut Option<String>,
) -> Vec<Option<Id>> {
    let mut owned = vec![None; slots];
    for (s, owner) in owned.iter_mut().enumerate() {
        let raw = r.load_u64(slot_offset(s));
        if raw == 0 {
            continue;
        }
        match from_raw(raw - 1) {
            Ok(id) if committed(id) => *owner = Some(id),
            Ok(_) => r.store_u64_persist(slot_offset(s), 0),
            Err(e) => {
                counts.partial += 1;
                why.get_or_insert(format!("slot {s} at {}: {e}", slot_offset(s)));
            }
        }
    }
    owned
}

fn account(
    kind: &str,
    count: u64,
    owned: &[Option<u32>],
    free: &[u32],
    committed: &dyn Fn(u32) -> bool,
    counts: &mut OracleCounts,
    why: &mut Option<String>,
) {
    for i in 0..count as u32 {
        let owners = owned.iter().filter(|o| **o == Some(i)).count();
        let on_free = free.iter().filter(|&&f| f == i).count();
        if owners > 1 || on_free > 1 || (owners > 0 && on_free > 0) {
            counts.partial += 1;
            why.get_or_insert_with(|| {
                format!("{kind} {i} owned twice ({owners} owner slots, {on_free} times free)")
            });
        } else if on_free == 0 && !(owners == 1 && committed(i)) {
            counts.partial += 1;
            why.get_or_insert_with(|| {
                format!("{kind} {i} leaked for good (not free, not committed and owned)")
            });
        }
    }
}

impl PmemCrashProtocol for HallocCrashProtocol {
    fn name(&self) -> String {
        match self.bug {
            PlantedBug::None => "halloc".to_string(),
            bug => format!("halloc-planted-{bug:?}"),
        }
    }

    fn region_len(&self) -> u64 {
        HALLOC_BASE.0 + Halloc::required_len_bytes(&config())
    }

    fn run(&self, region: &Arc<Region>, acks: &AckLog) {
        let mut app = self.start(region);
        for (k, op) in self.ops.iter().enumerate() {
            let txn = k as u64 + 1;
            let id = self.execute(region, &mut app, op, txn);
            assert_eq!(
                id, self.planned_ids[k],
                "op {k} ({op:?}) diverged from the plan: the workload is not deterministic"
            );
            if op.is_transaction() {
                acks.ack(TxnId(txn));
            }
        }
    }

    fn recover_and_check(&self, region: &Arc<Region>, acked: &BTreeSet<TxnId>) -> CheckResult {
        Ok(self.check(region, acked))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::pmem_harness::{reproduce_pmem_failure, run_pmem_crashtest, PmemCrashConfig};

    fn cfg() -> PmemCrashConfig {
        PmemCrashConfig { seed: 0x004a_110c, threads: 2, ..Default::default() }
    }

    #[test]
    fn plan_covers_every_operation_kind() {
        let p = HallocCrashProtocol::new(7, 40);
        let has = |f: &dyn Fn(&Op) -> bool| p.ops.iter().any(f);
        assert!(has(&|o| matches!(o, Op::AllocObject { .. })));
        assert!(has(&|o| matches!(o, Op::FreeObject { .. })));
        assert!(has(&|o| matches!(o, Op::AllocZone { .. })));
        assert!(has(&|o| matches!(o, Op::ReleaseZones { slots } if !slots.is_empty())));
        assert!(has(&|o| matches!(o, Op::VolatileAlloc { .. })));
        assert!(has(&|o| matches!(o, Op::VolatileFreeAll)));
        assert_eq!(p.op_count(), 40);
    }

    #[test]
    fn final_state_passes_the_oracle_with_everything_acknowledged() {
        let p = HallocCrashProtocol::new(11, 40);
        let region = Arc::new(Region::sim(p.region_len()));
        let acks = AckLog::new(|| 0);
        p.run(&region, &acks);
        let acked = acks.acked_by(0);
        assert!(acked.len() > 20);
        let (counts, why) =
            p.check(&Arc::new(Region::sim_from_image(region.as_sim().unwrap().persistent_image())), &acked);
        assert!(counts.is_clean(), "{counts:?} {why:?}");
    }

    #[test]
    fn halloc_passes_the_crash_test() {
        let started = Instant::now();
        let p = HallocCrashProtocol::new(7, 40);
        let report = run_pmem_crashtest(&p, &cfg());
        eprintln!("{} crash_points={} in {:?}", report.line(), report.crash_points, started.elapsed());
        assert!(report.images > 1000, "{}", report.line());
        assert!(report.is_clean(), "seed {}: {:?}", cfg().seed, report.first_failure);
    }

    #[test]
    fn planted_commit_before_owner_persisted_is_caught() {
        let p = HallocCrashProtocol::with_planted_bug(7, 40, PlantedBug::CommitBeforeOwnerPersisted);
        let report = run_pmem_crashtest(&p, &cfg());
        eprintln!("{} first: {:?}", report.line(), report.first_failure);
        assert!(report.counts.partial > 0, "{}", report.line());
        let f = report.first_failure.expect("a failure");
        let (again, why) = reproduce_pmem_failure(&p, &cfg(), f.point, f.image);
        assert!(
            !again.is_clean(),
            "reproduces from seed {} point {} image {}: {why:?}",
            f.seed,
            f.point,
            f.image
        );
    }

    #[test]
    fn planted_push_before_reset_is_caught() {
        let p = HallocCrashProtocol::with_planted_bug(7, 40, PlantedBug::PushBeforeResetCommitBit);
        let report = run_pmem_crashtest(&p, &cfg());
        eprintln!("{} first: {:?}", report.line(), report.first_failure);
        assert!(report.counts.order_violations > 0, "{}", report.line());
    }
}
