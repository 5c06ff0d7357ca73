//! How a series engine is opened: where its SSD files live, its limits and
//! when it checkpoints. The commit log is opened by the caller (the engine
//! facade decides between PMem, SSD and none) and handed in.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use strata_media::fs::{FileSystem, RealFs};

use crate::core::compact::COMPACT_ABOVE_FILES_DEFAULT;
use crate::core::cut::BLOCK_SPAN_NS_DEFAULT;

#[derive(Clone)]
pub struct EngineOptions {
    /// Directory of the manifest and the block files.
    pub dir: PathBuf,
    pub fs: Arc<dyn FileSystem>,
    /// Writes that would create more series in one database fail.
    pub max_series_per_database: Option<u64>,
    /// Checkpoint once the log holds this many bytes since the last one.
    pub checkpoint_log_bytes: u64,
    /// Checkpoint at least this often while there are new writes (None: only by size).
    pub checkpoint_interval: Option<Duration>,
    /// Past this many open block files (at least 1), the compaction that
    /// follows a checkpoint (`SeriesEngine::compact`) merges the newest
    /// ones (`crate::core::compact`); default
    /// [`COMPACT_ABOVE_FILES_DEFAULT`] (16).
    pub compact_above_files: usize,
    /// Sealed blocks end at the edges of time spans this long, aligned to
    /// the Unix epoch (`crate::core::cut`), so a `GROUP BY time` window of a whole
    /// number of spans, starting on a span edge, is answered from block
    /// summaries; default
    /// [`BLOCK_SPAN_NS_DEFAULT`] (one hour). None: blocks span any time.
    pub block_span_ns: Option<i64>,
}

impl EngineOptions {
    pub fn new(dir: impl Into<PathBuf>) -> EngineOptions {
        EngineOptions {
            dir: dir.into(),
            fs: Arc::new(RealFs::new()),
            max_series_per_database: None,
            checkpoint_log_bytes: 64 << 20,
            checkpoint_interval: Some(Duration::from_secs(300)),
            compact_above_files: COMPACT_ABOVE_FILES_DEFAULT,
            block_span_ns: Some(BLOCK_SPAN_NS_DEFAULT),
        }
    }
}
