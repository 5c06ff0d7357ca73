//! [`Region`]: the one persistent-memory API every layer above uses
//! (DESIGN.md section 1). Typed reads and writes at [`RegionOffset`]s,
//! `flush`/`fence`/`persist`, and failure-atomic aligned 8-byte stores, over
//! any backend, with persist accounting on every call.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use crate::error::PmemError;
use crate::mapped::{MappedRegion, PersistMethod};
use crate::offset::{RegionOffset, WORD_BYTES};
use crate::persist_insn::FlushInstruction;
use crate::sim::SimRegion;
use crate::stats::{record_fence, record_flush, PersistStats, RegionStats};

/// Which backend a region uses (configuration name in parentheses).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PmemMode {
    /// (`dax`) a file on a DAX file system mapped with MAP_SYNC.
    Dax,
    /// (`emulated`) a shared file mapping on any file system; real write-back
    /// and fence instructions. Survives a process crash; survives power loss
    /// only at `sync_all` points. The default without PMem.
    Emulated,
    /// (`msync`) persist = msync of the flushed pages: a flush records its
    /// pages, the next fence msyncs each run of them once. Power-safe, slow.
    Msync,
    /// (`sim`) the crash simulator.
    Sim,
    /// (`volatile`) a shared file mapping whose flushes and fences do
    /// nothing: tables in DRAM that survive nothing (the DRAM-DB baselines
    /// of fir.txt 5.1 run FIR's engine so). Never for data that must last.
    Volatile,
}

impl PmemMode {
    pub fn name(self) -> &'static str {
        match self {
            PmemMode::Dax => "dax",
            PmemMode::Emulated => "emulated",
            PmemMode::Msync => "msync",
            PmemMode::Sim => "sim",
            PmemMode::Volatile => "volatile",
        }
    }
}

/// A PMem mode name that is none of dax, emulated, msync, sim or volatile.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown pmem mode `{0}` (expected dax, emulated, msync, sim or volatile)")]
pub struct UnknownPmemMode(pub String);

impl FromStr for PmemMode {
    type Err = UnknownPmemMode;
    fn from_str(s: &str) -> Result<Self, UnknownPmemMode> {
        match s {
            "dax" => Ok(PmemMode::Dax),
            "emulated" => Ok(PmemMode::Emulated),
            "msync" => Ok(PmemMode::Msync),
            "sim" => Ok(PmemMode::Sim),
            "volatile" => Ok(PmemMode::Volatile),
            other => Err(UnknownPmemMode(other.to_string())),
        }
    }
}

/// How to open a region.
#[derive(Clone, Debug)]
pub struct RegionOptions {
    pub mode: PmemMode,
    /// Size of the region; an existing larger file keeps its size.
    pub len_bytes: u64,
    /// `emulated` only: busy-wait per flushed line, to model slower media.
    pub flush_delay_ns_per_line: u64,
    /// `emulated` only: busy-wait per fence.
    pub fence_delay_ns: u64,
}

impl RegionOptions {
    pub fn new(mode: PmemMode, len_bytes: u64) -> Self {
        RegionOptions { mode, len_bytes, flush_delay_ns_per_line: 0, fence_delay_ns: 0 }
    }
}

enum Backend {
    Mapped(MappedRegion),
    Sim(SimRegion),
}

/// A persistent region. Share it as `Arc<Region>`; every method takes `&self`.
pub struct Region {
    backend: Backend,
    mode: PmemMode,
    len: u64,
    stats: Arc<RegionStats>,
}

impl Region {
    /// Opens (creating or growing) the region file at `path`.
    pub fn open(path: &Path, options: &RegionOptions) -> Result<Region, PmemError> {
        let mapped = match options.mode {
            PmemMode::Dax => MappedRegion::dax(path, options.len_bytes)?,
            PmemMode::Emulated => {
                let mut m = MappedRegion::file(path, options.len_bytes, PersistMethod::CacheLine)?;
                m.set_delays(options.flush_delay_ns_per_line, options.fence_delay_ns);
                m
            }
            PmemMode::Msync => MappedRegion::file(path, options.len_bytes, PersistMethod::Msync)?,
            PmemMode::Volatile => MappedRegion::file(path, options.len_bytes, PersistMethod::Nothing)?,
            PmemMode::Sim => {
                let image = std::fs::read(path).unwrap_or_default();
                let mut image = image;
                image.resize(options.len_bytes.max(image.len() as u64) as usize, 0);
                return Ok(Region::from_sim(SimRegion::from_image(image)));
            }
        };
        Ok(Region::from_mapped(mapped, options.mode))
    }

    /// An anonymous emulated region (unit tests, benchmarks of the in-memory limit).
    pub fn anonymous(len_bytes: u64) -> Result<Region, PmemError> {
        Ok(Region::from_mapped(MappedRegion::anonymous(len_bytes)?, PmemMode::Emulated))
    }

    /// A fresh zeroed simulated region.
    pub fn sim(len_bytes: u64) -> Region {
        Region::from_sim(SimRegion::new(len_bytes))
    }

    /// A simulated region restarted from a crash image.
    pub fn sim_from_image(image: Vec<u8>) -> Region {
        Region::from_sim(SimRegion::from_image(image))
    }

    fn from_mapped(m: MappedRegion, mode: PmemMode) -> Region {
        let len = m.len();
        Region { backend: Backend::Mapped(m), mode, len, stats: Arc::default() }
    }

    fn from_sim(s: SimRegion) -> Region {
        let len = s.len();
        Region { backend: Backend::Sim(s), mode: PmemMode::Sim, len, stats: Arc::default() }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn mode(&self) -> PmemMode {
        self.mode
    }

    /// The write-back instruction in use (`None` for the simulator).
    pub fn flush_instruction(&self) -> FlushInstruction {
        match &self.backend {
            Backend::Mapped(m) => m.flush_instruction(),
            Backend::Sim(_) => FlushInstruction::None,
        }
    }

    /// The simulator behind this region, if it is one.
    pub fn as_sim(&self) -> Option<&SimRegion> {
        match &self.backend {
            Backend::Sim(s) => Some(s),
            Backend::Mapped(_) => None,
        }
    }

    /// Persist counts of every thread on this region so far.
    pub fn stats(&self) -> PersistStats {
        self.stats.total()
    }

    /// Whether `[offset, offset + len)` lies inside the region. Decoders check
    /// offsets read from media with this and report `Corruption` otherwise.
    pub fn contains(&self, offset: RegionOffset, len: u64) -> bool {
        offset.0.checked_add(len).is_some_and(|end| end <= self.len)
    }

    /// Like [`Region::contains`], as a `Corruption` error naming `what`.
    pub fn check_range(&self, offset: RegionOffset, len: u64, what: &str) -> Result<(), PmemError> {
        if self.contains(offset, len) {
            Ok(())
        } else {
            Err(PmemError::Corruption {
                offset: offset.0,
                what: format!("{what}: {len} bytes at {offset} exceed the region of {} bytes", self.len),
            })
        }
    }

    #[track_caller]
    fn assert_range(&self, offset: RegionOffset, len: u64) {
        assert!(
            self.contains(offset, len),
            "pmem access of {len} bytes at {offset} outside region of {} bytes",
            self.len
        );
    }

    #[track_caller]
    fn assert_word(&self, offset: RegionOffset) {
        assert!(offset.is_aligned(WORD_BYTES), "8-byte atomic access at unaligned {offset}");
        self.assert_range(offset, WORD_BYTES);
    }

    #[track_caller]
    pub fn read(&self, offset: RegionOffset, buf: &mut [u8]) {
        self.assert_range(offset, buf.len() as u64);
        match &self.backend {
            Backend::Mapped(m) => m.read(offset.0, buf),
            Backend::Sim(s) => s.read(offset.0, buf),
        }
    }

    #[track_caller]
    pub fn read_vec(&self, offset: RegionOffset, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        self.read(offset, &mut v);
        v
    }

    /// Plain (not failure-atomic) store of `data`; volatile until persisted.
    #[track_caller]
    pub fn write(&self, offset: RegionOffset, data: &[u8]) {
        self.assert_range(offset, data.len() as u64);
        match &self.backend {
            Backend::Mapped(m) => m.write(offset.0, data),
            Backend::Sim(s) => s.write(offset.0, data),
        }
    }

    /// `write` then `flush` in one pass: on mapped memory with cache-line
    /// persistence, whole words go by non-temporal stores (no cache
    /// pollution, no flush instructions). Durable at the next fence.
    #[track_caller]
    pub fn write_flush(&self, offset: RegionOffset, data: &[u8]) {
        self.assert_range(offset, data.len() as u64);
        match &self.backend {
            Backend::Mapped(m) => m.write_streaming(offset.0, data),
            Backend::Sim(s) => {
                s.write(offset.0, data);
                s.flush(offset.0, data.len() as u64);
            }
        }
        record_flush(&self.stats, offset.0, data.len() as u64);
    }

    /// Failure-atomic store of an aligned 8-byte word (little-endian).
    #[track_caller]
    pub fn store_u64(&self, offset: RegionOffset, value: u64) {
        self.assert_word(offset);
        match &self.backend {
            Backend::Mapped(m) => m.store_u64(offset.0, value),
            Backend::Sim(s) => s.store_u64(offset.0, value),
        }
    }

    /// Load of an aligned 8-byte word (little-endian).
    #[track_caller]
    pub fn load_u64(&self, offset: RegionOffset) -> u64 {
        self.assert_word(offset);
        match &self.backend {
            Backend::Mapped(m) => m.load_u64(offset.0),
            Backend::Sim(s) => s.load_u64(offset.0),
        }
    }

    #[track_caller]
    pub fn read_u32(&self, offset: RegionOffset) -> u32 {
        let mut b = [0u8; 4];
        self.read(offset, &mut b);
        u32::from_le_bytes(b)
    }

    #[track_caller]
    pub fn write_u32(&self, offset: RegionOffset, value: u32) {
        self.write(offset, &value.to_le_bytes());
    }

    /// Writes back every cache line overlapping `[offset, offset + len)`.
    /// Not ordered until the next [`Region::fence`]. In `msync` mode it only
    /// records the pages; that fence msyncs them.
    #[track_caller]
    pub fn flush(&self, offset: RegionOffset, len: u64) {
        self.assert_range(offset, len);
        if self.mode == PmemMode::Volatile {
            return; // nothing persists, nothing to count
        }
        match &self.backend {
            Backend::Mapped(m) => m.flush(offset.0, len),
            Backend::Sim(s) => s.flush(offset.0, len),
        }
        record_flush(&self.stats, offset.0, len);
    }

    /// Store fence: every earlier flush of this thread is durable when it
    /// returns. In `msync` mode: msyncs every page flushed since the last
    /// fence, by any thread, each merged run of pages once.
    pub fn fence(&self) {
        if self.mode == PmemMode::Volatile {
            return;
        }
        match &self.backend {
            Backend::Mapped(m) => m.fence(),
            Backend::Sim(s) => s.fence(),
        }
        record_fence(&self.stats);
    }

    /// `flush` then `fence`.
    #[track_caller]
    pub fn persist(&self, offset: RegionOffset, len: u64) {
        self.flush(offset, len);
        self.fence();
    }

    /// Writes `data` and persists it.
    #[track_caller]
    pub fn write_persist(&self, offset: RegionOffset, data: &[u8]) {
        self.write(offset, data);
        self.persist(offset, data.len() as u64);
    }

    /// Atomic 8-byte store, persisted.
    #[track_caller]
    pub fn store_u64_persist(&self, offset: RegionOffset, value: u64) {
        self.store_u64(offset, value);
        self.persist(offset, WORD_BYTES);
    }

    /// msync of the whole file mapping: in `emulated` mode the point at which
    /// data survives power loss as well as a process crash. A no-op elsewhere.
    pub fn sync_to_media(&self) -> std::io::Result<()> {
        match &self.backend {
            Backend::Mapped(m) => m.sync_all(),
            Backend::Sim(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::thread_persist_stats;

    fn exercise(r: &Region) {
        r.write(RegionOffset(100), b"hello");
        assert_eq!(r.read_vec(RegionOffset(100), 5), b"hello");
        r.store_u64(RegionOffset(8), 0xdead_beef);
        assert_eq!(r.load_u64(RegionOffset(8)), 0xdead_beef);
        r.write_u32(RegionOffset(200), 77);
        assert_eq!(r.read_u32(RegionOffset(200)), 77);
        let before = thread_persist_stats();
        r.persist(RegionOffset(100), 5);
        let d = thread_persist_stats() - before;
        assert_eq!((d.lines_flushed, d.fences, d.bytes_persisted, d.media_blocks_written), (1, 1, 5, 1));
        assert_eq!(r.stats().fences, 1);
    }

    #[test]
    fn anonymous_region_reads_back_and_counts() {
        let r = Region::anonymous(4096).unwrap();
        exercise(&r);
        assert_eq!(r.mode(), PmemMode::Emulated);
        assert_eq!(r.read_vec(RegionOffset(100), 5), b"hello");
    }

    #[test]
    fn unaligned_writes_keep_neighbouring_bytes_even_when_concurrent() {
        let r = Region::anonymous(4096).unwrap();
        r.write(RegionOffset(0), &[0xAA; 32]);
        r.write(RegionOffset(5), &[1, 2, 3]);
        assert_eq!(r.read_vec(RegionOffset(3), 7), [0xAA, 0xAA, 1, 2, 3, 0xAA, 0xAA]);
        // Two threads write alternate bytes of the same words: the
        // compare-exchange merge must keep every byte of both.
        std::thread::scope(|s| {
            for parity in 0..2u64 {
                let r = &r;
                s.spawn(move || {
                    for round in 0..200u8 {
                        for i in (parity..512).step_by(2) {
                            r.write(RegionOffset(1024 + i), &[round]);
                        }
                    }
                });
            }
        });
        assert!(r.read_vec(RegionOffset(1024), 512).iter().all(|b| *b == 199));
    }

    #[test]
    fn random_reads_and_writes_match_a_byte_vector_model() {
        use rand::{Rng, SeedableRng};
        let seed = 0x5eed_0e61;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let r = Region::anonymous(1024).unwrap();
        let mut model = vec![0u8; 1024];
        for step in 0..2000 {
            let at = rng.gen_range(0..1024usize);
            let len = rng.gen_range(0..=(1024 - at).min(40));
            if rng.gen_bool(0.5) {
                let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                r.write(RegionOffset(at as u64), &data);
                model[at..at + len].copy_from_slice(&data);
            } else {
                let got = r.read_vec(RegionOffset(at as u64), len);
                assert_eq!(got, &model[at..at + len], "seed {seed:#x} step {step}: read {len} at {at}");
            }
        }
    }

    #[test]
    fn sim_region_reads_back_and_counts() {
        let r = Region::sim(4096);
        exercise(&r);
        assert_eq!(r.mode(), PmemMode::Sim);
        let image = r.as_sim().unwrap().persistent_image();
        assert_eq!(&image[100..105], b"hello", "persisted by exercise()");
    }

    #[test]
    fn emulated_and_msync_files_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        for mode in [PmemMode::Emulated, PmemMode::Msync] {
            let path = dir.path().join(mode.name());
            {
                let r = Region::open(&path, &RegionOptions::new(mode, 8192)).unwrap();
                exercise(&r);
                r.sync_to_media().unwrap();
            }
            let r = Region::open(&path, &RegionOptions::new(mode, 4096)).unwrap();
            assert_eq!(r.len(), 8192, "an existing file keeps its size");
            assert_eq!(r.read_vec(RegionOffset(100), 5), b"hello");
        }
    }

    #[test]
    fn dax_on_a_non_dax_file_system_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = Region::open(&dir.path().join("pool"), &RegionOptions::new(PmemMode::Dax, 4096));
        if let Err(e) = err {
            assert!(e.to_string().contains("not on a DAX file system"), "{e}");
        }
    }

    #[test]
    fn out_of_range_offsets_from_media_are_corruption() {
        let r = Region::sim(64);
        assert!(r.check_range(RegionOffset(60), 8, "record").is_err());
        assert!(r.check_range(RegionOffset(u64::MAX), 8, "record").is_err());
        assert!(r.check_range(RegionOffset(56), 8, "record").is_ok());
    }

    #[test]
    #[should_panic(expected = "outside region")]
    fn out_of_range_write_panics() {
        Region::sim(64).write(RegionOffset(60), &[0; 8]);
    }

    #[test]
    fn mode_names_parse() {
        for m in [PmemMode::Dax, PmemMode::Emulated, PmemMode::Msync, PmemMode::Sim, PmemMode::Volatile] {
            assert_eq!(m.name().parse::<PmemMode>().unwrap(), m);
        }
        assert!("optane".parse::<PmemMode>().is_err());
    }

    #[test]
    fn a_volatile_region_reads_back_what_it_holds_and_persists_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let r =
            Region::open(&dir.path().join("dram"), &RegionOptions::new(PmemMode::Volatile, 1 << 16)).unwrap();
        assert_eq!(r.mode(), PmemMode::Volatile);
        r.write(RegionOffset(64), b"rows in dram");
        r.persist(RegionOffset(64), 12);
        assert_eq!(r.read_vec(RegionOffset(64), 12), b"rows in dram");
        assert_eq!(r.stats(), PersistStats::default(), "no flush or fence counted");
        assert_eq!("volatile".parse::<PmemMode>().unwrap(), PmemMode::Volatile);
    }
}
