//! What every handler shares: the table catalog, the engine hooks, the configuration,
//! the metrics and the parsed-request vectors kept between writes.

use std::sync::Arc;

use strata_engine::Tables;

use crate::batch_pool::BatchPool;
use crate::config::ServerConfig;
use crate::hooks::EngineHooks;
use crate::metrics::Metrics;

pub struct AppState {
    /// The engine facade's table catalog (series, event streams).
    pub store: Arc<dyn Tables>,
    pub hooks: Arc<dyn EngineHooks>,
    pub config: ServerConfig,
    pub metrics: Arc<Metrics>,
    pub batches: BatchPool,
}
