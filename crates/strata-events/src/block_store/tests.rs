//! Unit tests of the block store's write and read paths
//! (chronicledb-pmem.txt section 2.2, "Storage Layout"): addresses, node
//! round trips through DRAM, the file and a reopen, raw versus LZ4 records,
//! sealing full blocks, flush rewrites of the open block, and translation
//! blocks interleaved with data blocks.

use super::format::u32_at;
use super::test_support::{new_store, path, reopen};
use super::*;
use crate::ids::{EventError, NodeId};

#[test]
fn phys_addrs_pack_block_and_offset_in_file_order_and_never_pack_to_zero() {
    let a = PhysAddr::new(7, 1234).unwrap();
    assert_eq!((a.block(), a.offset()), (7, 1234));
    assert_eq!(PhysAddr::from_u64(a.to_u64()), Some(a));
    assert_eq!(a.file_offset(), 7 * BLOCK_BYTES as u64 + 1234);
    assert!(PhysAddr::new(7, 39).is_none() && PhysAddr::new(7, BLOCK_BYTES as u32).is_none());
    assert!(PhysAddr::new(MAX_BLOCK_NUMBER + 1, 40).is_none());
    assert_eq!(PhysAddr::from_u64(0), None);
    assert!(PhysAddr::block_start(0).to_u64() != 0);
    assert!(PhysAddr::new(6, 30000).unwrap() < PhysAddr::new(7, 40).unwrap());
    assert_eq!(a.to_string(), "block 7 offset 1234");
}

#[test]
fn nodes_read_back_from_dram_after_sync_and_after_reopen() {
    let (fs, mut store) = new_store();
    let nodes: Vec<(NodeId, Vec<u8>)> = vec![
        (NodeId::leaf(0), Vec::new()),
        (NodeId::leaf(1), vec![42]),
        (NodeId::index(0), sample_node(1, MAX_NODE_BYTES, false)),
        (NodeId::leaf(2), sample_node(2, MAX_NODE_BYTES, true)),
        (NodeId::leaf(3), sample_node(3, 777, false)),
    ];
    let addrs: Vec<PhysAddr> = nodes.iter().map(|(id, b)| store.append(*id, b).unwrap()).collect();
    for ((id, bytes), addr) in nodes.iter().zip(&addrs) {
        assert_eq!(store.read_node(*addr).unwrap(), (*id, bytes.clone()), "from DRAM");
    }
    assert_eq!(store.blocks_written(), 0, "nothing written before a flush");
    store.sync().unwrap();
    assert_eq!(store.durable_end(), store.end());
    let stats = store.stats();
    assert_eq!(stats.nodes_appended, 5);
    assert!(stats.record_bytes < stats.node_bytes, "compressible nodes shrink: {stats:?}");
    let (store, report) = reopen(&fs);
    assert_eq!(report.blocks, 1);
    assert_eq!(report.torn_block, None);
    for ((id, bytes), addr) in nodes.iter().zip(&addrs) {
        assert_eq!(store.read_node(*addr).unwrap(), (*id, bytes.clone()), "after reopen");
    }
    let scanned: Vec<ScannedRecord> = store.scan().map(Result::unwrap).collect();
    assert_eq!(scanned.iter().map(|r| r.addr).collect::<Vec<_>>(), addrs);
    assert_eq!(scanned[2].node_id, NodeId::index(0));
    assert_eq!(scanned[3].stored_len, MAX_NODE_BYTES as u32, "noise is stored raw");
}

#[test]
fn oversized_nodes_are_rejected_and_incompressible_ones_stored_raw() {
    let (fs, mut store) = new_store();
    let err = store.append(NodeId::leaf(0), &vec![0; MAX_NODE_BYTES + 1]).unwrap_err();
    assert!(matches!(err, EventError::InvalidInput(_)), "{err}");
    let noisy = sample_node(9, MAX_NODE_BYTES, true);
    let addr = store.append(NodeId::leaf(0), &noisy).unwrap();
    store.sync().unwrap();
    let file = fs.peek(path()).unwrap();
    let at = addr.file_offset() as usize;
    assert_eq!(file[at + REC_OFFSET_ENCODING], RECORD_ENCODING_RAW);
    assert_eq!(u32_at(&file, at + REC_OFFSET_STORED_LEN), MAX_NODE_BYTES as u32);
    let compressible = sample_node(9, MAX_NODE_BYTES, false);
    let addr = store.append(NodeId::leaf(1), &compressible).unwrap();
    store.sync().unwrap();
    let file = fs.peek(path()).unwrap();
    let at = addr.file_offset() as usize;
    assert_eq!(file[at + REC_OFFSET_ENCODING], RECORD_ENCODING_LZ4);
    assert!(u32_at(&file, at + REC_OFFSET_STORED_LEN) < MAX_NODE_BYTES as u32 / 2);
}

#[test]
fn a_node_that_does_not_fit_seals_the_block_and_starts_the_next() {
    let (fs, mut store) = new_store();
    // Raw records of 24 + 5000 bytes: six fit the 32728 bytes after a header.
    let addrs: Vec<PhysAddr> =
        (0..13).map(|i| store.append(NodeId::leaf(i), &sample_node(i, 5000, true)).unwrap()).collect();
    let blocks: Vec<u64> = addrs.iter().map(|a| a.block()).collect();
    assert_eq!(blocks, [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2]);
    assert_eq!(addrs[1].offset(), (BLOCK_HEADER_BYTES + RECORD_HEADER_BYTES + 5000) as u32);
    assert_eq!(store.blocks_written(), 2, "two sealed blocks written, the third still in DRAM");
    store.sync().unwrap();
    let file = fs.peek(path()).unwrap();
    assert_eq!(file.len(), 3 * BLOCK_BYTES);
    let headers: Vec<BlockHeader> = (0..3)
        .map(|b| validate_block(&file[b * BLOCK_BYTES..(b + 1) * BLOCK_BYTES], b as u64).unwrap())
        .collect();
    assert_eq!(headers.iter().map(|h| h.record_count).collect::<Vec<_>>(), [6, 6, 1]);
    assert_eq!(headers.iter().map(|h| h.sealed).collect::<Vec<_>>(), [true, true, false]);
    assert!(headers.iter().all(|h| h.kind == BlockKind::Data && h.prev_translation.is_none()));
}

#[test]
fn flushing_rewrites_the_unsealed_block_in_place_and_reopen_continues_it() {
    let (fs, mut store) = new_store();
    let a0 = store.append(NodeId::leaf(0), b"zero").unwrap();
    store.flush().unwrap();
    let a1 = store.append(NodeId::leaf(1), b"one").unwrap();
    store.flush().unwrap();
    store.flush().unwrap(); // nothing new: no write
    assert_eq!(store.stats().partial_block_writes, 2);
    store.sync().unwrap();
    assert_eq!(fs.peek(path()).unwrap().len(), BLOCK_BYTES, "rewritten in place");
    let (mut store, report) = reopen(&fs);
    assert_eq!(report.end, store.end());
    assert_eq!(report.end.block(), 0, "the unsealed block stays open");
    let a2 = store.append(NodeId::leaf(2), b"two").unwrap();
    assert_eq!(a2.block(), 0);
    store.sync().unwrap();
    let (store, _) = reopen(&fs);
    for (addr, want) in [(a0, &b"zero"[..]), (a1, b"one"), (a2, b"two")] {
        assert_eq!(store.read(addr).unwrap(), want);
    }
    assert_eq!(store.scan().count(), 3);
}

#[test]
fn translation_blocks_interleave_chain_and_are_skipped_by_scans() {
    let (fs, mut store) = new_store();
    let d0 = store.append(NodeId::leaf(0), b"data zero").unwrap();
    assert_eq!(store.next_translation_addr(), PhysAddr::block_start(1), "after the open data block");
    let t1 = store.append_translation_block(b"first translations").unwrap();
    assert_eq!(t1, PhysAddr::block_start(1));
    assert_eq!(store.next_translation_addr(), PhysAddr::block_start(2), "the open block is empty");
    let d2 = store.append(NodeId::leaf(1), b"data one").unwrap();
    assert_eq!(d2.block(), 2);
    let t3 = store.append_translation_block(b"second").unwrap();
    store.sync().unwrap();
    let tb = store.read_translation_block(t3).unwrap();
    assert_eq!(tb, TranslationBlock { payload: b"second".to_vec(), prev_translation: Some(t1) });
    assert_eq!(store.read_translation_block(t1).unwrap().prev_translation, None);
    assert!(store.read_translation_block(PhysAddr::block_start(0)).unwrap_err().is_corruption());
    let big = vec![1u8; TRANSLATION_PAYLOAD_BYTES + 1];
    assert!(matches!(store.append_translation_block(&big), Err(EventError::InvalidInput(_))));
    let (store, report) = reopen(&fs);
    assert_eq!(report.last_translation_block, Some(3));
    assert_eq!(store.last_translation_block(), Some(t3));
    let scanned: Vec<PhysAddr> = store.scan().map(|r| r.unwrap().addr).collect();
    assert_eq!(scanned, [d0, d2]);
    assert_eq!(store.scan_from(d2).count(), 1);
}
