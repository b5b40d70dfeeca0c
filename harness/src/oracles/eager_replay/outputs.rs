//! The outputs of a completed scope's graph, replayed on Flex and on the wgpu mirror, compared
//! with the eager Flex run: each differing output and each dtype the replay lost.

use burn::tensor::{DType, TensorData};

use super::{
    chosen_or_documented, difference_skipping, eager_wrong, stable_summary, EagerReplay, Lost,
    REPLAY_FAILURE, REPLAY_MISMATCH,
};
use crate::interpreter::{
    catch, note, recorded_tensor, replay_on_device, replay_on_flex, CompletedScope, ReplayError,
    World,
};
use crate::oracles::compare::{self, DiffEq, Poison};
use crate::oracles::naming::{producer, producer_step, replayed_on_wgpu, step_name};
use crate::oracles::taint::{Elements, Taint};
use crate::oracles::{
    is_known_bug, normalize_message, Backend, Class, Context, Judgement, OracleId, Payload, Shared,
    Violation,
};
use crate::program::Slot;

/// A graph output whose replay differs from the eager run.
pub(super) struct Differing {
    slot: Slot,
    /// Where and how, for the violation's message.
    text: String,
    /// The replayed and the eager dtype: the signature names them, so a mismatch of one dtype
    /// pair is not taken for a stored case of another.
    dtypes: (DType, DType),
    /// Whether the Flex replay differs (else only the wgpu one does).
    on_flex: bool,
}

/// `scope`'s graph replayed on Flex from `feed`: its outputs' data, or `None` where the replay
/// failed (a failure reported, or one the program chose or Burn documents) or an input has no
/// eager data (its step never ran eagerly: nothing to judge).
pub(super) fn replay_flex(
    shared: &mut Shared,
    world: &World<'_>,
    scope: &CompletedScope<'_>,
    feed: &[Option<TensorData>],
) -> Option<Vec<TensorData>> {
    let exit = scope.exit;
    match catch(|| replay_on_flex(scope.graph, feed)) {
        // The graph combines dtypes the program chose to differ, or meets a failure Burn
        // documents (a draw its dtype cannot hold): the replay may refuse it as the eager
        // run could have. The panic is still Burn's, so it goes to the journal, where it is
        // classified like any other (dropping it lost a Flex `dtype mismatch` of a BF16
        // graph from the trace: the agreement test's random programs).
        Err(panic) if chosen_or_documented(&world.program().steps, &panic) => {
            note(panic);
            None
        }
        Err(panic) => {
            let summary = normalize_message(&panic.message);
            let at = panic.location.clone().unwrap_or_default();
            let message = format!("{} at {at}", panic.message);
            let mut failed =
                replay_violation((exit, Backend::Flex), REPLAY_FAILURE, summary, message);
            failed.location = panic.location;
            shared.report.violations.push(failed);
            None
        }
        // An input without eager data (its step never ran eagerly) cannot be judged.
        Ok(Err(ReplayError::MissingInput(_))) => None,
        Ok(Err(e)) => {
            let summary = normalize_message(&e.to_string());
            shared.report.violations.push(replay_violation(
                (exit, Backend::Flex),
                REPLAY_FAILURE,
                summary,
                e.to_string(),
            ));
            None
        }
        Ok(Ok(datas)) => Some(datas),
    }
}

impl EagerReplay {
    /// Compares each output of the Flex replay with the eager run (and its dtype with the one
    /// the graph recorded), where nothing leaves it open.
    pub(super) fn compare_flex(
        &self,
        shared: &mut Shared,
        world: &World<'_>,
        scope: &CompletedScope<'_>,
        replayed: &[TensorData],
        (found, dtypes_lost): (&mut Vec<Differing>, &mut Vec<Violation>),
    ) {
        let exit = scope.exit;
        // A wgpu bool recorded as a value keeps its `Bool(U32)` bytes, which Flex misreads when
        // it replays the graph: the catalogued bool-storage-transfer bug met through capture,
        // not a replay bug (fuzz --backends flex,capture,wgpu --seed 105). wgpu replays it right.
        let misread_on_flex = compare::holds_u32_bools(scope.graph);
        for (k, ((slot, id), data)) in scope.outputs.iter().zip(replayed).enumerate() {
            // The replay must hand each output back in the dtype the graph recorded for it,
            // whatever its values: Burn's interpreter passes each recorded out dtype to the
            // backend (burn-router ops/binary.rs:23), so a backend that ignores one is caught
            // here even where the values agree. A wgpu bool's bytes misread by Flex are the
            // catalogued transfer bug, not this.
            if let Some(recorded) = recorded_tensor(scope.graph, *id)
                .map(|ir| ir.dtype)
                .filter(|d| *d != data.dtype() && !misread_on_flex)
            {
                let what = match self.parted[usize::from(*slot)] {
                    Some(at) => step_name(&world.program().steps[usize::from(at)]),
                    None => producer(world, *slot, exit),
                };
                let output = (exit, k, *slot);
                Lost(output, data.dtype(), recorded).push_into(&what, Backend::Flex, dtypes_lost);
            }
            let open = self.left_open(shared, *slot, misread_on_flex).or_else(|| {
                eager_wrong(shared, world, *slot, exit).then(|| Taint::whole(Poison::EagerWrong))
            });
            if let Some(whole) = open.as_ref().filter(|t| t.at == Elements::All) {
                shared.report.count_poisoned(whole.why, false);
                continue;
            }
            let Some(eager) = shared.flex.as_ref().and_then(|f| f.data(*slot)) else {
                continue;
            };
            // Poisoned at some elements: compared at the others.
            let skip = match &open {
                Some(t) if t.covers(eager.shape()) => {
                    shared.report.count_poisoned(t.why, false);
                    continue;
                }
                Some(t) => {
                    shared.report.count_poisoned(t.why, true);
                    t.at.skips(eager.shape())
                }
                None => None,
            };
            shared.report.replay_compared += 1;
            if let Some(step) = producer_step(world, *slot, exit) {
                shared.report.judgements.push(Judgement {
                    step,
                    oracle: OracleId::EagerReplay,
                    context: Context::Replayed,
                });
            }
            if let Some(diff) = difference_skipping(data, &eager, skip) {
                found.push(Differing {
                    slot: *slot,
                    text: format!("output {k} (t{slot}): {diff}"),
                    dtypes: (data.dtype(), eager.dtype()),
                    on_flex: true,
                });
            }
        }
    }

    /// Replays `scope`'s graph on the wgpu mirror's device from `feed`, where the differential
    /// runs, and compares each output with the eager Flex run.
    pub(super) fn compare_wgpu(
        &self,
        shared: &mut Shared,
        world: &World<'_>,
        (scope, feed): (&CompletedScope<'_>, &[Option<TensorData>]),
        (found, dtypes_lost): (&mut Vec<Differing>, &mut Vec<Violation>),
    ) {
        let exit = scope.exit;
        // The same graph replayed on wgpu must agree with the eager Flex run as well, unless it
        // holds a dtype the program named that the device says it does not support.
        let unsupported = shared.wgpu.is_some()
            && crate::interpreter::holds_named_unsupported(scope.graph, &world.program().steps);
        if unsupported {
            shared
                .report
                .count_poisoned(Poison::UnsupportedDtype, false);
        }
        if let Some(wgpu) = shared
            .wgpu
            .as_ref()
            .filter(|_| !unsupported)
            .map(|m| m.device().clone())
        {
            match catch(|| replay_on_device(scope.graph, feed, &wgpu)) {
                Ok(Ok(on_wgpu)) => {
                    for (k, ((slot, id), data)) in scope.outputs.iter().zip(&on_wgpu).enumerate() {
                        // As on Flex: each output in the dtype the graph recorded for it.
                        if let Some(recorded) = recorded_tensor(scope.graph, *id)
                            .map(|ir| ir.dtype)
                            .filter(|d| *d != data.dtype())
                        {
                            let what = replayed_on_wgpu(world, *slot, exit);
                            let output = (exit, k, *slot);
                            Lost(output, data.dtype(), recorded).push_into(
                                &what,
                                Backend::Wgpu,
                                dtypes_lost,
                            );
                        }
                        if self.drawn[usize::from(*slot)] {
                            shared.report.count_poisoned(Poison::RandomDraw, false);
                            continue;
                        }
                        if eager_wrong(shared, world, *slot, exit) {
                            shared.report.count_poisoned(Poison::EagerWrong, false);
                            continue;
                        }
                        let Some(eager) = shared.flex.as_ref().and_then(|f| f.data(*slot)) else {
                            continue;
                        };
                        let poisoned = shared.wgpu_poison(*slot);
                        if let DiffEq::Differ(diff) =
                            compare::compare(&eager, data, poisoned.as_ref())
                        {
                            found.push(Differing {
                                slot: *slot,
                                text: format!("output {k} (t{slot}) replayed on wgpu: {diff}"),
                                dtypes: (data.dtype(), eager.dtype()),
                                on_flex: false,
                            });
                        }
                    }
                }
                Ok(Err(ReplayError::MissingInput(_))) => {}
                Ok(Err(e)) => {
                    let message = e.to_string();
                    let summary = format!("replay on wgpu: {}", stable_summary(&message));
                    shared.report.violations.push(replay_violation(
                        (exit, Backend::Wgpu),
                        REPLAY_FAILURE,
                        summary,
                        message,
                    ));
                }
                // A clean graph's replay may meet a known Burn bug; any other panic, a misuse
                // guard's included, is a failure.
                Err(panic)
                    if !is_known_bug(&panic)
                        && !chosen_or_documented(&world.program().steps, &panic) =>
                {
                    let summary = format!("replay on wgpu: {}", stable_summary(&panic.message));
                    let on = (exit, Backend::Wgpu);
                    let mut failed = replay_violation(on, REPLAY_FAILURE, summary, panic.message);
                    failed.location = panic.location;
                    shared.report.violations.push(failed);
                }
                Err(panic) => {
                    shared.wgpu_met_panic(&panic);
                    note(panic);
                }
            }
        }
    }
}

/// One violation per differing output of `scope`, in the scope's output order, unless it signs
/// the same as an earlier one (one bug met by two outputs is one violation, with both outputs
/// in its message).
pub(super) fn differing_violations(
    world: &World<'_>,
    scope: &CompletedScope<'_>,
    found: &[Differing],
) -> Vec<Violation> {
    let exit = scope.exit;
    // Each differing output is judged on its own, in the scope's output order: a second
    // wrong output of one scope is a second finding unless it signs the same as the first
    // (one bug met by two outputs is one violation, with both outputs in its message).
    let mut violations: Vec<Violation> = Vec::new();
    for (slot, _) in scope.outputs {
        let differing: Vec<&Differing> = found.iter().filter(|f| f.slot == *slot).collect();
        let Some(first) = differing.first() else {
            continue;
        };
        // A mismatch the Flex replay shows is the op's; one only wgpu's replay shows may be
        // a known bad source's consumer.
        let what = if differing.iter().any(|f| f.on_flex) {
            producer(world, *slot, exit)
        } else {
            replayed_on_wgpu(world, *slot, exit)
        };
        let (replayed, eager) = first.dtypes;
        let summary = format!(
            "the replayed {what} differs from the eager Flex run ({replayed:?} replayed, \
             {eager:?} eager)"
        );
        let texts = differing.iter().map(|f| f.text.as_str());
        // The reproducer replays on wgpu where any differing output is wgpu's replay.
        let backend = if differing.iter().all(|f| f.on_flex) {
            Backend::Flex
        } else {
            Backend::Wgpu
        };
        match violations.iter_mut().find(|v| v.summary == summary) {
            Some(v) => {
                texts.for_each(|t| {
                    v.message.push_str("; ");
                    v.message.push_str(t);
                });
                if backend == Backend::Wgpu {
                    v.payload = Payload::Replay {
                        backend,
                        dtype_lost: false,
                    };
                }
            }
            None => violations.push(replay_violation(
                (exit, backend),
                REPLAY_MISMATCH,
                summary,
                texts.collect::<Vec<_>>().join("; "),
            )),
        }
    }
    violations
}

/// A violation of the eager replay at scope exit `exit`.
fn replay_violation(
    (exit, backend): (usize, Backend),
    class: Class,
    summary: String,
    message: String,
) -> Violation {
    Violation {
        step: exit,
        class,
        summary,
        message,
        payload: Payload::Replay {
            backend,
            dtype_lost: false,
        },
        ..Violation::default()
    }
}
