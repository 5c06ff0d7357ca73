//! A measurement as a SQL table (issue 19, "Table providers: Series"):
//! columns `time` (timestamp, ns, UTC), one per tag (string,
//! dictionary-encoded, NULL where a series lacks the tag) and one per field
//! (typed). A row is one tag set at one timestamp holding at least one
//! field, as InfluxQL's `SELECT *` shows it.
//!
//! The table is built from the measurement's series when a query names it,
//! so it sees the tags and fields that exist at planning time.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::{Session, TableProvider};
use datafusion::error::Result;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;
use parking_lot::Mutex;
use strata_engine::Tables;
use strata_series::{FieldType, SeriesId, SeriesInfo};

use crate::error::df_err;
use crate::filters::{pushdown, PushedFilters, TIME_COLUMN};
use crate::insert::{ColumnRole, PointSink};
use crate::plan::{insert_plan, scan_columns, scan_plan};
use crate::series_scan::SeriesScan;

/// The type of the `time` column of every table.
pub fn time_type() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
}

/// The Arrow type of a field type.
pub fn field_data_type(ty: FieldType) -> DataType {
    match ty {
        FieldType::Float => DataType::Float64,
        FieldType::Integer => DataType::Int64,
        FieldType::Unsigned => DataType::UInt64,
        FieldType::Boolean => DataType::Boolean,
        FieldType::String => DataType::Utf8,
    }
}

/// The type of a tag column.
pub fn tag_data_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// One field column: its column name (the field key, unless a tag or
/// `time` has that name: then `<key>_field`), its key and type.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldColumn {
    pub column: String,
    pub key: String,
    pub ty: FieldType,
}

/// A tag set: `(key, value)` sorted by key.
pub type Tags = Vec<(String, String)>;

/// One tag set and its series, by field column index.
#[derive(Clone, Debug, PartialEq)]
pub struct TagSet {
    pub tags: Tags,
    /// `(field column index, series)`, one per field the tag set has.
    pub series: Vec<(usize, SeriesId)>,
    /// Per tag column, the index of this set's value in the layout's
    /// `tag_values` of that column (`None`: the set lacks the tag).
    pub tag_keys: Vec<Option<i32>>,
}

/// The columns of a measurement and its tag sets.
#[derive(Clone, Debug)]
pub struct SeriesLayout {
    /// Tag keys, sorted: columns `1..=tags.len()`.
    pub tags: Vec<String>,
    /// Fields sorted by key: the columns after the tags.
    pub fields: Vec<FieldColumn>,
    pub tag_sets: Vec<TagSet>,
    /// Per tag column, its distinct values, sorted: the one dictionary every
    /// batch of that column shares (so batches concatenate without merging
    /// dictionaries).
    pub tag_values: Vec<ArrayRef>,
    pub schema: SchemaRef,
}

impl SeriesLayout {
    /// Lays out a measurement from its series (any order).
    pub fn new(series: &[SeriesInfo]) -> SeriesLayout {
        let mut tag_keys = std::collections::BTreeSet::new();
        let mut field_types = BTreeMap::new();
        for s in series {
            tag_keys.extend(s.tags.iter().map(|(k, _)| k.clone()));
            field_types.entry(s.field.clone()).or_insert(s.field_type);
        }
        let tags: Vec<String> = tag_keys.into_iter().collect();
        let fields: Vec<FieldColumn> = field_types
            .into_iter()
            .map(|(key, ty)| {
                let taken = key == TIME_COLUMN || tags.contains(&key);
                let column = if taken { format!("{key}_field") } else { key.clone() };
                FieldColumn { column, key, ty }
            })
            .collect();
        let mut by_tags: BTreeMap<Tags, Vec<(usize, SeriesId)>> = BTreeMap::new();
        for s in series {
            let Ok(i) = fields.binary_search_by(|f| f.key.as_str().cmp(&s.field)) else {
                unreachable!("every series' field has a column")
            };
            by_tags.entry(s.tags.clone()).or_default().push((i, s.id));
        }
        let mut values: Vec<std::collections::BTreeSet<&str>> = vec![Default::default(); tags.len()];
        for set in by_tags.keys() {
            for (k, v) in set {
                let column = tags.binary_search(k).expect("every tag key has a column");
                values[column].insert(v.as_str());
            }
        }
        let values: Vec<Vec<&str>> = values.into_iter().map(|v| v.into_iter().collect()).collect();
        let key_of = |column: usize, set: &Tags| {
            let value = set.iter().find(|(k, _)| *k == tags[column])?;
            let at = values[column].binary_search(&value.1.as_str()).expect("collected above");
            Some(i32::try_from(at).expect("fewer than 2^31 values of a tag"))
        };
        let tag_sets = by_tags
            .iter()
            .map(|(set, series)| TagSet {
                tags: set.clone(),
                series: series.clone(),
                tag_keys: (0..tags.len()).map(|c| key_of(c, set)).collect(),
            })
            .collect();
        let tag_values = values.iter().map(|v| Arc::new(StringArray::from(v.clone())) as ArrayRef).collect();
        let mut columns = vec![Field::new(TIME_COLUMN, time_type(), false)];
        columns.extend(tags.iter().map(|t| Field::new(t, tag_data_type(), true)));
        columns.extend(fields.iter().map(|f| Field::new(&f.column, field_data_type(f.ty), true)));
        SeriesLayout { tags, fields, tag_sets, tag_values, schema: Arc::new(Schema::new(columns)) }
    }

    /// What each column is, for `INSERT`.
    pub fn roles(&self) -> Vec<ColumnRole> {
        let mut roles = vec![ColumnRole::Time];
        roles.extend(self.tags.iter().map(|t| ColumnRole::Tag(t.clone())));
        roles.extend(self.fields.iter().map(|f| ColumnRole::Field(f.key.clone())));
        roles
    }
}

/// A measurement of a database as a DataFusion table.
pub struct SeriesTable {
    tables: Arc<dyn Tables>,
    db: String,
    measurement: String,
    layout: Arc<SeriesLayout>,
}

impl std::fmt::Debug for SeriesTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SeriesTable({}.{})", self.db, self.measurement)
    }
}

impl SeriesTable {
    /// The table of `measurement` as its series are now.
    pub fn open(
        tables: Arc<dyn Tables>,
        db: &str,
        measurement: &str,
        cache: &LayoutCache,
    ) -> Result<SeriesTable> {
        let layout = cache.layout(tables.as_ref(), db, measurement)?;
        Ok(SeriesTable { tables, db: db.to_string(), measurement: measurement.to_string(), layout })
    }
}

/// The layouts of measurements, kept while their set of series stays the
/// same ([`strata_series::SeriesStore::series_version`]): listing and
/// laying out thousands of series is most of a short query's planning.
#[derive(Default)]
pub struct LayoutCache {
    /// `(database, measurement)` -> the layout and the version it was built at.
    by_table: Mutex<HashMap<(String, String), Versioned>>,
}

/// A layout and the series version it was built from.
type Versioned = (u64, Arc<SeriesLayout>);

impl LayoutCache {
    /// The layout of `measurement` as its series are now.
    pub fn layout(&self, tables: &dyn Tables, db: &str, measurement: &str) -> Result<Arc<SeriesLayout>> {
        let store = tables.series_store();
        // Asked before listing: a series added in between makes the next
        // query see a newer version and lay out again.
        let version = store.series_version(db, measurement);
        let key = (db.to_string(), measurement.to_string());
        if let Some(v) = version {
            if let Some((cached, layout)) = self.by_table.lock().get(&key) {
                if *cached == v {
                    return Ok(layout.clone());
                }
            }
        }
        let series = store.series(db, measurement).map_err(df_err)?;
        let layout = Arc::new(SeriesLayout::new(&series));
        if let Some(v) = version {
            self.by_table.lock().insert(key, (v, layout.clone()));
        }
        Ok(layout)
    }
}

#[async_trait]
impl TableProvider for SeriesTable {
    fn schema(&self) -> SchemaRef {
        self.layout.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(pushdown(filters, &self.layout.tags))
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let pushed = PushedFilters::from_exprs(filters, &self.layout.tags);
        let columns = scan_columns(projection, &self.layout.schema);
        scan_plan(
            SeriesScan::new(self.tables.clone(), &self.db, self.layout.clone(), columns, pushed)?,
            limit,
        )
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        _op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let sink = PointSink::new(
            self.tables.clone(),
            &self.db,
            &self.measurement,
            self.layout.schema.clone(),
            self.layout.roles(),
        );
        Ok(insert_plan(input, sink))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: u64, tags: &[(&str, &str)], field: &str, ty: FieldType) -> SeriesInfo {
        SeriesInfo {
            id: SeriesId(id),
            measurement: "cpu".into(),
            tags: tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            field: field.into(),
            field_type: ty,
        }
    }

    #[test]
    fn columns_are_time_then_sorted_tags_then_sorted_fields_and_tag_sets_group_series() {
        let layout = SeriesLayout::new(&[
            info(3, &[("host", "b")], "usage", FieldType::Float),
            info(1, &[("dc", "x"), ("host", "a")], "usage", FieldType::Float),
            info(2, &[("dc", "x"), ("host", "a")], "count", FieldType::Integer),
            info(4, &[("host", "b")], "host", FieldType::String),
        ]);
        let names: Vec<&str> = layout.schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["time", "dc", "host", "count", "host_field", "usage"]);
        assert_eq!(layout.schema.field(1).data_type(), &tag_data_type());
        assert_eq!(layout.schema.field(3).data_type(), &DataType::Int64);
        assert_eq!(layout.tag_sets.len(), 2);
        let a = &layout.tag_sets[0];
        assert_eq!(a.tags, vec![("dc".to_string(), "x".to_string()), ("host".to_string(), "a".to_string())]);
        assert_eq!(a.series, vec![(2, SeriesId(1)), (0, SeriesId(2))]);
        assert_eq!(layout.roles()[4], ColumnRole::Field("host".into()));
    }
}
