//! The hook the interpreter calls as a program runs, so that checks can follow it step by step
//! without the interpreter knowing what they check.

use burn::tensor::{CapturedGraph, TensorId};

use super::trace::{Outcome, StepRecord};
use super::value::{held_in, AnyTensor, Held};
use crate::program::{Program, Slot};

/// What the run looks like at the moment the hook is called: the program, the real tensor in
/// each slot, the graphs completed so far (by exit ordinal) and the outcomes recorded so far.
pub struct World<'a> {
    pub(super) program: &'a Program,
    pub(super) slots: &'a [Option<Held>],
    pub(super) graphs: &'a [Option<CapturedGraph>],
    pub(super) records: &'a [StepRecord],
    pub(super) visited: &'a [bool],
    pub(super) fed: &'a [Vec<bool>],
}

impl World<'_> {
    /// The program being run.
    pub fn program(&self) -> &Program {
        self.program
    }

    /// Which feed slots of the `Replay` step at `index` gave the real run data to replay with
    /// (the other inputs took their recorded values); empty for any other step.
    pub fn fed(&self, index: usize) -> &[bool] {
        self.fed.get(index).map_or(&[], Vec::as_slice)
    }

    /// The real tensor in slot `s`, if any.
    pub fn slot(&self, s: Slot) -> Option<AnyTensor> {
        self.slot_ref(s).cloned()
    }

    /// [`World::slot`] without the clone (a tensor handle is ~640 bytes).
    pub fn slot_ref(&self, s: Slot) -> Option<&AnyTensor> {
        held_in(self.slots, s)
    }

    /// The real run's own handle of slot `s`, for a mirror that shares it.
    pub fn held(&self, s: Slot) -> Option<&Held> {
        self.slots.get(usize::from(s)).and_then(Option::as_ref)
    }

    /// The graph the `ordinal`-th scope exit completed, if it did.
    pub fn graph(&self, ordinal: u8) -> Option<&CapturedGraph> {
        self.graphs
            .get(usize::from(ordinal))
            .and_then(Option::as_ref)
    }

    /// The outcome of step `index`, once it ran.
    pub fn outcome(&self, index: usize) -> Option<&Outcome> {
        self.visited
            .get(index)
            .filter(|v| **v)
            .map(|_| &self.records[index].outcome)
    }
}

/// A capture scope that completed with a graph.
pub struct CompletedScope<'a> {
    /// The `ExitScope` step.
    pub exit: usize,
    /// Its ordinal among the program's exits: the graph number `Replay` steps name.
    pub ordinal: usize,
    /// The graph.
    pub graph: &'a CapturedGraph,
    /// The declared inputs that were capture tensors, with their ids in the graph.
    pub inputs: &'a [(Slot, TensorId)],
    /// The declared outputs that were capture tensors, with their ids in the graph.
    pub outputs: &'a [(Slot, TensorId)],
}

/// Follows a run in lockstep. Called only in [`Mode::Full`](super::Mode::Full).
pub trait Lockstep {
    /// After step `index` (not a scope step) ran; `world` already holds its outcome and
    /// results.
    fn after_step(&mut self, world: &World<'_>, index: usize);

    /// After a scope completed, before the graph is handed to later steps.
    fn scope_completed(&mut self, world: &World<'_>, scope: &CompletedScope<'_>);

    /// After the program's own tensors were dropped, before the interpreter frees autodiff
    /// graphs and probes the device pool: whatever the hook holds on Burn's devices goes here.
    fn finish(&mut self);
}

/// The hook that does nothing: a plain run.
pub struct Unobserved;

impl Lockstep for Unobserved {
    fn after_step(&mut self, _: &World<'_>, _: usize) {}
    fn scope_completed(&mut self, _: &World<'_>, _: &CompletedScope<'_>) {}
    fn finish(&mut self) {}
}
