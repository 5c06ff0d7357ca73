//! Tests of [`FaultFs`]: the SSD crash model of DESIGN.md section 3 and fault
//! injection.

use super::*;
use crate::fs::{create_durably, rename_durably, SECTOR_BYTES};

fn dir() -> PathBuf {
    PathBuf::from("/data")
}

fn fresh() -> io::Result<FaultFs> {
    let fs = FaultFs::new();
    fs.create_dir_all(&dir())?;
    Ok(fs)
}

/// Deterministic bytes that differ from zero and from each other.
fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (splitmix(seed.wrapping_add(i as u64)) | 1) as u8).collect()
}

fn offset_in_sector(offset: usize) -> u64 {
    offset as u64 % SECTOR_BYTES
}

fn splitmix(x: u64) -> u64 {
    super::super::crash_point::splitmix64(x)
}

#[test]
fn unsynced_data_is_lost_and_synced_data_kept() -> io::Result<()> {
    let fs = fresh()?;
    let path = dir().join("log");
    let file = create_durably(&fs, &path)?;
    file.write_at(0, b"synced")?;
    file.sync_data()?;
    file.write_at(6, b"+unsynced")?;
    assert_eq!(fs.peek(&path).as_deref(), Some(&b"synced+unsynced"[..]));

    let after = fs.crash(Tear::None);
    assert_eq!(after.peek(&path).as_deref(), Some(&b"synced"[..]));
    assert_eq!(after.open(&path)?.len()?, 6);
    Ok(())
}

#[test]
fn created_file_without_dir_sync_disappears() -> io::Result<()> {
    let fs = fresh()?;
    let lost = dir().join("lost");
    let file = fs.create(&lost)?;
    file.write_at(0, b"data")?;
    file.sync_all()?;
    assert!(!fs.crash(Tear::None).exists(&lost), "entry was never dir-synced");

    fs.sync_dir(&dir())?;
    let after = fs.crash(Tear::None);
    assert_eq!(after.peek(&lost).as_deref(), Some(&b"data"[..]));
    Ok(())
}

#[test]
fn rename_and_remove_revert_without_dir_sync() -> io::Result<()> {
    let fs = fresh()?;
    let (a, b) = (dir().join("a"), dir().join("b"));
    let file = create_durably(&fs, &a)?;
    file.write_at(0, b"A")?;
    file.sync_data()?;

    fs.rename(&a, &b)?;
    let after = fs.crash(Tear::None);
    assert!(after.exists(&a) && !after.exists(&b), "rename must revert");

    fs.sync_dir(&dir())?;
    let after = fs.crash(Tear::None);
    assert!(!after.exists(&a) && after.exists(&b), "dir-synced rename must stay");

    let c = dir().join("c");
    rename_durably(&fs, &b, &c)?;
    let after = fs.crash(Tear::None);
    assert!(!after.exists(&b) && after.exists(&c), "rename_durably must stay");

    fs.remove(&c)?;
    assert!(fs.crash(Tear::None).exists(&c), "remove must revert");
    fs.sync_dir(&dir())?;
    assert!(!fs.crash(Tear::None).exists(&c), "dir-synced remove must stay");
    Ok(())
}

#[test]
fn open_handle_outlives_remove() -> io::Result<()> {
    let fs = fresh()?;
    let path = dir().join("f");
    let file = create_durably(&fs, &path)?;
    fs.remove(&path)?;
    file.write_at(0, b"still here")?;
    let mut buf = [0u8; 10];
    file.read_exact_at(0, &mut buf)?;
    assert_eq!(&buf, b"still here");
    assert!(fs.open(&path).is_err());
    Ok(())
}

#[test]
fn fail_once_fails_one_operation_only() -> io::Result<()> {
    let fs = fresh()?;
    let file = fs.create(&dir().join("f"))?;
    fs.fail_at(fs.ops() + 2, FailMode::Once);
    file.write_at(0, b"ok")?;
    let err = file.sync_data().map_err(|e| e.to_string());
    assert!(err.as_ref().is_err_and(|msg| msg.contains("injected fault")), "{err:?}");
    file.sync_data()?;
    file.write_at(2, b"!")?;
    Ok(())
}

#[test]
fn fail_forever_fails_every_later_operation() -> io::Result<()> {
    let fs = fresh()?;
    let file = fs.create(&dir().join("f"))?;
    fs.fail_at(fs.ops() + 1, FailMode::Forever);
    for _ in 0..5 {
        assert!(file.write_at(0, b"x").is_err());
        assert!(file.sync_data().is_err());
        assert!(fs.list_dir(&dir()).is_err());
    }
    fs.clear_faults();
    assert_eq!(fs.list_dir(&dir())?, vec![dir().join("f")]);
    Ok(())
}

#[test]
fn failed_write_changes_nothing() -> io::Result<()> {
    let fs = fresh()?;
    fs.capture_crash_points(true);
    let path = dir().join("f");
    let file = create_durably(&fs, &path)?;
    file.write_at(0, b"before")?;
    let points_before = fs.crash_points().len();
    let ops_before = fs.ops();

    fs.fail_at(ops_before + 1, FailMode::Once);
    let err = file.write_at(0, b"AFTER-AND-LONGER").map_err(|e| e.to_string());
    assert!(err.is_err_and(|msg| msg.contains("injected fault")));
    assert_eq!(fs.ops(), ops_before + 1, "a failed operation is still counted");
    assert_eq!(fs.peek(&path).as_deref(), Some(&b"before"[..]));
    assert_eq!(file.len()?, 6);
    assert_eq!(fs.crash_points().len(), points_before, "no crash point for a failed operation");
    Ok(())
}

#[test]
fn operations_are_counted() -> io::Result<()> {
    let fs = fresh()?;
    let path = dir().join("f");
    let file = fs.create(&path)?; // 1
    file.write_at(0, b"abc")?; // 2
    let mut buf = [0u8; 3];
    file.read_at(0, &mut buf)?; // 3
    file.set_len(2)?; // 4
    file.preallocate(4096)?; // 5
    file.sync_data()?; // 6
    file.sync_all()?; // 7
    fs.open(&path)?; // 8
    fs.list_dir(&dir())?; // 9
    fs.sync_dir(&dir())?; // 10
    fs.rename(&path, &dir().join("g"))?; // 11
    fs.remove(&dir().join("g"))?; // 12
    assert_eq!(fs.ops(), 12);
    assert_eq!(file.len()?, 2, "preallocate keeps the visible length");
    Ok(())
}

/// Writes `synced_len` bytes, syncs, appends `tail_len` more unsynced.
fn file_with_tail(synced_len: usize, tail_len: usize) -> io::Result<(FaultFs, PathBuf, Vec<u8>)> {
    let fs = fresh()?;
    let path = dir().join("log");
    let file = create_durably(&fs, &path)?;
    let data = pattern(7, synced_len + tail_len);
    file.write_at(0, &data[..synced_len])?;
    file.sync_data()?;
    fs.capture_crash_points(true);
    file.write_at(synced_len as u64, &data[synced_len..])?;
    Ok((fs, path, data))
}

/// Length of the prefix of `image` equal to `data`, after checking that the
/// rest of `image` is zero (new bytes are a prefix; the torn rest is old).
fn new_prefix_len(image: &[u8], data: &[u8]) -> usize {
    let kept = image.iter().zip(data).take_while(|(a, b)| a == b).count();
    assert!(image[kept..].iter().all(|&b| b == 0), "bytes after the kept prefix must be old (zero)");
    kept
}

#[test]
fn seeded_tear_keeps_a_prefix_ending_mid_sector() -> io::Result<()> {
    let (synced_len, tail_len) = (1000, 3000);
    let (fs, path, data) = file_with_tail(synced_len, tail_len)?;
    let mut mid_sector = 0;
    for seed in 0..64u64 {
        let image = fs.crash(Tear::LastSector { seed }).peek(&path).unwrap_or_default();
        let kept = new_prefix_len(&image, &data);
        assert!(kept >= synced_len, "seed {seed}: synced data lost");
        assert!(
            offset_in_sector(image.len()) == 0 || image.len() == data.len(),
            "seed {seed}: length {}",
            image.len()
        );
        if offset_in_sector(kept) != 0 && kept > synced_len {
            mid_sector += 1;
        }
        assert_eq!(
            image,
            fs.crash(Tear::LastSector { seed }).peek(&path).unwrap_or_default(),
            "seed {seed}: not deterministic"
        );
    }
    assert!(mid_sector > 32, "most seeded tears end mid-sector, got {mid_sector}/64");
    Ok(())
}

#[test]
fn crash_point_images_drop_keep_and_tear() -> io::Result<()> {
    let (synced_len, tail_len) = (1000, 6000);
    let (fs, path, data) = file_with_tail(synced_len, tail_len)?;
    let points = fs.crash_points();
    assert_eq!(points.len(), 1);
    let point = &points[0];
    assert_eq!(point.op(), fs.ops());
    let count = point.image_count();
    assert!((4..=12).contains(&count), "image count {count}");

    assert_eq!(point.image(0).peek(&path), Some(data[..synced_len].to_vec()));
    assert_eq!(point.image(1).peek(&path), Some(data.clone()));
    let mut kept_lens = Vec::new();
    for index in 2..count {
        let image = point.image(index).peek(&path).unwrap_or_default();
        assert_eq!(Some(&image), point.image(index).peek(&path).as_ref(), "image {index} not deterministic");
        let kept = new_prefix_len(&image, &data);
        assert!(kept >= synced_len, "image {index}: synced data lost");
        kept_lens.push(kept);
    }
    assert!(kept_lens.iter().any(|&k| offset_in_sector(k) == 256), "half-torn sector: {kept_lens:?}");
    assert!(kept_lens.iter().any(|&k| k > synced_len + tail_len / 2), "late boundary: {kept_lens:?}");
    Ok(())
}

#[test]
fn crash_point_images_for_undirsynced_create() -> io::Result<()> {
    let fs = fresh()?;
    fs.capture_crash_points(true);
    let path = dir().join("new");
    let file = fs.create(&path)?;
    file.write_at(0, &pattern(1, 2000))?;
    file.sync_data()?;
    let points = fs.crash_points();
    let last = points.last().map(|p| (p.image(0), p.image(1)));
    let (dropped, kept) = last.ok_or_else(|| io::Error::other("no crash point"))?;
    assert!(!dropped.exists(&path), "image 0 drops the un-dir-synced entry");
    assert_eq!(kept.peek(&path).map(|b| b.len()), Some(2000), "image 1 keeps it");
    assert_eq!(points.iter().map(FsCrashPoint::op).collect::<Vec<_>>(), vec![1, 2, 3]);
    Ok(())
}
