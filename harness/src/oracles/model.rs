//! The reference-model oracle: an abstract state machine of the capture lifecycle predicts each
//! step's outcome from Burn's documented contract, and a step whose real outcome differs is a
//! `model-mismatch` (unless `harness/known-divergences.json` records that gap).
//!
//! The model tracks, per slot, where its tensor lives (Flex, wgpu or a capture device), its kind,
//! whether it is an initialized capture value or a computed placeholder, and which scope session
//! produced it; per capture device, the session open on it; per session, the values it holds and
//! the tensors its recorded operations produced and read. Steps outside the capture lifecycle
//! (numerics on Flex and wgpu, autodiff bookkeeping, replays) are predicted as "anything", and so
//! is every step once the program has left the contract, so the model never guesses.

use std::borrow::Cow;
#[cfg(feature = "test-hooks")]
use std::cell::Cell;
use std::fmt;

use super::{class_of, Oracle, OracleReport, Violation};
use crate::interpreter::{Outcome, Trace};
use crate::program::{
    AutodiffMode, DeviceCall, DeviceRef, ExitForm, Kind, Op, Program, Slot, Step, DTYPES,
};

mod divergences;
mod rules;

pub use super::MODEL_MISMATCH;
pub use divergences::{known_divergences, unacknowledged, Consequence, KnownDivergence};
pub use rules::*;

/// A step's real or predicted outcome, at the model's level of detail. A real one borrows its
/// names from the trace and a predicted one from the rules, so judging allocates no names.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Observed<'a> {
    /// The step returned normally.
    Ok,
    /// It returned this error variant (`CaptureError` or `ExecutionError`).
    Error(Cow<'a, str>),
    /// It panicked with a panic of this class.
    Panic(Cow<'a, str>),
}

impl fmt::Display for Observed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Observed::Ok => f.write_str("ok"),
            Observed::Error(e) => write!(f, "error {e}"),
            Observed::Panic(c) => write!(f, "panic {c}"),
        }
    }
}

fn ok() -> Observed<'static> {
    Observed::Ok
}
fn error(name: &'static str) -> Observed<'static> {
    Observed::Error(Cow::Borrowed(name))
}
fn panic(class: &'static str) -> Observed<'static> {
    Observed::Panic(Cow::Borrowed(class))
}

/// What the model expects of one step.
#[derive(Debug)]
struct Prediction {
    rule: &'static Rule,
    /// The contract's outcome; a panic of any class in `also` is accepted too (an equivalent
    /// guard one layer down, or a catalogued known bug that is not a lifecycle question).
    expect: Observed<'static>,
    also: Also,
}

/// The classes a prediction also accepts: a handful at most, kept inline (the model predicts
/// every step of every program).
type Also = smallvec::SmallVec<[&'static str; 6]>;

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

fn predict(rule: &'static Rule, expect: Observed<'static>) -> Option<Prediction> {
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
fn api_checks_devices(op: &Op) -> bool {
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
const DTYPE_MIX: &[&str] = &[
    "int-dtype-mismatch",
    super::MIXED_DTYPES,
    "tensor-dtype-mismatch",
];

/// Guards a step meets for its data, not its place in the lifecycle: a value the dtype the
/// program named cannot hold (a negative fill of a U8 tensor, a scalar outside the dtype).
const DATA_GUARDS: &[&str] = &["element-not-representable"];

/// Catalogued known bugs that make a computed value unreadable: a move onto a capture device
/// reads its source's data, so it panics with one of them before the lifecycle has a say
/// (found on the H200: a wgpu `fmod` result moved onto a capture device). cubecl reports a
/// failed launch at the next read on the device's stream, so a scope completing with a value
/// moved in from wgpu meets it too (fuzz --backends flex,capture,wgpu --seed 43).
const READ_FAILURES: &[&str] = super::catalogue::DEVICE_FAILURES;

#[cfg(feature = "test-hooks")]
thread_local! {
    static INVERTED: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// Test-only: predicts the opposite of rule `id` on this thread (ok becomes a panic, anything
/// else becomes ok), so tests can see the oracle fire. Never set it in a fuzz or regression run.
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
pub fn invert_rule_for_tests(id: Option<&'static str>) {
    INVERTED.with(|c| c.set(id));
}

/// What [`check`] found in one trace.
#[derive(Debug, Default)]
pub struct ModelReport {
    /// Mismatches no known divergence explains (at most one: the model stops at the first).
    pub violations: Vec<Violation>,
    /// Ids of the known divergences the program showed.
    pub known: Vec<String>,
    /// Steps the model predicted a definite outcome for.
    pub judged: usize,
    /// The op steps among them, each eager or recorded in a scope.
    pub judgements: Vec<super::Judgement>,
}

/// Where a tensor lives, as far as the lifecycle is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Flex or wgpu: concrete data, outside the model's subject.
    Plain,
    /// Capture device `device`, handle `id` of session `session`; `value` when it is an
    /// initialized value rather than a computed placeholder.
    Capture {
        device: u8,
        session: usize,
        id: u32,
        value: bool,
    },
}

#[derive(Clone, Copy, Debug)]
struct Val {
    place: Place,
    kind: Option<Kind>,
    /// The storage dtype the run reported (`F16`, `I32`, `I64`, `Bool(Native)`, `Bool(U8)`),
    /// if it did.
    storage: Option<&'static str>,
    autodiff: bool,
    /// The program left the contract producing it: steps using it are not judged.
    unknown: bool,
    /// A fusion alias's own handle id, where the slot holds an alias: capture resolves the
    /// alias to the tensor it names (`place`'s id) in the graph, but `CaptureScope::input`
    /// registers the handle's own id, so an alias and its target are two inputs there that
    /// `complete` then finds duplicated.
    alias: Option<u32>,
}

#[derive(Debug, Default)]
struct Session {
    device: u8,
    open: bool,
    values: IdSet,
    /// Values that came from another capture device through the bridge.
    bridged: IdSet,
    produced: IdSet,
    referenced: IdSet,
    /// A divergence touched this session: its exit is not judged.
    tainted: bool,
}

/// A session's handle ids: a few dozen at most, so a list beats hashing.
#[derive(Debug, Default)]
struct IdSet(Vec<u32>);

impl IdSet {
    /// Adds `id`; whether it was new.
    fn insert(&mut self, id: u32) -> bool {
        let new = !self.contains(&id);
        if new {
            self.0.push(id);
        }
        new
    }

    fn contains(&self, id: &u32) -> bool {
        self.0.contains(id)
    }

    fn iter(&self) -> impl Iterator<Item = &u32> {
        self.0.iter()
    }
}

#[derive(Default)]
struct State {
    slots: Vec<Option<Val>>,
    sessions: Vec<Session>,
    /// The open sessions' stack, innermost last, one per `EnterScope` (`None` when it failed).
    stack: Vec<Option<usize>>,
    next_id: u32,
    lost: bool,
}

impl State {
    fn slot(&self, s: Slot) -> Option<Val> {
        self.slots.get(usize::from(s)).copied().flatten()
    }

    fn open_session(&self, device: u8) -> Option<usize> {
        self.stack
            .iter()
            .flatten()
            .copied()
            .find(|k| self.sessions[*k].device == device)
    }

    fn fresh(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }
}

fn observed(outcome: &Outcome) -> Option<Observed<'_>> {
    Some(match outcome {
        Outcome::Ok { .. } => Observed::Ok,
        Outcome::Error { error, .. } => Observed::Error(Cow::Borrowed(error)),
        // `check` classifies the trace's panics before the model runs.
        Outcome::Panic(p) if !p.class.is_empty() => Observed::Panic(Cow::Borrowed(&p.class)),
        Outcome::Panic(p) => Observed::Panic(Cow::Owned(class_of(p))),
        Outcome::Skipped { .. } => return None,
    })
}

/// The operand slot an op handed back unchanged (see `ValueInfo::same_as`).
fn same_as(outcome: &Outcome) -> Option<Slot> {
    match outcome {
        Outcome::Ok { value: Some(v), .. } => v.same_as,
        _ => None,
    }
}

/// Whether the produced tensor is on an autodiff device, as the interpreter reports its device
/// (`flex_ad`, `capture0_ad`): `to_device(&flex_ad)` does not make a float tensor autodiff, and an
/// int created on `flex_ad` is, so the model takes the fact from the run rather than guess it.
fn produced_autodiff(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Ok { value: Some(v), .. } if v.device.ends_with("_ad"))
}

/// The storage dtype of the produced tensor, as the run reported it.
fn produced_storage(outcome: &Outcome) -> Option<&'static str> {
    match outcome {
        Outcome::Ok { value: Some(v), .. } => DTYPES.iter().map(|s| s.name).find(|n| *n == v.dtype),
        _ => None,
    }
}

fn produced_kind(outcome: &Outcome) -> Option<Kind> {
    match outcome {
        Outcome::Ok { value: Some(v), .. } => Some(v.kind),
        _ => None,
    }
}

/// The model as an oracle: judges the trace once the run is over.
pub struct Model;

impl Oracle for Model {
    fn after_run(&mut self, program: &Program, trace: &Trace, found: &mut OracleReport) {
        let report = check(program, trace);
        found.violations.extend(report.violations);
        found.known_divergences = report.known;
        found.judgements.extend(report.judgements);
    }
}

/// Runs the model over `program` and the real `trace` of it.
pub fn check(program: &Program, trace: &Trace) -> ModelReport {
    let mut state = State {
        slots: vec![None; usize::from(crate::program::limits::MAX_SLOTS)],
        ..State::default()
    };
    let mut report = ModelReport::default();
    // One buffer of each for the whole program: the model runs after every fuzz input.
    let (mut reads, mut operands) = (Vec::with_capacity(8), Vec::with_capacity(8));
    let mut depth = 0usize;
    for (step, record) in program.steps.iter().zip(&trace.steps) {
        let in_scope = depth > 0;
        match step {
            Step::EnterScope { .. } => depth += 1,
            Step::ExitScope { .. } => depth = depth.saturating_sub(1),
            _ => {}
        }
        let actual = observed(&record.outcome);
        reads.clear();
        reads.extend(step.reads().iter().map(|s| state.slot(*s)));
        let mut off_contract = false;
        if !state.lost {
            if let (Some(prediction), Some(actual)) = (
                state.predict(step, &reads, &mut operands, &record.outcome),
                &actual,
            ) {
                report.judged += 1;
                if matches!(step, Step::Op { .. }) {
                    report.judgements.push(super::Judgement {
                        step: record.index,
                        oracle: super::OracleId::Model,
                        context: if in_scope {
                            super::Context::Recorded
                        } else {
                            super::Context::Eager
                        },
                    });
                }
                let accepted = prediction.expect == *actual
                    || matches!(actual, Observed::Panic(c) if prediction.also.contains(&c.as_ref()));
                if !accepted {
                    let op = op_behind(program, trace, record.index);
                    let known =
                        state.diverged((step, op), &prediction, actual, record.index, &mut report);
                    off_contract = known != Some(Consequence::Follow);
                }
            }
        }
        state.apply(step, &reads, actual.as_ref(), &record.outcome, off_contract);
    }
    report
}

/// The op a mismatch at step `index` is about, for its signature: the step's own op, or for a
/// scope's exit the ops of that scope that panicked (a panic half-way through a multi-op Tensor
/// function is what leaves a graph half recorded), so one rule broken after `min_pair` and
/// after `max_pair` are two findings.
fn op_behind(program: &Program, trace: &Trace, index: usize) -> Option<String> {
    match program.steps.get(index)? {
        Step::Op { op, .. } => Some(op.name()),
        Step::ExitScope { .. } => {
            let enter = program
                .scope_ends()
                .iter()
                .position(|e| *e == Some(index))?;
            let panicked: Vec<String> = (enter + 1..index)
                .filter(|i| {
                    matches!(
                        trace.steps.get(*i).map(|r| &r.outcome),
                        Some(Outcome::Panic(_))
                    )
                })
                .filter_map(|i| match &program.steps[i] {
                    Step::Op { op, .. } => Some(op.name()),
                    _ => None,
                })
                .collect();
            (!panicked.is_empty()).then(|| panicked.join(", "))
        }
        _ => None,
    }
}

/// The capture-kind operands of a step, with their places.
fn captures(vals: &[Val]) -> impl Iterator<Item = (u8, usize, u32, bool)> + '_ {
    vals.iter().filter_map(|v| match v.place {
        Place::Capture {
            device,
            session,
            id,
            value,
        } => Some((device, session, id, value)),
        Place::Plain => None,
    })
}

impl State {
    /// Records a mismatch and returns the consequence of the known divergence that explains
    /// it, if one does; the model then goes on as the entry says, judging the rest of the
    /// session, its exit included. An unexplained one is a violation and the model stops
    /// judging this program.
    fn diverged(
        &mut self,
        (step, op): (&Step, Option<String>),
        prediction: &Prediction,
        actual: &Observed<'_>,
        index: usize,
        report: &mut ModelReport,
    ) -> Option<Consequence> {
        let (rule, expected) = (prediction.rule, &prediction.expect);
        let actual_text = actual.to_string();
        let expected_text = expected.to_string();
        let acknowledged = divergences::acknowledged();
        let known = known_divergences().iter().find(|k| {
            acknowledged
                && k.rule == rule.id
                && k.expected == expected_text
                && k.actual == actual_text
                && self.covers(k, step)
        });
        if let Some(known) = known {
            if !report.known.contains(&known.id) {
                report.known.push(known.id.clone());
            }
            return Some(known.consequence);
        }
        report.violations.push(Violation {
            op,
            step: index,
            class: MODEL_MISMATCH.to_string(),
            summary: format!("{}: expected {expected}, got {actual_text}", rule.id),
            message: format!(
                "step {index} `{}`: the model expected {expected} ({}: {}; {}), Burn gave {actual_text}",
                crate::program::display::step_line(step),
                rule.id,
                rule.contract,
                rule.source
            ),
            ..Violation::default()
        });
        self.lost = true;
        None
    }

    /// Whether `step` meets a known divergence's conditions: its op, its operands' kinds, which
    /// of its operands are stale. An entry covers only what it names.
    fn covers(&self, known: &KnownDivergence, step: &Step) -> bool {
        let op = match step {
            Step::Op { op, .. } => Some(op.name()),
            _ => None,
        };
        if !known.ops.is_empty() && !op.is_some_and(|o| known.ops.contains(&o)) {
            return false;
        }
        let reads: Vec<Option<Val>> = step.reads().iter().map(|s| self.slot(*s)).collect();
        let kinds_ok = known.kinds.is_empty()
            || reads.iter().all(|v| {
                v.and_then(|v| v.kind)
                    .is_some_and(|k| known.kinds.contains(&k))
            });
        let stale: Vec<usize> = reads
            .iter()
            .enumerate()
            .filter(|(_, v)| {
                v.is_some_and(|v| {
                    matches!(v.place, Place::Capture { session, .. } if !self.sessions[session].open)
                })
            })
            .map(|(i, _)| i)
            .collect();
        let sessions: Vec<(u8, usize)> = reads
            .iter()
            .filter_map(|v| match v.map(|v| v.place) {
                Some(Place::Capture {
                    device, session, ..
                }) => Some((device, session)),
                _ => None,
            })
            .collect();
        let mixed = sessions
            .iter()
            .any(|(d, s)| sessions.iter().any(|(d2, s2)| d == d2 && s != s2));
        kinds_ok
            && known
                .stale_operands
                .as_ref()
                .is_none_or(|want| *want == stale)
            && (!known.stale_after_first || (!stale.is_empty() && !stale.contains(&0)))
            && (!known.mixed_sessions || mixed)
    }

    /// The model's prediction for `step`, or `None` where the contract says nothing definite.
    /// `outcome` is read for one fact only: whether an op handed back its operand unchanged
    /// (`ValueInfo::same_as`), i.e. was a no-op that never reached a backend.
    /// `reads` holds the values of the slots the step reads, as they were before it; `vals` is
    /// scratch space for them once all are known.
    fn predict(
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
            Step::Device { device, call } => match device {
                // Answered from the device value itself: no client is asked.
                _ if matches!(call, DeviceCall::Name | DeviceCall::IdRoundTrip) => {
                    predict(&DEVICE_CALL, ok())
                }
                DeviceRef::Capture(d) => match (self.open_session(*d), call) {
                    (Some(_), DeviceCall::Seed(_)) => {
                        predict(&SEED_IN_SCOPE, panic("capture-seeding"))
                    }
                    (Some(_), _) => predict(&DEVICE_CALL_IN_SCOPE, ok()),
                    (None, _) => predict(
                        &DEVICE_CALL_OUTSIDE_SCOPE,
                        panic("operation-outside-capture-scope"),
                    ),
                },
                _ => predict(&DEVICE_CALL, ok()),
            },
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

    /// Moves the model to the state after `step`, following what Burn actually did.
    fn apply(
        &mut self,
        step: &Step,
        reads: &[Option<Val>],
        actual: Option<&Observed<'_>>,
        outcome: &Outcome,
        off: bool,
    ) {
        let succeeded = actual == Some(&Observed::Ok);
        let tainted_input = reads.iter().flatten().any(|v| v.unknown);
        let put = |state: &mut State, out: Slot, mut val: Val| {
            val.unknown |= off || tainted_input;
            state.slots[usize::from(out)] = Some(val);
        };
        let kind = produced_kind(outcome);
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
            } => {
                let place = match device {
                    DeviceRef::Capture(d) => self.new_value(*d),
                    _ => Place::Plain,
                };
                let autodiff = produced_autodiff(outcome);
                put(
                    self,
                    *out,
                    Val {
                        place,
                        kind: Some(*kind),
                        storage: produced_storage(outcome),
                        autodiff,
                        unknown: false,
                        alias: None,
                    },
                );
            }
            Step::ToDevice { out, device, .. } => {
                let Some(src) = reads[0] else { return };
                let place = match (src.place, device) {
                    (Place::Capture { device: from, .. }, DeviceRef::Capture(d)) if from == *d => {
                        src.place
                    }
                    (Place::Capture { .. }, DeviceRef::Capture(d)) => self.bridged_value(*d),
                    (_, DeviceRef::Capture(d)) => self.new_value(*d),
                    _ => Place::Plain,
                };
                let autodiff = produced_autodiff(outcome);
                // A move onto the same device hands the same handle back; any other makes a
                // new tensor, no alias.
                let alias = src.alias.filter(|_| place == src.place);
                put(
                    self,
                    *out,
                    Val {
                        place,
                        autodiff,
                        storage: produced_storage(outcome).or(src.storage),
                        alias,
                        ..src
                    },
                );
            }
            Step::Op { out, op } => {
                // A no-op (`swap_dims(0, 0)`, a same-shape reshape) records nothing and hands
                // the operand back: the slot then holds the operand's own handle.
                if let Some(src) = same_as(outcome).and_then(|s| self.slot(s)) {
                    put(self, *out, src);
                    return;
                }
                // A fusion alias is its operand to capture (an initialized value stays one).
                if let (Op::AlongDim { op, .. }, Some(src)) = (op, reads[0]) {
                    if op.spec().aliases_operand() && matches!(outcome, Outcome::Ok { .. }) {
                        let alias = Some(self.fresh());
                        put(self, *out, Val { alias, ..src });
                        return;
                    }
                }
                let operands: smallvec::SmallVec<[Val; 6]> =
                    reads.iter().flatten().copied().collect();
                let recorder = captures(&operands)
                    .find(|c| self.sessions[c.1].open)
                    .map(|c| (c.0, c.1))
                    // An op the model does not follow that succeeded over stale operands alone
                    // recorded in the device's open scope, if any: a composite makes a fresh
                    // tensor there first (pad's `full`, then a slice assign of the stale
                    // operand into it: fuzz --seed 3).
                    .or_else(|| {
                        let unfollowed = off || tainted_input;
                        captures(&operands)
                            .filter(|_| unfollowed)
                            .find_map(|c| Some((c.0, self.open_session(c.0)?)))
                    });
                let place = match recorder {
                    Some((device, session)) => {
                        let id = self.fresh();
                        let s = &mut self.sessions[session];
                        // An op the model did not judge, over a value it no longer follows,
                        // may record anything: the session's exit is not judged either.
                        s.tainted |= off || tainted_input;
                        s.produced.insert(id);
                        s.referenced.insert(id);
                        for (_, _, read, _) in captures(&operands) {
                            s.referenced.insert(read);
                        }
                        Place::Capture {
                            device,
                            session,
                            id,
                            value: false,
                        }
                    }
                    None => Place::Plain,
                };
                let autodiff = produced_autodiff(outcome);
                put(
                    self,
                    *out,
                    Val {
                        place,
                        kind,
                        storage: produced_storage(outcome),
                        autodiff,
                        unknown: false,
                        alias: None,
                    },
                );
            }
            Step::Clone { out, .. } => {
                if let Some(src) = reads[0] {
                    put(self, *out, src);
                }
            }
            Step::Autodiff { out, .. } => {
                if let Some(src) = reads[0] {
                    let autodiff = produced_autodiff(outcome);
                    put(self, *out, Val { autodiff, ..src });
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
                Some(kind) => put(
                    self,
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

    /// A fresh initialized value in the session open on capture device `d` (the step succeeded,
    /// so one is open unless the model already disagrees with Burn).
    fn new_value(&mut self, d: u8) -> Place {
        self.value(d, false)
    }

    /// A value bridged from another capture device into the session open on `d`.
    fn bridged_value(&mut self, d: u8) -> Place {
        self.value(d, true)
    }

    fn value(&mut self, d: u8, bridged: bool) -> Place {
        let id = self.fresh();
        let Some(session) = self.open_session(d) else {
            return Place::Plain;
        };
        let s = &mut self.sessions[session];
        s.values.insert(id);
        if bridged {
            // CaptureBridge stores the data without an `Init` operation.
            s.bridged.insert(id);
        } else {
            // A value enters the graph as an `Init` operation that mentions it, so it is
            // referenced and never produced: a graph input by `GraphIr::classify`.
            s.referenced.insert(id);
        }
        Place::Capture {
            device: d,
            session,
            id,
            value: true,
        }
    }
}
