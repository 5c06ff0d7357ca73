//! The flash OOO queue of the original ChronicleDB (chronicledb-pmem.txt
//! section 4.3: "large queues spanning multiple page sizes, are backed by a
//! traditional secondary storage medium. Full pages are written out ... a
//! full page of data can still be lost"), compared in section 5.4 as *Flash*
//! (pure) and *Flash Indexed*.
//!
//! Events are appended in arrival order to a DRAM page buffer; when the page
//! is full it is written to the generation's file `ooo-<generation>.q` and
//! synced (fdatasync) before the push returns, so a crash loses at most the
//! events of the unwritten page. The pure flavour answers queries by reading
//! every page of the file; the indexed flavour keeps a DRAM
//! application-time index of `(page, slot)` and reads one page per page
//! touched (a HIT point query reads at least one page; a MISS reads none).
//! Truncate creates the next generation's file durably, then removes the
//! old one; open keeps the highest generation. Layout:
//! `docs/format/events-ooo-queue.md`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_media::fs::parent_dir;
use strata_media::{create_durably, FileSystem, FsFile};

use super::flash_layout::{
    decode_page, decode_page_header, encode_page, events_per_page, file_name, parse_file_name, PageFault,
    FLASH_PAGE_BYTES, FLASH_PAGE_HEADER_BYTES,
};
use super::{
    check_event, check_event_bytes, event_ts, sorted_list, EventList, OooIndexing, OooQueryStats, OooQueue,
    OooRecovery, QueryCounters, DEFAULT_CAPACITY_BYTES,
};
use crate::EventError;

/// How a flash queue is configured (nothing of it is stored in the file but
/// `event_bytes`, which open checks).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FlashOooConfig {
    pub event_bytes: usize,
    /// Event bytes the queue holds before it is full.
    pub capacity_bytes: u64,
    pub indexing: OooIndexing,
}

impl FlashOooConfig {
    /// `event_bytes`-byte events, the paper's 100 MiB capacity.
    pub fn new(event_bytes: usize, indexing: OooIndexing) -> Self {
        FlashOooConfig { event_bytes, capacity_bytes: DEFAULT_CAPACITY_BYTES, indexing }
    }
}

/// The flash-backed OOO queue in a directory of a [`FileSystem`].
pub struct FlashOooQueue {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    file: Box<dyn FsFile>,
    config: FlashOooConfig,
    events_per_page: u64,
    generation: u64,
    /// Pages written and synced: `0..pages`.
    pages: u64,
    /// Events in those pages.
    durable_events: u64,
    /// The current page's events, packed.
    buffer: Vec<u8>,
    /// `(ts, page, slot)` of every event (indexed flavour); page `pages` is the buffer.
    index: BTreeSet<(i64, u64, u16)>,
    page_buf: Vec<u8>,
    counters: QueryCounters,
}

impl std::fmt::Debug for FlashOooQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlashOooQueue")
            .field("dir", &self.dir)
            .field("config", &self.config)
            .field("generation", &self.generation)
            .field("pages", &self.pages)
            .field("durable_events", &self.durable_events)
            .field("buffered_events", &self.buffered_events())
            .finish()
    }
}

fn io_context(what: &str, path: &Path, e: std::io::Error) -> EventError {
    EventError::Io(std::io::Error::new(e.kind(), format!("{what} {}: {e}", path.display())))
}

impl FlashOooQueue {
    /// Opens (or creates) the queue in `dir`: keeps the file of the highest
    /// generation (removing older ones), drops a torn last page, and for the
    /// indexed flavour reads every page to rebuild the index. The pure
    /// flavour reads every page header and the last page.
    pub fn open(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        config: FlashOooConfig,
    ) -> Result<(FlashOooQueue, OooRecovery), EventError> {
        check_event_bytes(config.event_bytes)?;
        fs.create_dir_all(dir).map_err(|e| io_context("create directory", dir, e))?;
        let mut report = OooRecovery::default();
        let mut generations: Vec<u64> = fs
            .list_dir(dir)
            .map_err(|e| io_context("list", dir, e))?
            .iter()
            .filter_map(|p| p.file_name().and_then(|n| n.to_str()).and_then(parse_file_name))
            .collect();
        generations.sort_unstable();
        let (file, generation) = match generations.last() {
            Some(&g) => {
                let path = dir.join(file_name(g));
                (fs.open(&path).map_err(|e| io_context("open", &path, e))?, g)
            }
            None => {
                let path = dir.join(file_name(1));
                (create_durably(fs.as_ref(), &path).map_err(|e| io_context("create", &path, e))?, 1)
            }
        };
        let stale = generations.len().saturating_sub(1);
        for &g in &generations[..stale] {
            let path = dir.join(file_name(g));
            fs.remove(&path).map_err(|e| io_context("remove", &path, e))?;
        }
        if stale > 0 {
            fs.sync_dir(dir).map_err(|e| io_context("sync", dir, e))?;
            report.stale_files_removed = stale as u64;
        }
        let mut q = FlashOooQueue {
            fs,
            dir: dir.to_path_buf(),
            file,
            config,
            events_per_page: events_per_page(config.event_bytes),
            generation,
            pages: 0,
            durable_events: 0,
            buffer: Vec::new(),
            index: BTreeSet::new(),
            page_buf: vec![0; FLASH_PAGE_BYTES as usize],
            counters: QueryCounters::default(),
        };
        q.recover_pages(&mut report)?;
        report.events_recovered = q.durable_events;
        report.index_entries_built = q.index.len() as u64;
        report.generation = generation;
        Ok((q, report))
    }

    fn path(&self) -> PathBuf {
        self.dir.join(file_name(self.generation))
    }

    fn corrupt(&self, page: u64, fault: &PageFault) -> EventError {
        EventError::corruption(
            format!("{} page {page} at byte {}", self.path().display(), page * FLASH_PAGE_BYTES),
            format!("{fault:?}"),
        )
    }

    /// Finds the valid pages; a bad last page is a torn tail (dropped, the
    /// file cut to the pages before it); a bad page before it is corruption.
    fn recover_pages(&mut self, report: &mut OooRecovery) -> Result<(), EventError> {
        let file_len = self.file.len().map_err(|e| io_context("length of", &self.path(), e))?;
        let whole_pages = file_len / FLASH_PAGE_BYTES;
        let mut valid_pages = whole_pages;
        let eb = self.config.event_bytes;
        let mut header = [0u8; FLASH_PAGE_HEADER_BYTES as usize];
        for page in 0..whole_pages {
            let last = page + 1 == whole_pages;
            let at = page * FLASH_PAGE_BYTES;
            let decoded = if self.config.indexing == OooIndexing::Indexed || last {
                self.file
                    .read_exact_at(at, &mut self.page_buf)
                    .map_err(|e| io_context("read", &self.path(), e))?;
                report.pages_read += 1;
                report.bytes_read += FLASH_PAGE_BYTES;
                decode_page(&self.page_buf, self.generation, page, eb).map(|(h, events)| (h, Some(events)))
            } else {
                self.file.read_exact_at(at, &mut header).map_err(|e| io_context("read", &self.path(), e))?;
                report.page_headers_read += 1;
                report.bytes_read += FLASH_PAGE_HEADER_BYTES;
                decode_page_header(&header, self.generation, page, eb).map(|h| (h, None))
            };
            match decoded {
                Ok((h, events)) => {
                    if let Some(events) = events {
                        for (slot, event) in events.chunks_exact(eb).enumerate() {
                            report.records_examined += 1;
                            if self.config.indexing == OooIndexing::Indexed {
                                self.index.insert((event_ts(event), page, slot as u16));
                            }
                        }
                    }
                    self.durable_events += h.event_count as u64;
                }
                // A page from a queue of another event size: the caller's
                // configuration is wrong, no crash does this.
                Err(fault @ PageFault::EventBytes { found, .. }) if found != 0 => {
                    return Err(self.corrupt(page, &fault))
                }
                // The last page was being written: any fault is a tear.
                Err(_) if last => valid_pages = page,
                Err(fault) => return Err(self.corrupt(page, &fault)),
            }
        }
        self.pages = valid_pages;
        if valid_pages * FLASH_PAGE_BYTES != file_len {
            report.torn_tail_dropped = true;
            let path = self.path();
            self.file.set_len(valid_pages * FLASH_PAGE_BYTES).map_err(|e| io_context("cut", &path, e))?;
            self.file.sync_all().map_err(|e| io_context("sync", &path, e))?;
        }
        Ok(())
    }

    pub fn indexing(&self) -> OooIndexing {
        self.config.indexing
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Events in written (synced) pages: what survives a crash now.
    pub fn durable_len(&self) -> u64 {
        self.durable_events
    }

    /// Events in the DRAM page buffer, lost by a crash now.
    pub fn buffered_events(&self) -> u64 {
        (self.buffer.len() / self.config.event_bytes) as u64
    }

    pub fn events_per_page(&self) -> u64 {
        self.events_per_page
    }

    /// Pages written to the file.
    pub fn pages_written(&self) -> u64 {
        self.pages
    }

    /// Writes the buffered (partial) page and syncs it, as a clean shutdown
    /// does; the next event starts a new page. A no-op with an empty buffer.
    pub fn sync_partial_page(&mut self) -> Result<(), EventError> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        self.write_page()
    }

    /// Writes the buffer as page `pages` and syncs it.
    fn write_page(&mut self) -> Result<(), EventError> {
        encode_page(&mut self.page_buf, self.generation, self.pages, self.config.event_bytes, &self.buffer);
        let path = self.path();
        self.file
            .write_at(self.pages * FLASH_PAGE_BYTES, &self.page_buf)
            .map_err(|e| io_context("write", &path, e))?;
        self.file.sync_data().map_err(|e| io_context("sync", &path, e))?;
        self.pages += 1;
        self.durable_events += self.buffered_events();
        self.buffer.clear();
        Ok(())
    }

    /// Reads and checks page `page` (counted as a page read).
    fn read_page(&self, page: u64, buf: &mut [u8]) -> Result<(), EventError> {
        self.file
            .read_exact_at(page * FLASH_PAGE_BYTES, buf)
            .map_err(|e| io_context("read", &self.path(), e))?;
        self.counters.add(0, 1, FLASH_PAGE_BYTES);
        decode_page(buf, self.generation, page, self.config.event_bytes)
            .map(|_| ())
            .map_err(|fault| self.corrupt(page, &fault))
    }

    /// The bytes of slot `slot` in a checked page buffer.
    fn event_in(&self, slot: u16) -> std::ops::Range<usize> {
        let start = FLASH_PAGE_HEADER_BYTES as usize + slot as usize * self.config.event_bytes;
        start..start + self.config.event_bytes
    }

    /// Indexed: the events of the index entries in the range, reading each
    /// page once per run of entries in it (a one-page cache).
    fn fetch_indexed(&self, t_lo: i64, t_hi: i64) -> Result<EventList, EventError> {
        let eb = self.config.event_bytes;
        let mut out = EventList::new(eb);
        let mut page_buf = vec![0u8; FLASH_PAGE_BYTES as usize];
        let mut cached: Option<u64> = None;
        for &(_, page, slot) in self.index.range((t_lo, 0, 0)..=(t_hi, u64::MAX, u16::MAX)) {
            if page == self.pages {
                let start = slot as usize * eb;
                out.push(&self.buffer[start..start + eb]);
                continue;
            }
            if cached != Some(page) {
                self.read_page(page, &mut page_buf)?;
                cached = Some(page);
            }
            let range = self.event_in(slot);
            out.push(&page_buf[range]);
        }
        self.counters.add(out.len() as u64, 0, 0);
        Ok(out)
    }

    /// Pure: reads every page, then the buffer, and sorts the matches.
    fn scan_range(&self, t_lo: i64, t_hi: i64) -> Result<EventList, EventError> {
        let eb = self.config.event_bytes;
        let mut page_buf = vec![0u8; FLASH_PAGE_BYTES as usize];
        let mut found = Vec::new();
        let mut matched = Vec::new();
        let mut records = 0;
        let mut take = |page: u64, events: &[u8]| {
            for (slot, event) in events.chunks_exact(eb).enumerate() {
                records += 1;
                let ts = event_ts(event);
                if (t_lo..=t_hi).contains(&ts) {
                    found.push((ts, (page << 16) | slot as u64, matched.len()));
                    matched.extend_from_slice(event);
                }
            }
        };
        for page in 0..self.pages {
            self.read_page(page, &mut page_buf)?;
            let count = decode_page_header(&page_buf, self.generation, page, eb)
                .map_err(|fault| self.corrupt(page, &fault))?
                .event_count as usize;
            let start = FLASH_PAGE_HEADER_BYTES as usize;
            take(page, &page_buf[start..start + count * eb]);
        }
        take(self.pages, &self.buffer);
        self.counters.add(records, 0, 0);
        Ok(sorted_list(eb, found, &matched))
    }
}

impl OooQueue for FlashOooQueue {
    fn variant(&self) -> String {
        format!("flash-{}", self.config.indexing.name())
    }

    fn event_bytes(&self) -> usize {
        self.config.event_bytes
    }

    /// Buffers the event; when that fills the page, writes and syncs it
    /// before returning. On a write error the event is not queued.
    fn push(&mut self, event: &[u8]) -> Result<(), EventError> {
        check_event(event, self.config.event_bytes)?;
        if self.is_full() {
            return Err(EventError::Full {
                what: "flash OOO queue",
                detail: format!("{} events of {} bytes", self.len(), self.config.event_bytes),
            });
        }
        let slot = self.buffered_events() as u16;
        self.buffer.extend_from_slice(event);
        let key = (event_ts(event), self.pages, slot);
        if self.config.indexing == OooIndexing::Indexed {
            self.index.insert(key);
        }
        if self.buffered_events() == self.events_per_page {
            if let Err(e) = self.write_page() {
                self.buffer.truncate(self.buffer.len() - event.len());
                self.index.remove(&key);
                return Err(e);
            }
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.durable_events + self.buffered_events()
    }

    fn capacity_bytes(&self) -> u64 {
        self.config.capacity_bytes.max(self.config.event_bytes as u64)
    }

    fn get_range(&self, t_lo: i64, t_hi: i64) -> Result<EventList, EventError> {
        if t_lo > t_hi {
            return Ok(EventList::new(self.config.event_bytes));
        }
        match self.config.indexing {
            OooIndexing::Indexed => self.fetch_indexed(t_lo, t_hi),
            OooIndexing::Pure => self.scan_range(t_lo, t_hi),
        }
    }

    fn sorted(&self) -> Result<EventList, EventError> {
        self.get_range(i64::MIN, i64::MAX)
    }

    fn sync(&mut self) -> Result<(), EventError> {
        self.sync_partial_page()
    }

    fn generation(&self) -> u64 {
        self.generation
    }

    /// Creates the next generation's empty file durably (the commit point),
    /// then removes the old file and syncs the directory.
    fn truncate(&mut self) -> Result<(), EventError> {
        let old = self.path();
        let next = self.generation.checked_add(1).ok_or_else(|| EventError::Full {
            what: "flash OOO queue generations",
            detail: format!("generation {:#x}", self.generation),
        })?;
        let path = self.dir.join(file_name(next));
        self.file = create_durably(self.fs.as_ref(), &path).map_err(|e| io_context("create", &path, e))?;
        self.generation = next;
        self.pages = 0;
        self.durable_events = 0;
        self.buffer.clear();
        self.index.clear();
        self.fs.remove(&old).map_err(|e| io_context("remove", &old, e))?;
        self.fs.sync_dir(parent_dir(&old)).map_err(|e| io_context("sync", &self.dir, e))?;
        Ok(())
    }

    fn query_stats(&self) -> OooQueryStats {
        self.counters.snapshot()
    }
}
