//! Tests of the data-driven LSN protocol: the paper's Fig. 5 walk-through,
//! the protocol's edge cases, and a seeded multi-threaded stress test of its
//! correctness property (section 4.1.2).

mod fig5;
mod protocol;
mod stress;

use super::control_table::{ControlTable, PointRef};
use super::ext_ts::ExtTimestamp;
use crate::model::SeriesId;

fn point(series: u64, ts: i64) -> PointRef {
    PointRef::new(SeriesId(series), ts)
}

/// The control word with the given bits.
fn word(uts: u16, tombstone: bool, locked: bool) -> ExtTimestamp {
    ExtTimestamp::control(uts, tombstone, locked).expect("test uts fits")
}

/// Control words of `points`, in order.
fn words(table: &ControlTable, points: &[PointRef]) -> Vec<ExtTimestamp> {
    points.iter().map(|&p| table.control(p)).collect()
}
