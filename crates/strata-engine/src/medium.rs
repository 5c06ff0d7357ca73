//! What a file of the data directory lives on, read from
//! `/proc/self/mountinfo`: the mount holding a path, whether it is real
//! PMem (a DAX mount: the file system mounted with `dax` or `dax=always`)
//! and whether it is volatile (tmpfs, ramfs: nothing on it survives a
//! power loss). `storage.protocol = "auto"` is resolved with it
//! ([`crate::config::Config::resolve`]), and [`crate::Db::durability`]
//! names the medium in `strata serve`'s startup log.
//!
//! Parsing is a pure function of the mountinfo text ([`parse_mountinfo`],
//! [`mount_containing`]), unit-tested on sample text; only [`mount_of`]
//! reads the machine.

use std::path::{Path, PathBuf};

/// One line of `/proc/self/mountinfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    pub mount_point: PathBuf,
    pub fs_type: String,
    /// The source (device) field.
    pub source: String,
    /// Per-mount options, then the file system's super options.
    pub options: Vec<String>,
}

impl Mount {
    /// Mounted for direct access: loads and stores reach the media through
    /// the CPU caches, so flush + fence persists (real PMem). `dax=inode`
    /// (DAX only for files flagged so) and `dax=never` do not count.
    pub fn is_dax(&self) -> bool {
        self.options.iter().any(|o| o == "dax" || o == "dax=always")
    }

    /// A file system in memory: what it holds is gone at a power loss.
    pub fn is_volatile(&self) -> bool {
        matches!(self.fs_type.as_str(), "tmpfs" | "ramfs")
    }

    /// `ext4 at /`, `tmpfs at /dev/shm`, `xfs at /mnt/pmem0 (dax)`.
    pub fn describe(&self) -> String {
        let dax = if self.is_dax() { " (dax)" } else { "" };
        format!("{} at {}{dax}", self.fs_type, self.mount_point.display())
    }
}

/// Undoes the octal escapes (`\040` for a space, `\134` for a backslash)
/// of mountinfo's path fields.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], octal) {
            (b'\\', Some(d)) => {
                let code =
                    (u32::from(d[0] - b'0') << 6) | (u32::from(d[1] - b'0') << 3) | u32::from(d[2] - b'0');
                out.push(code as u8);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mounts of a mountinfo text (`proc(5)`: id, parent, major:minor,
/// root, mount point, options, optional fields, `-`, type, source, super
/// options), in file order; malformed lines are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let sep = fields.iter().position(|f| *f == "-")?;
            if sep < 6 || fields.len() < sep + 3 {
                return None;
            }
            let mut options: Vec<String> = fields[5].split(',').map(str::to_string).collect();
            options.extend(fields.get(sep + 3).into_iter().flat_map(|o| o.split(',')).map(str::to_string));
            Some(Mount {
                mount_point: PathBuf::from(unescape(fields[4])),
                fs_type: fields[sep + 1].to_string(),
                source: unescape(fields[sep + 2]),
                options,
            })
        })
        .collect()
}

/// The mount holding the absolute `path`: the longest mount point that
/// is a prefix of it; among equal mount points the last listed, which a
/// later mount stacks on top of the earlier.
pub fn mount_containing<'a>(mounts: &'a [Mount], path: &Path) -> Option<&'a Mount> {
    let mut best: Option<&Mount> = None;
    for m in mounts.iter().filter(|m| path.starts_with(&m.mount_point)) {
        if best.is_none_or(|b| m.mount_point.components().count() >= b.mount_point.components().count()) {
            best = Some(m);
        }
    }
    best
}

/// `path` made absolute through its nearest existing ancestor (symbolic
/// links resolved), so a data directory not created yet is placed where it
/// will be created.
fn absolute(path: &Path) -> Option<PathBuf> {
    let path = if path.as_os_str().is_empty() { Path::new(".") } else { path };
    for ancestor in path.ancestors() {
        let probe = if ancestor.as_os_str().is_empty() { Path::new(".") } else { ancestor };
        if let Ok(real) = probe.canonicalize() {
            let rest = path.strip_prefix(ancestor).unwrap_or(Path::new(""));
            return Some(real.join(rest));
        }
    }
    None
}

/// The mount holding `path` on this machine (`None` without
/// `/proc/self/mountinfo`, or when no mount holds it).
pub fn mount_of(path: &Path) -> Option<Mount> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let path = absolute(path)?;
    mount_containing(&parse_mountinfo(&text), &path).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as Linux 6.x prints them: a root on ext4, tmpfs stacked twice
    /// on /dev/shm, PMem namespaces on xfs and ext4 with DAX (the legacy
    /// option and `dax=always`), one with `dax=inode`, and a mount point
    /// with a space.
    const SAMPLE: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684084k
30 25 0:27 / /dev/shm rw,nosuid shared:7 - tmpfs shm rw,size=65536k
40 27 259:1 / /mnt/pmem0 rw,relatime shared:12 - xfs /dev/pmem0 rw,attr2,dax=always,inode64,noquota
41 27 259:2 / /mnt/pmem1 rw,noatime - ext4 /dev/pmem1 rw,dax
42 27 259:3 / /mnt/pmem2 rw,noatime - ext4 /dev/pmem2 rw,dax=inode
43 27 8:1 / /mnt/my\\040disk rw master:1 - ext4 /dev/sda1 rw
this line is not a mount
";

    fn at(path: &str) -> Mount {
        mount_containing(&parse_mountinfo(SAMPLE), Path::new(path)).expect("a mount").clone()
    }

    #[test]
    fn every_well_formed_line_is_a_mount_with_its_options() {
        let mounts = parse_mountinfo(SAMPLE);
        assert_eq!(mounts.len(), 8, "the malformed line is skipped");
        let pmem0 = &mounts[4];
        assert_eq!(
            (pmem0.mount_point.as_path(), pmem0.fs_type.as_str(), pmem0.source.as_str()),
            (Path::new("/mnt/pmem0"), "xfs", "/dev/pmem0")
        );
        assert!(pmem0.options.iter().any(|o| o == "relatime"), "per-mount options: {:?}", pmem0.options);
        assert!(pmem0.options.iter().any(|o| o == "inode64"), "super options: {:?}", pmem0.options);
    }

    #[test]
    fn the_deepest_mount_holds_a_path_and_a_stacked_mount_hides_the_one_below() {
        assert_eq!(at("/work/strata-data/pmem.pool").fs_type, "ext4");
        assert_eq!(at("/work/strata-data/pmem.pool").mount_point, Path::new("/"));
        assert_eq!(at("/dev/shm/strata/pmem.pool").source, "shm", "the later of two mounts on /dev/shm");
        assert_eq!(at("/mnt/pmem0/db").fs_type, "xfs");
        // A prefix of the name is not a parent directory.
        assert_eq!(at("/mnt/pmem00/db").mount_point, Path::new("/"));
        assert_eq!(at("/mnt/my disk/strata").source, "/dev/sda1", "\\040 is a space");
    }

    #[test]
    fn dax_is_the_legacy_option_or_dax_always_and_tmpfs_is_volatile() {
        assert!(at("/mnt/pmem0/x").is_dax(), "dax=always");
        assert!(at("/mnt/pmem1/x").is_dax(), "dax");
        assert!(!at("/mnt/pmem2/x").is_dax(), "dax=inode: only flagged files");
        assert!(!at("/data/x").is_dax());
        assert!(at("/dev/shm/x").is_volatile());
        assert!(!at("/data/x").is_volatile());
        assert!(!at("/mnt/pmem0/x").is_volatile());
        assert_eq!(at("/mnt/pmem0/x").describe(), "xfs at /mnt/pmem0 (dax)");
    }

    #[test]
    fn octal_escapes_are_undone_and_a_short_escape_is_kept() {
        assert_eq!(unescape("a\\040b\\134c"), "a b\\c");
        assert_eq!(unescape("end\\040"), "end ");
        assert_eq!(unescape("end\\04"), "end\\04");
    }

    #[test]
    fn a_directory_not_created_yet_is_placed_under_its_nearest_existing_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        assert_eq!(absolute(&dir.path().join("new/pmem.pool")).unwrap(), real.join("new/pmem.pool"));
        let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
        assert_eq!(absolute(Path::new("not-there/pool")).unwrap(), cwd.join("not-there/pool"));
        assert_eq!(absolute(Path::new("")).unwrap(), cwd);
        // This machine has a mountinfo; whatever holds the temp directory is found.
        if Path::new("/proc/self/mountinfo").exists() {
            assert!(mount_of(dir.path()).is_some());
        }
    }
}
