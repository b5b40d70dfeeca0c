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

use super::{class_of, Oracle, OracleReport, Payload, Violation};
use crate::interpreter::{Outcome, Trace};
use crate::program::{Dtype, Kind, Program, Slot, Step};

mod divergences;
mod predict;
mod rules;
mod state;

pub use super::MODEL_MISMATCH;
pub use divergences::{known_divergences, Consequence, KnownDivergence};
pub use rules::*;

use predict::Prediction;
use state::{Place, State, Val};

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

#[cfg(feature = "test-hooks")]
thread_local! {
    pub(super) static INVERTED: Cell<Option<&'static str>> = const { Cell::new(None) };
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
    matches!(outcome, Outcome::Ok { value: Some(v), .. } if v.device.autodiff)
}

/// The storage dtype of the produced tensor, as the run reported it.
fn produced_storage(outcome: &Outcome) -> Option<&'static str> {
    match outcome {
        Outcome::Ok { value: Some(v), .. } => Dtype::from_burn(v.dtype).map(|d| d.spec().name),
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
pub struct Model {
    /// Whether a known divergence is taken as known; without, each is reported as the mismatch
    /// it is ([`Oracles::unacknowledged`](super::Oracles::unacknowledged)).
    pub acknowledged: bool,
}

impl Oracle for Model {
    fn after_run(&mut self, program: &Program, trace: &Trace, found: &mut OracleReport) {
        let report = judge(program, trace, self.acknowledged);
        found.violations.extend(report.violations);
        found.known_divergences = report.known;
        found.judgements.extend(report.judgements);
    }
}

/// Runs the model over `program` and the real `trace` of it, the known divergences
/// acknowledged.
pub fn check(program: &Program, trace: &Trace) -> ModelReport {
    judge(program, trace, true)
}

/// [`check`], the known divergences acknowledged or not.
fn judge(program: &Program, trace: &Trace, acknowledged: bool) -> ModelReport {
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
                    let known = state.diverged(
                        (step, op),
                        &prediction,
                        actual,
                        record.index,
                        &mut report,
                        acknowledged,
                    );
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
        acknowledged: bool,
    ) -> Option<Consequence> {
        let (rule, expected) = (prediction.rule, &prediction.expect);
        let actual_text = actual.to_string();
        let expected_text = expected.to_string();
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
            class: MODEL_MISMATCH,
            summary: format!("{}: expected {expected}, got {actual_text}", rule.id),
            message: format!(
                "step {index} `{}`: the model expected {expected} ({}: {}; {}), Burn gave {actual_text}",
                crate::program::display::step_line(step),
                rule.id,
                rule.contract,
                rule.source
            ),
            payload: Payload::Outcome {
                expected: expected_text,
                actual: actual_text,
            },
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
}
