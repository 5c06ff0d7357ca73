//! Copy-on-write paged file content for [`FaultFs`](super::FaultFs) (DESIGN.md
//! section 3): a crash-point snapshot shares every unchanged 4 KiB page with
//! the live file, so capturing the state after each operation costs pointers,
//! not bytes.

use std::sync::Arc;

pub(crate) const PAGE_BYTES: usize = 4096;
const PAGE_BYTES_U64: u64 = PAGE_BYTES as u64;

/// Largest file a `FaultFs` holds; larger offsets are rejected as invalid
/// input. Sparse: growing a file only stores pointers to one shared zero page.
pub(crate) const FILE_BYTES_MAX: u64 = 1 << 32;

type Page = [u8; PAGE_BYTES];

/// File content: `len_bytes` visible bytes in shared pages. Invariant: every
/// byte of the last page past `len_bytes` is zero, so growing reads zeros.
#[derive(Clone, Default)]
pub(crate) struct PagedBytes {
    len_bytes: u64,
    pages: Vec<Arc<Page>>,
}

impl PagedBytes {
    pub(crate) fn len(&self) -> u64 {
        self.len_bytes
    }

    /// Copies up to `buf.len()` bytes from `offset`; fewer at end of content.
    pub(crate) fn read_at(&self, offset: u64, buf: &mut [u8]) -> usize {
        if offset >= self.len_bytes {
            return 0;
        }
        let count = (buf.len() as u64).min(self.len_bytes - offset) as usize;
        let mut done = 0;
        while done < count {
            let (page, within) = locate(offset + done as u64);
            let take = (PAGE_BYTES - within).min(count - done);
            buf[done..done + take].copy_from_slice(&self.pages[page][within..within + take]);
            done += take;
        }
        count
    }

    /// Writes `data` at `offset`, growing with zeros. The caller keeps
    /// `offset + data.len()` within [`FILE_BYTES_MAX`].
    pub(crate) fn write_at(&mut self, offset: u64, data: &[u8]) {
        if data.is_empty() {
            return; // like pwrite: an empty write does not extend the file
        }
        let end = offset + data.len() as u64;
        assert!(end <= FILE_BYTES_MAX, "write past FILE_BYTES_MAX");
        if end > self.len_bytes {
            self.grow(end);
        }
        let mut done = 0;
        while done < data.len() {
            let (page, within) = locate(offset + done as u64);
            let take = (PAGE_BYTES - within).min(data.len() - done);
            Arc::make_mut(&mut self.pages[page])[within..within + take]
                .copy_from_slice(&data[done..done + take]);
            done += take;
        }
    }

    pub(crate) fn set_len(&mut self, len: u64) {
        assert!(len <= FILE_BYTES_MAX, "set_len past FILE_BYTES_MAX");
        if len >= self.len_bytes {
            self.grow(len);
            return;
        }
        self.pages.truncate(len.div_ceil(PAGE_BYTES_U64) as usize);
        let within = (len % PAGE_BYTES_U64) as usize;
        if within != 0 {
            if let Some(last) = self.pages.last_mut() {
                Arc::make_mut(last)[within..].fill(0);
            }
        }
        self.len_bytes = len;
    }

    /// Overwrites `[start, end)` with the bytes of `source` there (zeros past
    /// the end of `source`), growing if needed.
    pub(crate) fn copy_range_from(&mut self, source: &PagedBytes, start: u64, end: u64) {
        let mut buf = vec![0u8; PAGE_BYTES];
        let mut offset = start;
        while offset < end {
            let take = (end - offset).min(PAGE_BYTES_U64) as usize;
            buf[..take].fill(0);
            source.read_at(offset, &mut buf[..take]);
            self.write_at(offset, &buf[..take]);
            offset += take as u64;
        }
    }

    pub(crate) fn to_vec(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.len_bytes as usize];
        self.read_at(0, &mut out);
        out
    }

    fn grow(&mut self, len: u64) {
        let pages_needed = len.div_ceil(PAGE_BYTES_U64) as usize;
        if pages_needed > self.pages.len() {
            let zero_page = Arc::new([0u8; PAGE_BYTES]);
            self.pages.resize(pages_needed, zero_page);
        }
        self.len_bytes = len;
    }
}

fn locate(offset: u64) -> (usize, usize) {
    ((offset / PAGE_BYTES_U64) as usize, (offset % PAGE_BYTES_U64) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Random writes and truncations agree with a plain `Vec<u8>` model, and a
    /// clone taken midway is unaffected by later writes.
    #[test]
    fn matches_vec_model_and_clones_are_isolated() {
        for seed in 0..20u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut paged = PagedBytes::default();
            let mut model: Vec<u8> = Vec::new();
            let mut frozen: Option<(PagedBytes, Vec<u8>)> = None;
            for step in 0..200 {
                if rng.gen_bool(0.2) {
                    let len = rng.gen_range(0..3 * PAGE_BYTES);
                    paged.set_len(len as u64);
                    model.resize(len, 0);
                } else {
                    let offset = rng.gen_range(0..3 * PAGE_BYTES);
                    let data: Vec<u8> = (0..rng.gen_range(0..2 * PAGE_BYTES)).map(|_| rng.gen()).collect();
                    paged.write_at(offset as u64, &data);
                    if model.len() < offset + data.len() {
                        model.resize(offset + data.len(), 0);
                    }
                    model[offset..offset + data.len()].copy_from_slice(&data);
                }
                assert_eq!(paged.to_vec(), model, "seed {seed} step {step}");
                if step == 100 {
                    frozen = Some((paged.clone(), model.clone()));
                }
            }
            let (clone, expected) = frozen.expect("step 100 was reached");
            assert_eq!(clone.to_vec(), expected, "seed {seed}: clone changed by later writes");
        }
    }

    #[test]
    fn copy_range_overlays_and_zero_fills() {
        let mut target = PagedBytes::default();
        target.write_at(0, &[1u8; 10]);
        let mut source = PagedBytes::default();
        source.write_at(0, &[2u8; 6]);
        target.copy_range_from(&source, 4, 12);
        assert_eq!(target.to_vec(), [1, 1, 1, 1, 2, 2, 0, 0, 0, 0, 0, 0]);
    }
}
