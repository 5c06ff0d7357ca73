//! Recovery of every placement after a crash (chronicledb-pmem.txt section
//! 5.2: "PMem reduced the recovery time after a system failure from 40 ms to
//! below 1 ms"; a DRAM flank loses the flank leaf): what each placement
//! recovers and loses, the DRAM flank rebuilt at every write-out of a
//! cascade, and the recovered trees resuming.

use std::sync::Arc;

use parking_lot::Mutex;
use strata_media::fs::Tear;
use strata_pmem::Region;

use super::test_support::*;
use super::*;
use crate::ids::EventError;
use crate::schema::StreamSchema;

fn spare_for(p: Placement) -> u32 {
    match p.aggregates {
        AggregatePlacement::Inline => 300,
        AggregatePlacement::PmemArray(_) => 900,
    }
}

/// Crash (synced files, persisted PMem only) after 160 events with a sync
/// every 13: a PMem flank keeps every acknowledged event, a DRAM flank loses
/// exactly its flank leaf; the recovered tree verifies, replays a prefix of
/// the events, and resumes.
#[test]
fn every_placement_recovers_what_its_flank_made_durable() {
    let deltas: Vec<u8> = (0..160u32).map(|i| [1, 0, 2][i as usize % 3]).collect();
    let mut lines = Vec::new();
    for p in all_placements() {
        let config = wide_config(p, spare_for(p), 200);
        let env = TestEnv::new(&config, true);
        let mut tree = env.create(&config);
        let events = events_from_deltas(&config.schema, 3, &deltas);
        append_all(&mut tree, &events, 13);
        let durable = tree.durable_through();
        let flank_leaf = tree.flank_leaf_events() as u64;
        let height = tree.height();
        drop(tree);
        let crashed = env.crash();
        let (mut tree, report) =
            TabTree::recover(config.clone(), crashed.media()).unwrap_or_else(|e| panic!("{p:?}: {e}"));
        tree.verify().unwrap_or_else(|e| panic!("{p:?}: {e}"));
        let recovered = report.events_recovered;
        assert_eq!(recovered, tree.len());
        assert!(recovered >= durable, "{p:?}: recovered {recovered} of {durable} durable events");
        let replayed: Vec<Vec<u8>> = tree.replay().collect::<Result<_, _>>().unwrap();
        assert!(replayed == events[..recovered as usize], "{p:?}: not a prefix of the appended events");
        let lost = events.len() as u64 - recovered;
        match p.flank {
            FlankPlacement::Dram => {
                assert_eq!(lost, flank_leaf, "{p:?}: a DRAM flank loses its leaf");
                assert_eq!(report.flank_leaf_events, 0);
                assert!(report.nodes_read > 0);
            }
            FlankPlacement::Pmem { batch_events } => {
                assert!(lost < u64::from(batch_events), "{p:?}: lost {lost}");
                assert_eq!(report.nodes_read, 0, "the PMem flank needs no node reads");
            }
        }
        assert_eq!(recovered, durable, "{p:?}: exactly the acknowledged events survive");
        assert_eq!(report.height, height, "{p:?}");
        lines.push(format!(
            "{:<70} height {height} lost {lost:>3} events, flank recovery {:>8.3} ms ({} nodes read), total {:>8.3} ms",
            report.placement,
            report.flank_duration.as_secs_f64() * 1e3,
            report.nodes_read,
            report.duration.as_secs_f64() * 1e3,
        ));
        let more = events_from_deltas(&config.schema, 4, &[50; 40]);
        let base = tree.newest_ts();
        let more: Vec<Vec<u8>> = more
            .into_iter()
            .map(|mut e| {
                let ts = crate::event::timestamp_of(&e) + base;
                e[..8].copy_from_slice(&ts.to_le_bytes());
                e
            })
            .collect();
        for e in &more {
            assert!(matches!(tree.append(e).unwrap(), AppendOutcome::Appended { .. }), "{p:?}");
        }
        tree.verify().unwrap_or_else(|e| panic!("{p:?} after resuming: {e}"));
        assert_eq!(tree.len(), recovered + 40);
    }
    for l in &lines {
        println!("{l}");
    }
}

/// The DRAM flank rebuilt from the storage state after every sync of the
/// block store (between the write-out of a leaf and of its parent, of the
/// parent and of the grandparent, ...): the recovered events are always a
/// prefix made of whole leaves, never fewer than before, and the tree
/// verifies and resumes.
#[test]
fn a_dram_flank_is_rebuilt_from_any_write_out_state() {
    for p in all_placements().into_iter().filter(|p| p.flank == FlankPlacement::Dram) {
        let config = wide_config(p, spare_for(p), 120);
        let env = TestEnv::new(&config, true);
        let mut tree = env.create(&config);
        let states: Arc<Mutex<Vec<TestEnv>>> = Arc::new(Mutex::new(vec![env.crash()]));
        let (fs, region, sink) = (env.fs.clone(), env.region.clone(), states.clone());
        tree.set_ssd_sync_observer(Some(Box::new(move || {
            let image = region.as_sim().unwrap().persistent_image();
            sink.lock()
                .push(TestEnv { fs: fs.crash(Tear::None), region: Arc::new(Region::sim_from_image(image)) });
        })));
        let deltas: Vec<u8> = (0..90u32).map(|i| (i % 2) as u8).collect();
        let events = events_from_deltas(&config.schema, 5, &deltas);
        append_all(&mut tree, &events, 0);
        drop(tree);
        let fill = config.leaf_layout().unwrap().fill_limit() as u64;
        let states = std::mem::take(&mut *states.lock());
        assert!(states.len() >= 15, "{p:?}: {} sync points", states.len());
        let mut last = 0;
        for (i, state) in states.iter().enumerate() {
            let (mut tree, report) = TabTree::recover(config.clone(), state.media())
                .unwrap_or_else(|e| panic!("{p:?} state {i}: {e}"));
            tree.verify().unwrap_or_else(|e| panic!("{p:?} state {i}: {e}"));
            let n = report.events_recovered;
            assert_eq!(n % fill, 0, "{p:?} state {i}: whole leaves only");
            assert!(n >= last, "{p:?} state {i}: {n} events after {last}");
            last = n;
            let replayed: Vec<Vec<u8>> = tree.replay().collect::<Result<_, _>>().unwrap();
            assert!(replayed == events[..n as usize], "{p:?} state {i}");
            append_all_from(&mut tree, &events[n as usize..]);
            tree.verify().unwrap_or_else(|e| panic!("{p:?} state {i} resumed: {e}"));
        }
        assert_eq!(last, (events.len() as u64 / fill) * fill, "{p:?}: the last state holds every full leaf");
    }
}

fn append_all_from(tree: &mut TabTree, events: &[Vec<u8>]) {
    for e in events {
        assert!(matches!(tree.append(e).unwrap(), AppendOutcome::Appended { .. }));
    }
}

/// Section 5.2's comparison on the paper's Stock stream, tree of height 3:
/// a DRAM flank is rebuilt from the leaves and index nodes on SSD, a PMem
/// flank is read back from its slots.
#[test]
fn stock_tree_of_height_three_recovery_per_flank_placement() {
    let schema = StreamSchema::stock();
    for flank in [FlankPlacement::Dram, FlankPlacement::Pmem { batch_events: 25 }] {
        let p = Placement { flank, ..all_placements()[0] };
        let config = config(schema.clone(), p, 100, 40_000);
        let env = TestEnv::new(&config, true);
        let mut tree = env.create(&config);
        let events: Vec<Vec<u8>> = (0..30_000u64)
            .map(|i| {
                let e = crate::event::Event::new(
                    i as i64,
                    vec![
                        crate::event::Value::I32(i as i32),
                        crate::event::Value::I32((i % 17) as i32),
                        crate::event::Value::F64((i % 1000) as f64),
                        crate::event::Value::I32((i % 300) as i32),
                    ],
                );
                crate::event::encode(&schema, &e).unwrap()
            })
            .collect();
        append_all(&mut tree, &events, 0);
        assert_eq!(tree.height(), 3);
        drop(tree);
        let (tree, report) = TabTree::recover(config.clone(), env.crash().media()).unwrap();
        tree.verify().unwrap();
        let lost = events.len() as u64 - report.events_recovered;
        match flank {
            FlankPlacement::Dram => assert!(lost > 0 && lost < 261, "lost {lost}"),
            FlankPlacement::Pmem { batch_events } => assert!(lost < u64::from(batch_events), "lost {lost}"),
        }
        println!(
            "Stock, height 3, {}: lost {lost} events; flank recovered in {:.3} ms reading {} nodes (whole recovery {:.3} ms)",
            report.placement,
            report.flank_duration.as_secs_f64() * 1e3,
            report.nodes_read,
            report.duration.as_secs_f64() * 1e3
        );
    }
}

#[test]
fn recovery_rejects_a_flank_formatted_for_another_configuration_and_an_unformatted_area() {
    let p = Placement { flank: FlankPlacement::Pmem { batch_events: 4 }, ..all_placements()[0] };
    let config = wide_config(p, 300, 50);
    let env = TestEnv::new(&config, true);
    let mut tree = env.create(&config);
    append_all(&mut tree, &events_from_deltas(&config.schema, 1, &[1; 20]), 0);
    drop(tree);
    let other = wide_config(p, 200, 50);
    let err = TabTree::recover(other, env.crash().media()).map(|_| ()).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains("another tree configuration"), "{err}");
    let blank = TestEnv::new(&config, true);
    blank.fs.create_dir_all(std::path::Path::new("tree")).unwrap();
    strata_media::create_durably(&blank.fs, std::path::Path::new("tree/events.blocks")).unwrap();
    let err = TabTree::recover(config.clone(), blank.media()).map(|_| ()).unwrap_err();
    assert!(matches!(err, EventError::Corruption { .. }), "{err}");
    let err = TabTree::create(config, TreeMedia { region: None, ..env.media() }).map(|_| ()).unwrap_err();
    assert!(err.to_string().contains("needs a PMem region"), "{err}");
}
