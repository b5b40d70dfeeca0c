//! Walks a program's steps, opening real capture scopes for `EnterScope`/`ExitScope` pairs.

use std::borrow::Cow;

use anyhow::{anyhow, Context, Result};
use burn::tensor::{CaptureError, CapturedGraph, TensorData, TensorId};
use burn_backend::{BoolStore, DType};
use burn_dispatch::backends::Capture;

use super::catch::catch;
use super::ops::exec_op;
use super::pool;
use super::replay::{replay_on_device, replay_on_flex, ReplayError};
use super::trace::{fnv1a, GraphInfo, Outcome, StepRecord, Trace, ValueInfo};
use super::value::{map_any, on_any, AnyTensor};
use crate::oracles::differential::{self, DiffEq, Poison};
use crate::oracles::eager_replay::Violation;
use crate::program::limits::MAX_SLOTS;
use crate::program::{op_output, AutodiffMode, DeviceRef, Kind, Op, Program, Slot, Step};

/// How much the interpreter records besides calling Burn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Outcomes with shapes, dtypes, devices and digests, then the state-leak check.
    Full,
    /// The Burn calls alone (each still under `catch_unwind`): no outcomes, no digests, no
    /// leak check. The baseline that `dispatch-fuzz bench` compares `Full` against.
    Bare,
}

/// Which oracles run alongside the program (all of them by default in [`Mode::Full`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Oracles {
    /// Shadow every step eagerly on Flex and replay each cleanly captured graph against it
    /// (`oracles::eager_replay`).
    pub eager_replay: bool,
    /// Predict every step with the reference model of the capture lifecycle
    /// (`oracles::model`; it runs over the trace after the program, in `check`).
    pub model: bool,
    /// Run every step a second time on wgpu and compare each value with Flex
    /// (`oracles::differential`); only when wgpu is enabled for the session.
    pub differential: bool,
}

impl Oracles {
    /// Every oracle on.
    pub const ALL: Oracles = Oracles {
        eager_replay: true,
        model: true,
        differential: true,
    };
    /// Every oracle off.
    pub const NONE: Oracles = Oracles {
        eager_replay: false,
        model: false,
        differential: false,
    };
}

thread_local! {
    static CORRUPT_REPLAY_FEED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static PERTURB_WGPU: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Test-only: makes the differential oracle see the wgpu values of step `step` plus one (bools
/// flipped) on this thread, so tests can see it fire. Never set it in a fuzz or regression run.
#[doc(hidden)]
pub fn perturb_wgpu_values_for_tests(step: Option<usize>) {
    PERTURB_WGPU.with(|c| c.set(step));
}

/// Test-only: makes the eager-replay oracle feed every replayed graph input with wrong data
/// (each value plus one) on this thread, so tests can see the oracle fire. Never set it in a
/// fuzz or regression run.
#[doc(hidden)]
pub fn corrupt_replay_feed_for_tests(on: bool) {
    CORRUPT_REPLAY_FEED.with(|c| c.set(on));
}

struct Run<'p> {
    program: &'p Program,
    mode: Mode,
    oracles: Oracles,
    /// The eager Flex value of each slot, for the eager-replay and differential oracles.
    shadows: Vec<Option<AnyTensor>>,
    /// The wgpu device, when the differential oracle runs.
    wgpu: Option<burn::tensor::Device>,
    /// Each slot's value computed again on wgpu, for the differential oracle.
    twins: Vec<Option<AnyTensor>>,
    /// Why a slot's twin must not be compared, if it must not (`differential::Poison`).
    poisoned: Vec<Option<Poison>>,
    /// Values the differential oracle compared.
    compared: usize,
    violations: Vec<Violation>,
    ends: Vec<Option<usize>>,
    /// Ordinal of each `ExitScope` step among all exits, indexed by step.
    exit_ordinal: Vec<Option<usize>>,
    slots: Vec<Option<AnyTensor>>,
    graphs: Vec<Option<CapturedGraph>>,
    outcomes: Vec<Option<Outcome>>,
}

/// Runs `program` on the real crates and returns its trace. `Err` only for the harness's own
/// failures; everything Burn does, panics included, is in the trace. [`Mode::Full`] runs every
/// oracle; see [`run_with`] to choose.
pub fn run(program: &Program, mode: Mode) -> Result<Trace> {
    let oracles = if mode == Mode::Full {
        Oracles::ALL
    } else {
        Oracles::NONE
    };
    run_with(program, mode, oracles)
}

/// [`run`] with a choice of oracles.
pub fn run_with(program: &Program, mode: Mode, oracles: Oracles) -> Result<Trace> {
    let n = program.steps.len();
    let mut exits = 0;
    let exit_ordinal = program
        .steps
        .iter()
        .map(|s| {
            matches!(s, Step::ExitScope { .. }).then(|| {
                exits += 1;
                exits - 1
            })
        })
        .collect();
    let mut run = Run {
        program,
        mode,
        ends: program.scope_ends(),
        exit_ordinal,
        slots: vec![None; usize::from(MAX_SLOTS)],
        oracles,
        shadows: vec![None; usize::from(MAX_SLOTS)],
        wgpu: (mode == Mode::Full && oracles.differential && super::wgpu::enabled())
            .then(super::wgpu::device)
            .and_then(Result::ok),
        twins: vec![None; usize::from(MAX_SLOTS)],
        poisoned: vec![None; usize::from(MAX_SLOTS)],
        compared: 0,
        violations: Vec::new(),
        graphs: vec![None; exits],
        outcomes: vec![None; n],
    };
    run.range(0, n)?;
    // Dropping a tensor talks to its backend too (capture records a `Drop`), so teardown runs
    // under `catch` like any step and a panic there is reported, not lost.
    let slots = std::mem::take(&mut run.slots);
    let shadows = std::mem::take(&mut run.shadows);
    let twins = std::mem::take(&mut run.twins);
    let teardown = catch(move || drop(slots)).err();
    let _ = catch(move || drop((shadows, twins)));
    if uses_autodiff(program) {
        pool::sweep_autodiff_graphs();
    }
    if mode == Mode::Bare {
        return Ok(Trace::default());
    }
    let mut steps = Vec::with_capacity(n);
    for (index, outcome) in run.outcomes.into_iter().enumerate() {
        let outcome = outcome.with_context(|| format!("step {index} was never visited"))?;
        steps.push(StepRecord { index, outcome });
    }
    Ok(Trace {
        steps,
        teardown,
        violations: run.violations,
        known_divergences: Vec::new(),
        compared: run.compared,
        leaked_devices: pool::leaked_devices(),
    })
}

fn uses_autodiff(program: &Program) -> bool {
    program
        .steps
        .iter()
        .any(|s| matches!(s, Step::Autodiff { .. }) || s.device() == Some(DeviceRef::FlexAutodiff))
}

fn value_info(t: &AnyTensor, digest: Option<&TensorData>) -> ValueInfo {
    let ty = t.ty();
    let dtype = on_any!(t, x => x.dtype());
    ValueInfo {
        kind: ty.kind,
        dtype: dtype_name(dtype),
        shape: ty.shape,
        device: Cow::Borrowed(pool::name(&t.device())),
        same_as: None,
        digest: digest.map(data_digest),
    }
}

/// `format!("{dtype:?}")` without the allocation for the dtypes programs produce.
fn dtype_name(dtype: DType) -> Cow<'static, str> {
    Cow::Borrowed(match dtype {
        DType::F32 => "F32",
        DType::F64 => "F64",
        DType::I32 => "I32",
        DType::I64 => "I64",
        DType::U8 => "U8",
        DType::Bool(BoolStore::Native) => "Bool(Native)",
        DType::Bool(BoolStore::U8) => "Bool(U8)",
        DType::Bool(BoolStore::U32) => "Bool(U32)",
        other => return Cow::Owned(format!("{other:?}")),
    })
}

fn data_digest(data: &TensorData) -> String {
    let dtype = format!("{:?}", data.dtype());
    let shape: Vec<u8> = data
        .shape()
        .iter()
        .flat_map(|d| (*d as u64).to_le_bytes())
        .collect();
    format!(
        "{:016x}",
        fnv1a(&[dtype.as_bytes(), &shape, data.as_bytes()])
    )
}

fn kind_of(data: &TensorData) -> Kind {
    let dtype = data.dtype();
    if dtype.is_float() {
        Kind::Float
    } else if dtype.is_bool() {
        Kind::Bool
    } else {
        Kind::Int
    }
}

fn capture_error_name(e: &CaptureError) -> String {
    let debug = format!("{e:?}");
    debug
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("CaptureError")
        .to_string()
}

fn capture_error(e: &CaptureError) -> Outcome {
    Outcome::Error {
        error: capture_error_name(e),
        message: e.to_string(),
    }
}

impl Run<'_> {
    fn set(&mut self, index: usize, outcome: Outcome) {
        if self.mode == Mode::Full {
            self.outcomes[index] = Some(outcome);
        }
    }

    fn slot(&self, s: Slot) -> Option<AnyTensor> {
        self.slots.get(usize::from(s)).cloned().flatten()
    }

    fn range(&mut self, start: usize, end: usize) -> Result<()> {
        let program = self.program;
        let mut i = start;
        while i < end {
            if let Step::EnterScope { device } = program.steps[i] {
                let exit = self.ends[i].ok_or_else(|| anyhow!("scope at step {i} has no exit"))?;
                self.scope(i, exit, device)?;
                i = exit + 1;
            } else {
                let outcome = self.step(&program.steps[i])?;
                if self.wgpu.is_some() && matches!(outcome, Outcome::Ok { .. }) {
                    self.twin(i, &program.steps[i]);
                }
                self.set(i, outcome);
                i += 1;
            }
        }
        Ok(())
    }

    /// The boundary slots that hold capture tensors, with their capture tensor ids; other slots
    /// are left out (a Flex tensor has no id in the scope's graph).
    fn boundary(&self, slots: &[Slot]) -> Vec<(Slot, TensorId)> {
        slots
            .iter()
            .filter_map(|s| Some((*s, self.slot(*s)?)))
            .filter_map(|(s, t)| {
                on_any!(t, x => x.try_into_primitive::<Capture>().ok().map(|p| (s, p.id())))
            })
            .collect()
    }

    fn shadow(&self, s: Slot) -> Option<AnyTensor> {
        self.shadows.get(usize::from(s)).cloned().flatten()
    }

    /// Records the eager value of `out` after a step produced `real` there: `real` itself when
    /// it is not a capture tensor (it already holds data), else `eager()`.
    fn set_shadow(
        &mut self,
        out: Slot,
        real: &AnyTensor,
        eager: impl FnOnce(&Self) -> Option<AnyTensor>,
    ) {
        if !self.oracles.eager_replay && self.wgpu.is_none() {
            return;
        }
        let shadow = if pool::name(&real.device()).starts_with("capture") {
            eager(self)
        } else {
            Some(real.clone())
        };
        self.shadows[usize::from(out)] = shadow;
    }

    /// The eager-replay oracle for a scope that completed: replays `graph` on Flex with the
    /// eager data of its declared inputs and compares each output with its eager value.
    fn check_replay(
        &mut self,
        exit: usize,
        graph: &CapturedGraph,
        inputs: &[(Slot, TensorId)],
        outputs: &[(Slot, TensorId)],
    ) {
        use crate::oracles::eager_replay::{difference, REPLAY_FAILURE, REPLAY_MISMATCH};
        let corrupt = CORRUPT_REPLAY_FEED.with(std::cell::Cell::get);
        let eager_data = |run: &Self, s: Slot| run.shadow(s).and_then(read_data);
        let feed: Vec<Option<TensorData>> = inputs
            .iter()
            .map(|(s, _)| {
                let data = native_bools(eager_data(self, *s)?);
                Some(if corrupt { plus_one(&data) } else { data })
            })
            .collect();
        let violation = |class: &str, summary: String, message: String| Violation {
            step: exit,
            class: class.to_string(),
            summary,
            message,
        };
        let replayed = match catch(|| replay_on_flex(graph, &feed)) {
            Err(panic) => {
                let summary = crate::oracles::normalize_message(&panic.message);
                let at = panic.location.unwrap_or_default();
                let message = format!("{} at {at}", panic.message);
                self.violations
                    .push(violation(REPLAY_FAILURE, summary, message));
                return;
            }
            // An input without eager data (its step never ran eagerly) cannot be judged.
            Ok(Err(ReplayError::MissingInput(_))) => return,
            Ok(Err(e)) => {
                let summary = crate::oracles::normalize_message(&e.to_string());
                self.violations
                    .push(violation(REPLAY_FAILURE, summary, e.to_string()));
                return;
            }
            Ok(Ok(datas)) => datas,
        };
        let mut found = Vec::new();
        for (k, ((slot, _), data)) in outputs.iter().zip(&replayed).enumerate() {
            let Some(eager) = eager_data(self, *slot) else {
                continue;
            };
            if let Some(diff) = difference(data, &eager) {
                found.push(format!("output {k} (t{slot}): {diff}"));
            }
        }
        // The same graph replayed on wgpu must agree with the eager Flex run as well.
        if let Some(wgpu) = self.wgpu.clone() {
            match catch(|| replay_on_device(graph, &feed, &wgpu)) {
                Ok(Ok(on_wgpu)) => {
                    for (k, ((slot, _), data)) in outputs.iter().zip(&on_wgpu).enumerate() {
                        let Some(eager) = eager_data(self, *slot) else {
                            continue;
                        };
                        let poisoned = self.poisoned[usize::from(*slot)];
                        if let DiffEq::Differ(diff) = differential::compare(&eager, data, poisoned)
                        {
                            found.push(format!("output {k} (t{slot}) replayed on wgpu: {diff}"));
                        }
                    }
                }
                Ok(Err(ReplayError::MissingInput(_))) => {}
                Ok(Err(e)) => {
                    let message = e.to_string();
                    let summary = format!("replay on wgpu: {}", stable_summary(&message));
                    self.violations
                        .push(violation(REPLAY_FAILURE, summary, message));
                }
                Err(panic) if crate::oracles::class_of(&panic) == crate::oracles::UNKNOWN => {
                    let summary = format!("replay on wgpu: {}", stable_summary(&panic.message));
                    self.violations
                        .push(violation(REPLAY_FAILURE, summary, panic.message));
                }
                Err(_) => {}
            }
        }
        if !found.is_empty() {
            // Name the op behind the first differing output, so mismatches of different ops
            // are different signatures.
            let first = outputs
                .iter()
                .map(|(slot, _)| *slot)
                .find(|slot| found.iter().any(|f| f.contains(&format!("(t{slot})"))));
            let what = first.map_or_else(|| "output".to_string(), |s| self.producer(s, exit));
            self.violations.push(violation(
                REPLAY_MISMATCH,
                format!("the replayed {what} differs from the eager Flex run"),
                found.join("; "),
            ));
        }
    }

    fn scope(&mut self, enter: usize, exit: usize, device: DeviceRef) -> Result<()> {
        let program = self.program;
        let Step::ExitScope { inputs, outputs } = &program.steps[exit] else {
            return Err(anyhow!("step {exit} closes a scope but is no ExitScope"));
        };
        let burn_device = match pool::device(device) {
            Ok(d) => d,
            Err(reason) => {
                for i in enter..=exit {
                    self.set(i, Outcome::skipped(reason.clone()));
                }
                return Ok(());
            }
        };
        let mut ran = false;
        let mut inner: Result<()> = Ok(());
        let (mut input_pairs, mut output_pairs) = (Vec::new(), Vec::new());
        let result = catch(|| {
            burn_device.capture_scope(|scope| {
                ran = true;
                self.set(enter, Outcome::ok());
                inner = self.range(enter + 1, exit);
                input_pairs = self.boundary(inputs);
                output_pairs = self.boundary(outputs);
                let ids =
                    |pairs: &[(Slot, TensorId)]| pairs.iter().map(|p| p.1).collect::<Vec<_>>();
                scope.complete(ids(&input_pairs), ids(&output_pairs))
            })
        });
        inner?;
        let ordinal = self.exit_ordinal[exit].context("exit has no ordinal")?;
        let at = if ran { exit } else { enter };
        match result {
            Ok(Ok(graph)) => {
                if self.oracles.eager_replay {
                    self.check_replay(exit, &graph, &input_pairs, &output_pairs);
                }
                let info = GraphInfo {
                    operations: graph.graph.operations.len(),
                    inputs: graph.graph.inputs.len(),
                    outputs: graph.graph.outputs.len(),
                    values: graph.values.len(),
                };
                self.graphs[ordinal] = Some(graph);
                self.set(
                    exit,
                    Outcome::Ok {
                        value: None,
                        graph: Some(info),
                        outputs: Vec::new(),
                    },
                );
            }
            Ok(Err(e)) => self.set(at, capture_error(&e)),
            Err(panic) => self.set(at, Outcome::Panic(panic)),
        }
        if !ran {
            for i in enter + 1..=exit {
                self.set(i, Outcome::skipped("the scope's closure never ran"));
            }
        }
        Ok(())
    }

    /// The differential oracle's half of a step that succeeded: computes the step's values again
    /// on wgpu from the slots' twins and compares each with its Flex value.
    fn twin(&mut self, index: usize, step: &Step) {
        let Some(wgpu) = self.wgpu.clone() else {
            return;
        };
        let poisoned_in = step
            .reads()
            .iter()
            .any(|s| self.poisoned[usize::from(*s)].is_some())
            .then_some(Poison::FromPoisoned);
        match step {
            Step::Create {
                out,
                kind,
                shape,
                fill,
                ..
            } => {
                let shape: Vec<usize> = shape.iter().map(|d| usize::from(*d)).collect();
                let data = super::value::fill_data(*kind, &shape, *fill);
                let twin = catch(|| twin_from_data(*kind, data, &wgpu));
                self.put_twin(index, *out, twin, None);
            }
            Step::Op { out, op } => {
                let operands = op.operands();
                if operands
                    .iter()
                    .any(|s| self.twins[usize::from(*s)].is_none())
                {
                    self.twins[usize::from(*out)] = None;
                    return;
                }
                let twin = catch(|| exec_op(op, |s| self.twins[usize::from(s)].clone()));
                let twin = match twin {
                    Ok(Ok(t)) => Ok(t),
                    Ok(Err(_)) => {
                        self.twins[usize::from(*out)] = None;
                        return;
                    }
                    Err(panic) => Err(panic),
                };
                let unspecified = self.unspecified(op);
                self.put_twin(index, *out, twin, poisoned_in.or(unspecified));
            }
            Step::ToDevice { out, src, .. }
            | Step::Clone { out, src }
            | Step::Autodiff { out, src, .. } => {
                let (out, src) = (usize::from(*out), usize::from(*src));
                self.twins[out] = self.twins[src].clone();
                self.poisoned[out] = self.poisoned[src];
            }
            Step::Drop { slot } => self.twins[usize::from(*slot)] = None,
            Step::Replay {
                graph,
                feed,
                outputs,
            } => self.twin_replay(index, *graph, feed, outputs, &wgpu),
            Step::Read { .. } | Step::EnterScope { .. } | Step::ExitScope { .. } => {}
        }
    }

    /// A `Replay` step again on wgpu: the same graph through `TensorInterpreter` on the wgpu
    /// device, fed with the twins' data.
    fn twin_replay(
        &mut self,
        index: usize,
        graph: u8,
        feed: &[Slot],
        outputs: &[Slot],
        wgpu: &burn::tensor::Device,
    ) {
        for out in outputs {
            self.twins[usize::from(*out)] = None;
        }
        let Some(Some(captured)) = self.graphs.get(usize::from(graph)) else {
            return;
        };
        let captured = captured.clone();
        let poisoned = feed
            .iter()
            .any(|s| self.poisoned[usize::from(*s)].is_some())
            .then_some(Poison::FromPoisoned);
        let feed: Vec<Option<TensorData>> = feed
            .iter()
            .map(|s| self.twins[usize::from(*s)].clone().and_then(read_data))
            .collect();
        let datas = match catch(|| replay_on_device(&captured, &feed, wgpu)) {
            Ok(Ok(datas)) => datas,
            Ok(Err(_)) => return,
            Err(panic) => {
                if let Some(out) = outputs.first() {
                    self.put_twin(index, *out, Err(panic), poisoned);
                }
                return;
            }
        };
        for (slot, data) in outputs.iter().zip(datas) {
            if !(1..=4).contains(&data.shape().num_dims()) {
                continue;
            }
            let kind = kind_of(&data);
            let twin = catch(|| twin_from_data(kind, data, wgpu));
            self.put_twin(index, *slot, twin, poisoned);
        }
    }

    /// Why `op`'s result is not pinned down by Burn on its Flex operand, if it is not: an
    /// `argmax` over a tie, a float-to-int cast out of range.
    fn unspecified(&self, op: &Op) -> Option<Poison> {
        let (src, poison) = match op {
            Op::ArgMax { src, .. } => (*src, Poison::ArgmaxTie),
            Op::Cast { src, to: Kind::Int } => (*src, Poison::OutOfRangeCast),
            _ => return None,
        };
        let Some(data) = self.shadow(src).and_then(read_data) else {
            return Some(poison);
        };
        let unspecified = match op {
            Op::ArgMax { dim, .. } => differential::argmax_has_tie(&data, usize::from(*dim)),
            _ => differential::cast_out_of_range(&data),
        };
        unspecified.then_some(poison)
    }

    /// Stores a twin and compares it with the slot's Flex value. A wgpu panic where Flex
    /// computed a value is a divergence unless the catalogue knows it.
    fn put_twin(
        &mut self,
        index: usize,
        out: Slot,
        twin: Result<AnyTensor, super::PanicInfo>,
        poisoned: Option<Poison>,
    ) {
        let o = usize::from(out);
        let shadow = self.shadow(out);
        let on_flex = shadow
            .as_ref()
            .is_some_and(|t| pool::name(&t.device()) == "flex");
        let flex = shadow.and_then(read_data);
        // The known bool storage bug makes Flex misread the value: stop comparing from here.
        let misread = on_flex
            && flex
                .as_ref()
                .is_some_and(|d| d.dtype() == DType::Bool(BoolStore::U32));
        let poisoned = poisoned.or(misread.then_some(Poison::BoolU32OnFlex));
        self.poisoned[o] = poisoned;
        let twin = match twin {
            Ok(t) => t,
            Err(panic) => {
                self.twins[o] = None;
                if flex.is_some() && crate::oracles::class_of(&panic) == crate::oracles::UNKNOWN {
                    self.diverge(
                        index,
                        out,
                        "wgpu panicked where Flex computed",
                        panic.message,
                    );
                }
                return;
            }
        };
        self.twins[o] = Some(twin.clone());
        let Some(flex) = flex else {
            return;
        };
        let on_wgpu = match catch(|| on_any!(twin, x => x.try_into_data())) {
            Ok(Ok(data)) => data,
            Ok(Err(e)) => {
                return self.diverge(index, out, "wgpu failed to read", e.to_string());
            }
            Err(panic) => {
                if crate::oracles::class_of(&panic) == crate::oracles::UNKNOWN {
                    self.diverge(index, out, "wgpu panicked reading", panic.message);
                }
                return;
            }
        };
        let on_wgpu = if PERTURB_WGPU.with(std::cell::Cell::get) == Some(index) {
            plus_one(&on_wgpu)
        } else {
            on_wgpu
        };
        let verdict = differential::compare(&flex, &on_wgpu, poisoned);
        if !matches!(verdict, DiffEq::Poisoned(_)) {
            self.compared += 1;
        }
        if let DiffEq::Differ(diff) = verdict {
            let both = format!(
                "{diff}; flex {:?} = {:?}; wgpu {:?} = {:?}",
                flex.dtype(),
                short(&flex),
                on_wgpu.dtype(),
                short(&on_wgpu)
            );
            let what = self
                .program
                .steps
                .get(index)
                .map_or_else(|| "a step".into(), what);
            let summary = format!("the result of {what} differs between Flex and wgpu");
            self.diverge(index, out, &summary, both);
        }
    }

    fn diverge(&mut self, index: usize, out: Slot, summary: &str, details: String) {
        // What is computed from a diverged value would only repeat the report.
        self.poisoned[usize::from(out)] = Some(Poison::FromPoisoned);
        self.violations.push(Violation {
            step: index,
            class: differential::DIVERGENCE.to_string(),
            summary: summary.to_string(),
            message: format!("t{out}: {details}"),
        });
    }

    /// The name of the op that computed `slot`'s value before step `before` (`unary exp`,
    /// `cast`), looking through steps that only pass a value on (clone, `to_device`, autodiff
    /// conversions), so one bug reached through different hand-offs keeps one signature.
    fn producer(&self, mut slot: Slot, mut before: usize) -> String {
        let succeeded = |i: usize| matches!(self.outcomes[i], Some(Outcome::Ok { .. }));
        loop {
            let found = self.program.steps[..before]
                .iter()
                .enumerate()
                .rev()
                .find(|(i, s)| s.writes().contains(&slot) && succeeded(*i));
            match found {
                Some((
                    i,
                    Step::Clone { src, .. }
                    | Step::ToDevice { src, .. }
                    | Step::Autodiff { src, .. },
                )) => (slot, before) = (*src, i),
                Some((_, step)) => return what(step),
                None => return "output".to_string(),
            }
        }
    }

    /// The operand slot holding the very capture tensor `t` (same id), if any.
    fn same_capture_tensor(&self, t: &AnyTensor, operands: &[Slot]) -> Option<Slot> {
        if self.mode != Mode::Full {
            return None;
        }
        let id =
            |t: AnyTensor| on_any!(t, x => x.try_into_primitive::<Capture>().ok().map(|p| p.id()));
        let out = id(t.clone())?;
        operands
            .iter()
            .copied()
            .find(|s| self.slot(*s).and_then(id) == Some(out))
    }

    /// Stores `t` in `out` and describes it.
    fn produce(&mut self, out: Slot, t: AnyTensor) -> Outcome {
        let value = (self.mode == Mode::Full).then(|| value_info(&t, None));
        self.slots[usize::from(out)] = Some(t);
        Outcome::Ok {
            value,
            graph: None,
            outputs: Vec::new(),
        }
    }

    fn step(&mut self, step: &Step) -> Result<Outcome> {
        Ok(match self.step_inner(step)? {
            Ok(outcome) | Err(outcome) => outcome,
        })
    }

    /// `Ok(Err(outcome))` ends a step early with a non-`Ok` outcome.
    fn step_inner(&mut self, step: &Step) -> Result<Result<Outcome, Outcome>> {
        macro_rules! caught {
            ($e:expr) => {
                match catch(|| $e) {
                    Ok(v) => v,
                    Err(panic) => return Ok(Err(Outcome::Panic(panic))),
                }
            };
        }
        macro_rules! device {
            ($d:expr) => {
                match pool::device($d) {
                    Ok(d) => d,
                    Err(reason) => return Ok(Err(Outcome::skipped(reason))),
                }
            };
        }
        macro_rules! operand {
            ($s:expr) => {
                match self.slot($s) {
                    Some(t) => t,
                    None => return Ok(Err(Outcome::skipped(format!("slot t{} is empty", $s)))),
                }
            };
        }
        Ok(Ok(match step {
            Step::Create {
                out,
                kind,
                shape,
                fill,
                device,
            } => {
                let shape: Vec<usize> = shape.iter().map(|d| usize::from(*d)).collect();
                let data = super::value::fill_data(*kind, &shape, *fill);
                let device = device!(*device);
                let t = caught!(AnyTensor::from_data(*kind, data.clone(), &device));
                let flex = device!(DeviceRef::Flex);
                self.set_shadow(*out, &t, |_| {
                    catch(|| AnyTensor::from_data(*kind, data, &flex)).ok()
                });
                self.produce(*out, t)
            }
            Step::EnterScope { .. } | Step::ExitScope { .. } => {
                return Err(anyhow!("scope steps are run by `scope`, not `step`"));
            }
            Step::Op { out, op } => {
                let types = |s: Slot| self.slot(s).map(|t| t.ty());
                if op_output(op, types).is_none() {
                    return Ok(Err(Outcome::skipped(
                        "operands are missing or do not fit the op",
                    )));
                }
                let t = caught!(exec_op(op, |s| self.slot(s)))?;
                // The eager twin may legitimately fail (Flex rejects what capture records, e.g.
                // mixed int dtypes); then the slot has no eager value and is not judged.
                self.set_shadow(*out, &t, |run| {
                    catch(|| exec_op(op, |s| run.shadow(s)))
                        .ok()
                        .and_then(Result::ok)
                });
                let same_as = self.same_capture_tensor(&t, &op.operands());
                let mut outcome = self.produce(*out, t);
                if let Outcome::Ok { value: Some(v), .. } = &mut outcome {
                    v.same_as = same_as;
                }
                outcome
            }
            Step::ToDevice { out, src, device } => {
                let t = operand!(*src);
                let device = device!(*device);
                let moved = caught!(map_any!(t, x => x.to_device(&device)));
                self.set_shadow(*out, &moved, |run| run.shadow(*src));
                self.produce(*out, moved)
            }
            Step::Replay {
                graph,
                feed,
                outputs,
            } => {
                let Some(Some(captured)) = self.graphs.get(usize::from(*graph)) else {
                    return Ok(Err(Outcome::skipped(format!(
                        "graph{graph} was not captured"
                    ))));
                };
                let captured = captured.clone();
                // Feeding is best effort: a slot that cannot be read leaves the input at its
                // recorded value. Reads are tested by `Read` steps, not here.
                let feed: Vec<Option<TensorData>> = feed
                    .iter()
                    .map(|s| self.slot(*s).and_then(read_data))
                    .collect();
                let datas = match caught!(replay_on_flex(&captured, &feed)) {
                    Ok(datas) => datas,
                    Err(e) => {
                        return Ok(Err(Outcome::Error {
                            error: e.name().into(),
                            message: e.to_string(),
                        }))
                    }
                };
                let flex = device!(DeviceRef::Flex);
                let mut infos = Vec::new();
                for (i, slot) in outputs.iter().enumerate() {
                    let data = datas
                        .get(i)
                        .filter(|d| (1..=4).contains(&d.shape().num_dims()));
                    let Some(data) = data else {
                        self.slots[usize::from(*slot)] = None;
                        continue;
                    };
                    let t = caught!(AnyTensor::from_data(kind_of(data), data.clone(), &flex));
                    self.set_shadow(*slot, &t, |_| None);
                    if self.mode == Mode::Full {
                        infos.push(value_info(&t, Some(data)));
                    }
                    self.slots[usize::from(*slot)] = Some(t);
                }
                Outcome::Ok {
                    value: None,
                    graph: None,
                    outputs: infos,
                }
            }
            Step::Read { src, fallible } => {
                let t = operand!(*src);
                let read = if *fallible {
                    caught!(on_any!(t.clone(), x => x.try_into_data()))
                } else {
                    Ok(caught!(on_any!(t.clone(), x => x.into_data())))
                };
                match read {
                    Ok(data) => Outcome::Ok {
                        value: (self.mode == Mode::Full).then(|| value_info(&t, Some(&data))),
                        graph: None,
                        outputs: Vec::new(),
                    },
                    Err(e) => Outcome::Error {
                        error: "ExecutionError".into(),
                        message: e.to_string(),
                    },
                }
            }
            Step::Clone { out, src } => {
                let t = operand!(*src);
                let cloned = caught!(t.clone());
                self.set_shadow(*out, &cloned, |run| run.shadow(*src));
                self.produce(*out, cloned)
            }
            Step::Drop { slot } => {
                let t = operand!(*slot);
                self.slots[usize::from(*slot)] = None;
                self.shadows[usize::from(*slot)] = None;
                caught!(drop(t));
                Outcome::ok()
            }
            Step::Autodiff { out, src, mode } => {
                let t = operand!(*src);
                let converted = caught!(match (mode, t) {
                    (AutodiffMode::RequireGrad, AnyTensor::Float(r)) =>
                        AnyTensor::Float(super::value::map_rank!(r, x => x.require_grad())),
                    (AutodiffMode::Disable, t) => map_any!(t, x => x.without_autodiff()),
                    (_, t) => map_any!(t, x => x.autodiff()),
                });
                self.set_shadow(*out, &converted, |run| run.shadow(*src));
                self.produce(*out, converted)
            }
        }))
    }
}

/// `Tensor::from_data` on wgpu. Bools go through an int tensor: wgpu's own `bool_from_data`
/// rejects Flex's native bool storage (the catalogued `bool-storage-transfer` bug), and the twin
/// must not stop at a bug that is already known and stored.
fn twin_from_data(kind: Kind, data: TensorData, wgpu: &burn::tensor::Device) -> AnyTensor {
    if kind != Kind::Bool {
        return AnyTensor::from_data(kind, data, wgpu);
    }
    let shape = data.shape().clone();
    let ints: Vec<i32> = data.iter::<bool>().map(i32::from).collect();
    match AnyTensor::from_data(Kind::Int, TensorData::new(ints, shape), wgpu) {
        AnyTensor::Int(r) => AnyTensor::Bool(super::value::map_rank!(r, x => x.bool())),
        other => other,
    }
}

/// `data` with bools in Flex's native storage: an input that lived on wgpu holds `Bool(U32)`,
/// which Flex's interpreter cannot take (the catalogued `bool-storage-transfer` bug), and the
/// oracle must judge the graph, not meet that bug again.
fn native_bools(data: TensorData) -> TensorData {
    if !data.dtype().is_bool() || data.dtype() == DType::Bool(BoolStore::Native) {
        return data;
    }
    let bools: Vec<bool> = differential::values(&data)
        .iter()
        .map(|v| *v != 0.0)
        .collect();
    TensorData::new(bools, data.shape().clone())
}

/// A failure message reduced to what stays the same from run to run: its first line and its
/// last line that names an error, with hash-like tokens (six or more characters with a digit,
/// such as kernel names) replaced by `N`.
fn stable_summary(message: &str) -> String {
    let lines: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let first = lines.first().copied().unwrap_or_default();
    let cause = lines
        .iter()
        .skip(1)
        .rev()
        .find(|l| l.to_lowercase().contains("error") && !l.starts_with("Caused by"));
    let text = match cause {
        Some(cause) => format!("{first}: {cause}"),
        None => first.to_string(),
    };
    text.split(' ')
        .map(|w| {
            if w.len() >= 6 && w.chars().any(|c| c.is_ascii_digit()) {
                "N"
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Up to eight values of `data`, for a divergence message.
fn short(data: &TensorData) -> Vec<f64> {
    differential::values(data).into_iter().take(8).collect()
}

/// The data of `t`, or `None` when reading it panics or errs (the oracles read values to judge
/// them; failing reads are judged by `Read` steps).
fn read_data(t: AnyTensor) -> Option<TensorData> {
    catch(|| on_any!(t, x => x.try_into_data())).ok()?.ok()
}

/// A step's name in signatures: the op's (`unary exp`, `cast`) or the step kind's.
fn what(step: &Step) -> String {
    match step {
        Step::Op { op, .. } => op.name(),
        step => step.name().to_string(),
    }
}

/// `data` with one added to every element (bools flipped): wrong input data for the
/// eager-replay oracle's own tests.
fn plus_one(data: &TensorData) -> TensorData {
    let shape = data.shape().clone();
    if data.dtype().is_bool() {
        let values: Vec<bool> = data.iter::<bool>().map(|b| !b).collect();
        return TensorData::new(values, shape);
    }
    let values: Vec<f64> = data.iter::<f64>().map(|v| v + 1.0).collect();
    TensorData::new(values, shape).convert_dtype(data.dtype())
}
