//! Walks a program's steps, opening real capture scopes for `EnterScope`/`ExitScope` pairs, and
//! calls the [`Lockstep`] hook after each step and each completed scope.

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use anyhow::{anyhow, Context, Result};
use burn::tensor::{
    CaptureError, CaptureScope, CapturedGraph, CompletedCaptureScope, Device, TensorData, TensorId,
    Transaction,
};
use burn_backend::{BoolStore, DType, ExecutionError};
use burn_dispatch::backends::Capture;
use burn_dispatch::DispatchDevice;

use super::catch::{self, at_site, catch, harness_code, Journal};
use super::faults::ThreadFaults;
use super::lanes::{self, Lanes};
use super::lockstep::{CompletedScope, Lockstep, Unobserved, World};
use super::mirror::{kind_of, read_data};
use super::ops::{exec_op, gradient};
use super::pool;
use super::replay::{replay_on_flex, takes_feed};
use super::trace::{
    Digest, GraphInfo, Outcome, PanicInfo, StepRecord, Trace, ValueInfo, EXECUTION_ERROR,
};
use super::value::{held_in, map_any, on_any, AnyTensor, Held};
use crate::hash::words_digest;
use crate::program::limits::MAX_SLOTS;
use crate::program::{
    fill_data, op_output, queried_dtype, AutodiffMode, Backends, DeviceCall, DeviceRef, Dtype,
    ExitForm, Program, Slot, Step,
};

/// How much the interpreter records besides calling Burn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Outcomes with shapes, dtypes, devices and digests, then the state-leak check.
    Full,
    /// The Burn calls alone (each still under `catch_unwind`): no outcomes, no digests, no
    /// leak check, no lockstep hook. The baseline that `dispatch-fuzz bench` compares `Full`
    /// against.
    Bare,
}

struct Run<'p, 'h> {
    program: &'p Program,
    /// The session's backends: a wgpu step is skipped, with the reason, where they have none.
    backends: Backends,
    mode: Mode,
    hook: &'h mut dyn Lockstep,
    /// Ordinal of each `ExitScope` step among all exits, indexed by step.
    exit_ordinal: Vec<Option<usize>>,
    slots: Vec<Option<Held>>,
    graphs: Vec<Option<CapturedGraph>>,
    /// Each step's record, in step order: the trace's own list, filled in place (a record is
    /// ~180 bytes, and moving every one into a new list cost 1% of a run).
    records: Vec<StepRecord>,
    /// Whether step `i`'s record holds its outcome yet.
    visited: Vec<bool>,
    /// For each `Replay` step, which of its feed slots the graph took (data of the recorded
    /// shape and dtype; the rest ran with the recorded values): mirrors must feed the same
    /// inputs.
    fed: Vec<Vec<bool>>,
    /// The step running.
    current: usize,
}

/// Runs `program` on the real crates, on `backends`, and returns its trace. `Err` only for the
/// harness's own failures; everything Burn does, panics included, is in the trace.
pub fn run(program: &Program, backends: Backends, mode: Mode) -> Result<Trace> {
    run_in_lockstep(program, backends, mode, &mut Unobserved)
}

/// [`run`], calling `hook` after every step and completed scope ([`Mode::Full`] only).
pub fn run_in_lockstep(
    program: &Program,
    backends: Backends,
    mode: Mode,
    hook: &mut dyn Lockstep,
) -> Result<Trace> {
    run_scheduled(program, backends, mode, hook, false)
}

/// [`run`] in collide mode (syzkaller's): each pair of neighbouring runs of steps on different
/// program threads runs at the same time, the first pair, then the next, instead of one after
/// the other. A step still holds the run's state while it runs, so two steps never overlap each
/// other; what overlaps a step is another thread's capture scope being entered, registered,
/// completed and left, the calls that reach the process-wide client registry. Outcomes follow
/// the timing: no oracle follows such a run (`oracles::collide` classifies its panics), and a
/// single-threaded program runs as [`run`] runs it.
pub fn run_colliding(program: &Program, backends: Backends) -> Result<Trace> {
    run_scheduled(program, backends, Mode::Full, &mut Unobserved, true)
}

fn run_scheduled(
    program: &Program,
    backends: Backends,
    mode: Mode,
    hook: &mut dyn Lockstep,
    collide: bool,
) -> Result<Trace> {
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
    let run = Run {
        program,
        backends,
        mode,
        hook,
        exit_ordinal,
        slots: vec![None; usize::from(MAX_SLOTS)],
        graphs: vec![None; exits],
        records: (0..n)
            .map(|index| StepRecord {
                index,
                outcome: Outcome::skipped(String::new()),
            })
            .collect(),
        visited: vec![false; n],
        fed: vec![Vec::new(); n],
        current: 0,
    };
    catch::journal_start();
    let shared = Shared {
        state: Mutex::new(Exclusive(run)),
        entering: AtomicUsize::new(0),
    };
    // A single-threaded program (nearly every one) needs no thread per step: `range` reads
    // them only where there are lanes.
    let threaded = program.thread_count() > 1;
    let threads = if threaded {
        program.step_threads()
    } else {
        Vec::new()
    };
    let ends = program.scope_ends();
    let walk = Walk {
        run: &shared,
        program,
        threads: &threads,
        ends: &ends,
        lanes: None,
        me: 0,
        test_faults: ThreadFaults::here(),
        collide,
    };
    if threaded {
        // Program thread 0 is this thread; the others are its lanes.
        lanes::with(|lanes| {
            Walk {
                lanes: Some(lanes),
                ..walk
            }
            .range(0, n)
        })?;
    } else {
        walk.range(0, n)?;
    }
    let mut run = shared
        .state
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .0;
    catch::set_step(None);
    // Dropping a tensor talks to its backend too (capture records a `Drop`), so teardown runs
    // under `catch` like any step and a panic there is reported, not lost.
    let slots = std::mem::take(&mut run.slots);
    let teardown = catch(move || drop(slots)).err();
    if mode == Mode::Full {
        run.hook.finish();
    }
    if uses_autodiff(program) {
        at_site("autodiff sweep", pool::sweep_autodiff_graphs);
    }
    if mode == Mode::Bare {
        // The journal is dropped by the next run's `journal_start`.
        return Ok(Trace::default());
    }
    if let Some(index) = run.visited.iter().position(|v| !v) {
        return Err(anyhow!("step {index} was never visited"));
    }
    let steps = run.records;
    let leaked_devices = at_site("device pool probe", || {
        pool::leaked_devices(pool::named_by(program))
    });
    let (side_panics, side_errors) = catch::journal_take();
    let trace = Trace {
        steps,
        teardown,
        side_panics,
        side_errors,
        leaked_devices,
    };
    // A panic of the harness's own code is never a Burn outcome, wherever it was caught.
    if let Some((step, panic)) = trace
        .panics()
        .find(|(_, p)| p.class == catch::HARNESS_ERROR)
    {
        return Err(harness_panic(
            format!("the harness panicked at step {step}"),
            panic,
        ));
    }
    Ok(trace)
}

/// The harness error for a panic of the harness's own code: what was running, the message and
/// where it was raised.
fn harness_panic(what: String, panic: &PanicInfo) -> anyhow::Error {
    let at = panic.location.as_deref().unwrap_or("?");
    anyhow!("{what}: {} at {at}", panic.message)
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

/// What a read handed back for `t`: `t`'s kind and device, the data's own dtype and shape (a
/// transaction's answer need not be the tensor's, and the dtype contract judges it), and the
/// data's digest.
pub fn data_info(t: &AnyTensor, data: &TensorData) -> ValueInfo {
    ValueInfo {
        kind: t.kind(),
        dtype: dtype_name(data.dtype()),
        shape: data.shape().to_vec(),
        device: Cow::Borrowed(pool::name(&t.device())),
        same_as: None,
        digest: Some(data_digest(data)),
    }
}

/// Whether `v` is on Flex or wgpu, where no tensor is a capture tensor.
fn on_plain_device(v: &ValueInfo) -> bool {
    matches!(&*v.device, "flex" | "flex_ad" | "wgpu" | "wgpu_ad")
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

fn data_digest(data: &TensorData) -> Digest {
    let dtype = dtype_name(data.dtype());
    let shape: Vec<u8> = data
        .shape()
        .iter()
        .flat_map(|d| (*d as u64).to_le_bytes())
        .collect();
    Digest(words_digest(&[dtype.as_bytes(), &shape, data.as_bytes()]))
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

impl Run<'_, '_> {
    fn set(&mut self, index: usize, outcome: Outcome) {
        if self.mode == Mode::Full {
            self.records[index].outcome = outcome;
            self.visited[index] = true;
        }
    }

    /// A handle of the tensor in slot `s`, to hand to Burn (which consumes its operands).
    fn slot(&self, s: Slot) -> Option<AnyTensor> {
        self.slot_ref(s).cloned()
    }

    fn slot_ref(&self, s: Slot) -> Option<&AnyTensor> {
        held_in(&self.slots, s)
    }

    /// Hands the hook a view of the run.
    /// Calls the oracles' hook. Its Burn calls run under their own `catch`; what unwinds past
    /// them was raised while the hook let go of Burn values (a mirror's tensor dropped on a
    /// wgpu device that died: fuzz --backends flex,capture,wgpu --seed 104) and goes to the
    /// journal, instead of leaving the rest of the scope's steps unvisited. A panic of the hook's
    /// own code is a harness error.
    fn observe(&mut self, f: impl FnOnce(&mut dyn Lockstep, &World<'_>)) -> Result<()> {
        if self.mode != Mode::Full {
            return Ok(());
        }
        let world = World {
            program: self.program,
            slots: &self.slots,
            graphs: &self.graphs,
            records: &self.records,
            visited: &self.visited,
            fed: &self.fed,
        };
        let hook = &mut *self.hook;
        match catch(|| harness_code(|| f(hook, &world))) {
            Ok(()) => Ok(()),
            Err(panic) if panic.class == catch::HARNESS_ERROR => Err(harness_panic(
                "an oracle's hook panicked".to_string(),
                &panic,
            )),
            Err(panic) => {
                at_site("oracle hook", || catch::note(panic));
                Ok(())
            }
        }
    }

    /// The capture handles of `slots` that hold a plain (not autodiff) capture tensor: what a
    /// scope's boundary can name.
    fn boundary(&self, slots: &[Slot]) -> Vec<(Slot, Handle)> {
        slots
            .iter()
            .filter_map(|s| Some((*s, self.slot(*s)?)))
            .filter_map(|(s, t)| {
                on_any!(t, x => x.try_into_primitive::<Capture>().ok()).map(|p| (s, p))
            })
            .collect()
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
        let value = self.describe(&t);
        self.store(out, t, value)
    }

    /// `t`'s description, in [`Mode::Full`].
    fn describe(&self, t: &AnyTensor) -> Option<ValueInfo> {
        (self.mode == Mode::Full).then(|| value_info(t, None))
    }

    /// Stores `t` in `out`, described as `value`.
    fn store(&mut self, out: Slot, t: AnyTensor, value: Option<ValueInfo>) -> Outcome {
        self.slots[usize::from(out)] = Some(Held::new(t));
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
                match pool::device($d, self.backends) {
                    Ok(d) => d,
                    Err(reason) => return Ok(Err(Outcome::skipped(reason))),
                }
            };
        }
        macro_rules! operand {
            ($s:expr) => {
                match self.slot($s) {
                    Some(t) => t,
                    None => return Ok(Err(empty($s))),
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
                dtype,
            } => {
                let data = fill_data(*kind, *dtype, shape, *fill);
                let device = device!(*device);
                let dtype = dtype.map(Dtype::burn);
                let t = caught!(AnyTensor::from_data(*kind, data, &device, dtype));
                self.produce(*out, t)
            }
            Step::EnterScope { .. } | Step::ExitScope { .. } => {
                return Err(anyhow!("scope steps are run by `scope`, not `step`"));
            }
            // The switch itself calls nothing: the steps after it run on its thread.
            Step::Thread { .. } => Outcome::ok(),
            Step::Op { out, op } => {
                let types = |s: Slot| self.slot_ref(s).map(AnyTensor::ty);
                if op_output(op, types).is_none() {
                    return Ok(Err(Outcome::skipped(
                        "operands are missing or do not fit the op",
                    )));
                }
                let t = caught!(exec_op(op, |s| self.slot(s)))?;
                let mut value = self.describe(&t);
                // Only a capture tensor can be an operand handed back; asking every result
                // costs a clone of it and of each operand.
                if let Some(v) = value.as_mut().filter(|v| !on_plain_device(v)) {
                    v.same_as = self.same_capture_tensor(&t, &op.operands());
                }
                self.store(*out, t, value)
            }
            Step::ToDevice { out, src, device } => {
                let t = operand!(*src);
                let device = device!(*device);
                let moved = caught!(map_any!(t, x => x.to_device(&device)));
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
                    .map(|s| at_site("replay feed", || self.slot(*s).and_then(read_data)))
                    .collect();
                // What the graph took: data of another shape or dtype leaves the input at its
                // recorded value, and the mirrors must do the same.
                self.fed[self.current] = feed
                    .iter()
                    .enumerate()
                    .map(|(k, d)| d.as_ref().is_some_and(|d| takes_feed(&captured, k, d)))
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
                // Every output is loaded before any slot is written: a load that panics (an
                // output Flex's default dtype cannot hold) fails the step, and a failed step
                // writes nothing, as the oracles' models of the run take it.
                let mut loaded = Vec::with_capacity(outputs.len());
                for (i, slot) in outputs.iter().enumerate() {
                    let data = datas
                        .get(i)
                        .filter(|d| (1..=4).contains(&d.shape().num_dims()));
                    let Some(data) = data else {
                        loaded.push((*slot, None));
                        continue;
                    };
                    let t = caught!(AnyTensor::from_data(
                        kind_of(data),
                        data.clone(),
                        &flex,
                        None
                    ));
                    if self.mode == Mode::Full {
                        infos.push(value_info(&t, Some(data)));
                    }
                    loaded.push((*slot, Some(Held::new(t))));
                }
                for (slot, held) in loaded {
                    self.slots[usize::from(slot)] = held;
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
                        error: EXECUTION_ERROR.into(),
                        message: e.to_string(),
                    },
                }
            }
            Step::Transaction { srcs, fallible } => {
                let mut tensors = Vec::with_capacity(srcs.len());
                for s in srcs {
                    tensors.push(operand!(*s));
                }
                // Registering hands Burn the tensors, so clones go in and the slots keep theirs.
                let transaction = caught!(tensors
                    .iter()
                    .cloned()
                    .fold(Transaction::default(), |tr, t| t.register_in(tr)));
                let read = if *fallible {
                    caught!(transaction.try_execute())
                } else {
                    Ok(caught!(transaction.execute()))
                };
                match read {
                    Ok(datas) => Outcome::Ok {
                        value: None,
                        graph: None,
                        // Every answer is recorded, any past the tensors included (described
                        // with the last tensor), so the oracles can count them; an empty
                        // transaction has no tensor to describe an answer with.
                        outputs: match (self.mode, tensors.last()) {
                            (Mode::Full, Some(last)) => datas
                                .iter()
                                .enumerate()
                                .map(|(k, data)| data_info(tensors.get(k).unwrap_or(last), data))
                                .collect(),
                            _ => Vec::new(),
                        },
                    },
                    Err(e) => Outcome::Error {
                        error: EXECUTION_ERROR.into(),
                        message: e.to_string(),
                    },
                }
            }
            Step::Clone { out, src } => {
                let t = operand!(*src);
                let cloned = caught!(t.clone());
                self.produce(*out, cloned)
            }
            Step::Drop { slot } => {
                let Some(t) = self.slots[usize::from(*slot)].take() else {
                    return Ok(Err(empty(*slot)));
                };
                // The last handle is dropped here, under `catch` (a mirror may share a Flex
                // value, and lets go of it when it follows this step).
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
                self.produce(*out, converted)
            }
            Step::Backward { out, loss, param } => {
                let (loss, param) = (operand!(*loss), operand!(*param));
                match caught!(gradient(loss, &param)) {
                    Ok(Some(grad)) => self.produce(*out, grad),
                    Ok(None) => {
                        self.slots[usize::from(*out)] = None;
                        Outcome::ok()
                    }
                    Err(reason) => return Ok(Err(Outcome::skipped(reason.to_string()))),
                }
            }
            Step::Device { device, call } => {
                let device = device!(*device);
                match caught!(call_device(&device, *call)) {
                    Ok(()) => Outcome::ok(),
                    Err(message) => Outcome::Error {
                        error: match call {
                            DeviceCall::IdRoundTrip => "IdRoundTrip".into(),
                            _ => EXECUTION_ERROR.into(),
                        },
                        message,
                    },
                }
            }
        }))
    }
}

/// The outcome of a step whose operand slot `s` holds no tensor.
fn empty(s: Slot) -> Outcome {
    Outcome::skipped(format!("slot t{s} is empty"))
}

/// A capture device's tensor handle: what a scope's boundary names.
type Handle = burn_backend::tensor::FloatTensor<Capture>;

/// The payload an [`ExitForm::Unwind`] closure unwinds with.
const UNWIND_PAYLOAD: &str = "dispatch-fuzz: the scope's closure unwinds on purpose";

/// Whether `panic` is the closure's own unwind: its payload, with no location (no hook ran).
fn is_unwind_payload(panic: &PanicInfo) -> bool {
    panic.message == UNWIND_PAYLOAD && panic.location.is_none()
}

/// `scope.complete_with(..)` with `outputs` in the shape `form` names: a slice, or the unit,
/// array or tuple of that many references (a slice past four, which no tuple takes).
fn complete_with(
    scope: CaptureScope,
    outputs: &[&Handle],
    form: ExitForm,
) -> CompletedCaptureScope {
    match (form, outputs) {
        (ExitForm::WithSlice, _) => scope.complete_with(outputs),
        (_, []) => scope.complete_with(()),
        (_, [a]) => scope.complete_with([*a]),
        (_, [a, b]) => scope.complete_with((*a, *b)),
        (_, [a, b, c]) => scope.complete_with((*a, *b, *c)),
        (_, [a, b, c, d]) => scope.complete_with((*a, *b, *c, *d)),
        _ => scope.complete_with(outputs),
    }
}

/// Makes the device call `call` on `device`. `supports_dtype`'s and `name`'s answers are not
/// judged, only that asking does not fail; an id that does not give the device back is an
/// error outcome the model does not expect.
fn call_device(device: &Device, call: DeviceCall) -> Result<(), String> {
    let failed = |e: ExecutionError| e.to_string();
    match call {
        DeviceCall::Sync => device.sync().map_err(failed),
        DeviceCall::Flush => device.flush().map_err(failed),
        DeviceCall::Seed(n) => {
            device.seed(u64::from(n));
            Ok(())
        }
        DeviceCall::SupportsDtype(k) => {
            let _ = device.supports_dtype(queried_dtype(k).1);
            Ok(())
        }
        DeviceCall::Name => {
            let _ = <burn_dispatch::Dispatch as burn_backend::Backend>::name(device.as_dispatch());
            Ok(())
        }
        DeviceCall::IdRoundTrip => {
            let id = burn_backend::Device::to_id(device.as_dispatch());
            let back = <DispatchDevice as burn_backend::Device>::from_id(id);
            if back == *device.as_dispatch() {
                Ok(())
            } else {
                Err(format!(
                    "{id:?} names {back:?}, not {:?}",
                    device.as_dispatch()
                ))
            }
        }
    }
}

/// A closure handed to another program thread, with the walk it runs in there.
struct Handed<'a, 'p, 'h, F> {
    there: Walk<'a, 'p, 'h>,
    f: F,
}

impl<'a, 'p, 'h, F: FnOnce(&Walk<'a, 'p, 'h>) -> Result<()>> Handed<'a, 'p, 'h, F> {
    /// Runs it on this thread, the thread it was handed to: the planted faults taken on, the
    /// journal it noted handed back with its result.
    fn run(self) -> (Result<()>, Journal) {
        self.there.test_faults.plant();
        let result = (self.f)(&self.there);
        (result, catch::journal_take())
    }
}

/// How long a planted racy scope waits between its start and its registration.
const RACY_WINDOW: std::time::Duration = std::time::Duration::from_millis(2);

/// The run's state, which the program's threads hand to one another: a step runs with the lock
/// held; in the serial schedule only one thread works at a time, the one the schedule names.
struct Shared<'p, 'h> {
    state: Mutex<Exclusive<Run<'p, 'h>>>,
    /// Threads between the start of a scope and its closure's first line, counted only where a
    /// test planted a race there (`faults::racy_scope_for_tests`, with the `test-hooks` feature).
    entering: AtomicUsize,
}

/// A [`Run`] that may move between the program's threads.
struct Exclusive<T>(T);

// SAFETY: a `Run` is `!Send` for the `Rc`s its slots and the oracles' hook hold. It is only ever
// reached through `Shared`'s mutex, and no `Rc` escapes the lock: a step's Burn values leave it
// as `AnyTensor`s and capture handles, which are `Send`. So every access to those `Rc`s, from
// whichever program thread, is ordered by the lock, in the serial schedule (where a thread hands
// the schedule on through `Lanes::install` and blocks) and under collide (where two threads
// run at once, each taking the lock for each step) alike.
unsafe impl<T> Send for Exclusive<T> {}

impl<'p, 'h> Shared<'p, 'h> {
    fn with<T>(&self, f: impl FnOnce(&mut Run<'p, 'h>) -> T) -> T {
        let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut guard.0)
    }
}

/// One program thread's view of a run: the shared state, which thread runs each step, and the
/// lanes the other threads' steps are handed to.
#[derive(Clone, Copy)]
struct Walk<'a, 'p, 'h> {
    run: &'a Shared<'p, 'h>,
    program: &'p Program,
    /// The program thread of each step ([`Program::step_threads`]); empty, and never read,
    /// without lanes.
    threads: &'a [u8],
    ends: &'a [Option<usize>],
    /// The program's threads, for a program that names more than one.
    lanes: Option<&'a Lanes>,
    /// The program thread this walk runs on.
    me: u8,
    /// The faults tests planted on the thread that runs the program.
    test_faults: ThreadFaults,
    /// Collide mode ([`run_colliding`]).
    collide: bool,
}

impl<'a, 'p, 'h> Walk<'a, 'p, 'h> {
    /// This walk as program thread `thread` runs it, with `f` wrapped for that thread: the
    /// planted faults taken on, and the journal it noted handed back with `f`'s result.
    fn handed<F: FnOnce(&Self) -> Result<()> + Send>(
        &self,
        thread: u8,
        f: F,
    ) -> Handed<'a, 'p, 'h, F> {
        let there = Walk {
            me: thread,
            ..*self
        };
        Handed { there, f }
    }

    /// Runs `f` on program thread `thread`: here, or on that thread's lane, this thread serving
    /// its own lane meanwhile. What the other thread's journal noted comes back to this one's.
    fn on(&self, thread: u8, f: impl FnOnce(&Self) -> Result<()> + Send) -> Result<()> {
        let lanes = match self.lanes {
            Some(lanes) if thread != self.me => lanes,
            _ => return f(self),
        };
        let handed = self.handed(thread, f);
        let (result, journal) = lanes.install(self.me, thread, move || handed.run());
        catch::journal_extend(journal);
        result
    }

    /// The step after step `i`, or after its whole scope where it opens one.
    fn next(&self, i: usize) -> Result<usize> {
        match self.program.steps[i] {
            Step::EnterScope { .. } => self.ends[i]
                .map(|exit| exit + 1)
                .ok_or_else(|| anyhow!("scope at step {i} has no exit")),
            _ => Ok(i + 1),
        }
    }

    /// The end of the run of steps and whole scopes from `i` (before `end`) on step `i`'s thread.
    fn segment_end(&self, i: usize, end: usize) -> Result<usize> {
        let thread = self.threads[i];
        let mut j = i;
        while j < end && self.threads[j] == thread {
            j = self.next(j)?;
        }
        Ok(j)
    }

    /// Runs steps `start..end`, each on its thread: a run of steps and whole scopes on another
    /// thread is handed to it at once, so a thread that runs ten steps in a row is woken once.
    /// Under collide, each two neighbouring runs on different threads run at the same time.
    fn range(&self, start: usize, end: usize) -> Result<()> {
        let lanes = match self.lanes {
            Some(lanes) if self.collide => lanes,
            _ => return self.in_order(start, end),
        };
        let mut i = start;
        while i < end {
            let j = self.segment_end(i, end)?;
            if j >= end {
                return self.in_order(i, j);
            }
            let k = self.segment_end(j, end)?;
            // One of the two runs is on another thread (they differ): it goes there, and this
            // thread runs the other, handing it on where it is a third thread's.
            let (there, here) = if self.threads[i] != self.me {
                ((self.threads[i], i, j), (j, k))
            } else {
                ((self.threads[j], j, k), (i, j))
            };
            let (thread, from, to) = there;
            let handed = self.handed(thread, move |walk: &Self| walk.in_order(from, to));
            let ((result, journal), here) = lanes.join(
                self.me,
                thread,
                move || handed.run(),
                || self.in_order(here.0, here.1),
            );
            catch::journal_extend(journal);
            result.and(here)?;
            i = k;
        }
        Ok(())
    }

    /// Runs steps `start..end` one run of a thread after another, each on its thread.
    fn in_order(&self, start: usize, end: usize) -> Result<()> {
        let program = self.program;
        let mut i = start;
        while i < end {
            if self.lanes.is_some() && self.threads[i] != self.me {
                let (thread, j) = (self.threads[i], self.segment_end(i, end)?);
                self.on(thread, |walk| walk.range(i, j))?;
                i = j;
                continue;
            }
            if let Step::EnterScope { device } = program.steps[i] {
                let exit = self.next(i)? - 1;
                self.scope(i, exit, device)?;
            } else {
                self.step(i)?;
            }
            i = self.next(i)?;
        }
        Ok(())
    }

    /// Runs step `i`, which is no scope step, on this thread.
    fn step(&self, i: usize) -> Result<()> {
        catch::set_step(Some(i));
        if self.test_faults.racy_scope() && self.run.entering.load(Ordering::SeqCst) > 0 {
            // The planted race stands where a Burn bug would: in a call, whose panic is Burn's.
            let panic = match catch(super::faults::race) {
                Err(panic) => panic,
                Ok(never) => match never {},
            };
            self.run.with(|run| run.set(i, Outcome::Panic(panic)));
            return Ok(());
        }
        self.run.with(|run| {
            run.current = i;
            // Every Burn call of a step runs under its own `catch`; what unwinds past them was
            // raised while the step's harness code let go of Burn values (a tensor dropped when
            // its slot is overwritten). A panic the hook saw there is the harness's own; one it
            // never saw is a Burn panic re-raised on this thread (`resume_unwind` of a device
            // thread's panic, as cubecl does for a wgpu device that died), and belongs to the
            // step.
            let outcome = match catch(|| harness_code(|| run.step(&self.program.steps[i]))) {
                Ok(outcome) => outcome?,
                Err(panic) if panic.class == catch::HARNESS_ERROR => {
                    return Err(harness_panic(
                        format!("the harness panicked at step {i}"),
                        &panic,
                    ))
                }
                Err(panic) => Outcome::Panic(panic),
            };
            run.set(i, outcome);
            run.observe(|hook, world| hook.after_step(world, i))
        })
    }

    /// Runs the scope of steps `enter..=exit` on this thread, the steps inside it each on its own.
    fn scope(&self, enter: usize, exit: usize, device: DeviceRef) -> Result<()> {
        let program = self.program;
        let backends = self.run.with(|run| run.backends);
        let Step::ExitScope {
            inputs,
            outputs,
            form,
        } = &program.steps[exit]
        else {
            return Err(anyhow!("step {exit} closes a scope but is no ExitScope"));
        };
        catch::set_step(Some(enter));
        let burn_device = match pool::device(device, backends) {
            Ok(d) => d,
            Err(reason) => {
                self.run.with(|run| {
                    for i in enter..=exit {
                        run.set(i, Outcome::skipped(reason.clone()));
                    }
                });
                return Ok(());
            }
        };
        let mut ran = false;
        let mut inner: Result<()> = Ok(());
        let (mut input_handles, mut output_handles) = (Vec::new(), Vec::new());
        let entering = &self.run.entering;
        let racy = self.test_faults.racy_scope();
        if racy {
            entering.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(RACY_WINDOW);
        }
        let mut in_window = racy;
        let mut leave_window = || {
            if std::mem::take(&mut in_window) {
                entering.fetch_sub(1, Ordering::SeqCst);
            }
        };
        let result = catch(|| {
            burn_device.capture_scope(|mut scope| {
                // The closure is the harness's own code, but for the scope's own calls: a panic
                // in it is the harness's fault, never Burn's.
                harness_code(|| {
                    leave_window();
                    ran = true;
                    self.run.with(|run| run.set(enter, Outcome::ok()));
                    inner = self.range(enter + 1, exit);
                    catch::set_step(Some(exit));
                    self.run.with(|run| {
                        input_handles = run.boundary(inputs);
                        output_handles = run.boundary(outputs);
                    });
                });
                let ids = |pairs: &[(Slot, Handle)]| pairs.iter().map(|p| p.1.id()).collect();
                match form {
                    ExitForm::Complete => {
                        let inputs: Vec<TensorId> = ids(&input_handles);
                        let outputs: Vec<TensorId> = ids(&output_handles);
                        scope.complete(inputs, outputs)
                    }
                    ExitForm::With | ExitForm::WithSlice => {
                        for (_, t) in &input_handles {
                            scope.input(t);
                        }
                        let outputs: Vec<&Handle> = output_handles.iter().map(|p| &p.1).collect();
                        complete_with(scope, &outputs, *form)
                    }
                    // resume_unwind runs no panic hook: the fuzz target's hook never sees it.
                    ExitForm::Unwind => std::panic::resume_unwind(Box::new(UNWIND_PAYLOAD)),
                }
            })
        });
        leave_window();
        inner?;
        // What `complete` saw: `input` registers an id once.
        let pairs = |handles: &[(Slot, Handle)], dedup: bool| {
            let mut pairs: Vec<(Slot, TensorId)> = Vec::new();
            for (s, t) in handles {
                if !(dedup && pairs.iter().any(|p| p.1 == t.id())) {
                    pairs.push((*s, t.id()));
                }
            }
            pairs
        };
        let input_pairs = pairs(&input_handles, form.registers_inputs());
        let output_pairs = pairs(&output_handles, false);
        drop((input_handles, output_handles));
        if let Err(panic) = &result {
            if panic.class == catch::HARNESS_ERROR {
                return Err(harness_panic(
                    format!("the harness panicked inside the scope of steps {enter}..={exit}"),
                    panic,
                ));
            }
        }
        self.run
            .with(|run| run.scope_ended(enter, exit, ran, result, &input_pairs, &output_pairs))
    }
}

impl Run<'_, '_> {
    /// Records how the scope of steps `enter..=exit` ended: `result` is what `capture_scope`
    /// returned or raised, `ran` whether its closure ran.
    fn scope_ended(
        &mut self,
        enter: usize,
        exit: usize,
        ran: bool,
        result: Result<Result<CapturedGraph, CaptureError>, PanicInfo>,
        input_pairs: &[(Slot, TensorId)],
        output_pairs: &[(Slot, TensorId)],
    ) -> Result<()> {
        let Step::ExitScope { form, .. } = &self.program.steps[exit] else {
            return Err(anyhow!("step {exit} closes a scope but is no ExitScope"));
        };
        let ordinal = self.exit_ordinal[exit].context("exit has no ordinal")?;
        let at = if ran { exit } else { enter };
        match result {
            Ok(Ok(graph)) => {
                self.observe(|hook, world| {
                    let scope = CompletedScope {
                        exit,
                        ordinal,
                        graph: &graph,
                        inputs: input_pairs,
                        outputs: output_pairs,
                    };
                    hook.scope_completed(world, &scope);
                })?;
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
            // The closure's own unwind came back through `capture_scope`: the scope ended as
            // asked, with no graph.
            Err(panic) if *form == ExitForm::Unwind && ran && is_unwind_payload(&panic) => {
                self.set(exit, Outcome::ok())
            }
            Err(panic) => self.set(at, Outcome::Panic(panic)),
        }
        if !ran {
            for i in enter + 1..=exit {
                self.set(i, Outcome::skipped("the scope's closure never ran"));
            }
        }
        Ok(())
    }
}
