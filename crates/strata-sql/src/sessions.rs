//! One DataFusion session per database (issue 19, "A Strata database is a
//! PostgreSQL database"): its default catalog is the database and its
//! default schema `public`, it sees every database's catalog (so `\l` lists
//! them and `other_db.public.t` resolves), and it carries the `pg_catalog`
//! schema and functions psql, Grafana and DBeaver query. Connections to one
//! database share its session; sessions are made on first use.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::catalog::CatalogProvider;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_postgres::datafusion_pg_catalog::pg_catalog::context::EmptyContextProvider;
use datafusion_postgres::datafusion_pg_catalog::pg_catalog::setup_pg_catalog;
use datafusion_postgres::DfSessionService;
use parking_lot::Mutex;
use strata_engine::Tables;

use crate::catalog::{DatabaseList, PUBLIC_SCHEMA};
use crate::error::SqlError;
use crate::gapfill::rule::GapFillRule;
use crate::info_schema::{PgInformationSchema, INFORMATION_SCHEMA};
use crate::planner::StrataQueryPlanner;
use crate::stream_aggregate::StreamAggregateRule;

/// DataFusion's plan parallelism. Every table scan is one partition (the
/// engine reads series one window at a time), so more partitions only add
/// repartitioning between the scan and the aggregates; one was faster on
/// the TSBS queries (docs/sql.md, "The TSBS cpu-only queries").
pub const TARGET_PARTITIONS: usize = 1;

/// The sessions of a server, by database.
pub struct Sessions {
    databases: Arc<DatabaseList>,
    by_db: Mutex<HashMap<String, Arc<DfSessionService>>>,
}

impl Sessions {
    pub fn new(tables: Arc<dyn Tables>) -> Sessions {
        Sessions { databases: Arc::new(DatabaseList::new(tables)), by_db: Mutex::new(HashMap::new()) }
    }

    /// The catalog list every session reads.
    pub fn databases(&self) -> &Arc<DatabaseList> {
        &self.databases
    }

    /// The session of `db`, made on first use; an error if `db` does not exist.
    pub fn service(&self, db: &str) -> Result<Arc<DfSessionService>, SqlError> {
        if let Some(s) = self.by_db.lock().get(db) {
            return Ok(s.clone());
        }
        if !self.databases.has(db) {
            return Err(SqlError::UnknownDatabase(db.to_string()));
        }
        let ctx = Arc::new(self.context(db)?);
        let service = Arc::new(DfSessionService::new(ctx));
        Ok(self.by_db.lock().entry(db.to_string()).or_insert(service).clone())
    }

    /// A DataFusion context over every database, defaulting to `db`.
    pub fn context(&self, db: &str) -> Result<SessionContext, SqlError> {
        let config = SessionConfig::new()
            .with_default_catalog_and_schema(db, PUBLIC_SCHEMA)
            .with_create_default_catalog_and_schema(false)
            // Ours (PostgreSQL type names) is registered below instead.
            .with_information_schema(false)
            .with_target_partitions(TARGET_PARTITIONS);
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_catalog_list(self.databases.clone())
            .with_default_features()
            .with_analyzer_rule(Arc::new(GapFillRule))
            .with_optimizer_rule(Arc::new(StreamAggregateRule))
            .with_query_planner(Arc::new(StrataQueryPlanner))
            .build();
        let ctx = SessionContext::new_with_state(state);
        let information_schema = Arc::new(PgInformationSchema::new(&self.databases));
        self.databases
            .database(db)
            .register_schema(INFORMATION_SCHEMA, information_schema)
            .map_err(|e| SqlError::Setup(e.to_string()))?;
        setup_pg_catalog(&ctx, db, EmptyContextProvider).map_err(|e| SqlError::Setup(e.to_string()))?;
        crate::functions::register(&ctx);
        Ok(ctx)
    }
}
