//! What `strata serve` gives the HTTP server beyond the store: checkpoint on
//! shutdown, health, and the engine's metrics in Prometheus text format
//! (log bytes, checkpoints, recovery phases, PMem persist counts), written
//! with `strata_server::prometheus`.

use std::fmt::Write;
use std::sync::Arc;

use strata_engine::backup::BackupError;
use strata_engine::Db;
use strata_series::EngineError;
use strata_server::prometheus::{header, metric};
use strata_server::{BackupHookError, EngineHooks};

pub struct DbHooks(pub Arc<Db>);

impl EngineHooks for DbHooks {
    fn checkpoint(&self) -> Result<String, EngineError> {
        self.0.stop_background_checkpoints();
        let report = self.0.engine().checkpoint()?.to_string();
        let streams = self.0.streams().sync_to_media()?;
        Ok(if streams == 0 { report } else { format!("{report}; {streams} event streams synced to media") })
    }

    fn backup(&self, dir: &std::path::Path) -> Result<String, BackupHookError> {
        match self.0.backup(dir) {
            Ok(m) => Ok(format!(
                "backup of checkpoint {} ({} files) written to {}",
                m.checkpoint_seq,
                m.files.len(),
                dir.display()
            )),
            Err(e @ (BackupError::BackupDirNotEmpty(_) | BackupError::TargetNotEmpty(_))) => {
                Err(BackupHookError::Refused(Box::new(e)))
            }
            Err(e) => Err(BackupHookError::Failed(Box::new(e))),
        }
    }

    fn unhealthy_because(&self) -> Option<String> {
        self.0.engine().writes_stopped().map(|why| format!("writes stopped after a log failure: {why}"))
    }

    fn failed_parts(&self) -> Vec<(String, String)> {
        let failed = self.0.streams().failed().into_iter();
        failed
            .map(|f| (format!("stream {}/{}", f.db, f.name), format!("failed to recover: {}", f.reason)))
            .collect()
    }

    fn metrics_text(&self, out: &mut String) {
        let s = self.0.engine().stats();
        let r = self.0.recovery();
        header(out, "strata_commit_protocol_info", "gauge", "The configured commit protocol.");
        let _ = writeln!(out, "strata_commit_protocol_info{{protocol=\"{}\"}} 1", s.protocol);
        metric(
            out,
            "strata_engine_txns_committed_total",
            "counter",
            "Transactions committed by the engine.",
            s.txns_committed,
        );
        metric(
            out,
            "strata_engine_points_written_total",
            "counter",
            "Points committed by the engine.",
            s.points_written,
        );
        metric(
            out,
            "strata_engine_values_written_total",
            "counter",
            "Field values committed by the engine.",
            s.values_written,
        );
        metric(
            out,
            "strata_log_bytes_written_total",
            "counter",
            "Bytes of log records written.",
            s.log_bytes_written,
        );
        metric(
            out,
            "strata_log_bytes",
            "gauge",
            "Bytes of log since the last checkpoint.",
            s.log_bytes_since_checkpoint,
        );
        metric(out, "strata_series", "gauge", "Series in the index.", s.series);
        let failed = self.0.streams().failed();
        metric(
            out,
            "strata_streams_failed",
            "gauge",
            "Event streams that failed to recover at startup (out of service).",
            failed.len() as u64,
        );
        if !failed.is_empty() {
            header(out, "strata_stream_failed_info", "gauge", "An event stream that failed to recover.");
            for f in &failed {
                let _ = writeln!(out, "strata_stream_failed_info{{db=\"{}\",stream=\"{}\"}} 1", f.db, f.name);
            }
        }
        metric(out, "strata_databases", "gauge", "Databases.", s.databases);
        metric(out, "strata_dram_points", "gauge", "Points held in open blocks in DRAM.", s.dram_points);
        metric(out, "strata_dram_bytes", "gauge", "Compressed bytes of open blocks in DRAM.", s.dram_bytes);
        metric(out, "strata_block_files", "gauge", "Live block files on SSD.", s.block_files);
        metric(
            out,
            "strata_block_file_bytes",
            "gauge",
            "Bytes of live block files on SSD.",
            s.block_file_bytes,
        );
        metric(out, "strata_checkpoints_total", "counter", "Checkpoints taken since start.", s.checkpoints);
        metric(
            out,
            "strata_checkpoint_last_seconds",
            "gauge",
            "Duration of the last checkpoint.",
            s.last_checkpoint_s,
        );
        let help = "Duration of each recovery phase at the last start.";
        header(out, "strata_recovery_seconds", "gauge", help);
        for (phase, v) in [
            ("manifest", r.manifest_s),
            ("block_files", r.block_files_s),
            ("replay", r.replay_s),
            ("total", r.total_s),
        ] {
            let _ = writeln!(out, "strata_recovery_seconds{{phase=\"{phase}\"}} {v}");
        }
        metric(
            out,
            "strata_recovery_log_records",
            "gauge",
            "Log records replayed at the last start.",
            r.log_records - r.log_records_skipped,
        );
        if let Some(region) = self.0.region() {
            let p = region.stats();
            metric(
                out,
                "strata_pmem_lines_flushed_total",
                "counter",
                "Cache lines written back to the PMem pool.",
                p.lines_flushed,
            );
            metric(out, "strata_pmem_fences_total", "counter", "Store fences on the PMem pool.", p.fences);
            metric(
                out,
                "strata_pmem_bytes_persisted_total",
                "counter",
                "Bytes persisted to the PMem pool.",
                p.bytes_persisted,
            );
            metric(
                out,
                "strata_pmem_media_blocks_total",
                "counter",
                "256-byte media blocks touched per fence window.",
                p.media_blocks_written,
            );
        }
    }
}
