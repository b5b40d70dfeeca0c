//! How a signature names the op behind a value: the op that computed it, through the steps that
//! only hand it on, or the known bad data a wgpu replay computed it from. One bug met through
//! different hand-offs or consumers keeps one signature, so a stored case stays the one case.

use burn::tensor::DType;

use crate::interpreter::{Outcome, World};
use crate::program::{Slot, Step};

/// The name of the op that computed `slot`'s value before step `before` (`unary exp`, `cast`),
/// looking through steps that only pass a value on (clone, `to_device`, autodiff conversions),
/// so one bug reached through different hand-offs keeps one signature.
pub fn producer(world: &World<'_>, slot: Slot, before: usize) -> String {
    match producer_step(world, slot, before) {
        Some(i) => step_name(&world.program().steps[i]),
        None => "output".to_string(),
    }
}

/// The index of the step that made the value `slot` holds before step `before`, looking
/// through clones, moves and autodiff steps (the steps that succeeded), if one did.
pub fn producer_step(world: &World<'_>, mut slot: Slot, mut before: usize) -> Option<usize> {
    loop {
        let i = writer_step(world, slot, before)?;
        match &world.program().steps[i] {
            Step::Clone { src, .. } | Step::ToDevice { src, .. } | Step::Autodiff { src, .. } => {
                (slot, before) = (*src, i)
            }
            _ => return Some(i),
        }
    }
}

/// The index of the last step before step `before` that wrote `slot` and succeeded, if one did
/// (a hand-off included: the step that put the value there, not the one that computed it).
pub fn writer_step(world: &World<'_>, slot: Slot, before: usize) -> Option<usize> {
    (world.program().steps[..before].iter().enumerate().rev())
        .find(|(i, s)| {
            s.writes().contains(&slot) && matches!(world.outcome(*i), Some(Outcome::Ok { .. }))
        })
        .map(|(i, _)| i)
}

/// A step's name in signatures: the op's (`unary exp`, `cast`) or the step kind's.
pub fn step_name(step: &Step) -> String {
    match step {
        Step::Op { op, .. } => op.name(),
        step => step.name().to_string(),
    }
}

/// An op whose output a wgpu replay is known to compute wrong.
pub struct BadReplaySource {
    /// The op's name in signatures (`step_name`).
    pub op: &'static str,
    /// What its bad output is, as the signature of a value computed from it names it: one name
    /// for the ops of one bug, so each bug's consumers are one signature.
    pub data: &'static str,
    /// The stored case whose own comparison is the op's output.
    pub case: &'static str,
}

/// Ops whose output the wgpu replay of a graph computes wrong (a stored case each). A value the
/// same replay computed from such an output carries the error on, so its mismatch is signed
/// with the bad data, not with whichever op consumed it: every consumer is one signature
/// instead of one per op (fuzz --backends flex,capture,wgpu --seeds 114 and 115 met a scalar mul
/// and a swap_dims over the indices). Only wgpu-only mismatches are signed so: one the Flex
/// replay shows too is not this bug. The op's own output keeps its case's signature.
pub const WGPU_REPLAY_BAD_SOURCES: &[BadReplaySource] = &[
    // cubek-pool writes i32 indices into the I64 buffer capture asks for.
    BadReplaySource {
        op: "module max_pool2d_indices",
        data: "max-pool indices",
        case: "wgpu-max-pool-indices-ignore-the-i64-dtype-capture-records",
    },
    BadReplaySource {
        op: "module max_pool1d_indices",
        data: "max-pool indices",
        case: "wgpu-max-pool1d-indices-ignore-the-i64-dtype-capture-records",
    },
    // The same indices, scattered through by the backward pass (fuzz --backends
    // flex,capture,wgpu --seed 21: a log_sigmoid of the backward's output).
    BadReplaySource {
        op: "module max_pool2d_backward",
        data: "a max-pool backward",
        case: "wgpu-max-pool-backward-scatters-through-the-i64-indices-capture-records",
    },
];

/// The op of [`WGPU_REPLAY_BAD_SOURCES`] that slot `slot`'s value was computed from inside the
/// scope that `exit` closes (the steps its graph recorded: nested scopes record their own), if
/// one was. Only a source inside the graph counts: an input is fed eager Flex data.
fn bad_replay_source(
    world: &World<'_>,
    slot: Slot,
    exit: usize,
) -> Option<&'static BadReplaySource> {
    let steps = &world.program().steps;
    let ends = world.program().scope_ends();
    let enter = ends.iter().position(|e| *e == Some(exit))?;
    // Whether step i is the scope's own, not a nested scope's.
    let mut own = vec![true; steps.len()];
    for (i, end) in ends
        .iter()
        .enumerate()
        .filter(|(i, _)| *i > enter && *i < exit)
    {
        if let Some(end) = end {
            own[i..=*end].iter_mut().for_each(|o| *o = false);
        }
    }
    let succeeded = |i: usize| matches!(world.outcome(i), Some(Outcome::Ok { .. }));
    let mut seen = vec![false; steps.len()];
    let mut pending = vec![(slot, exit)];
    while let Some((slot, before)) = pending.pop() {
        let Some(i) = (enter + 1..before)
            .rev()
            .find(|&i| own[i] && steps[i].writes().contains(&slot) && succeeded(i))
        else {
            continue;
        };
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        let name = step_name(&steps[i]);
        if let Some(source) = WGPU_REPLAY_BAD_SOURCES.iter().find(|b| b.op == name) {
            return Some(source);
        }
        pending.extend(steps[i].reads().iter().map(|s| (*s, i)));
    }
    None
}

/// Whether output slot `slot` of the scope `exit` closes was computed, inside it, by an op of
/// [`WGPU_REPLAY_BAD_SOURCES`] or from one's output: what a wgpu replay of it gives is that
/// stored bug's.
pub fn from_bad_replay_source(world: &World<'_>, slot: Slot, exit: usize) -> bool {
    bad_replay_source(world, slot, exit).is_some()
}

/// What computed output slot `slot` of the scope `exit` closes, in the signature of a mismatch
/// its wgpu replay alone shows: the op, or the bad data of [`WGPU_REPLAY_BAD_SOURCES`] it was
/// computed from.
pub fn replayed_on_wgpu(world: &World<'_>, slot: Slot, exit: usize) -> String {
    let what = producer(world, slot, exit);
    match bad_replay_source(world, slot, exit) {
        Some(source) if source.op != what => format!("value computed from {}", source.data),
        _ => what,
    }
}

/// Which value a backward step's gradient is, in a signature's role: `gradient of operand k`
/// when the parameter `param` is (through hand-offs) operand k of the op that made `loss`, else
/// `gradient of an earlier value`. A conv's weight gradient and its input gradient are two
/// roles of one op: two bugs, not one.
pub fn gradient_role(world: &World<'_>, loss: Slot, param: Slot, before: usize) -> String {
    let steps = &world.program().steps;
    let Some(op) = producer_step(world, loss, before) else {
        return "gradient of an earlier value".to_string();
    };
    // The value each operand holds, followed back through hand-offs to where it was made.
    let made_at = |slot: Slot, at: usize| producer_step(world, slot, at);
    let param_made = made_at(param, before);
    let position = steps[op]
        .reads()
        .iter()
        .position(|r| *r == param || (param_made.is_some() && made_at(*r, op) == param_made));
    match position {
        Some(k) => format!("gradient of operand {k}"),
        None => "gradient of an earlier value".to_string(),
    }
}

/// The dtypes of step `index`'s operands as the run held them (`F32, I64`), from the trace:
/// each operand's dtype as the last step that wrote it before `index`, and succeeded, handed it
/// back. An int compare of an I64 with an I32 is not the bug of one of two F32s.
pub fn operand_dtypes(world: &World<'_>, index: usize) -> Option<String> {
    let dtypes: Vec<String> = operand_dtype_list(world, index)
        .iter()
        .map(|d| format!("{d:?}"))
        .collect();
    (!dtypes.is_empty()).then(|| dtypes.join(", "))
}

/// [`operand_dtypes`] as values, in operand order (an operand whose dtype the trace does not
/// give is left out).
pub fn operand_dtype_list(world: &World<'_>, index: usize) -> Vec<DType> {
    let steps = &world.program().steps;
    let dtype = |slot: Slot| -> Option<DType> {
        // A step that panicked or was skipped left the slot's earlier value in place.
        let (writer, value, outputs) = steps[..index]
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, s)| s.writes().contains(&slot))
            .find_map(|(j, s)| match world.outcome(j) {
                Some(Outcome::Ok { value, outputs, .. }) => Some((s, value, outputs)),
                _ => None,
            })?;
        let info = match writer {
            Step::Replay { outputs: slots, .. } => {
                outputs.get(slots.iter().rposition(|s| *s == slot)?)
            }
            _ => value.as_ref(),
        };
        info.map(|v| v.dtype)
    };
    steps
        .get(index)
        .map(|step| step.reads().iter().filter_map(|s| dtype(*s)).collect())
        .unwrap_or_default()
}
