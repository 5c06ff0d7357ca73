//! The PMem run of the transactional-table crash lines: the workload
//! (`crate::txn_workload`, driven by `crate::txn_driver`) on one simulated
//! region per log (`LogDeviceKind::Regions`) with crash-point capture on,
//! and for every wave what each region's crash points show.
//!
//! A log's append is one write, one flush and one fence (`PmemLogDevice`),
//! and between waves every log manager is idle. The capture cuts the run
//! into *segments*, each a [`CapturedWave`] (the images of `crate::txn_pmem`
//! go by segment): what the regions show between two calls of the driver
//! that find every log idle (`flush`, once a wave's records are written,
//! and `quiet`, after a wave or an open). In a segment each region is
//! appended to at most once, so it shows exactly three points (after the
//! flush, before the fence, after it): its image before the segment, and
//! the append's words uncertain (old or new each) until the fence. Fences
//! that change nothing (an open's truncation of an empty tail) are left
//! out, and a segment where no region changed is none. Taurus and serial
//! waves are one segment (their records); a Silo-R wave is two, its
//! records and then the epoch marks the first wait wrote; a Silo-R open is
//! one, the barrier it writes to every log. The capture checks that shape,
//! so the images of `crate::txn_pmem` (every combination of the regions'
//! states within a segment) are exactly the states a schedule of the
//! managers can reach. Acknowledgements are stamped with every region's
//! operation count.

use crate::error::CrashCheckError;
use std::sync::Arc;

use parking_lot::Mutex;
use strata_media::TxnId;
use strata_pmem::crash::CrashPoint;
use strata_pmem::{Region, SimOpKind};
use strata_txn::planted::PlantedBug;
use strata_txn::LogDeviceKind;

use crate::txn_driver::{db_options, run_session, WaveMedium};
use crate::txn_lines::TxnLogging;
use crate::txn_workload::SessionPlan;

/// A word a wave's append changed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct ChangedWord {
    pub offset: usize,
    pub new: u64,
}

/// One region (log) in one wave.
#[derive(Clone, Debug)]
pub(crate) struct RegionWave {
    /// Its persistent image when the wave began.
    pub before: Arc<Vec<u8>>,
    /// The words its append changed (none if the wave did not touch it).
    pub words: Vec<ChangedWord>,
    /// Its operation count after the append's flush (its words uncertain).
    pub flush_op: Option<u64>,
    /// Its next flush after this wave (`u64::MAX`: none): until then its
    /// image after the wave is current.
    pub next_flush_op: u64,
}

/// One segment of a session (module comment).
#[derive(Clone, Debug)]
pub(crate) struct CapturedWave {
    pub session: usize,
    /// The session's first segment (its all-old image is the empty database).
    pub first: bool,
    pub regions: Vec<RegionWave>,
}

/// An acknowledgement and every region's operation count at that moment.
#[derive(Clone, Debug)]
pub(crate) struct PmemAck {
    pub txn: TxnId,
    pub session: usize,
    pub stamps: Vec<u64>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Capture {
    pub waves: Vec<CapturedWave>,
    pub acks: Vec<PmemAck>,
    /// Simulator crash points taken, over all regions.
    pub sim_points: u64,
    /// Why the run failed, if it did.
    pub failure: Option<String>,
}

struct MediumState {
    current: Vec<Arc<Vec<u8>>>,
    /// No segment captured yet in this session.
    none_yet: bool,
    waves: Vec<CapturedWave>,
    acks: Vec<PmemAck>,
    sim_points: u64,
}

struct PmemMedium {
    session: usize,
    regions: Vec<Arc<Region>>,
    state: Mutex<MediumState>,
}

fn sim(region: &Region) -> &strata_pmem::SimRegion {
    region.as_sim().expect("the txn PMem lines run on simulator regions")
}

/// The crash points since the last call (the medium is quiet) that change
/// something: a point with no uncertain word and the persistent image of
/// the point before it (a fence with nothing pending) is left out.
fn drain(region: &Region, before: &Arc<Vec<u8>>) -> (Vec<CrashPoint>, u64) {
    sim(region).set_capture(false);
    let points = sim(region).take_crash_points();
    sim(region).set_capture(true);
    let taken = points.len() as u64;
    let mut last = before.clone();
    let mut kept = Vec::with_capacity(points.len());
    for p in points {
        let idle = p.uncertain.is_empty() && *p.persistent == *last;
        last = p.persistent.clone();
        if !idle {
            kept.push(p);
        }
    }
    (kept, taken)
}

/// What a wave did to log `log`'s region, from its crash points.
fn region_wave(
    log: usize,
    before: Arc<Vec<u8>>,
    points: &[CrashPoint],
) -> Result<RegionWave, CrashCheckError> {
    let untouched =
        RegionWave { before: before.clone(), words: Vec::new(), flush_op: None, next_flush_op: 0 };
    let kinds: Vec<SimOpKind> = points.iter().map(|p| p.kind).collect();
    let [flush, before_fence, fence] = points else {
        return match points {
            [] => Ok(untouched),
            _ => Err(CrashCheckError::inconsistent(format!(
                "log {log}: crash points {kinds:?} in one wave, one append expected"
            ))),
        };
    };
    let shape = kinds == [SimOpKind::Flush, SimOpKind::BeforeFence, SimOpKind::Fence]
        && flush.uncertain == before_fence.uncertain
        && fence.uncertain.is_empty()
        && *flush.persistent == *before;
    if !shape {
        return Err(CrashCheckError::inconsistent(format!(
            "log {log}: crash points {kinds:?} are not one write, flush and fence"
        )));
    }
    let mut after = before.as_ref().clone();
    let mut words = Vec::with_capacity(flush.uncertain.len());
    for u in &flush.uncertain {
        let [new] = u.new_values.as_slice() else {
            return Err(CrashCheckError::inconsistent(format!(
                "log {log}: word {} stored twice in one append",
                u.word_offset
            )));
        };
        let offset = u.word_offset as usize;
        after[offset..offset + 8].copy_from_slice(&new.to_le_bytes());
        words.push(ChangedWord { offset, new: *new });
    }
    if after != *fence.persistent {
        return Err(CrashCheckError::inconsistent(format!(
            "log {log}: the fence persisted other words than the flush's"
        )));
    }
    Ok(RegionWave { words, flush_op: Some(flush.op), ..untouched })
}

impl PmemMedium {
    /// Captures what each region shows since the last call as one segment,
    /// unless no region changed.
    fn segment(&self) -> Result<(), CrashCheckError> {
        let mut st = self.state.lock();
        let mut regions = Vec::with_capacity(self.regions.len());
        for (log, region) in self.regions.iter().enumerate() {
            let before = st.current[log].clone();
            let (points, taken) = drain(region, &before);
            st.sim_points += taken;
            let rw = region_wave(log, before, &points)?;
            if let Some(last) = points.last() {
                st.current[log] = last.persistent.clone();
            }
            regions.push(rw);
        }
        if regions.iter().any(|r| r.flush_op.is_some()) {
            let first = std::mem::replace(&mut st.none_yet, false);
            st.waves.push(CapturedWave { session: self.session, first, regions });
        }
        Ok(())
    }
}

impl WaveMedium for PmemMedium {
    fn begin_wave(&self, _: bool) {}

    fn flush(&self, _: &[(usize, u64)]) -> Result<(), CrashCheckError> {
        // The workers appended in place, every log's record its own
        // region's; the images take every order. The wave's records are one
        // segment (a Silo-R wave's epoch marks follow in the next).
        self.segment()
    }

    fn ack(&self, txn: TxnId) {
        let stamps = self.regions.iter().map(|r| sim(r).ops()).collect();
        self.state.lock().acks.push(PmemAck { txn, session: self.session, stamps });
    }

    fn quiet(&self) -> Result<(), CrashCheckError> {
        self.segment()
    }

    fn abort(&self) {}
}

/// Runs the sessions `plans`, each with regions of its `region_lens` bytes, and returns
/// what every wave did.
pub(crate) fn capture(
    seed: u64,
    logging: TxnLogging,
    bug: PlantedBug,
    plans: &[SessionPlan],
    region_lens: &[u64],
) -> Capture {
    let mut out = Capture::default();
    for (plan, &len) in plans.iter().zip(region_lens) {
        let regions: Vec<Arc<Region>> = (0..logging.logs()).map(|_| Arc::new(Region::sim(len))).collect();
        let medium = PmemMedium {
            session: plan.index,
            regions: regions.clone(),
            state: Mutex::new(MediumState {
                current: regions.iter().map(|r| Arc::new(sim(r).persistent_image())).collect(),
                none_yet: true,
                waves: Vec::new(),
                acks: Vec::new(),
                sim_points: 0,
            }),
        };
        for r in &regions {
            sim(r).set_capture(true);
        }
        let options = db_options(logging, LogDeviceKind::Regions(regions), bug);
        let result = run_session(plan, &options, &medium, seed);
        let mut st = medium.state.into_inner();
        for log in 0..logging.logs() {
            let mut next = u64::MAX;
            for w in st.waves.iter_mut().rev() {
                let r = &mut w.regions[log];
                r.next_flush_op = next;
                if let Some(op) = r.flush_op {
                    next = op;
                }
            }
        }
        out.waves.append(&mut st.waves);
        out.acks.append(&mut st.acks);
        out.sim_points += st.sim_points;
        if let Err(e) = result {
            out.failure = Some(format!("seed {seed}: session {}: {e}", plan.index));
            break;
        }
    }
    out
}
