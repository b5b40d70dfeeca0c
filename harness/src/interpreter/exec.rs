//! Walks a program's steps, opening real capture scopes for `EnterScope`/`ExitScope` pairs.

use std::borrow::Cow;

use anyhow::{anyhow, Context, Result};
use burn::tensor::{CaptureError, CapturedGraph, TensorData, TensorId};
use burn_backend::{BoolStore, DType};
use burn_dispatch::backends::Capture;

use super::catch::catch;
use super::ops::exec_op;
use super::pool;
use super::replay::{replay_on_flex, ReplayError};
use super::trace::{fnv1a, GraphInfo, Outcome, StepRecord, Trace, ValueInfo};
use super::value::{map_any, on_any, AnyTensor};
use crate::oracles::eager_replay::Violation;
use crate::program::limits::MAX_SLOTS;
use crate::program::{op_output, AutodiffMode, DeviceRef, Kind, Program, Slot, Step};

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
}

impl Oracles {
    /// Every oracle on.
    pub const ALL: Oracles = Oracles { eager_replay: true };
    /// Every oracle off.
    pub const NONE: Oracles = Oracles {
        eager_replay: false,
    };
}

thread_local! {
    static CORRUPT_REPLAY_FEED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
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
    /// The eager Flex value of each slot, for the eager-replay oracle.
    shadows: Vec<Option<AnyTensor>>,
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
        violations: Vec::new(),
        graphs: vec![None; exits],
        outcomes: vec![None; n],
    };
    run.range(0, n)?;
    // Dropping a tensor talks to its backend too (capture records a `Drop`), so teardown runs
    // under `catch` like any step and a panic there is reported, not lost.
    let slots = std::mem::take(&mut run.slots);
    let shadows = std::mem::take(&mut run.shadows);
    let teardown = catch(move || drop(slots)).err();
    let _ = catch(move || drop(shadows));
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
        if !self.oracles.eager_replay {
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
        let eager_data = |run: &Self, s: Slot| -> Option<TensorData> {
            let t = run.shadow(s)?;
            catch(|| on_any!(t, x => x.try_into_data())).ok()?.ok()
        };
        let feed: Vec<Option<TensorData>> = inputs
            .iter()
            .map(|(s, _)| {
                let data = eager_data(self, *s)?;
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
        if !found.is_empty() {
            self.violations.push(violation(
                REPLAY_MISMATCH,
                "a replayed graph output differs from the eager Flex run".into(),
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
                self.produce(*out, t)
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
                    .map(|s| {
                        let t = self.slot(*s)?;
                        catch(|| on_any!(t, x => x.try_into_data()))
                            .ok()
                            .and_then(|r| r.ok())
                    })
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
