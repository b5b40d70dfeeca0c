//! Runs a program with a set of oracles following it: the mirrors they share, the facts of each
//! step handed to every oracle, and the trace oracles once the run is over.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::catalogue::DEVICE_FAILURES;
use super::compare::{self, Poison};
use super::taint::{Elements, Taint};
use super::{assign_classes, class_of, Oracle, OracleId, Oracles, StepFacts, Violation, ORACLES};
use crate::interpreter::{
    self, at_site, note, wgpu, CompletedScope, Lockstep, Mirror, Mode, Outcome, PanicInfo, Trace,
    World,
};
use crate::program::limits::MAX_SLOTS;
use crate::program::{Backends, Program, Slot};

/// What the oracles share while a run goes on.
pub struct Shared {
    /// The eager run on Flex: what replays are judged against and wgpu compared with.
    pub flex: Option<Mirror>,
    /// The run on wgpu, when the differential oracle runs.
    pub wgpu: Option<Mirror>,
    /// Per slot, why its wgpu value must not be compared with Flex's (at which elements), if
    /// it must not.
    pub poison: Vec<Option<Taint>>,
    /// Per slot, where its Flex and wgpu values differed at all (within tolerance), if
    /// anywhere: a discontinuous op over those elements is poisoned there.
    pub inexact: Vec<Option<Elements>>,
    /// Whether the wgpu mirror met a known bug that fails its device's stream
    /// (`catalogue::DEVICE_FAILURES`): nothing wgpu computes after it is compared.
    pub wgpu_failed: bool,
    /// The wgpu values the differential read at the current step, by slot (after any planted
    /// fault), for the reference oracle to judge without reading them again.
    pub wgpu_read: Vec<(Slot, burn::tensor::TensorData)>,
    /// What the oracles found and counted so far.
    pub report: OracleReport,
}

impl Shared {
    /// Why slot `s`'s wgpu value must not be compared with its Flex value (at which
    /// elements), if it must not.
    pub fn wgpu_poison(&self, s: Slot) -> Option<Taint> {
        Taint::or(self.poison[usize::from(s)].clone(), self.wgpu_failure())
    }

    /// Why nothing wgpu computes is compared any more, if the device failed (see
    /// [`Shared::wgpu_failed`]).
    pub fn wgpu_failure(&self) -> Option<Taint> {
        self.wgpu_failed.then(|| Taint::whole(Poison::KnownBug))
    }

    /// Notes that wgpu met the known bug of class `class`; one that fails the device's stream
    /// ends every comparison with wgpu for the rest of the run.
    pub fn wgpu_met(&mut self, class: &str) {
        self.wgpu_failed |= DEVICE_FAILURES.contains(&class);
    }

    /// [`Shared::wgpu_met`] for a panic wgpu raised, by its catalogue class.
    pub fn wgpu_met_panic(&mut self, panic: &PanicInfo) {
        self.wgpu_met(&class_of(panic));
    }
}

/// What the oracles found and counted over one run.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct OracleReport {
    /// Oracle invariants the run broke.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub violations: Vec<Violation>,
    /// Ids of the known divergences (`harness/known-divergences.json`) the run showed.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub known_divergences: Vec<String>,
    /// How many values the Flex vs wgpu differential compared (0 when it did not run).
    #[serde(default)]
    pub compared: usize,
    /// How many replayed graph outputs the eager-replay oracle compared with eager values.
    #[serde(default)]
    pub replay_compared: usize,
    /// Values the differential or eager-replay did not compare at all, per poison reason
    /// (`argmax-tie`, `random-draw`, ...).
    pub poisoned: BTreeMap<String, usize>,
    /// Values compared at some elements only, the others poisoned, per reason (counted in
    /// `compared` or `replay_compared` as well).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub partly_poisoned: BTreeMap<String, usize>,
    /// What the reference oracle judged, and what it left open per reason.
    #[serde(default, skip_serializing_if = "ReferenceCounts::is_empty")]
    pub reference: ReferenceCounts,
    /// Every value an oracle judged, by op step (what a session counts per entry; not part of
    /// a verdict's text).
    #[serde(skip)]
    pub judgements: Vec<super::Judgement>,
}

/// What the reference oracle counts: values judged, and values left open per reason, for the
/// eager Flex values and for the values the wgpu mirror computed.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ReferenceCounts {
    /// Values compared with their reference.
    pub judged: usize,
    /// Of those, gradients (judged against finite differences).
    #[serde(default)]
    pub gradients: usize,
    /// Values not compared, per reason.
    pub open: BTreeMap<String, usize>,
    /// Values the wgpu mirror computed that were compared with their reference.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub on_wgpu: usize,
    /// Values the wgpu mirror computed that were not, per reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub open_on_wgpu: BTreeMap<String, usize>,
    /// How tightly the judged F32 elements were judged: per bound family, the elements per
    /// bucket of their bound in units in the last place ([`BoundTally`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bounds: BTreeMap<String, BoundTally>,
}

/// The bound family of the gradients the reference judges by finite differences: the summary
/// also gives the values' bounds without them.
pub const GRADIENT_BOUNDS: &str = "gradient (finite differences, preset)";

/// A histogram of bounds in units in the last place: bucket 0 holds exact comparisons, bucket
/// `k ≥ 1` bounds up to 2^(k − 2) units (so 1: half a unit, 2: one, 3: two, 4: four ...), the
/// last every bound beyond.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct BoundTally(pub Vec<u64>);

impl Default for BoundTally {
    fn default() -> Self {
        BoundTally(vec![0; BoundTally::BUCKETS])
    }
}

impl BoundTally {
    /// Buckets: exact, up to 2^-1 .. 2^60 units, and beyond.
    pub const BUCKETS: usize = 64;

    /// Counts one element judged within `ulps` units.
    pub fn add(&mut self, ulps: f64) {
        let bucket = if ulps <= 0.0 {
            0
        } else if ulps.is_finite() && ulps >= f64::MIN_POSITIVE {
            // The smallest k with ulps <= 2^(k - 2), from the exponent bits: ceil(log2 x) is
            // the exponent, plus one unless x is a power of two.
            let bits = ulps.to_bits();
            let exponent = ((bits >> 52) & 0x7ff) as i64 - 1023;
            let above = i64::from(bits & 0x000f_ffff_ffff_ffff != 0);
            (exponent + above + 2).clamp(1, Self::BUCKETS as i64 - 1) as usize
        } else if ulps.is_finite() {
            1
        } else {
            Self::BUCKETS - 1
        };
        self.0[bucket] += 1;
    }

    /// Adds another tally's counts.
    pub fn merge(&mut self, other: &BoundTally) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a += b;
        }
    }

    /// Elements counted.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The bound (in units: the bucket's upper end) at quantile `q` of the elements.
    pub fn quantile(&self, q: f64) -> f64 {
        let total = self.total();
        let mut seen = 0;
        for (k, n) in self.0.iter().enumerate() {
            seen += n;
            if seen as f64 >= q * total as f64 && *n > 0 {
                return Self::upper(k);
            }
        }
        0.0
    }

    /// The share of elements judged within `ulps` units (a power of two).
    pub fn share_within(&self, ulps: f64) -> f64 {
        let total = self.total().max(1);
        let within: u64 = (self.0.iter().enumerate())
            .filter(|(k, _)| Self::upper(*k) <= ulps)
            .map(|(_, n)| n)
            .sum();
        within as f64 / total as f64
    }

    fn upper(k: usize) -> f64 {
        match k {
            0 => 0.0,
            k if k == Self::BUCKETS - 1 => f64::INFINITY,
            k => (k as f64 - 2.0).exp2(),
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl OracleReport {
    /// Counts a value the differential or eager-replay left uncompared for `why`: wholly, or
    /// (`partly`) at some of its elements only.
    pub fn count_poisoned(&mut self, why: Poison, partly: bool) {
        let counts = match partly {
            false => &mut self.poisoned,
            true => &mut self.partly_poisoned,
        };
        *counts.entry(why.name().to_string()).or_default() += 1;
    }
}

fn count(counts: &mut BTreeMap<String, usize>, why: &str) {
    match counts.get_mut(why) {
        Some(n) => *n += 1,
        None => {
            counts.insert(why.to_string(), 1);
        }
    }
}

impl ReferenceCounts {
    /// Counts a value left open for `why` (allocating its text only the first time).
    pub fn count_open(&mut self, why: &str) {
        count(&mut self.open, why);
    }

    /// [`ReferenceCounts::count_open`] for a value the wgpu mirror computed.
    pub fn count_open_on_wgpu(&mut self, why: &str) {
        count(&mut self.open_on_wgpu, why);
    }

    /// Whether nothing was counted (a run the oracle did not follow).
    pub fn is_empty(&self) -> bool {
        self.judged == 0 && self.open.is_empty()
    }
}

/// A run and what the oracles made of it.
#[derive(Debug)]
pub struct Judged {
    /// The trace, every panic classified.
    pub trace: Trace,
    /// What the oracles found and counted.
    pub report: OracleReport,
}

struct OracleRun {
    shared: Shared,
    /// The chosen oracles, with their names (the journal's site for their panics).
    oracles: Vec<(&'static str, Box<dyn Oracle>)>,
}

impl Lockstep for OracleRun {
    fn after_step(&mut self, world: &World<'_>, index: usize) {
        let Some(outcome) = world.outcome(index) else {
            return;
        };
        self.shared.wgpu_read.clear();
        for (name, oracle) in &mut self.oracles {
            at_site(name, || oracle.before_mirrors(&self.shared, world, index));
        }
        let shared = &mut self.shared;
        let step = &world.program().steps[index];
        let (unspecified, absolute_floor) = match (&shared.wgpu, &shared.flex, outcome) {
            (Some(_), Some(flex), Outcome::Ok { .. }) => (
                compare::unspecified(step, flex),
                compare::absolute_floor(step, flex),
            ),
            _ => (None, None),
        };
        if let Some(flex) = &mut shared.flex {
            // No oracle judges the eager mirror's own panics: the journal keeps them.
            at_site("eager mirror", || {
                for computed in flex.follow(world, index, outcome) {
                    if let Err(panic) = computed.value {
                        note(panic);
                    }
                }
            });
        }
        let on_wgpu = match &mut shared.wgpu {
            Some(mirror) => at_site("wgpu mirror", || mirror.follow(world, index, outcome)),
            None => Vec::new(),
        };
        let facts = StepFacts {
            index,
            outcome,
            on_wgpu: &on_wgpu,
            unspecified,
            absolute_floor,
        };
        for (name, oracle) in &mut self.oracles {
            at_site(name, || oracle.after_step(shared, world, &facts));
        }
    }

    fn scope_completed(&mut self, world: &World<'_>, scope: &CompletedScope<'_>) {
        for (name, oracle) in &mut self.oracles {
            at_site(name, || {
                oracle.scope_completed(&mut self.shared, world, scope)
            });
        }
    }

    fn finish(&mut self) {
        if let Some(flex) = &mut self.shared.flex {
            at_site("eager mirror teardown", || flex.clear());
        }
        if let Some(wgpu) = &mut self.shared.wgpu {
            at_site("wgpu mirror teardown", || wgpu.clear());
        }
    }
}

/// Runs `program` on `backends` with `oracles` following it; `Err` only for the harness's own
/// failures.
pub fn run(program: &Program, backends: Backends, oracles: Oracles) -> Result<Judged> {
    let wgpu = (oracles.has(OracleId::Differential) && backends.wgpu)
        .then(|| wgpu::device(backends.adapter))
        .and_then(Result::ok)
        .map(Mirror::on);
    let flex =
        (oracles.has(OracleId::EagerReplay) || oracles.has(OracleId::Reference) || wgpu.is_some())
            .then(Mirror::eager_flex);
    let shared = Shared {
        flex,
        wgpu,
        poison: vec![None; usize::from(MAX_SLOTS)],
        inexact: vec![None; usize::from(MAX_SLOTS)],
        wgpu_failed: false,
        wgpu_read: Vec::new(),
        report: OracleReport::default(),
    };
    let chosen: Vec<(&'static str, Box<dyn Oracle>)> = ORACLES
        .iter()
        .filter(|spec| oracles.has(spec.id))
        .filter_map(|spec| Some((spec.name, spec.id.build(&shared, oracles)?)))
        .collect();
    let mut hook = OracleRun {
        shared,
        oracles: chosen,
    };
    let mut trace = interpreter::run_in_lockstep(program, backends, Mode::Full, &mut hook)?;
    // Trace oracles compare classes of panics, so they are assigned first.
    assign_classes(&program.steps, &mut trace);
    let mut report = std::mem::take(&mut hook.shared.report);
    for (_, oracle) in &mut hook.oracles {
        oracle.after_run(program, &trace, &mut report);
    }
    Ok(Judged { trace, report })
}

#[cfg(test)]
mod tests {
    use super::BoundTally;

    #[test]
    fn a_bound_tally_buckets_by_powers_of_two_and_reads_its_quantiles_from_their_upper_ends() {
        let mut t = BoundTally::default();
        for ulps in [0.0, 0.5, 1.0, 1.5, 4.0, 4.0, 5.0, f64::INFINITY] {
            t.add(ulps);
        }
        // 0 | 0.5 | 1 | 2 (1.5) | 4 (4, 4) | 8 (5) | beyond.
        assert_eq!(t.0[..6], [1, 1, 1, 1, 2, 1]);
        assert_eq!(t.0[BoundTally::BUCKETS - 1], 1);
        assert_eq!(t.quantile(0.5), 2.0);
        assert_eq!(t.quantile(0.75), 4.0);
        assert_eq!(t.quantile(1.0), f64::INFINITY);
        assert_eq!(t.share_within(4.0), 6.0 / 8.0);
    }
}
