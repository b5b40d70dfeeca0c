//! Walks a program's steps, opening real capture scopes for `EnterScope`/`ExitScope` pairs, and
//! calls the [`Lockstep`] hook after each step and each completed scope.

use std::borrow::Cow;
use std::sync::atomic::AtomicUsize;
use std::sync::{Mutex, PoisonError};

use anyhow::{anyhow, Context, Result};
use burn::tensor::{
    CaptureError, CaptureScope, CapturedGraph, CompletedCaptureScope, Device, TensorData, TensorId,
};
use burn_backend::{BoolStore, DType, ExecutionError};
use burn_dispatch::backends::Capture;
use burn_dispatch::DispatchDevice;

use super::catch::{self, at_site, catch, harness_code};
use super::faults::ThreadFaults;
use super::lanes::{self};
use super::lockstep::{CompletedScope, Lockstep, Unobserved, World};
use super::pool;
use super::trace::{Digest, GraphInfo, Outcome, PanicInfo, StepRecord, Trace, ValueInfo};
use super::value::{held_in, on_any, AnyTensor, Held};
use crate::hash::words_digest;
use crate::program::limits::MAX_SLOTS;
use crate::program::{
    queried_dtype, Backends, DeviceCall, DeviceRef, ExitForm, Program, Slot, Step,
};

mod step;
mod walk;

use walk::{Exclusive, HandedRun, Walk};

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

impl<'p, 'h> Run<'p, 'h> {
    /// A run of `program` before its first step: every slot empty, every step skipped until it
    /// runs.
    fn new(
        program: &'p Program,
        backends: Backends,
        mode: Mode,
        hook: &'h mut dyn Lockstep,
    ) -> Run<'p, 'h> {
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
        Run {
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
        }
    }
}

fn run_scheduled(
    program: &Program,
    backends: Backends,
    mode: Mode,
    hook: &mut dyn Lockstep,
    collide: bool,
) -> Result<Trace> {
    let n = program.steps.len();
    let run = Run::new(program, backends, mode, hook);
    catch::journal_start();
    let shared = HandedRun {
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
        dtype,
        shape: ty.shape,
        device: pool::placed(&t.device()),
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
        dtype: data.dtype(),
        shape: data.shape().to_vec(),
        device: pool::placed(&t.device()),
        same_as: None,
        digest: Some(data_digest(data)),
    }
}

/// Whether `v` is on Flex or wgpu, where no tensor is a capture tensor.
fn on_plain_device(v: &ValueInfo) -> bool {
    v.device.is_plain()
}

/// `format!("{dtype:?}")` without the allocation for the dtypes programs produce: the digest
/// hashes the text.
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
