//! What every handler shares: the store, the engine hooks, the configuration
//! and the metrics.

use std::sync::Arc;

use strata_series::SeriesStore;

use crate::config::ServerConfig;
use crate::hooks::EngineHooks;
use crate::metrics::Metrics;

pub struct AppState {
    pub store: Arc<dyn SeriesStore>,
    pub hooks: Arc<dyn EngineHooks>,
    pub config: ServerConfig,
    pub metrics: Metrics,
}
