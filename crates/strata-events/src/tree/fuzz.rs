//! The fuzz entry of the `events_flank_open` target: recovery of a tree from
//! an arbitrary PMem image of its flank area (`docs/format/events-flank.md`)
//! must return a tree or an error, never panic, whatever the bytes. A valid
//! image of a tree whose events are all in the flank leaf recovers them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_media::{create_durably, FaultFs};
use strata_pmem::Region;

use crate::schema::StreamSchema;
use crate::translation::TranslationKind;

use super::{
    AggregatePlacement, FlankPlacement, IndexPlacement, TabTree, TreeConfig, TreeMedia, BLOCK_FILE_NAME,
};

/// The configuration the fuzz images are read with: Stock events, a PMem
/// flank of three levels flushed every event, inline aggregates, index
/// nodes on SSD, DRAM translation.
pub fn fuzz_flank_config() -> TreeConfig {
    let mut c = TreeConfig::new(StreamSchema::stock())
        .with_flank(FlankPlacement::Pmem { batch_events: 1 })
        .with_aggregates(AggregatePlacement::Inline)
        .with_index(IndexPlacement::Ssd)
        .with_translation(TranslationKind::Dram)
        .with_capacity(4096, 512);
    c.max_levels = 3;
    c.node_cache_nodes = 0;
    c
}

/// Bytes of the PMem image the fuzz entry reads (shorter input is padded
/// with zeros, longer input cut).
pub fn fuzz_flank_image_bytes() -> usize {
    fuzz_flank_config().pmem_plan(0).expect("valid plan").end as usize
}

/// What recovering from one image gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlankFuzzOutcome {
    /// Recovery failed with this error (as text).
    Rejected(String),
    /// Recovery succeeded: events in the tree and whether it verifies.
    Recovered { events: u64, verified: bool, replayed: u64 },
}

/// Recovers a tree of [`fuzz_flank_config`] from `data` as its PMem image
/// with an empty block file, then verifies and replays it.
pub fn fuzz_flank_open(data: &[u8]) -> FlankFuzzOutcome {
    let mut image = data.to_vec();
    image.resize(fuzz_flank_image_bytes(), 0);
    let fs = FaultFs::new();
    let dir = PathBuf::from("tree");
    if let Err(e) = fs_with_empty_block_file(&fs, &dir) {
        return FlankFuzzOutcome::Rejected(e.to_string());
    }
    let media =
        TreeMedia { fs: &fs, dir, region: Some(Arc::new(Region::sim_from_image(image))), pmem_base: 0 };
    match TabTree::recover(fuzz_flank_config(), media) {
        Err(e) => FlankFuzzOutcome::Rejected(e.to_string()),
        Ok((tree, _)) => {
            let verified = tree.verify().is_ok();
            let replayed = tree.replay().take_while(Result::is_ok).count() as u64;
            FlankFuzzOutcome::Recovered { events: tree.len(), verified, replayed }
        }
    }
}

fn fs_with_empty_block_file(fs: &FaultFs, dir: &Path) -> std::io::Result<()> {
    use strata_media::FileSystem;
    fs.create_dir_all(dir)?;
    create_durably(fs, &dir.join(BLOCK_FILE_NAME)).map(|_| ())
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::event::{encode, Event, Value};

    /// Valid images: a tree of `events` Stock events, persisted.
    fn valid_image(events: u64) -> (Vec<u8>, Vec<Vec<u8>>) {
        let config = fuzz_flank_config();
        let fs = FaultFs::new();
        let region = Arc::new(Region::sim(fuzz_flank_image_bytes() as u64));
        let media =
            TreeMedia { fs: &fs, dir: PathBuf::from("tree"), region: Some(region.clone()), pmem_base: 0 };
        let mut tree = TabTree::create(config.clone(), media).unwrap();
        let all: Vec<Vec<u8>> = (0..events)
            .map(|i| {
                let values = vec![Value::I32(i as i32), Value::I32(3), Value::F64(i as f64), Value::I32(1)];
                encode(&config.schema, &Event::new(i as i64 / 2, values)).unwrap()
            })
            .collect();
        for e in &all {
            tree.append(e).unwrap();
        }
        (region.as_sim().unwrap().persistent_image(), all)
    }

    #[test]
    fn fuzz_smoke_flank_open_never_panics_and_valid_images_round_trip() {
        let seed = 0xF1A4_u64;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let valid: Vec<(Vec<u8>, Vec<Vec<u8>>)> =
            [0, 1, 5, 200, 600, 3000].iter().map(|&n| valid_image(n)).collect();
        for (image, events) in &valid[..4] {
            let out = fuzz_flank_open(image);
            let n = events.len() as u64;
            assert_eq!(
                out,
                FlankFuzzOutcome::Recovered { events: n, verified: true, replayed: n },
                "seed {seed}"
            );
        }
        let mut recovered = 0;
        for i in 0..20_000u32 {
            let input = if i % 10 == 0 {
                let len = rng.gen_range(0..fuzz_flank_image_bytes() + 64);
                (0..len).map(|_| rng.gen()).collect::<Vec<u8>>()
            } else {
                let mut image = valid[i as usize % valid.len()].0.clone();
                for _ in 0..rng.gen_range(1..6) {
                    let at =
                        if rng.gen_bool(0.5) { rng.gen_range(0..400) } else { rng.gen_range(0..image.len()) };
                    image[at] = rng.gen();
                }
                if rng.gen_bool(0.5) {
                    let crc = crc32c::crc32c(&image[..40]);
                    image[40..44].copy_from_slice(&crc.to_le_bytes());
                }
                image
            };
            if let FlankFuzzOutcome::Recovered { .. } = fuzz_flank_open(&input) {
                recovered += 1;
            }
        }
        assert!(recovered > 1_000, "seed {seed}: only {recovered} mutated images recovered at all");
    }
}
