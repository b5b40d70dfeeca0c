//! What the model makes of each step kind: the outcome the capture contract gives it, from the
//! places and kinds of the values it reads and the guards it may meet on the way, and how its
//! real outcome moves the model's state on ([`State::apply`]). A new step kind is one arm in
//! each of the two matches here.

use std::borrow::Cow;
#[cfg(feature = "test-hooks")]
use std::cell::Cell;

// Every rule of the table is a prediction this file may make.
use super::rules::*;
use super::state::{captures, IdSet, Place, Session, State, Val};
#[cfg(feature = "test-hooks")]
use super::INVERTED;
use super::{produced_autodiff, produced_kind, produced_storage, same_as, Observed};
use crate::interpreter::Outcome;
use crate::oracles::catalogue::DEVICE_FAILURES;
use crate::oracles::MIXED_DTYPES;
use crate::program::{AutodiffMode, DeviceCall, DeviceRef, ExitForm, Kind, Op, Slot, Step};

pub(super) fn ok() -> Observed<'static> {
    Observed::Ok
}
pub(super) fn error(name: &'static str) -> Observed<'static> {
    Observed::Error(Cow::Borrowed(name))
}
pub(super) fn panic(class: &'static str) -> Observed<'static> {
    Observed::Panic(Cow::Borrowed(class))
}

/// What the model expects of one step.
#[derive(Debug)]
pub(super) struct Prediction {
    pub(super) rule: &'static Rule,
    /// The contract's outcome; a panic of any class in `also` is accepted too (an equivalent
    /// guard one layer down, or a catalogued known bug that is not a lifecycle question).
    pub(super) expect: Observed<'static>,
    pub(super) also: Also,
}

/// The classes a prediction also accepts: a handful at most, kept inline (the model predicts
/// every step of every program).
pub(super) type Also = smallvec::SmallVec<[&'static str; 6]>;

/// `predict(rule, ok())` for a step that reads a value's data, which may meet one of the
/// [`READ_FAILURES`] first.
fn predict_reading(rule: &'static Rule) -> Option<Prediction> {
    let mut p = predict(rule, ok())?;
    p.also.extend_from_slice(READ_FAILURES);
    Some(p)
}

/// A transaction over `reads`: the model speaks only of one whose tensors are all capture
/// tensors. burn-dispatch runs a transaction on the backend of its first tensor, so one over
/// capture and other tensors (or Flex and wgpu ones) is dispatch's question, not the
/// lifecycle's, and an empty one never reaches a backend.
fn predict_transaction(reads: &[Val], fallible: bool) -> Option<Prediction> {
    let mut placeholder = false;
    for v in reads {
        match v.place {
            Place::Capture { value, .. } => placeholder |= !value,
            Place::Plain => return None,
        }
    }
    match (reads.is_empty(), placeholder, fallible) {
        (true, _, _) => None,
        (false, false, _) => predict_reading(&TRANSACTION_OF_VALUES),
        (false, true, true) => predict(&TRANSACTION_WITH_PLACEHOLDER, error("ExecutionError")),
        (false, true, false) => {
            predict(&TRANSACTION_WITH_PLACEHOLDER, panic("capture-tensor-read"))
        }
    }
}

pub(super) fn predict(rule: &'static Rule, expect: Observed<'static>) -> Option<Prediction> {
    #[cfg(feature = "test-hooks")]
    let inverted = INVERTED.with(Cell::get) == Some(rule.id);
    #[cfg(not(feature = "test-hooks"))]
    let inverted = false;
    let expect = match (inverted, expect) {
        (false, e) => e,
        (true, Observed::Ok) => panic("inverted-for-tests"),
        (true, _) => Observed::Ok,
    };
    Some(Prediction {
        rule,
        expect,
        also: Also::new(),
    })
}

/// Ops checked by the Tensor API panic with `device-mismatch`; ops that reach dispatch unchecked
/// hit dispatch's own guard.
const WRONG_BACKEND: &[&str] = &["mixed-backend-operands"];

/// Whether the Tensor API checks that `op`'s operands share a device before dispatch (burn-tensor
/// `api/check.rs`: binary arithmetic in `api/numeric.rs`, comparisons in `api/base.rs`), as the
/// op's table entry says.
pub(super) fn api_checks_devices(op: &Op) -> bool {
    match op {
        Op::Binary { op, .. } => op.spec().api_checks_devices(),
        Op::Compare { op, .. } => op.spec().api_checks_devices(),
        _ => false,
    }
}

/// Int tensors are I32 on Flex and I64 on capture and from argmax, bools are `Bool(Native)` on
/// Flex and `Bool(U8)` on capture; the Tensor API does not check dtypes, so an op over a mix of
/// storages can panic while recording (`int-dtype-mismatch`, a catalogued known bug, which
/// covers the bool form too), or, where the program named the dtypes that differ, refuse them
/// as Burn allows (`mixed-dtype-operands`).
const DTYPE_MIX: &[&str] = &["int-dtype-mismatch", MIXED_DTYPES, "tensor-dtype-mismatch"];

/// Guards a step meets for its data, not its place in the lifecycle: a value the dtype the
/// program named cannot hold (a negative fill of a U8 tensor, a scalar outside the dtype).
const DATA_GUARDS: &[&str] = &["element-not-representable"];

/// Catalogued known bugs that make a computed value unreadable: a move onto a capture device
/// reads its source's data, so it panics with one of them before the lifecycle has a say
/// (found on the H200: a wgpu `fmod` result moved onto a capture device). cubecl reports a
/// failed launch at the next read on the device's stream, so a scope completing with a value
/// moved in from wgpu meets it too (fuzz --backends flex,capture,wgpu --seed 43).
const READ_FAILURES: &[&str] = DEVICE_FAILURES;

impl State {
    /// The model's prediction for `step`, or `None` where the contract says nothing definite.
    /// `outcome` is read for one fact only: whether an op handed back its operand unchanged
    /// (`ValueInfo::same_as`), i.e. was a no-op that never reached a backend.
    /// `reads` holds the values of the slots the step reads, as they were before it; `vals` is
    /// scratch space for them once all are known.
    pub(super) fn predict(
        &self,
        step: &Step,
        reads: &[Option<Val>],
        vals: &mut Vec<Val>,
        outcome: &Outcome,
    ) -> Option<Prediction> {
        let mut prediction = self.predict_lifecycle(step, reads, vals, outcome)?;
        if matches!(step, Step::Create { .. } | Step::Op { .. }) {
            prediction.also.extend_from_slice(DATA_GUARDS);
        }
        Some(prediction)
    }

    /// [`State::predict`] before the data guards any create or op may meet.
    fn predict_lifecycle(
        &self,
        step: &Step,
        reads: &[Option<Val>],
        vals: &mut Vec<Val>,
        outcome: &Outcome,
    ) -> Option<Prediction> {
        vals.clear();
        for v in reads {
            vals.push((*v)?);
        }
        let reads = &vals[..];
        if reads.iter().any(|v| v.unknown) {
            return None;
        }
        match step {
            Step::EnterScope { device } => match device {
                DeviceRef::Capture(d) if self.open_session(*d).is_some() => {
                    predict(&SCOPE_ALREADY_ACTIVE, error("AlreadyActive"))
                }
                DeviceRef::Capture(_) => predict(&SCOPE_OPENS, ok()),
                DeviceRef::Flex | DeviceRef::FlexAutodiff => {
                    predict(&SCOPE_NEEDS_CAPTURE_DEVICE, error("InvalidDevice"))
                }
                DeviceRef::Wgpu => None,
            },
            Step::ExitScope {
                inputs,
                outputs,
                form,
            } => self.predict_exit(inputs, outputs, *form),
            Step::Device { device, call } => self.predict_device_call(*device, *call),
            Step::Create {
                device: DeviceRef::Capture(d),
                ..
            } => match self.open_session(*d) {
                Some(_) => predict(&CREATE_IN_SCOPE, ok()),
                None => predict(
                    &CREATE_OUTSIDE_SCOPE,
                    panic("operation-outside-capture-scope"),
                ),
            },
            Step::ToDevice { device, .. } => self.predict_move(reads[0], *device),
            Step::Op { .. } if same_as(outcome).is_some() => predict(&NO_OP, ok()),
            Step::Op { op, .. } => self.predict_op(op, reads),
            Step::Read { fallible, .. } => match reads[0].place {
                // A value moved in from wgpu is read from its wgpu buffer: a failed launch
                // on that device meets the read (fuzz --backends flex,capture,wgpu --seed 104).
                Place::Capture { value: true, .. } => predict_reading(&READ_VALUE),
                Place::Capture { value: false, .. } if *fallible => {
                    predict(&READ_PLACEHOLDER, error("ExecutionError"))
                }
                Place::Capture { value: false, .. } => {
                    predict(&READ_PLACEHOLDER, panic("capture-tensor-read"))
                }
                Place::Plain => None,
            },
            Step::Transaction { fallible, .. } => predict_transaction(reads, *fallible),
            Step::Clone { .. } | Step::Drop { .. } => predict(&CLONE_OR_DROP, ok()),
            Step::Autodiff { mode, .. } => match (reads[0].place, mode, reads[0].kind?) {
                (Place::Plain, _, _) => None,
                (Place::Capture { .. }, AutodiffMode::Disable, _) => {
                    predict(&WITHOUT_AUTODIFF, ok())
                }
                (Place::Capture { .. }, AutodiffMode::RequireGrad, Kind::Float)
                    if !reads[0].autodiff =>
                {
                    predict(
                        &REQUIRE_GRAD_WITHOUT_AUTODIFF,
                        panic("require-grad-without-autodiff"),
                    )
                }
                (Place::Capture { .. }, _, _) => {
                    predict(&AUTODIFF_ON_CAPTURE, panic("capture-autodiff-unsupported"))
                }
            },
            // Gradients are autodiff bookkeeping, outside the capture lifecycle: panics there
            // are still classified against the catalogue, only not predicted.
            // A context switch calls nothing on Burn.
            Step::Create { .. }
            | Step::Replay { .. }
            | Step::Backward { .. }
            | Step::Thread { .. } => None,
        }
    }

    /// Moves the model to the state after `step`, following what Burn actually did.
    pub(super) fn apply(
        &mut self,
        step: &Step,
        reads: &[Option<Val>],
        actual: Option<&Observed<'_>>,
        outcome: &Outcome,
        off: bool,
    ) {
        let succeeded = actual == Some(&Observed::Ok);
        let tainted_input = reads.iter().flatten().any(|v| v.unknown);
        // An op the model did not judge, or one over a value it no longer follows.
        let unfollowed = off || tainted_input;
        match step {
            Step::EnterScope { device } => {
                let session = match (device, succeeded) {
                    (DeviceRef::Capture(d), true) => {
                        self.sessions.push(Session {
                            device: *d,
                            open: true,
                            ..Session::default()
                        });
                        Some(self.sessions.len() - 1)
                    }
                    _ => None,
                };
                self.stack.push(session);
            }
            Step::ExitScope { .. } => {
                if let Some(Some(k)) = self.stack.pop() {
                    self.sessions[k].open = false;
                }
            }
            _ if !succeeded => {}
            Step::Create {
                out, kind, device, ..
            } => self.apply_create(*out, (*kind, *device), outcome, unfollowed),
            Step::ToDevice { out, device, .. } => {
                self.apply_move(*out, *device, reads, outcome, unfollowed)
            }
            Step::Op { out, op } => self.apply_op(*out, op, reads, outcome, unfollowed),
            Step::Clone { out, .. } => {
                if let Some(src) = reads[0] {
                    self.put(unfollowed, *out, src);
                }
            }
            Step::Autodiff { out, .. } => {
                if let Some(src) = reads[0] {
                    let autodiff = produced_autodiff(outcome);
                    self.put(unfollowed, *out, Val { autodiff, ..src });
                }
            }
            Step::Drop { slot } => self.slots[usize::from(*slot)] = None,
            Step::Replay { outputs, .. } => {
                for out in outputs {
                    let val = Val {
                        place: Place::Plain,
                        kind: None,
                        storage: None,
                        autodiff: false,
                        unknown: true,
                        alias: None,
                    };
                    self.slots[usize::from(*out)] = Some(val);
                }
            }
            Step::Backward { out, .. } => match produced_kind(outcome) {
                // A gradient is a plain tensor without autodiff, wherever its graph ran.
                Some(kind) => self.put(
                    unfollowed,
                    *out,
                    Val {
                        place: Place::Plain,
                        kind: Some(kind),
                        storage: produced_storage(outcome),
                        autodiff: false,
                        unknown: false,
                        alias: None,
                    },
                ),
                None => self.slots[usize::from(*out)] = None,
            },
            Step::Read { .. }
            | Step::Transaction { .. }
            | Step::Device { .. }
            | Step::Thread { .. } => {}
        }
    }

    /// A device call: answered from the device value itself for its name and id, else by the
    /// capture device's client, which refuses it outside a scope and a seed inside one.
    fn predict_device_call(&self, device: DeviceRef, call: DeviceCall) -> Option<Prediction> {
        match device {
            _ if matches!(call, DeviceCall::Name | DeviceCall::IdRoundTrip) => {
                predict(&DEVICE_CALL, ok())
            }
            DeviceRef::Capture(d) => match (self.open_session(d), call) {
                (Some(_), DeviceCall::Seed(_)) => predict(&SEED_IN_SCOPE, panic("capture-seeding")),
                (Some(_), _) => predict(&DEVICE_CALL_IN_SCOPE, ok()),
                (None, _) => predict(
                    &DEVICE_CALL_OUTSIDE_SCOPE,
                    panic("operation-outside-capture-scope"),
                ),
            },
            _ => predict(&DEVICE_CALL, ok()),
        }
    }

    fn predict_move(&self, src: Val, to: DeviceRef) -> Option<Prediction> {
        match (src.place, to) {
            (Place::Plain, DeviceRef::Capture(_)) if src.autodiff => predict(
                &MOVE_AUTODIFF_ONTO_CAPTURE,
                panic("capture-autodiff-transfer"),
            ),
            (Place::Plain, DeviceRef::Capture(d)) => {
                let mut p = match self.open_session(d) {
                    Some(_) => predict(&MOVE_ONTO_CAPTURE, ok()),
                    None => predict(
                        &MOVE_ONTO_IDLE_CAPTURE,
                        panic("operation-outside-capture-scope"),
                    ),
                }?;
                // A bool from wgpu carries `Bool(U32)` storage that the transfer mishandles
                // first (catalogued known bug).
                if src.kind == Some(Kind::Bool) {
                    p.also.push("bool-storage-transfer");
                }
                p.also.extend_from_slice(READ_FAILURES);
                Some(p)
            }
            (Place::Plain, _) => None,
            (
                Place::Capture { .. },
                DeviceRef::Flex | DeviceRef::FlexAutodiff | DeviceRef::Wgpu,
            ) => predict(&MOVE_OFF_CAPTURE, panic("capture-tensor-not-materialized")),
            (Place::Capture { device, .. }, DeviceRef::Capture(d)) if device == d => {
                predict(&SAME_DEVICE_MOVE, ok())
            }
            (Place::Capture { value: false, .. }, DeviceRef::Capture(_)) => {
                predict(&BRIDGE_PLACEHOLDER, panic("capture-tensor-no-value"))
            }
            (Place::Capture { value: true, .. }, DeviceRef::Capture(d)) => {
                match self.open_session(d) {
                    // The bridge reads the value's data: one moved in from wgpu is read from
                    // its wgpu buffer, which a failed launch on that device meets as a read
                    // does (fuzz --backends flex,capture,wgpu --seed 105: an fmod whose shader
                    // does not compile, then a bridge of a value moved from the same device).
                    Some(_) => predict_reading(&BRIDGE_VALUE),
                    None => predict(
                        &MOVE_ONTO_IDLE_CAPTURE,
                        panic("operation-outside-capture-scope"),
                    ),
                }
            }
        }
    }

    fn predict_op(&self, op: &Op, operands: &[Val]) -> Option<Prediction> {
        let caps: smallvec::SmallVec<[_; 6]> = captures(operands).collect();
        if caps.is_empty() {
            return None;
        }
        let stale = |v: &Val| matches!(v.place, Place::Capture { session, .. } if !self.sessions[session].open);
        // `matmul(rhs.transpose())` runs the transpose on `rhs` alone first.
        if let Op::Matmul {
            rhs,
            transpose_rhs: true,
            ..
        } = op
        {
            let rhs = operands.get(op.operands().iter().position(|s| s == rhs)?)?;
            if stale(rhs) {
                return predict(&OP_STALE_OPERAND, panic("capture-scope-complete"));
            }
        }
        // An entry that makes tensors on its operand's device (a convolution's weights) does so
        // before the op: on a capture device with no scope open that creation is refused first.
        if op.creates_on_operand_device() && self.open_session(caps[0].0).is_none() {
            return predict(
                &CREATE_OUTSIDE_SCOPE,
                panic("operation-outside-capture-scope"),
            );
        }
        let any_stale = operands.iter().any(stale);
        let mixed_backends = caps.len() < operands.len();
        let mixed_devices = caps.iter().any(|c| c.0 != caps[0].0);
        let mut prediction = if mixed_backends || mixed_devices {
            let rule = if mixed_backends {
                &OP_MIXES_BACKENDS
            } else {
                &OP_MIXES_CAPTURE_DEVICES
            };
            let mut p = predict(rule, panic("device-mismatch"))?;
            // Ops the Tensor API checks reject the mix first; the rest reach dispatch, whose
            // own guard (or the stale operand's closed session) rejects it there.
            if !api_checks_devices(op) {
                p.also.extend_from_slice(WRONG_BACKEND);
                if any_stale {
                    p.also.push("capture-scope-complete");
                }
            }
            p
        } else if any_stale {
            predict(&OP_STALE_OPERAND, panic("capture-scope-complete"))?
        } else if op.reads_data() {
            predict(&OP_READS_IN_SCOPE, panic("capture-tensor-read"))?
        } else {
            predict(&OP_IN_SCOPE, ok())?
        };
        // Only operands of one kind stored in different dtypes (I32 with I64, Bool(Native) with
        // Bool(U8), F16 with F32) may meet a dtype refusal; an operand whose storage the run did
        // not report may be either. Operands of one storage may not.
        let mixed = [Kind::Float, Kind::Int, Kind::Bool]
            .into_iter()
            .any(|kind| {
                let mut storages = operands
                    .iter()
                    .filter(|v| v.kind == Some(kind))
                    .map(|v| v.storage);
                let Some(first) = storages.next() else {
                    return false;
                };
                let mut rest = storages.peekable();
                rest.peek().is_some()
                    && (first.is_none() || rest.any(|s| s.is_none() || s != first))
            });
        // An entry that makes a tensor on the operand's device and combines it with the
        // operand mixes the operand's storage with the one the device makes (capture records
        // its own bool and int storage whatever the dtype asked), whatever the slots hold.
        if mixed || op.creates_on_operand_device() {
            prediction.also.extend_from_slice(DTYPE_MIX);
        }
        Some(prediction)
    }

    /// `CaptureScopeGuard::complete`'s checks, in its order, over the slots' capture handles.
    fn predict_exit(
        &self,
        inputs: &[Slot],
        outputs: &[Slot],
        form: ExitForm,
    ) -> Option<Prediction> {
        let exiting = (*self.stack.last()?)?;
        let session = self.sessions.get(exiting)?;
        if form == ExitForm::Unwind {
            return predict(&EXIT_UNWINDS, ok());
        }
        // Each boundary slot's (handle id, id in the graph): they differ for a fusion alias,
        // which only the client that registered it (its session's) resolves; to any other
        // session its handle is an id of its own (fuzz --seed 0).
        let ids = |slots: &[Slot]| -> Option<Vec<(u32, u32)>> {
            let mut ids = Vec::new();
            for s in slots {
                match self.slot(*s) {
                    Some(Val { unknown: true, .. }) => return None,
                    // An autodiff capture tensor (an int or bool one, see the known
                    // divergences) has no plain capture primitive, so no id to declare.
                    Some(Val {
                        place: Place::Capture { id, session, .. },
                        autodiff: false,
                        alias,
                        ..
                    }) => {
                        let handle = alias.unwrap_or(id);
                        ids.push((handle, if session == exiting { id } else { handle }));
                    }
                    _ => {}
                }
            }
            Some(ids)
        };
        let (mut inputs, outputs) = (ids(inputs)?, ids(outputs)?);
        if form.registers_inputs() {
            // `input` registers a handle once, by the handle's own id.
            let mut seen = IdSet::default();
            inputs.retain(|(handle, _)| seen.insert(*handle));
        }
        let graph_ids = |pairs: Vec<(u32, u32)>| pairs.into_iter().map(|p| p.1).collect();
        let (inputs, outputs): (Vec<u32>, Vec<u32>) = (graph_ids(inputs), graph_ids(outputs));
        if session.tainted {
            return None;
        }
        let known = |id: &u32| session.referenced.contains(id) || session.values.contains(id);
        for ids in [&inputs, &outputs] {
            let mut unique = IdSet::default();
            if !ids.iter().all(|id| unique.insert(*id)) {
                return predict(&EXIT_DUPLICATE, error("DuplicateBoundary"));
            }
            if !ids.iter().all(known) {
                return predict(&EXIT_UNKNOWN, error("UnknownBoundary"));
            }
        }
        let inferred_input =
            |id: &u32| session.referenced.contains(id) && !session.produced.contains(id);
        if inputs
            .iter()
            .any(|id| !inferred_input(id) && !session.values.contains(id))
        {
            return predict(&EXIT_INVALID_INPUT, error("InvalidInput"));
        }
        if session
            .referenced
            .iter()
            .any(|id| inferred_input(id) && !inputs.contains(id) && !session.values.contains(id))
        {
            return predict(&EXIT_UNDECLARED_INPUT, error("UndeclaredInput"));
        }
        // Burn's InvalidOutput (capture.rs:329) needs an output that was consumed (a `Drop` or
        // a read-write node) or is neither a graph input nor output. Neither happens here:
        // handles held in slots are never the last reference, so no op consumes one, and every
        // boundary id that passed the known-id check is produced (a graph output), or
        // referenced and not produced (an inferred input), or a bridged value. So the model has
        // no InvalidOutput rule; a program that met one would be a model mismatch. A bridged
        // value is a value like any other by contract, though no `Init` op makes it a graph
        // input (see the known divergences).
        let bridged = |id: &u32| session.bridged.contains(id) && !session.referenced.contains(id);
        if outputs.iter().any(bridged) {
            return predict(&EXIT_BRIDGED_OUTPUT, ok());
        }
        predict_reading(&EXIT_COMPLETES)
    }
}
