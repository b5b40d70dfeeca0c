//! What a session counts over every worker: programs, panics, findings, what each oracle
//! compared or judged, and the op steps and graphs Burn ran.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::interpreter::Outcome;
use crate::oracles::BoundTally;
use crate::program::{Flaky, Program, Step};
use crate::Verdict;

/// What a session counted, over every worker.
#[derive(Default)]
pub struct Stats {
    /// Programs checked.
    pub execs: u64,
    /// Panics seen per class (a program can add several).
    pub classes: BTreeMap<String, u64>,
    /// Seconds into the session when each class was first seen.
    pub first_hit: BTreeMap<String, f64>,
    /// New findings: signature and saved program file.
    pub findings: Vec<(String, PathBuf)>,
    /// Threaded programs run again under collide.
    pub collided: u64,
    /// The flaky findings met under collide (signature, hit rate, file), one per signature.
    pub flaky: Vec<(String, Flaky, PathBuf)>,
    pub(super) flaky_signatures: BTreeSet<String>,
    /// Known findings (stored cases met again) per case.
    pub known: BTreeMap<String, u64>,
    /// Values the differential compared across Flex and wgpu.
    pub compared: u64,
    /// Replayed outputs eager-replay compared.
    pub replay_compared: u64,
    /// Values either left uncompared, per poison reason.
    pub poisoned: BTreeMap<String, u64>,
    /// Values compared at some elements only, the others poisoned, per reason.
    pub partly_poisoned: BTreeMap<String, u64>,
    /// Values the reference oracle judged against their definitions.
    pub reference_judged: u64,
    /// Gradients it judged against finite differences.
    pub reference_gradients: u64,
    /// Values it left open, per reason.
    pub reference_open: BTreeMap<String, u64>,
    /// The judged F32 elements' bounds in units in the last place, per bound family.
    pub reference_bounds: BTreeMap<String, BoundTally>,
    /// Values the wgpu mirror computed that the reference judged.
    pub reference_on_wgpu: u64,
    /// Those it left open, per reason.
    pub reference_open_on_wgpu: BTreeMap<String, u64>,
    pub(super) signatures: BTreeSet<String>,
    /// Op steps by what they did: the share that ran is the share that reached Burn's kernels.
    pub ops: StepCounts,
    /// Scopes that completed with a graph: what eager-replay hands to burn-router's
    /// `TensorInterpreter`.
    pub graphs: u64,
    /// The operations those graphs recorded.
    pub graph_operations: u64,
    /// Programs the guide mutated from its corpus (the rest are random).
    pub mutated: u64,
    /// The RSS in KiB once warm (5 s in).
    pub warm_rss: Option<u64>,
    /// The corpus size over every worker at the end.
    pub corpus: usize,
}

impl Stats {
    /// Each reason's share, in `counts` (values left wholly or partly uncompared), of the
    /// values the differential and eager-replay met (compared, or left uncompared).
    pub fn poisoned_shares(&self, counts: &BTreeMap<String, u64>) -> BTreeMap<String, f64> {
        let met = self.compared + self.replay_compared + self.poisoned.values().sum::<u64>();
        counts
            .iter()
            .map(|(why, n)| (why.clone(), *n as f64 / met.max(1) as f64))
            .collect()
    }
}

/// Op steps that returned, panicked (a guard or a bug) and never ran (a scope that did not
/// open, an operand the step could not use).
#[derive(Default)]
pub struct StepCounts {
    /// Returned.
    pub ok: u64,
    /// Panicked.
    pub panicked: u64,
    /// Never ran.
    pub other: u64,
}

/// Counts the trace's panics; returns the classes seen for the first time.
pub(super) fn record(
    stats: &mut Stats,
    program: &Program,
    verdict: &Verdict,
    now: f64,
) -> Vec<String> {
    let mut new = Vec::new();
    for case in &verdict.known_findings {
        *stats.known.entry(case.clone()).or_default() += 1;
    }
    stats.compared += verdict.oracles.compared as u64;
    stats.replay_compared += verdict.oracles.replay_compared as u64;
    for (why, n) in &verdict.oracles.poisoned {
        *stats.poisoned.entry(why.clone()).or_default() += *n as u64;
    }
    for (why, n) in &verdict.oracles.partly_poisoned {
        *stats.partly_poisoned.entry(why.clone()).or_default() += *n as u64;
    }
    stats.reference_judged += verdict.oracles.reference.judged as u64;
    stats.reference_gradients += verdict.oracles.reference.gradients as u64;
    for (why, n) in &verdict.oracles.reference.open {
        *stats.reference_open.entry(why.clone()).or_default() += *n as u64;
    }
    for (family, tally) in &verdict.oracles.reference.bounds {
        match stats.reference_bounds.get_mut(family) {
            Some(t) => t.merge(tally),
            None => {
                stats.reference_bounds.insert(family.clone(), tally.clone());
            }
        }
    }
    stats.reference_on_wgpu += verdict.oracles.reference.on_wgpu as u64;
    for (why, n) in &verdict.oracles.reference.open_on_wgpu {
        *stats.reference_open_on_wgpu.entry(why.clone()).or_default() += *n as u64;
    }
    for (record, step) in verdict.trace.steps.iter().zip(&program.steps) {
        if let Outcome::Ok {
            graph: Some(graph), ..
        } = &record.outcome
        {
            stats.graphs += 1;
            stats.graph_operations += graph.operations as u64;
        }
        if matches!(step, Step::Op { .. }) {
            match record.outcome {
                Outcome::Ok { .. } => stats.ops.ok += 1,
                Outcome::Panic(_) => stats.ops.panicked += 1,
                _ => stats.ops.other += 1,
            }
        }
    }
    for (_, panic) in verdict.trace.panics() {
        *stats.classes.entry(panic.class.clone()).or_default() += 1;
        if !stats.first_hit.contains_key(&panic.class) {
            stats.first_hit.insert(panic.class.clone(), now);
            new.push(panic.class.clone());
        }
    }
    new
}
