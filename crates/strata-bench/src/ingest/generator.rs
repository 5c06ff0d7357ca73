//! The ingest benchmark's data: a deterministic TSBS-like `cpu-only` data
//! set. Each host has ten tags (hostname, region, datacenter, rack, os, arch,
//! team, service, service_version, service_environment, drawn as TSBS draws
//! them) and reports one row every 10 s with ten float fields (`usage_user`
//! ... `usage_guest_nice`), each a bounded random walk in [0, 100] with two
//! decimals. Rows are ordered by time, then host.
//!
//! Everything is derived from the seed: host `h` draws its tags, initial
//! values and steps from its own ChaCha8 stream `h`, so the bytes do not
//! depend on how generation is split up. Lines are written straight into
//! byte buffers; [`super::dataset`] cuts them into request bodies.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Measurement of every row of the counted load.
pub const MEASUREMENT: &str = "cpu";
/// Measurement of the uncounted warm-up load ([`super::warmup`]): new
/// series on every system, and a table of its own on QuestDB.
pub const WARMUP_MEASUREMENT: &str = "cpu_warmup";
/// The ten fields of a row, in TSBS's order.
pub const FIELD_NAMES: [&str; 10] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
];
/// Fields per row.
pub const FIELDS_PER_ROW: u64 = FIELD_NAMES.len() as u64;
/// Time between two rows of one host (TSBS's default log interval).
pub const INTERVAL_NS: i64 = 10_000_000_000;
/// 2016-01-01T00:00:00Z, TSBS's default start.
pub const DEFAULT_START_NS: i64 = 1_451_606_400_000_000_000;
/// Field values are kept in hundredths: 0.00 ..= 100.00.
const MAX_HUNDREDTHS: i32 = 10_000;
/// Largest step of one walk between two rows (1.00).
const MAX_STEP_HUNDREDTHS: i32 = 100;

const REGIONS: [(&str, &[&str]); 9] = [
    ("us-east-1", &["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"]),
    ("us-west-1", &["us-west-1a", "us-west-1b"]),
    ("us-west-2", &["us-west-2a", "us-west-2b", "us-west-2c"]),
    ("eu-west-1", &["eu-west-1a", "eu-west-1b", "eu-west-1c"]),
    ("eu-central-1", &["eu-central-1a", "eu-central-1b"]),
    ("ap-southeast-1", &["ap-southeast-1a", "ap-southeast-1b"]),
    ("ap-southeast-2", &["ap-southeast-2a", "ap-southeast-2b"]),
    ("ap-northeast-1", &["ap-northeast-1a", "ap-northeast-1c"]),
    ("sa-east-1", &["sa-east-1a", "sa-east-1b", "sa-east-1c"]),
];
const OSES: [&str; 3] = ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"];
const ARCHES: [&str; 2] = ["x64", "x86"];
const TEAMS: [&str; 4] = ["SF", "NYC", "LON", "CHI"];
const ENVIRONMENTS: [&str; 3] = ["production", "staging", "test"];
const RACKS: u32 = 100;
const SERVICES: u32 = 20;
const SERVICE_VERSIONS: u32 = 2;

/// What to generate. Equal specs give equal bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CpuSpec {
    pub seed: u64,
    pub hosts: u32,
    pub rows_per_host: u64,
    pub start_ns: i64,
    pub interval_ns: i64,
}

impl CpuSpec {
    pub fn new(seed: u64, hosts: u32, rows_per_host: u64) -> CpuSpec {
        CpuSpec { seed, hosts, rows_per_host, start_ns: DEFAULT_START_NS, interval_ns: INTERVAL_NS }
    }

    /// Rows (lines, InfluxDB points) in the data set.
    pub fn rows(&self) -> u64 {
        self.hosts as u64 * self.rows_per_host
    }

    /// Field values in the data set.
    pub fn values(&self) -> u64 {
        self.rows() * FIELDS_PER_ROW
    }

    /// Timestamp of the last row, `None` when it does not fit in an i64.
    pub fn end_ns(&self) -> Option<i64> {
        let steps = i64::try_from(self.rows_per_host.saturating_sub(1)).ok()?;
        self.start_ns.checked_add(steps.checked_mul(self.interval_ns)?)
    }

    pub fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.hosts >= 1, "at least one host");
        anyhow::ensure!(self.rows_per_host >= 1, "at least one row per host");
        anyhow::ensure!(self.interval_ns >= 1, "the interval must be positive");
        anyhow::ensure!(self.end_ns().is_some(), "the last timestamp does not fit in 64 bits");
        Ok(())
    }
}

/// One host's state: its line prefix (`cpu,<tags> `), its walks and its stream.
struct Host {
    prefix: Vec<u8>,
    hundredths: [i32; FIELD_NAMES.len()],
    rng: ChaCha8Rng,
}

impl Host {
    fn new(seed: u64, index: u32, measurement: &str) -> Host {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(index as u64);
        let (region, datacenters) = REGIONS[rng.gen_range(0..REGIONS.len())];
        let datacenter = datacenters[rng.gen_range(0..datacenters.len())];
        let tags: [(&str, String); 10] = [
            ("hostname", format!("host_{index}")),
            ("region", region.to_string()),
            ("datacenter", datacenter.to_string()),
            ("rack", rng.gen_range(0..RACKS).to_string()),
            ("os", OSES[rng.gen_range(0..OSES.len())].to_string()),
            ("arch", ARCHES[rng.gen_range(0..ARCHES.len())].to_string()),
            ("team", TEAMS[rng.gen_range(0..TEAMS.len())].to_string()),
            ("service", rng.gen_range(0..SERVICES).to_string()),
            ("service_version", rng.gen_range(0..SERVICE_VERSIONS).to_string()),
            ("service_environment", ENVIRONMENTS[rng.gen_range(0..ENVIRONMENTS.len())].to_string()),
        ];
        let mut prefix = measurement.as_bytes().to_vec();
        for (k, v) in &tags {
            prefix.push(b',');
            prefix.extend_from_slice(k.as_bytes());
            prefix.push(b'=');
            prefix.extend_from_slice(v.as_bytes());
        }
        prefix.push(b' ');
        let mut hundredths = [0; FIELD_NAMES.len()];
        for h in &mut hundredths {
            *h = rng.gen_range(0..=MAX_HUNDREDTHS);
        }
        Host { prefix, hundredths, rng }
    }

    /// Appends this host's next row at `timestamp_ns`, then steps its walks.
    fn write_row(&mut self, timestamp_ns: i64, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.prefix);
        for (i, (name, value)) in FIELD_NAMES.iter().zip(self.hundredths).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(name.as_bytes());
            out.push(b'=');
            push_hundredths(out, value);
        }
        out.push(b' ');
        push_i64(out, timestamp_ns);
        out.push(b'\n');
        for h in &mut self.hundredths {
            let step = self.rng.gen_range(-MAX_STEP_HUNDREDTHS..=MAX_STEP_HUNDREDTHS);
            *h = (*h + step).clamp(0, MAX_HUNDREDTHS);
        }
    }
}

/// `1234` -> `12.34`, `5` -> `0.05`.
fn push_hundredths(out: &mut Vec<u8>, hundredths: i32) {
    debug_assert!((0..=MAX_HUNDREDTHS).contains(&hundredths));
    push_i64(out, (hundredths / 100) as i64);
    let frac = (hundredths % 100) as u8;
    out.extend_from_slice(&[b'.', b'0' + frac / 10, b'0' + frac % 10]);
}

/// Decimal digits of `v` without allocating.
fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    let mut n = v.unsigned_abs();
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Streams the rows of a [`CpuSpec`] in order (time, then host).
pub struct CpuGenerator {
    spec: CpuSpec,
    hosts: Vec<Host>,
    next_row: u64,
}

impl CpuGenerator {
    pub fn new(spec: CpuSpec) -> CpuGenerator {
        CpuGenerator::with_measurement(spec, MEASUREMENT)
    }

    /// The same rows under another measurement name.
    pub fn with_measurement(spec: CpuSpec, measurement: &str) -> CpuGenerator {
        let hosts = (0..spec.hosts).map(|h| Host::new(spec.seed, h, measurement)).collect();
        CpuGenerator { spec, hosts, next_row: 0 }
    }

    /// Rows not generated yet.
    pub fn remaining_rows(&self) -> u64 {
        self.spec.rows() - self.next_row
    }

    /// Appends up to `max_rows` lines to `out`; returns how many it wrote.
    pub fn write_rows(&mut self, max_rows: u64, out: &mut Vec<u8>) -> u64 {
        let n = max_rows.min(self.remaining_rows());
        let hosts = self.spec.hosts as u64;
        for row in self.next_row..self.next_row + n {
            let (step, host) = (row / hosts, (row % hosts) as usize);
            // `check` made sure the last timestamp fits.
            let timestamp_ns = self.spec.start_ns + step as i64 * self.spec.interval_ns;
            self.hosts[host].write_row(timestamp_ns, out);
        }
        self.next_row += n;
        n
    }

    /// An upper bound on the bytes of one line: the longest host prefix,
    /// every field at its widest (`100.00`) and a 20-character timestamp.
    pub fn max_line_bytes(&self) -> usize {
        let prefix = self.hosts.iter().map(|h| h.prefix.len()).max().unwrap_or(0);
        let fields: usize = FIELD_NAMES.iter().map(|f| f.len() + "=100.00".len()).sum();
        let commas = FIELD_NAMES.len() - 1;
        prefix + fields + commas + " ".len() + "-9223372036854775808".len() + "\n".len()
    }
}
