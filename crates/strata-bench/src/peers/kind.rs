//! Which peers exist (DESIGN.md section 6: the systems a user would pick
//! instead of Strata for time series), their names on the command line, the
//! Debian package or Maven artifact each comes from, and the durability each
//! acknowledgement gives as the benchmark configures it.

use std::fmt;
use std::str::FromStr;

use crate::ingest::http_client::HttpUrl;
use crate::ingest::queries::QueryTarget;

/// QuestDB release fetched from Maven Central: its jar bundles the native
/// libraries for linux-x86-64, its classes are Java 17 bytecode (it runs on
/// Debian bookworm's OpenJDK 17), and it accepts line protocol over HTTP on
/// `/write` (ILP over HTTP exists since 7.4).
pub const QUESTDB_VERSION: &str = "9.3.4";

/// A peer time-series database.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PeerKind {
    /// InfluxDB 1.x, Debian package `influxdb`.
    InfluxDb,
    /// VictoriaMetrics single-node, Debian package `victoria-metrics`.
    VictoriaMetrics,
    /// QuestDB, jar `org.questdb:questdb` from Maven Central, run on Java 17.
    QuestDb,
}

impl PeerKind {
    /// Every peer, in the order runs alternate.
    pub const ALL: [PeerKind; 3] = [PeerKind::InfluxDb, PeerKind::VictoriaMetrics, PeerKind::QuestDb];

    /// Name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            PeerKind::InfluxDb => "influxdb",
            PeerKind::VictoriaMetrics => "victoriametrics",
            PeerKind::QuestDb => "questdb",
        }
    }

    /// Where it comes from, for messages and the report.
    pub fn source(self) -> String {
        match self {
            PeerKind::InfluxDb => "Debian package influxdb (/usr/bin/influxd)".into(),
            PeerKind::VictoriaMetrics => "Debian package victoria-metrics (/usr/bin/victoria-metrics)".into(),
            PeerKind::QuestDb => {
                format!(
                    "Maven Central org.questdb:questdb:{QUESTDB_VERSION} (jar), run on the machine's Java"
                )
            }
        }
    }

    /// Where and how the TSBS-style queries ask it (InfluxDB: InfluxQL,
    /// QuestDB: its SQL; VictoriaMetrics has neither: `None`).
    pub fn query_target(self, url: &HttpUrl) -> Option<QueryTarget> {
        match self {
            PeerKind::InfluxDb => Some(QueryTarget::InfluxQl(url.clone())),
            PeerKind::QuestDb => Some(QueryTarget::QuestDbSql(url.clone())),
            PeerKind::VictoriaMetrics => None,
        }
    }

    /// What a 204 to a write means for durability, as the benchmark runs it.
    pub fn durability(self) -> &'static str {
        match self {
            PeerKind::InfluxDb => {
                "WAL appended and fsynced before the 204 (wal-fsync-delay = \"0s\", the default, set explicitly)"
            }
            PeerKind::VictoriaMetrics => {
                "not durable at the 204: samples are buffered in memory and flushed to disk about every second (no WAL)"
            }
            PeerKind::QuestDb => {
                "WAL table, cairo.commit.mode=nosync (the default): committed to memory-mapped WAL files before the 204, not fsynced (survives a process crash, not power loss)"
            }
        }
    }
}

impl fmt::Display for PeerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PeerKind {
    type Err = String;

    fn from_str(s: &str) -> Result<PeerKind, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "influxdb" | "influx" | "influxdb1" => Ok(PeerKind::InfluxDb),
            "victoriametrics" | "victoria-metrics" | "vm" => Ok(PeerKind::VictoriaMetrics),
            "questdb" => Ok(PeerKind::QuestDb),
            other => Err(format!("unknown peer {other:?}: expected influxdb, victoriametrics or questdb")),
        }
    }
}

/// Parses `influxdb,questdb` (comma-separated, duplicates dropped, order
/// kept); an empty list or the word `all` means every peer.
pub fn parse_peer_list(text: &str) -> Result<Vec<PeerKind>, String> {
    let text = text.trim();
    if text.is_empty() || text.eq_ignore_ascii_case("all") {
        return Ok(PeerKind::ALL.to_vec());
    }
    let mut peers = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let kind: PeerKind = part.parse()?;
        if !peers.contains(&kind) {
            peers.push(kind);
        }
    }
    if peers.is_empty() {
        return Err(format!("no peer named in {text:?}"));
    }
    Ok(peers)
}
