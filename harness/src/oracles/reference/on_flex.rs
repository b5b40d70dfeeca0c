//! What the reference does with a step's values on the eager Flex mirror: the tape that gives
//! gradients and replays their references, the value a step should have made, the mismatch it
//! reports where Burn's differs, and what it holds for the steps after.

use std::rc::Rc;

use burn::tensor::DType;

use super::host::Host;
use super::judge::{Expected, Value, Why};
use super::{bound, gradient, mismatch, regime, Reference};
use crate::interpreter::{Base, Outcome, Placed, World};
use crate::oracles::naming::{gradient_role, producer_step, writer_step};
use crate::oracles::{
    Backend, Context, Derivation, Judgement, OracleId, Shared, StepFacts, Violation,
};
use crate::program::{Slot, Step, Tolerance};

/// What the reference holds of one slot a step wrote: its value as Burn holds it (where it was
/// read), the known bug it carries, and whether it is still to be read.
pub(super) type Held = (Slot, Option<Rc<Value>>, Option<&'static str>, bool);

/// A mismatch found at output `slot`: the element, the value the definition gives, Burn's, and
/// the dtype of Burn's value.
pub(super) type Found = (Slot, usize, String, String, DType);

/// The tolerance family a step's values are judged in.
pub(super) fn family(step: &Step) -> Tolerance {
    match step {
        Step::Op { op, .. } => bound::family(op),
        // A replayed chain of ops rounds at every op: the transcendental preset, and the
        // balanced one's share of its accumulations' scale.
        Step::Replay { .. } => Tolerance::Transcendental,
        // Burn's f32 chain rule against f64 differences.
        Step::Backward { .. } => Tolerance::Transcendental,
        _ => Tolerance::Exact,
    }
}

/// The judgement a value of step `index` counts for: a gradient counts for the op that made the
/// loss, since its backward is what it judges.
pub(super) fn judgement(world: &World<'_>, step: &Step, index: usize) -> Option<Judgement> {
    match step {
        Step::Backward { loss, .. } => producer_step(world, *loss, index).map(|step| Judgement {
            step,
            oracle: OracleId::Reference,
            context: Context::Gradient,
        }),
        _ => Some(Judgement {
            step: index,
            oracle: OracleId::Reference,
            context: Context::Eager,
        }),
    }
}

impl Reference {
    /// Decides at the first step whether the run keeps a tape: only a program with a backward
    /// or a replay step needs one.
    pub(super) fn start_tape(&mut self, world: &World<'_>) {
        if !std::mem::replace(&mut self.taped, true) {
            let steps = &world.program().steps;
            // The tape also gives a replay's reference: its graph's outputs over the fed data.
            let taped = steps
                .iter()
                .any(|s| matches!(s, Step::Backward { .. } | Step::Replay { .. }));
            self.tape = taped.then(Vec::new);
        }
    }

    /// The references of the outputs of the replay at step `index`, over the data it was fed
    /// (`None`: not a replay, or a run without a tape).
    pub(super) fn replay_references(
        &self,
        world: &World<'_>,
        index: usize,
    ) -> Option<Vec<Result<(Host, f64), &'static str>>> {
        let Step::Replay {
            graph,
            feed,
            outputs,
        } = &world.program().steps[index]
        else {
            return None;
        };
        let tape = self.tape.as_ref()?;
        Some(self.replayed(tape, world, index, (*graph, feed, outputs.len())))
    }

    /// Whether `step` makes a value of the eager Flex run, and if so its reference. A drop empties
    /// its slot, and a clone, an autodiff step or a move to the device a value is already on
    /// (Burn hands the tensor back) hands the same buffer on under another handle: no value. Nor
    /// is a move onto another device than Flex one of the eager run's: the eager run holds its
    /// operand there (comparing that copy with its source would count bytes compared with
    /// themselves as judged); eager-replay compares it where a graph takes it. A move onto Flex
    /// from another backend (wgpu: dispatch moves nothing off a capture device) lands that
    /// backend's value, which the differential compares with the eager run's.
    pub(super) fn expected_here(
        &self,
        world: &World<'_>,
        step: &Step,
        facts: &StepFacts<'_>,
    ) -> Option<Result<Expected, Why>> {
        match step {
            _ if step.writes().is_empty() => None,
            Step::Drop { .. } | Step::Clone { .. } | Step::Autodiff { .. } => None,
            Step::ToDevice { src, .. } => {
                let was =
                    writer_step(world, *src, facts.index).and_then(|i| placed(world, i, *src));
                let Outcome::Ok {
                    value: Some(now), ..
                } = facts.outcome
                else {
                    return None;
                };
                (was != Some(now.device) && now.device.base == Base::Flex).then_some(Err(
                    Why::Borrowed(
                        "a value another backend computed, moved onto Flex (the differential \
                         compares it with the eager run's)",
                    ),
                ))
            }
            _ => Some(self.expected(step)),
        }
    }

    /// The value `step` should have made: a gradient against finite differences over the
    /// reference forward of the loss, else the op's definition over Burn's operands.
    pub(super) fn expected(&self, step: &Step) -> Result<Expected, Why> {
        match (step, &self.tape) {
            // A gradient against finite differences over the reference forward of the loss.
            (Step::Backward { loss, param, .. }, Some(tape)) => {
                let at = |s: &u8| self.node[usize::from(*s)].ok_or("an operand not on the tape");
                let grads = at(param)
                    .and_then(|p| Ok((p, at(loss)?)))
                    .and_then(|(p, l)| gradient::gradient(tape, p, l))
                    .map_err(|why| Why::Owned(format!("a gradient: {why}")))?;
                let shape = tape[self.node[usize::from(*param)].unwrap_or_default()]
                    .value()
                    .map(|v| v.shape.clone())
                    .unwrap_or_default();
                Ok(Expected::Host(Host::float(shape, grads)))
            }
            _ => self.flex.expected(step),
        }
    }

    /// The mismatch of step `index`'s output where Burn's value differs from its definition,
    /// signed with the op (a gradient with the op that made the loss), its operands' dtypes and
    /// their regime.
    pub(super) fn mismatch(
        &self,
        shared: &Shared,
        world: &World<'_>,
        index: usize,
        (out, at, want, got, dtype): Found,
    ) -> Violation {
        let step = &world.program().steps[index];
        let (reads, writes) = (step.reads(), step.writes());
        let what = match step {
            Step::Op { op, .. } => op.name(),
            // A gradient is signed with the op that made the loss.
            Step::Backward { loss, .. } => {
                let op = self.tape.as_ref().zip(self.node[usize::from(*loss)]);
                let op = op.and_then(|(t, i)| gradient::op_name(t, i));
                format!("backward of {}", op.as_deref().unwrap_or("a non-op"))
            }
            other => other.name().to_string(),
        };
        // The operands as the step read them: a slot it also wrote (`out`
        // equal to `src`) holds its result in the mirror by now.
        let operands: Vec<DType> = reads
            .iter()
            .filter_map(|s| match &self.flex.held[usize::from(*s)] {
                Some(v) => Some(v.data.dtype()),
                None if writes.contains(s) => None,
                None => Some(shared.flex.as_ref()?.data(*s)?.dtype()),
            })
            .collect();
        let role = match step {
            Step::Backward { loss, param, .. } => Some(gradient_role(world, *loss, *param, index)),
            _ => None,
        };
        let held = reads
            .iter()
            .filter_map(|s| self.flex.held[usize::from(*s)].as_deref());
        let signed = (what.as_str(), operands.as_slice(), regime(step, held));
        let by = match step {
            Step::Backward { .. } => Derivation::FiniteDifference,
            _ => Derivation::Definition,
        };
        Violation {
            role,
            ..mismatch(
                (index, by),
                Backend::Flex,
                signed,
                (out, at, want, got, dtype),
            )
        }
    }

    /// Holds what Burn holds now in every slot the step wrote, the operands of later steps, and
    /// puts each value on the tape.
    pub(super) fn hold(
        &mut self,
        shared: &Shared,
        step: &Step,
        (ok, reads): (bool, &[Slot]),
        now: impl IntoIterator<Item = Held>,
    ) {
        let inputs: Vec<Option<usize>> = match &self.tape {
            Some(_) => reads.iter().map(|s| self.node[usize::from(*s)]).collect(),
            None => Vec::new(),
        };
        // The operands of later steps: what Burn holds now in every slot the step wrote.
        for (out, value, bug, unread) in now {
            let o = usize::from(out);
            // A step that failed wrote nothing: the slot still holds its earlier value, and its
            // node (a panicked `require_grad` made no leaf: fuzz --seed 5).
            let kept = !ok && self.node[o].is_some();
            if let Some(tape) = self.tape.as_mut().filter(|_| !kept) {
                // The tape keeps every value's tensor, read again only where a gradient's path
                // needs it (a handle costs less than a copy of the host array): the finite
                // differences take each value off the parameter's path as Burn held it.
                let complete = inputs.iter().all(Option::is_some);
                let inputs = inputs.iter().flatten().copied().collect();
                let handle = shared.flex.as_ref().and_then(|f| f.get(out));
                let node = gradient::Node::new(step, inputs, None, handle, tape);
                // A node with an operand off the tape cannot be evaluated again: an `Other`.
                let node = if complete {
                    node
                } else {
                    gradient::Node::other(node)
                };
                self.node[o] = Some(tape.len());
                tape.push(node);
            }
            self.flex.held[o] = value;
            self.known_bug[o] = bug;
            self.flex.unread[o] = unread;
        }
    }
}

/// The device the value step `index` wrote into `slot` landed on, where it made one (a replay
/// names a slot for several outputs: the last is the slot's).
fn placed(world: &World<'_>, index: usize, slot: Slot) -> Option<Placed> {
    match world.outcome(index)? {
        Outcome::Ok { value: Some(v), .. } => Some(v.device),
        Outcome::Ok { outputs, .. } => {
            let j = super::replay_output(&world.program().steps[index], slot)?;
            outputs.get(j).map(|v| v.device)
        }
        _ => None,
    }
}
