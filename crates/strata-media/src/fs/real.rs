//! [`RealFs`]: the [`FileSystem`] trait on `std::fs` with positional I/O, and
//! `fallocate(FALLOC_FL_KEEP_SIZE)` through libc for preallocation (DESIGN.md
//! section 1, SSD medium).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::{FileSystem, FsFile};

/// The operating system's file system. Paths are used as given.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealFs;

impl RealFs {
    pub fn new() -> Self {
        RealFs
    }
}

impl FileSystem for RealFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)?;
        Ok(Box::new(RealFile { file }))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(Box::new(RealFile { file }))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            entries.push(entry?.path());
        }
        entries.sort();
        Ok(entries)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

/// An open file of [`RealFs`].
#[derive(Debug)]
struct RealFile {
    file: File,
}

impl FsFile for RealFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        // One pread may return less than asked before end of file; loop so
        // that a short count means end of file, as the trait promises.
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(read) => done += read,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
        Ok(done)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.file.write_all_at(data, offset)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn preallocate(&self, len: u64) -> io::Result<()> {
        preallocate_keep_size(&self.file, len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn sync_all(&self) -> io::Result<()> {
        self.file.sync_all()
    }
}

/// Reserves `len` bytes from offset 0 without changing the visible length.
/// File systems without `fallocate` (some tmpfs versions, FUSE, ...) answer
/// EOPNOTSUPP or ENOSYS: preallocation is an optimisation, so that is success.
#[cfg(target_os = "linux")]
fn preallocate_keep_size(file: &File, len: u64) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;

    if len == 0 {
        return Ok(()); // fallocate rejects a zero length with EINVAL
    }
    let len = libc::off_t::try_from(len).map_err(|_| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("preallocate: {len} bytes exceeds off_t"))
    })?;
    loop {
        // SAFETY: `file` keeps its descriptor open for the whole call, and
        // fallocate takes only integers: no memory of ours is read or written.
        let rc = unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, 0, len) };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => return Ok(()),
            _ => return Err(err),
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn preallocate_keep_size(_file: &File, _len: u64) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{create_durably, rename_durably};

    #[test]
    fn round_trip_in_tempdir() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let fs = RealFs::new();
        let data_dir = dir.path().join("data");
        fs.create_dir_all(&data_dir)?;
        let path = data_dir.join("a.log");

        let file = create_durably(&fs, &path)?;
        file.write_at(0, b"hello")?;
        file.write_at(5, b" world")?;
        file.sync_data()?;
        assert_eq!(file.len()?, 11);

        let mut buf = [0u8; 32];
        assert_eq!(file.read_at(6, &mut buf)?, 5, "short read at end of file");
        assert_eq!(&buf[..5], b"world");
        let mut exact = [0u8; 11];
        file.read_exact_at(0, &mut exact)?;
        assert_eq!(&exact, b"hello world");
        let eof = file.read_exact_at(8, &mut exact).map_err(|e| e.kind());
        assert_eq!(eof, Err(io::ErrorKind::UnexpectedEof));

        file.preallocate(1 << 20)?;
        assert_eq!(file.len()?, 11, "preallocate keeps the visible length");
        file.set_len(4)?;
        file.sync_all()?;
        assert_eq!(fs.open(&path)?.len()?, 4);

        let renamed = data_dir.join("b.log");
        rename_durably(&fs, &path, &renamed)?;
        assert!(!fs.exists(&path));
        assert!(fs.exists(&renamed));
        fs.create(&data_dir.join("c.log"))?;
        assert_eq!(fs.list_dir(&data_dir)?, vec![renamed.clone(), data_dir.join("c.log")]);
        fs.remove(&renamed)?;
        assert!(!fs.exists(&renamed));
        assert!(fs.open(&renamed).is_err());
        Ok(())
    }
}
