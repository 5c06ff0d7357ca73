//! The ingest benchmark's data set as request bodies: [`BatchStream`] cuts
//! the rows of a [`CpuGenerator`] into bodies of `batch_lines` whole lines,
//! one at a time, on the fly; a [`Dataset`] is either those bodies
//! generated up front and kept ([`Dataset::generate`]: generation never
//! timed) or only their description, streamed afresh during every load
//! ([`Dataset::streamed`]: memory does not grow with the load, the
//! `--scale large` load). Both come from the same stream, so the same spec
//! and batch size give the same bodies either way.

use super::generator::{CpuGenerator, CpuSpec, FIELDS_PER_ROW, MEASUREMENT};

/// Bytes reserved per line of a new body (lines are about 365 bytes).
const BODY_BYTES_PER_LINE: usize = 400;

/// One request body: whole lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub body: Vec<u8>,
    pub lines: u64,
}

/// The bodies of a data set, generated one at a time: only the body being
/// written is held, whatever the size of the data set.
pub struct BatchStream {
    generator: CpuGenerator,
    batch_lines: u64,
}

impl BatchStream {
    pub fn new(spec: &CpuSpec, batch_lines: u64, measurement: &str) -> BatchStream {
        BatchStream { generator: CpuGenerator::with_measurement(spec.clone(), measurement), batch_lines }
    }

    /// An upper bound on the bytes of any body of the stream.
    pub fn max_body_bytes(&self) -> usize {
        let lines = self.batch_lines.min(self.generator.remaining_rows().max(1));
        usize::try_from(lines).unwrap_or(usize::MAX).saturating_mul(self.generator.max_line_bytes())
    }
}

impl Iterator for BatchStream {
    type Item = Batch;

    fn next(&mut self) -> Option<Batch> {
        let remaining = self.generator.remaining_rows();
        if remaining == 0 {
            return None;
        }
        let mut body = Vec::with_capacity(self.batch_lines.min(remaining) as usize * BODY_BYTES_PER_LINE);
        let lines = self.generator.write_rows(self.batch_lines, &mut body);
        Some(Batch { body, lines })
    }
}

/// Where a data set's bodies are.
#[derive(Clone, Debug)]
pub enum Bodies {
    /// Generated before any load and kept in memory.
    Stored(Vec<Batch>),
    /// Generated during each load by a [`BatchStream`].
    Streamed,
}

/// A data set cut into request bodies.
#[derive(Clone, Debug)]
pub struct Dataset {
    pub spec: CpuSpec,
    /// [`MEASUREMENT`], or [`super::generator::WARMUP_MEASUREMENT`] for the warm-up.
    pub measurement: String,
    pub batch_lines: u64,
    pub bodies: Bodies,
}

impl Dataset {
    /// Every body generated now (so generation is never timed).
    pub fn generate(spec: &CpuSpec, batch_lines: u64) -> anyhow::Result<Dataset> {
        Dataset::generate_as(spec, batch_lines, MEASUREMENT)
    }

    /// [`Dataset::generate`] with every line in `measurement`.
    pub fn generate_as(spec: &CpuSpec, batch_lines: u64, measurement: &str) -> anyhow::Result<Dataset> {
        let mut d = Dataset::streamed_as(spec, batch_lines, measurement)?;
        d.bodies = Bodies::Stored(d.stream().collect());
        Ok(d)
    }

    /// Nothing generated now: every load streams the bodies afresh.
    pub fn streamed(spec: &CpuSpec, batch_lines: u64) -> anyhow::Result<Dataset> {
        Dataset::streamed_as(spec, batch_lines, MEASUREMENT)
    }

    /// [`Dataset::streamed`] with every line in `measurement`.
    pub fn streamed_as(spec: &CpuSpec, batch_lines: u64, measurement: &str) -> anyhow::Result<Dataset> {
        spec.check()?;
        anyhow::ensure!(batch_lines >= 1, "a batch holds at least one line");
        Ok(Dataset {
            spec: spec.clone(),
            measurement: measurement.to_string(),
            batch_lines,
            bodies: Bodies::Streamed,
        })
    }

    /// The bodies from the first, generated afresh.
    pub fn stream(&self) -> BatchStream {
        BatchStream::new(&self.spec, self.batch_lines, &self.measurement)
    }

    /// The bodies, if they were generated up front.
    pub fn stored(&self) -> Option<&[Batch]> {
        match &self.bodies {
            Bodies::Stored(b) => Some(b),
            Bodies::Streamed => None,
        }
    }

    pub fn rows(&self) -> u64 {
        self.spec.rows()
    }

    pub fn values(&self) -> u64 {
        self.rows() * FIELDS_PER_ROW
    }

    /// Requests (bodies) per load.
    pub fn requests(&self) -> u64 {
        self.rows().div_ceil(self.batch_lines)
    }

    /// Bytes of line protocol over all bodies, when they are stored (a
    /// streamed load counts them as it sends: [`super::load::LoadOutcome`]).
    pub fn body_bytes(&self) -> Option<u64> {
        self.stored().map(|b| b.iter().map(|b| b.body.len() as u64).sum())
    }

    /// Bytes of the largest body (an upper bound when streamed).
    pub fn max_body_bytes(&self) -> usize {
        match self.stored() {
            Some(b) => b.iter().map(|b| b.body.len()).max().unwrap_or(0),
            None => self.stream().max_body_bytes(),
        }
    }
}
