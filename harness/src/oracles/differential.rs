//! The Flex vs wgpu differential oracle: every value-producing step runs a second time on wgpu
//! (the wgpu mirror) and every value it computes must match the eager Flex value of the same
//! slot within `compare`'s per-dtype tolerance; a poisoned value is never compared.

use burn::tensor::TensorData;

use super::catalogue::{catalogue, lookup_error};
use super::compare::{self, DiffEq, Poison};
use super::naming::{
    from_bad_replay_source, gradient_role, operand_dtype_list, operand_dtypes, producer,
    producer_step, replayed_on_wgpu, step_name,
};
use super::taint::{Elements, Taint};
use super::{faults, is_known_bug, Context, Judgement, Oracle, OracleId, Shared, StepFacts};
use crate::interpreter::{catch, note, on_flex, AnyTensor, CompletedScope, Outcome, World};
use crate::program::{Dtype, Op, Slot, Step, Tolerance, Unspecified};

pub use super::DIVERGENCE;

mod divergence;

use divergence::{differs, failed, Named};

/// The differential oracle for one run: per completed graph (by exit ordinal), its exit step
/// and the slots its outputs came from, so a replayed output that diverges is named after the
/// op that computed it, and whether one of those outputs was poisoned when it was recorded.
#[derive(Default)]
pub struct Differential {
    graphs: Vec<Option<(usize, Vec<Slot>)>>,
    /// Per graph, whether an output was poisoned as the scope completed: what Burn leaves open
    /// inside a graph (cos of a huge value) is open in its replay too.
    poisoned: Vec<bool>,
}

impl Oracle for Differential {
    fn scope_completed(&mut self, shared: &mut Shared, _: &World<'_>, scope: &CompletedScope<'_>) {
        if self.graphs.len() <= scope.ordinal {
            self.graphs.resize(scope.ordinal + 1, None);
            self.poisoned.resize(scope.ordinal + 1, false);
        }
        let outputs = scope.outputs.iter().map(|(slot, _)| *slot).collect();
        self.graphs[scope.ordinal] = Some((scope.exit, outputs));
        self.poisoned[scope.ordinal] = scope
            .outputs
            .iter()
            .any(|(slot, _)| shared.poison[usize::from(*slot)].is_some());
    }

    fn after_step(&mut self, shared: &mut Shared, world: &World<'_>, facts: &StepFacts<'_>) {
        // The real run meets a failed launch on wgpu as well (reading a wgpu tensor, moving
        // one onto a capture device): the wgpu mirror shares that device.
        match facts.outcome {
            Outcome::Panic(panic) => shared.wgpu_met_panic(panic),
            Outcome::Error { message, .. } => {
                if let Some(record) = lookup_error(catalogue(), message) {
                    shared.wgpu_met(&record.background_tag);
                }
            }
            _ => {}
        }
        if !matches!(facts.outcome, Outcome::Ok { .. }) {
            return;
        }
        let step = &world.program().steps[facts.index];
        match step {
            Step::ToDevice { out, src, .. }
            | Step::Clone { out, src }
            | Step::Autodiff { out, src, .. } => {
                carry(shared, *out, *src);
                return;
            }
            Step::Op { .. } | Step::Replay { .. } | Step::Create { .. } | Step::Backward { .. } => {
            }
            _ => return,
        }
        let exact_in = step
            .reads()
            .iter()
            .all(|s| shared.inexact[usize::from(*s)].is_none());
        // Anything computed from a poisoned value, where the step maps no element.
        let whole_from_poisoned = || {
            step.reads()
                .iter()
                .any(|s| shared.poison[usize::from(*s)].is_some())
                .then(|| Taint::whole(Poison::FromPoisoned))
        };
        let (poisoned, family) = match step {
            Step::Op { op, out } => op_poison(shared, facts, op, *out),
            // A graph that draws random values draws again on each device, and one whose output
            // was poisoned as it was recorded replays that open value; one that recorded a
            // wgpu bool's `Bool(U32)` bytes as a value has Flex misread them on replay (the
            // catalogued bool-storage-transfer bug, met through capture: fuzz --backends
            // flex,capture,wgpu --seed 105). A graph maps no element: poison in is poison out.
            Step::Replay { graph, .. } => {
                let draws = world.program().graph_draws(usize::from(*graph));
                let recorded_open = self.poisoned.get(usize::from(*graph)) == Some(&true);
                let holds_u32_bools = world.graph(*graph).is_some_and(compare::holds_u32_bools);
                (
                    whole_from_poisoned()
                        .or(recorded_open.then(|| Taint::whole(Poison::FromPoisoned)))
                        .or(draws.then(|| Taint::whole(Poison::RandomDraw)))
                        .or(holds_u32_bools.then(|| Taint::whole(Poison::BoolU32OnFlex))),
                    Tolerance::Balanced,
                )
            }
            // A gradient runs every op of its graph backwards: transcendentals' derivatives
            // included, so their looser family; over an operand the backends computed slightly
            // differently, a discontinuous op's derivative (a step's edge) is not pinned down.
            Step::Backward { loss, .. } => {
                let edge = !exact_in && graph_has_step_op(world.program(), facts.index, *loss);
                (
                    whole_from_poisoned().or(edge.then(|| Taint::whole(Poison::InexactOperand))),
                    Tolerance::Transcendental,
                )
            }
            _ => (None, Tolerance::Exact),
        };
        let how = How {
            index: facts.index,
            poisoned,
            family,
            exact_in,
            floor: facts.absolute_floor,
        };
        self.judge_outputs(shared, world, facts, &how);
    }
}

/// Whether an op of the `Step` family (rounding, sign, thresholds) computed anything `loss`
/// depends on, before step `index`: its derivative jumps at the edges, so a gradient through it
/// is pinned down only over bit-identical values.
fn graph_has_step_op(program: &crate::program::Program, index: usize, loss: Slot) -> bool {
    let mut live = vec![loss];
    for step in program.steps[..index].iter().rev() {
        let writes = step.writes();
        if !writes.iter().any(|w| live.contains(w)) {
            continue;
        }
        if matches!(step, Step::Op { op, .. } if op.tolerance() == Tolerance::Step) {
            return true;
        }
        live.retain(|s| !writes.contains(s));
        live.extend(step.reads());
    }
    false
}

impl Differential {
    /// What computed slot `out` at `step`, for the signature: the op, or for a replayed output
    /// the op inside the scope that computed it (a known bug met through a replay is the same
    /// bug: wgpu's 0^0 replayed, fuzz --backends flex,capture,wgpu --seed 104), or the bad data
    /// a wgpu replay is known to compute that it came from (`WGPU_REPLAY_BAD_SOURCES`).
    fn what(&self, world: &World<'_>, step: &Step, index: usize, out: Slot) -> String {
        // A gradient is named by the op that made its loss: a wrong conv gradient is not a
        // stored sqrt gradient's case.
        if let Step::Backward { loss, .. } = step {
            return format!("backward of {}", producer(world, *loss, index));
        }
        if let Some((slot, exit)) = self.recorded(step, out) {
            return replayed_on_wgpu(world, slot, exit);
        }
        step_name(step)
    }

    /// Judges each value the wgpu mirror computed at the step of `facts` as `how` says.
    fn judge_outputs(
        &self,
        shared: &mut Shared,
        world: &World<'_>,
        facts: &StepFacts<'_>,
        how: &How,
    ) {
        let step = &world.program().steps[facts.index];
        for computed in facts.on_wgpu {
            // The values of a replayed output a known wgpu replay bug computed are that bug's:
            // eager-replay reports them under its stored case (fuzz --backends
            // flex,capture,wgpu --seed 21: a replayed max_pool2d backward was a divergence of
            // its own as well). A failure there stays a divergence, as stored cases hold.
            let recorded = self.recorded(step, computed.slot);
            let known_bug;
            let how = match recorded {
                Some((slot, exit)) if from_bad_replay_source(world, slot, exit) => {
                    known_bug = How {
                        poisoned: Some(Taint::whole(Poison::KnownBug)),
                        ..*how
                    };
                    &known_bug
                }
                _ => how,
            };
            // Named only for a divergence: naming a replayed output walks the program.
            let what = || {
                let subject = self.subject(world, step, facts.index, computed.slot);
                Named {
                    what: self.what(world, step, facts.index, computed.slot),
                    operands: subject.and_then(|i| operand_dtypes(world, i)),
                    dtype: subject
                        .and_then(|i| operand_dtype_list(world, i).first().copied())
                        .and_then(Dtype::from_burn),
                    role: match step {
                        Step::Backward { loss, param, .. } => {
                            Some(gradient_role(world, *loss, *param, facts.index))
                        }
                        _ => None,
                    },
                }
            };
            judge(shared, computed, how, &what);
        }
    }

    /// For a replay's output `out`: the slot the scope declared it from and the scope's exit.
    fn recorded(&self, step: &Step, out: Slot) -> Option<(Slot, usize)> {
        let Step::Replay { graph, outputs, .. } = step else {
            return None;
        };
        let k = outputs.iter().rposition(|s| *s == out)?;
        let (exit, slots) = self
            .graphs
            .get(usize::from(*graph))
            .and_then(Option::as_ref)?;
        Some((*slots.get(k)?, *exit))
    }

    /// The step whose operands a divergence's signature names: the step itself, or for a
    /// replayed output the op inside the scope that computed it (so a known bug met through a
    /// replay keeps its signature).
    fn subject(&self, world: &World<'_>, step: &Step, index: usize, out: Slot) -> Option<usize> {
        match self.recorded(step, out) {
            Some((slot, exit)) => producer_step(world, slot, exit),
            None => Some(index),
        }
    }
}

/// How the values one step computed are judged.
struct How {
    index: usize,
    poisoned: Option<Taint>,
    /// The op's tolerance family.
    family: Tolerance,
    /// Whether every operand was bit-identical on both backends.
    exact_in: bool,
    /// An absolute tolerance the result needs beyond its family's (see
    /// `compare::absolute_floor`).
    floor: Option<f64>,
}

/// What a move, a clone or an autodiff step's result carries of its source's poison and
/// inexactness: the same, and a wgpu bool's storage misread on Flex.
fn carry(shared: &mut Shared, out: Slot, src: Slot) {
    // A wgpu bool moved to Flex keeps wgpu's Bool(U32) storage, which Flex
    // misreads (the catalogued bool-storage-transfer bug): stop comparing there.
    let misread = shared
        .flex
        .as_ref()
        .and_then(|m| m.get(out))
        .filter(on_flex)
        .and_then(crate::interpreter::read_data)
        .is_some_and(|d| compare::bool_u32(&d))
        .then(|| Taint::whole(Poison::BoolU32OnFlex));
    let (o, s) = (usize::from(out), usize::from(src));
    shared.poison[o] = Taint::or(shared.poison[s].clone(), misread);
    shared.inexact[o] = shared.inexact[s].clone();
}

/// The poison an op's result holds on wgpu, per element it reaches, and the family it is
/// compared in.
fn op_poison(
    shared: &Shared,
    facts: &StepFacts<'_>,
    op: &Op,
    out: Slot,
) -> (Option<Taint>, Tolerance) {
    let family = op.tolerance();
    // Read only where some element is to be carried (most steps carry none).
    let out_shape = std::cell::OnceCell::new();
    let on_result = |at: &Elements| {
        let shape = out_shape.get_or_init(|| {
            shared
                .flex
                .as_ref()
                .and_then(|m| m.get(out))
                .map(|t| t.ty().shape)
        });
        match shape {
            Some(to) => at.reach(op.reach(), to),
            None => Elements::All,
        }
    };
    let operands = op.operands();
    let reached = |per_slot: &dyn Fn(usize) -> Option<Elements>| {
        operands
            .iter()
            .filter_map(|s| per_slot(usize::from(*s)))
            .map(|at| on_result(&at))
            .reduce(Elements::union)
    };
    // Poison spreads only to the result elements a poisoned element reaches.
    let from_poisoned =
        reached(&|s| shared.poison[s].as_ref().map(|t| t.at.clone())).map(|at| Taint {
            why: Poison::FromPoisoned,
            at,
        });
    let inexact = reached(&|s| shared.inexact[s].clone());
    // A subnormal operand element is not held bit for bit on wgpu either: the device
    // may flush it to zero (`compare::subnormal_elements`). Read only for the ops a
    // flushed operand can move: a step, a pole, a jump.
    let discontinuous = family == Tolerance::Step
        || matches!(
            op.unspecified(),
            Unspecified::Pole | Unspecified::UnitEdge | Unspecified::Jumps
        );
    let flushed = discontinuous
        .then(|| reached(&|s| flushed(shared, s)))
        .flatten();
    let open = match (inexact, flushed) {
        (Some(a), Some(b)) => Some(a.union(b)),
        (a, b) => a.or(b),
    };
    let at_step = open
        .clone()
        .filter(|_| family == Tolerance::Step)
        .map(|at| Taint {
            why: Poison::InexactOperand,
            at,
        });
    // Bit-identical operand elements meet a pole or an edge alike on both backends
    // (IEEE pins x/0 down, and a remainder's jump falls on the same side): only
    // where an operand element was inexact (or flushable) is the result open.
    let unspecified = facts.unspecified.as_ref().and_then(|u| {
        let hits = u
            .operands
            .iter()
            .flatten()
            .map(on_result)
            .reduce(Elements::union)?;
        let at = match u.why {
            Poison::NearPole | Poison::InexactOperand => hits.intersect(open.as_ref()?)?,
            _ => hits,
        };
        Some(Taint { why: u.why, at })
    });
    (
        Taint::or(Taint::or(from_poisoned, unspecified), at_step),
        family,
    )
}

/// Compares one value the wgpu mirror computed with the slot's eager Flex value. A wgpu panic
/// where Flex computed a value is a divergence unless the catalogue knows it.
fn judge(
    shared: &mut Shared,
    computed: &crate::interpreter::Computed,
    how: &How,
    what: &dyn Fn() -> Named,
) {
    let out = computed.slot;
    let index = how.index;
    let poisoned = Taint::or(how.poisoned.clone(), shared.wgpu_failure());
    let o = usize::from(out);
    // Until both values are read and compared, nothing says they are identical.
    shared.inexact[o] = Some(Elements::All);
    let eager = shared.flex.as_ref().and_then(|m| m.get(out));
    let on_flex = eager.as_ref().is_some_and(on_flex);
    let Some(flex) = read_flex(shared, (index, out), eager, what) else {
        return;
    };
    // The known bool storage bug makes Flex misread the value: stop comparing from here.
    let misread = on_flex && flex.as_ref().is_some_and(compare::bool_u32);
    let poisoned = Taint::or(
        poisoned,
        misread.then(|| Taint::whole(Poison::BoolU32OnFlex)),
    );
    shared.poison[o] = poisoned.clone();
    let twin = match &computed.value {
        Ok(t) => AnyTensor::clone(t),
        Err(panic) => {
            // Flex computed the value: only a known Burn bug explains wgpu panicking, never a
            // misuse guard.
            if flex.is_some() && !is_known_bug(panic) {
                let named = what();
                let how = "wgpu panicked where Flex computed";
                failed(shared, (index, out), (how, &named), panic.message.clone());
            } else {
                shared.wgpu_met_panic(panic);
                note(panic.clone());
                shared.poison[o] = Some(Taint::whole(Poison::KnownBug));
            }
            return;
        }
    };
    let Some(flex) = flex else {
        return;
    };
    let Some(on_wgpu) = read_wgpu(shared, (index, out), twin, what) else {
        return;
    };
    let on_wgpu = faults::wgpu_value(index, on_wgpu);
    let tolerance = compare::tolerance_of((&flex, &on_wgpu), how.family, how.exact_in, how.floor);
    let verdict = compare::compare_within(&flex, &on_wgpu, poisoned.as_ref(), tolerance);
    shared.inexact[o] = compare::differing(&flex, &on_wgpu);
    open_past(shared, o, (&flex, &on_wgpu), how.floor.is_some());
    match verdict {
        DiffEq::Poisoned(why) => shared.report.count_poisoned(why, false),
        _ => {
            shared.report.compared += 1;
            if let Some(partly) = &poisoned {
                shared.report.count_poisoned(partly.why, true);
            }
            shared.report.judgements.push(Judgement {
                step: index,
                oracle: OracleId::Differential,
                context: Context::Wgpu,
            });
        }
    }
    if let DiffEq::Differ(diff) = verdict {
        differs(shared, (index, out), (&flex, &on_wgpu), &diff, &what());
    }
    // Read once: the reference oracle judges the same data against its definition.
    shared.wgpu_read.push((out, on_wgpu));
}

/// The eager Flex value (`Some(None)` where there is none to compare), or `None` where Flex
/// failed to read it with an error no execution-error record knows: a divergence of its own
/// (Flex failed where wgpu computed), recorded. A Flex value that cannot be read is judged,
/// not skipped.
fn read_flex(
    shared: &mut Shared,
    (index, out): (usize, Slot),
    eager: Option<AnyTensor>,
    what: &dyn Fn() -> Named,
) -> Option<Option<TensorData>> {
    match eager.map(|t| catch(|| t.try_into_data())) {
        None => Some(None),
        Some(Ok(Ok(data))) => Some(Some(data)),
        Some(Ok(Err(error))) => {
            let error = error.to_string();
            if lookup_error(catalogue(), &error).is_none() {
                let named = what();
                failed(shared, (index, out), ("Flex failed to read", &named), error);
                return None;
            }
            Some(None)
        }
        Some(Err(panic)) => {
            note(panic);
            Some(None)
        }
    }
}

/// The wgpu mirror's value read, or `None` where it failed: an error an execution-error record
/// knows (a catalogued wgpu bug) or a known bug's panic is that bug, met again (the slot
/// poisoned); any other is a divergence of its own.
fn read_wgpu(
    shared: &mut Shared,
    (index, out): (usize, Slot),
    twin: AnyTensor,
    what: &dyn Fn() -> Named,
) -> Option<TensorData> {
    let o = usize::from(out);
    match crate::interpreter::catch(|| twin.try_into_data()) {
        Ok(Ok(data)) => return Some(data),
        Ok(Err(e)) => {
            let error = e.to_string();
            match lookup_error(catalogue(), &error) {
                None => {
                    let named = what();
                    failed(shared, (index, out), ("wgpu failed to read", &named), error)
                }
                Some(record) => {
                    shared.wgpu_met(&record.background_tag);
                    shared.poison[o] = Some(Taint::whole(Poison::KnownBug));
                }
            }
        }
        Err(panic) => {
            if !is_known_bug(&panic) {
                let named = what();
                failed(
                    shared,
                    (index, out),
                    ("wgpu panicked reading", &named),
                    panic.message,
                );
            } else {
                shared.wgpu_met_panic(&panic);
                note(panic);
                shared.poison[o] = Some(Taint::whole(Poison::KnownBug));
            }
        }
    }
    None
}

/// Leaves open past slot `o` what the comparison of its two values shows is not held alike.
/// A value judged within an absolute floor far above rounding (a quantization step, a
/// cancelled reduction's error) may differ by that much across backends: what is computed from
/// it is not comparable within a rounding tolerance (atanh of a dequantized 0.996 on Flex and
/// 0.992 on wgpu, fuzz --backends flex,capture,wgpu --seed 104). Equal values whose zeros
/// differ in sign are compared here, not past here, where they are.
fn open_past(
    shared: &mut Shared,
    o: usize,
    (flex, on_wgpu): (&TensorData, &TensorData),
    floor: bool,
) {
    if floor && shared.inexact[o].is_some() {
        shared.poison[o] = Taint::or(
            shared.poison[o].take(),
            Some(Taint::whole(Poison::InexactOperand)),
        );
    }
    if let Some(at) = compare::zero_signs_differ(flex, on_wgpu) {
        let signed = Taint {
            why: Poison::SignedZero,
            at,
        };
        shared.poison[o] = Taint::or(shared.poison[o].take(), Some(signed));
    }
}

/// The subnormal elements of slot `s`'s eager value ([`compare::subnormal_elements`]).
fn flushed(shared: &Shared, s: usize) -> Option<Elements> {
    let data = shared.flex.as_ref()?.data(Slot::try_from(s).ok()?)?;
    compare::subnormal_elements(&data)
}
