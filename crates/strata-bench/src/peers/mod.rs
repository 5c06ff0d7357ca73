//! Peers (DESIGN.md section 6): the time-series databases a user would pick
//! instead of Strata, run on the same machine with the same data so that
//! `strata bench ingest --peers` can compare them side by side.
//!
//! - [`kind`]: InfluxDB 1.x and VictoriaMetrics (Debian packages) and QuestDB
//!   (jar from Maven Central); names, sources, durability of an acknowledgement;
//! - [`install`]: `apt-get install -y` when a binary is missing (printed, root
//!   only), the QuestDB jar cached under `~/.cache/strata-bench/`, versions;
//! - [`config`]: generated configuration files and command lines (loopback,
//!   free ports, a temporary root directory per run);
//! - [`process`]: start, wait for the health endpoint, stop; `Drop` kills;
//! - [`interrupt`]: Ctrl-C kills registered peers and removes their directories;
//! - [`disk`]: allocated bytes of a data directory and waiting for it to settle;
//! - [`count`]: counting rows in each peer's query language;
//! - [`server`]: a running peer as an ingest endpoint, and its quiesce step.
//!
//! Nothing here installs or starts anything from `cargo test` unless the
//! peer is already on the machine (tests skip with a printed reason).

pub mod config;
pub mod count;
pub mod disk;
pub mod install;
pub mod interrupt;
pub mod kind;
pub mod process;
pub mod server;

#[cfg(test)]
mod tests;

pub use install::{ensure_installed, why_not_installed, Installed};
pub use kind::{parse_peer_list, PeerKind, QUESTDB_VERSION};
pub use server::{warmup_bytes_at_rest, AtRest, PeerEndpoint, Quiesced, RunningPeer};
