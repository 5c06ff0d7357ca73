//! Decomposable aggregates of the TAB+-tree (chronicledb-pmem.txt sections
//! 2.2 and 4.1): every index entry summarizes its child's subtree with an
//! event count, the time range, and a configurable set of min, max and sum
//! per numeric attribute. They are computed bottom-up (a full leaf in batch,
//! a full index node by merging its entries), so every function here is
//! decomposable: merging the aggregates of the parts of a sequence equals the
//! aggregate of the whole.
//!
//! An [`AggregateSpec`] says which aggregates are kept and resolves them
//! against the schema once; an [`Aggregates`] value holds them and encodes
//! into a fixed-size record of [`AggregateSpec::record_bytes`] bytes, inline
//! in an index entry or in a slot of the flat PMem aggregate array
//! (`docs/format/events-node.md`, section "Aggregate record").
//!
//! NaN: min and max skip NaN values (a NaN never satisfies a range predicate,
//! so pruning by min/max stays correct and tight), sum follows IEEE and
//! becomes NaN once a NaN is added. An attribute whose values were all NaN
//! keeps the empty min/max (+inf/-inf). All values are read as `f64`
//! ([`crate::event::attr_as_f64`]), so i64 values beyond 2^53 are rounded.

use crate::event::{numeric_at, timestamp_of};
use crate::ids::EventError;
use crate::schema::{AttrType, StreamSchema};

/// Bytes of the fixed part of a record: count, ts_min, ts_max.
pub const AGG_FIXED_BYTES: usize = 24;
/// Bytes of one per-attribute aggregate value (an f64).
pub const AGG_VALUE_BYTES: usize = 8;

/// Which aggregates one attribute keeps.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct AttrAggs {
    pub min: bool,
    pub max: bool,
    pub sum: bool,
}

impl AttrAggs {
    pub const ALL: AttrAggs = AttrAggs { min: true, max: true, sum: true };
    pub const NONE: AttrAggs = AttrAggs { min: false, max: false, sum: false };

    /// How many values the attribute keeps (0..=3).
    pub fn value_count(self) -> usize {
        self.min as usize + self.max as usize + self.sum as usize
    }
}

/// One kept attribute, resolved against the schema.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Slot {
    attr: usize,
    offset: usize,
    ty: AttrType,
    aggs: AttrAggs,
}

/// The set of aggregates of a stream, resolved against its schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AggregateSpec {
    per_attr: Vec<AttrAggs>,
    slots: Vec<Slot>,
    event_bytes: usize,
    record_bytes: usize,
}

impl AggregateSpec {
    /// `per_attr` has one entry per schema attribute; strings keep none.
    pub fn new(schema: &StreamSchema, per_attr: Vec<AttrAggs>) -> Result<AggregateSpec, EventError> {
        if per_attr.len() != schema.attr_count() {
            return Err(EventError::invalid(format!(
                "the aggregate spec names {} attributes, the schema has {}",
                per_attr.len(),
                schema.attr_count()
            )));
        }
        let mut slots = Vec::new();
        for (i, (attr, aggs)) in schema.attrs().iter().zip(&per_attr).enumerate() {
            if aggs.value_count() == 0 {
                continue;
            }
            if !attr.ty.is_numeric() {
                return Err(EventError::invalid(format!(
                    "attribute '{}' is a {} and cannot be aggregated",
                    attr.name,
                    attr.ty.name()
                )));
            }
            slots.push(Slot { attr: i, offset: schema.attr_offsets()[i], ty: attr.ty, aggs: *aggs });
        }
        let record_bytes =
            AGG_FIXED_BYTES + AGG_VALUE_BYTES * per_attr.iter().map(|a| a.value_count()).sum::<usize>();
        Ok(AggregateSpec { per_attr, slots, event_bytes: schema.event_bytes(), record_bytes })
    }

    /// The paper's default: min, max and sum of every numeric attribute.
    pub fn default_for(schema: &StreamSchema) -> AggregateSpec {
        let per_attr = schema
            .attrs()
            .iter()
            .map(|a| if a.ty.is_numeric() { AttrAggs::ALL } else { AttrAggs::NONE })
            .collect();
        AggregateSpec::new(schema, per_attr).expect("numeric attributes can be aggregated")
    }

    /// Only count and time range.
    pub fn count_only(schema: &StreamSchema) -> AggregateSpec {
        AggregateSpec::new(schema, vec![AttrAggs::NONE; schema.attr_count()]).expect("nothing to check")
    }

    pub fn per_attr(&self) -> &[AttrAggs] {
        &self.per_attr
    }

    /// Bytes of one encoded [`Aggregates`] record:
    /// 24 + 8 per kept value.
    pub fn record_bytes(&self) -> usize {
        self.record_bytes
    }

    /// Bytes of the events this spec reads.
    pub fn event_bytes(&self) -> usize {
        self.event_bytes
    }
}

/// The aggregates of one attribute; `None` where the spec keeps nothing.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct AttrAggregate {
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub sum: Option<f64>,
}

impl AttrAggregate {
    fn empty(aggs: AttrAggs) -> AttrAggregate {
        AttrAggregate {
            min: aggs.min.then_some(f64::INFINITY),
            max: aggs.max.then_some(f64::NEG_INFINITY),
            sum: aggs.sum.then_some(0.0),
        }
    }

    #[inline]
    fn add(&mut self, v: f64) {
        if let Some(min) = &mut self.min {
            if v < *min {
                *min = v;
            }
        }
        if let Some(max) = &mut self.max {
            if v > *max {
                *max = v;
            }
        }
        if let Some(sum) = &mut self.sum {
            *sum += v;
        }
    }

    fn merge(&mut self, other: &AttrAggregate) {
        if let (Some(min), Some(o)) = (&mut self.min, other.min) {
            if o < *min {
                *min = o;
            }
        }
        if let (Some(max), Some(o)) = (&mut self.max, other.max) {
            if o > *max {
                *max = o;
            }
        }
        if let (Some(sum), Some(o)) = (&mut self.sum, other.sum) {
            *sum += o;
        }
    }
}

/// Aggregates of a set of events. Empty: count 0, `ts_min = i64::MAX`,
/// `ts_max = i64::MIN`, min +inf, max -inf, sum 0.
#[derive(Clone, Debug, PartialEq)]
pub struct Aggregates {
    pub count: u64,
    pub ts_min: i64,
    pub ts_max: i64,
    /// One per schema attribute (also those that keep nothing).
    pub attrs: Vec<AttrAggregate>,
}

impl Aggregates {
    /// Equality that treats NaN as equal to NaN (sums may be NaN): how the
    /// tree's checks and tests compare a stored aggregate with its
    /// recomputation.
    pub fn same_as(&self, other: &Aggregates) -> bool {
        let eq = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (Some(x), Some(y)) => x == y || (x.is_nan() && y.is_nan()),
            (None, None) => true,
            _ => false,
        };
        self.count == other.count
            && self.ts_min == other.ts_min
            && self.ts_max == other.ts_max
            && self.attrs.len() == other.attrs.len()
            && self
                .attrs
                .iter()
                .zip(&other.attrs)
                .all(|(x, y)| eq(x.min, y.min) && eq(x.max, y.max) && eq(x.sum, y.sum))
    }

    /// The aggregates of no events.
    pub fn empty(spec: &AggregateSpec) -> Aggregates {
        Aggregates {
            count: 0,
            ts_min: i64::MAX,
            ts_max: i64::MIN,
            attrs: spec.per_attr.iter().map(|a| AttrAggregate::empty(*a)).collect(),
        }
    }

    /// The aggregates of `events` (encoded events of the spec's schema).
    pub fn of_events<'a>(
        spec: &AggregateSpec,
        events: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Aggregates, EventError> {
        let mut aggs = Aggregates::empty(spec);
        for event in events {
            aggs.add_event(spec, event)?;
        }
        Ok(aggs)
    }

    /// Adds one encoded event (`spec.event_bytes()` bytes).
    #[inline]
    pub fn add_event(&mut self, spec: &AggregateSpec, event: &[u8]) -> Result<(), EventError> {
        if event.len() != spec.event_bytes || self.attrs.len() != spec.per_attr.len() {
            return Err(EventError::invalid(format!(
                "an event of {} bytes for aggregates over {}-byte events of {} attributes",
                event.len(),
                spec.event_bytes,
                spec.per_attr.len()
            )));
        }
        let ts = timestamp_of(event);
        self.count += 1;
        self.ts_min = self.ts_min.min(ts);
        self.ts_max = self.ts_max.max(ts);
        for slot in &spec.slots {
            if let Some(v) = numeric_at(event, slot.offset, slot.ty) {
                self.attrs[slot.attr].add(v);
            }
        }
        Ok(())
    }

    /// Merges the aggregates of a disjoint set of events of the same spec.
    /// Aggregates of different shapes merge only their common attributes.
    pub fn merge(&mut self, other: &Aggregates) {
        debug_assert_eq!(self.attrs.len(), other.attrs.len(), "aggregates of different specs");
        self.count += other.count;
        self.ts_min = self.ts_min.min(other.ts_min);
        self.ts_max = self.ts_max.max(other.ts_max);
        for (mine, theirs) in self.attrs.iter_mut().zip(&other.attrs) {
            mine.merge(theirs);
        }
    }

    /// Whether these aggregates have exactly the spec's shape.
    pub fn matches(&self, spec: &AggregateSpec) -> bool {
        self.attrs.len() == spec.per_attr.len()
            && self.attrs.iter().zip(&spec.per_attr).all(|(a, s)| {
                a.min.is_some() == s.min && a.max.is_some() == s.max && a.sum.is_some() == s.sum
            })
    }

    /// Writes the record into `out` (exactly `spec.record_bytes()` long):
    /// count u64, ts_min i64, ts_max i64, then for each attribute in order
    /// its kept values in the order min, max, sum, as f64; little-endian.
    pub fn encode_into(&self, spec: &AggregateSpec, out: &mut [u8]) -> Result<(), EventError> {
        if out.len() != spec.record_bytes || !self.matches(spec) {
            return Err(EventError::invalid(format!(
                "aggregates do not match the spec or the {}-byte buffer ({} bytes expected)",
                out.len(),
                spec.record_bytes
            )));
        }
        out[0..8].copy_from_slice(&self.count.to_le_bytes());
        out[8..16].copy_from_slice(&self.ts_min.to_le_bytes());
        out[16..24].copy_from_slice(&self.ts_max.to_le_bytes());
        let mut at = AGG_FIXED_BYTES;
        for a in &self.attrs {
            for v in [a.min, a.max, a.sum].into_iter().flatten() {
                out[at..at + AGG_VALUE_BYTES].copy_from_slice(&v.to_le_bytes());
                at += AGG_VALUE_BYTES;
            }
        }
        Ok(())
    }

    /// [`Aggregates::encode_into`] a fresh buffer.
    pub fn encode(&self, spec: &AggregateSpec) -> Result<Vec<u8>, EventError> {
        let mut out = vec![0; spec.record_bytes];
        self.encode_into(spec, &mut out)?;
        Ok(out)
    }

    /// Decodes a record. A wrong length is `InvalidInput`; a record whose
    /// count and time range disagree (count 0 with a non-empty range, or
    /// `ts_min > ts_max` with events) is `Corruption`. Values are not
    /// checked (any f64 bit pattern decodes).
    pub fn decode(spec: &AggregateSpec, bytes: &[u8]) -> Result<Aggregates, EventError> {
        if bytes.len() != spec.record_bytes {
            return Err(EventError::invalid(format!(
                "an aggregate record of this spec has {} bytes, got {}",
                spec.record_bytes,
                bytes.len()
            )));
        }
        let word = |at: usize| -> [u8; 8] { bytes[at..at + 8].try_into().expect("8 bytes") };
        let count = u64::from_le_bytes(word(0));
        let ts_min = i64::from_le_bytes(word(8));
        let ts_max = i64::from_le_bytes(word(16));
        let consistent = if count == 0 { ts_min == i64::MAX && ts_max == i64::MIN } else { ts_min <= ts_max };
        if !consistent {
            return Err(EventError::corruption(
                "aggregate record",
                format!("count {count} with time range [{ts_min}, {ts_max}]"),
            ));
        }
        let mut at = AGG_FIXED_BYTES;
        let mut next = |keep: bool| -> Option<f64> {
            keep.then(|| {
                let v = f64::from_le_bytes(word(at));
                at += AGG_VALUE_BYTES;
                v
            })
        };
        let attrs = spec
            .per_attr
            .iter()
            .map(|s| {
                let min = next(s.min);
                let max = next(s.max);
                let sum = next(s.sum);
                AttrAggregate { min, max, sum }
            })
            .collect();
        Ok(Aggregates { count, ts_min, ts_max, attrs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::strategies::event_strategy;
    use crate::event::{encode, Event, Value};
    use crate::schema::strategies::schema_strategy;
    use crate::schema::Attr;
    use proptest::prelude::*;

    fn stock_event(ts: i64, price: f64, volume: i32) -> Vec<u8> {
        let event = Event::new(ts, vec![Value::I32(1), Value::I32(7), Value::F64(price), Value::I32(volume)]);
        encode(&StreamSchema::stock(), &event).unwrap()
    }

    #[test]
    fn default_spec_keeps_all_three_for_numeric_attributes_only() {
        let sine = StreamSchema::sine();
        let spec = AggregateSpec::default_for(&sine);
        assert_eq!(spec.record_bytes(), 24 + 6 * 3 * 8);
        assert_eq!(AggregateSpec::count_only(&sine).record_bytes(), 24);
        let mixed =
            StreamSchema::new(vec![Attr::new("s", AttrType::FixedStr(4)), Attr::new("b", AttrType::Bool)])
                .unwrap();
        let spec = AggregateSpec::default_for(&mixed);
        assert_eq!(spec.per_attr(), &[AttrAggs::NONE, AttrAggs::ALL]);
        assert_eq!(spec.record_bytes(), 24 + 3 * 8);
        let err = AggregateSpec::new(&mixed, vec![AttrAggs::ALL, AttrAggs::NONE]).unwrap_err();
        assert!(err.to_string().contains("'s' is a str(4) and cannot be aggregated"), "{err}");
        assert!(AggregateSpec::new(&mixed, vec![AttrAggs::ALL]).is_err());
    }

    #[test]
    fn add_event_tracks_count_time_and_values() {
        let schema = StreamSchema::stock();
        let spec = AggregateSpec::default_for(&schema);
        let events = [stock_event(10, 3.5, 100), stock_event(5, -1.0, 7), stock_event(20, 2.0, 1)];
        let aggs = Aggregates::of_events(&spec, events.iter().map(Vec::as_slice)).unwrap();
        assert_eq!((aggs.count, aggs.ts_min, aggs.ts_max), (3, 5, 20));
        let price = aggs.attrs[schema.index_of("price").unwrap()];
        assert_eq!((price.min, price.max, price.sum), (Some(-1.0), Some(3.5), Some(4.5)));
        let volume = aggs.attrs[3];
        assert_eq!((volume.min, volume.max, volume.sum), (Some(1.0), Some(100.0), Some(108.0)));
        let mut wrong = Aggregates::empty(&spec);
        assert!(wrong.add_event(&spec, &events[0][..20]).is_err());
        assert_eq!(wrong, Aggregates::empty(&spec), "a rejected event changes nothing");
    }

    #[test]
    fn nan_is_skipped_by_min_max_and_poisons_sum() {
        let spec = AggregateSpec::default_for(&StreamSchema::stock());
        let events = [stock_event(1, f64::NAN, 1), stock_event(2, 4.0, 1), stock_event(3, f64::NAN, 1)];
        let aggs = Aggregates::of_events(&spec, events.iter().map(Vec::as_slice)).unwrap();
        let price = aggs.attrs[2];
        assert_eq!((price.min, price.max), (Some(4.0), Some(4.0)));
        assert!(price.sum.unwrap().is_nan());
        let only_nan = Aggregates::of_events(&spec, [events[0].as_slice()]).unwrap();
        assert_eq!(
            (only_nan.attrs[2].min, only_nan.attrs[2].max),
            (Some(f64::INFINITY), Some(f64::NEG_INFINITY))
        );
    }

    #[test]
    fn empty_is_the_identity_of_merge() {
        let spec = AggregateSpec::default_for(&StreamSchema::stock());
        let one = Aggregates::of_events(&spec, [stock_event(4, 1.25, 3).as_slice()]).unwrap();
        let mut merged = Aggregates::empty(&spec);
        merged.merge(&one);
        assert_eq!(merged, one);
        let mut other = one.clone();
        other.merge(&Aggregates::empty(&spec));
        assert_eq!(other, one);
    }

    #[test]
    fn records_have_the_documented_layout_and_round_trip() {
        let schema = StreamSchema::stock();
        let spec = AggregateSpec::new(
            &schema,
            vec![
                AttrAggs::NONE,
                AttrAggs::NONE,
                AttrAggs { min: true, max: false, sum: true },
                AttrAggs { min: false, max: true, sum: false },
            ],
        )
        .unwrap();
        assert_eq!(spec.record_bytes(), 24 + 3 * 8);
        let events = [stock_event(10, 3.5, 100), stock_event(12, 1.5, 7)];
        let aggs = Aggregates::of_events(&spec, events.iter().map(Vec::as_slice)).unwrap();
        let bytes = aggs.encode(&spec).unwrap();
        assert_eq!(&bytes[0..8], &2u64.to_le_bytes());
        assert_eq!(&bytes[8..16], &10i64.to_le_bytes());
        assert_eq!(&bytes[16..24], &12i64.to_le_bytes());
        assert_eq!(&bytes[24..32], &1.5f64.to_le_bytes(), "price min");
        assert_eq!(&bytes[32..40], &5.0f64.to_le_bytes(), "price sum");
        assert_eq!(&bytes[40..48], &100.0f64.to_le_bytes(), "volume max");
        assert_eq!(Aggregates::decode(&spec, &bytes).unwrap(), aggs);
        let empty = Aggregates::empty(&spec);
        assert_eq!(Aggregates::decode(&spec, &empty.encode(&spec).unwrap()).unwrap(), empty);
        let other_spec = AggregateSpec::default_for(&schema);
        assert!(aggs.encode(&other_spec).is_err(), "shape mismatch is rejected");
    }

    #[test]
    fn inconsistent_records_are_corruption() {
        let spec = AggregateSpec::count_only(&StreamSchema::sine());
        let mut bytes = Aggregates::empty(&spec).encode(&spec).unwrap();
        bytes[8] ^= 1;
        assert!(Aggregates::decode(&spec, &bytes).unwrap_err().is_corruption());
        let mut bytes = vec![0u8; 24];
        bytes[0] = 1;
        bytes[8..16].copy_from_slice(&5i64.to_le_bytes());
        bytes[16..24].copy_from_slice(&4i64.to_le_bytes());
        assert!(Aggregates::decode(&spec, &bytes).unwrap_err().is_corruption());
        assert!(matches!(Aggregates::decode(&spec, &bytes[..20]), Err(EventError::InvalidInput(_))));
    }

    /// A schema, a random spec over it and exact-valued events (sums are
    /// exact, so merge order cannot change them), plus cut points.
    fn split_case() -> impl Strategy<Value = (StreamSchema, Vec<AttrAggs>, Vec<Event>, Vec<usize>)> {
        schema_strategy().prop_flat_map(|schema| {
            let aggs = schema
                .attrs()
                .iter()
                .map(|a| {
                    if a.ty.is_numeric() {
                        (any::<bool>(), any::<bool>(), any::<bool>())
                            .prop_map(|(min, max, sum)| AttrAggs { min, max, sum })
                            .boxed()
                    } else {
                        Just(AttrAggs::NONE).boxed()
                    }
                })
                .collect::<Vec<_>>();
            let events = proptest::collection::vec(event_strategy(&schema, -1000i64..1000, false), 0..60);
            let cuts = proptest::collection::vec(0usize..60, 0..6);
            (Just(schema), aggs, events, cuts)
        })
    }

    proptest! {
        #[test]
        fn merging_the_parts_of_any_split_equals_the_whole((schema, per_attr, events, cuts) in split_case()) {
            let spec = AggregateSpec::new(&schema, per_attr).unwrap();
            let encoded: Vec<Vec<u8>> = events.iter().map(|e| encode(&schema, e).unwrap()).collect();
            let whole = Aggregates::of_events(&spec, encoded.iter().map(Vec::as_slice)).unwrap();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(encoded.len())).collect();
            cuts.push(0);
            cuts.push(encoded.len());
            cuts.sort_unstable();
            let mut merged = Aggregates::empty(&spec);
            // Merge the parts in reverse order: decomposable means any order.
            for w in cuts.windows(2).rev() {
                let part = Aggregates::of_events(&spec, encoded[w[0]..w[1]].iter().map(Vec::as_slice)).unwrap();
                let back = Aggregates::decode(&spec, &part.encode(&spec).unwrap()).unwrap();
                prop_assert_eq!(&back, &part, "record round trip");
                merged.merge(&part);
            }
            prop_assert!(merged.same_as(&whole), "merged {:?}\nwhole {:?}", merged, whole);
            prop_assert_eq!(whole.count, encoded.len() as u64);
        }

        #[test]
        fn nan_and_infinities_stay_decomposable(
            values in proptest::collection::vec(
                prop_oneof![
                    Just(f64::NAN),
                    Just(f64::INFINITY),
                    Just(f64::NEG_INFINITY),
                    (-8i32..8).prop_map(f64::from),
                ],
                0..40,
            ),
            cut in 0usize..40,
        ) {
            let schema = StreamSchema::sine();
            let spec = AggregateSpec::default_for(&schema);
            let encoded: Vec<Vec<u8>> = values
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    let mut values = vec![Value::F64(v)];
                    values.extend((1..6).map(|_| Value::F64(0.0)));
                    encode(&schema, &Event::new(i as i64, values)).unwrap()
                })
                .collect();
            let cut = cut.min(encoded.len());
            let whole = Aggregates::of_events(&spec, encoded.iter().map(Vec::as_slice)).unwrap();
            let mut merged = Aggregates::of_events(&spec, encoded[cut..].iter().map(Vec::as_slice)).unwrap();
            merged.merge(&Aggregates::of_events(&spec, encoded[..cut].iter().map(Vec::as_slice)).unwrap());
            prop_assert!(merged.same_as(&whole), "merged {:?}\nwhole {:?}", merged, whole);
            let finite: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
            let min = finite.iter().copied().fold(f64::INFINITY, f64::min);
            prop_assert_eq!(whole.attrs[0].min, Some(min), "NaN is skipped by min");
            if values.iter().any(|v| v.is_nan()) {
                prop_assert!(whole.attrs[0].sum.unwrap().is_nan(), "NaN poisons sum");
            }
        }

        #[test]
        fn aggregate_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let spec = AggregateSpec::default_for(&StreamSchema::sine());
            if let Ok(aggs) = Aggregates::decode(&spec, &bytes) {
                prop_assert_eq!(aggs.encode(&spec).unwrap(), bytes);
            }
        }
    }
}
