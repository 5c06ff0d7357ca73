//! Strata's databases as DataFusion catalogs (issue 19, "A Strata database
//! is a PostgreSQL database"): the catalog list is the data directory's
//! databases, each catalog one database with a `public` schema holding its
//! tables of every kind, looked up when a query names them, so tables
//! created by line protocol after a session began are visible to it.
//! `pg_catalog` (registered per database by the session, from
//! datafusion-pg-catalog) reads this list, so `\l` shows every database.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, CatalogProviderList, SchemaProvider, TableProvider};
use datafusion::error::Result;
use parking_lot::RwLock;
use strata_engine::{TableKind, Tables};

use crate::series_table::{LayoutCache, SeriesTable};
use crate::stream_table::StreamTable;

/// The schema every database's tables live in.
pub const PUBLIC_SCHEMA: &str = "public";

/// Every database of a data directory.
pub struct DatabaseList {
    tables: Arc<dyn Tables>,
    /// One catalog object per database, so schemas registered on it (a
    /// session's `pg_catalog`) stay.
    catalogs: RwLock<HashMap<String, Arc<DatabaseCatalog>>>,
    /// Measurement layouts, shared by every database's schema.
    layouts: Arc<LayoutCache>,
}

impl std::fmt::Debug for DatabaseList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DatabaseList")
    }
}

impl DatabaseList {
    pub fn new(tables: Arc<dyn Tables>) -> DatabaseList {
        DatabaseList { tables, catalogs: RwLock::new(HashMap::new()), layouts: Arc::default() }
    }

    /// Whether `db` exists.
    pub fn has(&self, db: &str) -> bool {
        self.tables.list_databases().iter().any(|d| d == db)
    }

    /// The catalog of `db` (which need not exist yet: it holds no tables then).
    pub fn database(&self, db: &str) -> Arc<DatabaseCatalog> {
        if let Some(c) = self.catalogs.read().get(db) {
            return c.clone();
        }
        let mut catalogs = self.catalogs.write();
        catalogs
            .entry(db.to_string())
            .or_insert_with(|| {
                Arc::new(DatabaseCatalog {
                    public: Arc::new(PublicSchema {
                        tables: self.tables.clone(),
                        db: db.to_string(),
                        layouts: self.layouts.clone(),
                    }),
                    others: RwLock::new(HashMap::new()),
                })
            })
            .clone()
    }
}

impl CatalogProviderList for DatabaseList {
    /// Databases are created by writes, not by registering catalogs.
    fn register_catalog(
        &self,
        _name: String,
        _catalog: Arc<dyn CatalogProvider>,
    ) -> Option<Arc<dyn CatalogProvider>> {
        None
    }

    fn catalog_names(&self) -> Vec<String> {
        self.tables.list_databases()
    }

    fn catalog(&self, name: &str) -> Option<Arc<dyn CatalogProvider>> {
        let known = self.has(name) || self.catalogs.read().contains_key(name);
        known.then(|| self.database(name) as Arc<dyn CatalogProvider>)
    }
}

/// One database: `public` and the schemas sessions register (`pg_catalog`).
#[derive(Debug)]
pub struct DatabaseCatalog {
    public: Arc<PublicSchema>,
    others: RwLock<HashMap<String, Arc<dyn SchemaProvider>>>,
}

impl CatalogProvider for DatabaseCatalog {
    fn schema_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.others.read().keys().cloned().collect();
        names.push(PUBLIC_SCHEMA.to_string());
        names.sort();
        names
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        match name {
            PUBLIC_SCHEMA => Some(self.public.clone()),
            other => self.others.read().get(other).cloned(),
        }
    }

    fn register_schema(
        &self,
        name: &str,
        schema: Arc<dyn SchemaProvider>,
    ) -> Result<Option<Arc<dyn SchemaProvider>>> {
        if name == PUBLIC_SCHEMA {
            return Err(datafusion::error::DataFusionError::Plan(
                "the public schema holds the database's tables and cannot be replaced".to_string(),
            ));
        }
        Ok(self.others.write().insert(name.to_string(), schema))
    }
}

/// A database's tables of every kind.
pub struct PublicSchema {
    tables: Arc<dyn Tables>,
    db: String,
    layouts: Arc<LayoutCache>,
}

impl std::fmt::Debug for PublicSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicSchema({})", self.db)
    }
}

#[async_trait]
impl SchemaProvider for PublicSchema {
    fn table_names(&self) -> Vec<String> {
        self.tables
            .tables(&self.db)
            .map(|t| t.into_iter().map(|(name, _)| name).collect())
            .unwrap_or_default()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        Ok(match self.tables.kind_of(&self.db, name) {
            None => None,
            Some(TableKind::Series) => {
                Some(Arc::new(SeriesTable::open(self.tables.clone(), &self.db, name, &self.layouts)?))
            }
            Some(TableKind::EventStream) => {
                Some(Arc::new(StreamTable::open(self.tables.clone(), &self.db, name)?))
            }
        })
    }

    fn table_exist(&self, name: &str) -> bool {
        self.tables.kind_of(&self.db, name).is_some()
    }
}
