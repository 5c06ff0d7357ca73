//! How a YCSB-TS operation becomes an engine operation (DecLog section 5.1):
//! an insert is one [`Point`] with the fields `value` (f64) and `note` (the
//! 34-character string), a read is a [`TxnOp::Read`] of the `value` field,
//! an update is a [`TxnOp::Write`] of the `value` field alone at an existing
//! timestamp (the note is kept). Every key is its own tag set.

use strata_series::{FieldValue, Point, TxnOp, ValueRef};

use super::model::{series_tags, Op, Txn, MEASUREMENT, NOTE_FIELD, VALUE_FIELD};

/// The engine operation of one YCSB-TS operation.
pub fn engine_op(op: &Op) -> TxnOp {
    match *op {
        Op::Insert { key, ts_ns, value, note } => TxnOp::Write(Point {
            measurement: MEASUREMENT.to_string(),
            tags: series_tags(key),
            fields: vec![
                (VALUE_FIELD.to_string(), FieldValue::Float(value)),
                (NOTE_FIELD.to_string(), FieldValue::String(note.as_str().to_string())),
            ],
            timestamp_ns: ts_ns,
        }),
        Op::Read { key, ts_ns } => TxnOp::Read { value: value_ref(key), ts: ts_ns },
        Op::Update { key, ts_ns, value } => TxnOp::Write(Point {
            measurement: MEASUREMENT.to_string(),
            tags: series_tags(key),
            fields: vec![(VALUE_FIELD.to_string(), FieldValue::Float(value))],
            timestamp_ns: ts_ns,
        }),
    }
}

/// The engine operations of one transaction, in order.
pub fn engine_ops(txn: &Txn) -> Vec<TxnOp> {
    txn.ops.iter().map(engine_op).collect()
}

/// The `value` field of key `key`'s series.
pub fn value_ref(key: u64) -> ValueRef {
    ValueRef { measurement: MEASUREMENT.to_string(), tags: series_tags(key), field: VALUE_FIELD.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ycsb_ts::model::point_payload;
    use crate::ycsb_ts::{OpKind, Workload, YcsbTsGenerator, YcsbTsSpec, OPS_PER_TXN};

    #[test]
    fn insert_is_one_point_with_value_and_note() {
        let (value, note) = point_payload(7, 123, 4);
        let op = engine_op(&Op::Insert { key: 123, ts_ns: 99, value, note });
        let TxnOp::Write(p) = op else { panic!("an insert is a write: {op:?}") };
        assert_eq!(p.measurement, "usermetric");
        assert_eq!(
            p.tags,
            vec![("tag0".into(), "23".into()), ("tag1".into(), "1".into()), ("tag2".into(), "0".into())]
        );
        assert_eq!(p.timestamp_ns, 99);
        assert_eq!(p.fields.len(), 2);
        assert_eq!(p.fields[0], ("value".to_string(), FieldValue::Float(value)));
        let FieldValue::String(s) = &p.fields[1].1 else { panic!("note is a string: {:?}", p.fields[1]) };
        assert_eq!((p.fields[1].0.as_str(), s.len()), ("note", 34));
        assert_eq!(s, note.as_str());
    }

    #[test]
    fn read_names_the_value_field_and_update_writes_only_it() {
        let read = engine_op(&Op::Read { key: 5, ts_ns: 10 });
        assert_eq!(read, TxnOp::Read { value: value_ref(5), ts: 10 });
        assert_eq!(value_ref(5).field, "value");
        let update = engine_op(&Op::Update { key: 5, ts_ns: 10, value: 2.5 });
        let TxnOp::Write(p) = update else { panic!("an update is a write") };
        assert_eq!(p.fields, vec![("value".to_string(), FieldValue::Float(2.5))]);
        assert_eq!((p.timestamp_ns, p.tags), (10, value_ref(5).tags));
    }

    #[test]
    fn a_generated_transaction_maps_op_for_op() {
        let spec = YcsbTsSpec { txns: 200, seed: 3, ..YcsbTsSpec::new(Workload::C) };
        let generator = YcsbTsGenerator::new(&spec).unwrap();
        let (mut writes, mut reads) = (0, 0);
        for txn in generator {
            let ops = engine_ops(&txn);
            assert_eq!(ops.len(), OPS_PER_TXN);
            for (op, mapped) in txn.ops.iter().zip(&ops) {
                match (op.kind(), mapped) {
                    (OpKind::Read, TxnOp::Read { ts, .. }) => {
                        reads += 1;
                        assert_eq!(*ts, op.ts_ns());
                    }
                    (OpKind::Insert | OpKind::Update, TxnOp::Write(p)) => {
                        writes += 1;
                        assert_eq!(p.timestamp_ns, op.ts_ns());
                        assert_eq!(p.tags, series_tags(op.key()));
                    }
                    other => panic!("seed 3: {other:?}"),
                }
            }
        }
        assert_eq!(writes + reads, 2000);
        assert!(reads > 100, "seed 3 workload C: about 9 % reads, got {reads}");
    }
}
