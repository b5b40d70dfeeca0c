//! The eager vs capture-replay oracle: a graph that captured cleanly, replayed on Flex (and on
//! wgpu, when it runs) with the data its inputs had, must compute what the same steps computed
//! eagerly on Flex (the eager mirror). A replay that fails, or an output that differs beyond
//! Burn's `Tolerance::default()`, is a violation.

use burn::tensor::{DType, TensorData, Tolerance};

use super::compare::{self, native_bools, Poison};
use super::naming::producer_step;
use super::reference::host::Host;
use super::reference::{host_of, of_op};
use super::taint::Taint;
use super::{
    chose_dtype_mix, faults, Backend, Deviation, Facts, Oracle, Payload, Shared, StepFacts,
    Violation, REFERENCE_MISMATCH,
};
use crate::interpreter::{AnyTensor, CompletedScope, Outcome, World};
use crate::program::limits::MAX_SLOTS;
use crate::program::{Dtype, Kind, Op, Slot, Step};

mod outputs;

pub use super::{REPLAY_FAILURE, REPLAY_MISMATCH};
use outputs::{differing_violations, replay_flex, Differing};

/// What a replay-mismatch summary says between the replayed and the recorded dtype of an
/// output replayed in another dtype than its graph recorded.
const DTYPE_LOST: &str = " where the graph recorded ";

/// Where `replayed` and `eager` differ, as Burn's `assert_approx_eq` would report it, without
/// panicking (a panic here would be taken for Burn's): NaN equals NaN, same-signed infinities
/// are equal, floats must be within `Tolerance::default()`, ints and bools exactly; shapes must
/// match.
pub fn difference(replayed: &TensorData, eager: &TensorData) -> Option<String> {
    difference_skipping(replayed, eager, None)
}

/// [`difference`], leaving out the elements whose bit is set in `skip`.
fn difference_skipping(
    replayed: &TensorData,
    eager: &TensorData,
    skip: Option<&[bool]>,
) -> Option<String> {
    if let Some(image) = in_eager_dtype(replayed, eager) {
        let names = ("replayed (in the eager dtype)", "eager");
        return compare::difference_skipping(&image, eager, None, names, skip);
    }
    let tolerance = eager.dtype().is_float().then(Tolerance::<f64>::default);
    compare::difference_skipping(replayed, eager, tolerance, ("replayed", "eager"), skip)
}

/// The replayed ints as the eager run's narrower int dtype can tell them, where the two
/// differ: an int the program left to its device's default is recorded and replayed in the
/// capture device's declared dtype (I64, burn-capture capture.rs:101-107) and computed eagerly
/// in Flex's (I32, burn-flex backend.rs:50-54). Burn means both: each device declares its own
/// defaults, which a user sets with `Device::configure` (burn-tensor device.rs:771-816), so the
/// eager value is no claim about the bits the capture device's dtype holds beyond its own. Each
/// replayed element is taken to the eager dtype as wrapping arithmetic does (the low bits) or,
/// where that is not the eager value, as a saturating cast does (a float-to-int cast
/// saturates). `None` where the dtypes are not two ints, the replayed one wider.
fn in_eager_dtype(replayed: &TensorData, eager: &TensorData) -> Option<TensorData> {
    let wide = Dtype::from_burn(replayed.dtype()).filter(|d| *d != Dtype::U64)?;
    let narrow = Dtype::from_burn(eager.dtype())?;
    let ((lo, hi), (wide_lo, wide_hi)) = (narrow.int_range()?, wide.int_range()?);
    if wide_hi - wide_lo <= hi - lo || replayed.shape() != eager.shape() {
        return None;
    }
    let modulus = 1i128 << narrow.spec().bits;
    let image: Vec<i64> = (replayed.iter::<i64>())
        .zip(eager.iter::<i64>())
        .map(|(x, y)| {
            let x = i128::from(x);
            let low = x.rem_euclid(modulus);
            let wrapped = if low > hi { low - modulus } else { low };
            let image = if wrapped == i128::from(y) {
                wrapped
            } else {
                x.clamp(lo, hi)
            };
            i64::try_from(image).expect("a value of a dtype of at most 64 bits")
        })
        .collect();
    Some(TensorData::new(image, replayed.shape().clone()).convert_dtype(eager.dtype()))
}

/// The definition's ints of op `step` over the eager run's operands, where an operand's
/// dtype parts the real run from the eager one (`dtypes`, per slot) or the op makes the
/// device's default int, which parts them: what
/// [`overflows_narrower`] reads once the step's output dtypes are known. Taken before the
/// mirrors follow the step, which may write a slot it reads.
fn parted_definition(
    shared: &Shared,
    step: &Step,
    dtypes: &[Option<(DType, Option<DType>)>],
) -> Option<Vec<Option<i128>>> {
    let Step::Op { op, .. } = step else {
        return None;
    };
    let operands = op.operands();
    let parted = |s: &Slot| matches!(dtypes[usize::from(*s)], Some((real, Some(eager))) if real != eager && real.is_int());
    // A cast to the device's default int parts the runs at its output: a float past I32's
    // range saturates eagerly where the capture device's I64 holds it.
    let to_default_int = matches!(
        op,
        Op::Cast {
            to: Kind::Int,
            dtype: None,
            ..
        }
    );
    if !to_default_int && !operands.iter().any(parted) {
        return None;
    }
    let flex = shared.flex.as_ref()?;
    let operands: Vec<Host> = (operands.iter())
        .map(|s| {
            let data = flex.data(*s)?;
            let kind = Dtype::from_burn(data.dtype())?.spec().kind;
            Some(host_of(kind, &data))
        })
        .collect::<Option<_>>()?;
    let operands: Vec<&Host> = operands.iter().collect();
    of_op(op, &operands).ok()?.ints().map(<[_]>::to_vec)
}

/// Whether an op's output, held by the real run in int dtype `real` and by the eager Flex run
/// in a narrower one `eager`, overflowed the narrow dtype there: its definition over the eager
/// operands (`definition`) leaves an element open (an intermediate such as `abs` of the
/// minimum passed the dtype) or lies outside it. Without a definition it is taken not to have
/// overflowed: the comparison stands as it did.
fn overflows_narrower(definition: Option<&[Option<i128>]>, (real, eager): (DType, DType)) -> bool {
    let range = |d: DType| Dtype::from_burn(d).and_then(Dtype::int_range);
    let (Some((lo, hi)), Some((wide_lo, wide_hi)), Some(values)) =
        (range(eager), range(real), definition)
    else {
        return false;
    };
    wide_hi - wide_lo > hi - lo && values.iter().any(|v| v.is_none_or(|v| v < lo || v > hi))
}

/// The eager-replay oracle for one run.
#[derive(Default)]
pub struct EagerReplay {
    /// Per slot, whether its value is a random draw or was computed from one: the eager mirror
    /// drew its own (see `Unspecified::Random`).
    drawn: [bool; MAX_SLOTS as usize],
    /// Per slot, whether the real run computed its value on wgpu or from a value it did: a
    /// capture scope records such a value's wgpu data, so comparing its replay with the eager
    /// Flex run compares wgpu with Flex, which is the differential's to judge.
    from_wgpu: [bool; MAX_SLOTS as usize],
    /// Per slot, the step where its value took the dtype a replay on Flex loses: an op that
    /// kept its operand's dtype on the real run while the eager Flex run changed it (argmax of
    /// a U32 recorded as U32, computed by Flex as I64), or the nearest such op among the steps
    /// that made the value. The ops after it (a swap_dims of that argmax) sign as that op.
    parted: [Option<u16>; MAX_SLOTS as usize],
    /// Per slot, its dtype on the real run and in the eager Flex run (`None`: no eager value).
    dtypes: [Option<(DType, Option<DType>)>; MAX_SLOTS as usize],
    /// Per slot, whether the eager run computed its value, or one it was made from, in a
    /// narrower int dtype than the real run's, where the narrow dtype overflowed (see
    /// [`Poison::NarrowOverflow`]).
    overflowed: [bool; MAX_SLOTS as usize],
    /// The current step's definition over the eager operands where their dtypes part the two
    /// runs ([`parted_definition`]).
    definition: Option<Vec<Option<i128>>>,
}

impl EagerReplay {
    /// Why output slot `slot`'s Flex replay must not be compared with the eager run (at which
    /// elements), if it must not. `misread_on_flex`: the graph holds a wgpu bool's `Bool(U32)` bytes.
    fn left_open(&self, shared: &Shared, slot: Slot, misread_on_flex: bool) -> Option<Taint> {
        let s = usize::from(slot);
        self.drawn[s]
            .then(|| Taint::whole(Poison::RandomDraw))
            .or(self.overflowed[s].then(|| Taint::whole(Poison::NarrowOverflow)))
            .or(misread_on_flex.then(|| Taint::whole(Poison::BoolU32OnFlex)))
            // Recorded from wgpu data the differential does not compare (a known wgpu bug, a
            // spec-allowed difference): the replay gives back what wgpu computed (fuzz
            // --backends flex,capture,wgpu --seed 107: wgpu's powf(0, 0) = 0, moved into a
            // scope, replays as 0 where eager Flex computes 1).
            .or(shared.wgpu_poison(slot).filter(|_| self.from_wgpu[s]))
    }
}

impl Oracle for EagerReplay {
    fn before_mirrors(&mut self, shared: &Shared, world: &World<'_>, index: usize) {
        let step = &world.program().steps[index];
        // A step that failed wrote nothing, and its operands need not fit its definition.
        let ok = matches!(world.outcome(index), Some(Outcome::Ok { .. }));
        self.definition = ok
            .then(|| parted_definition(shared, step, &self.dtypes))
            .flatten();
    }

    fn after_step(&mut self, shared: &mut Shared, world: &World<'_>, facts: &StepFacts<'_>) {
        let step = &world.program().steps[facts.index];
        if let Step::Drop { slot } = step {
            self.drawn[usize::from(*slot)] = false;
            self.from_wgpu[usize::from(*slot)] = false;
            self.parted[usize::from(*slot)] = None;
            self.dtypes[usize::from(*slot)] = None;
            self.overflowed[usize::from(*slot)] = false;
            return;
        }
        // A step that failed wrote nothing.
        if !matches!(facts.outcome, Outcome::Ok { .. }) {
            return;
        }
        let replay_draws = match step {
            Step::Replay { graph, .. } => world.program().graph_draws(usize::from(*graph)),
            _ => false,
        };
        let reads = step.reads();
        let drawn =
            step.draws() || replay_draws || reads.iter().any(|s| self.drawn[usize::from(*s)]);
        let on_wgpu =
            matches!(facts.outcome, Outcome::Ok { value: Some(v), .. } if v.device.is_wgpu());
        let from_wgpu = on_wgpu || reads.iter().any(|s| self.from_wgpu[usize::from(*s)]);
        let parted_before = reads
            .iter()
            .filter_map(|s| self.parted[usize::from(*s)])
            .min();
        let operand = reads.first().and_then(|s| self.dtypes[usize::from(*s)]);
        let overflowed_before = reads.iter().any(|s| self.overflowed[usize::from(*s)]);
        for out in step.writes() {
            self.drawn[usize::from(out)] = drawn;
            self.from_wgpu[usize::from(out)] = from_wgpu;
            let Some(real) = world.slot_ref(out).map(AnyTensor::dtype) else {
                self.parted[usize::from(out)] = None;
                self.dtypes[usize::from(out)] = None;
                self.overflowed[usize::from(out)] = false;
                continue;
            };
            let eager = shared.flex.as_ref().and_then(|f| f.dtype(out));
            let definition = self.definition.as_deref();
            self.overflowed[usize::from(out)] = overflowed_before
                || eager.is_some_and(|eager| overflows_narrower(definition, (real, eager)));
            // Device defaults part the two runs by design (a capture bool is Bool(U8), a Flex
            // one native), and a replay is handed the recorded dtypes: only an op that kept
            // its operand's dtype where the eager run did not is where a replay loses one.
            let origin = matches!(step, Step::Op { .. })
                && operand.is_some_and(|(op_real, op_eager)| {
                    real == op_real && eager.is_some() && op_eager.is_some() && eager != op_eager
                });
            self.parted[usize::from(out)] = if origin {
                Some(facts.index as u16)
            } else if eager != Some(real) {
                parted_before
            } else {
                None
            };
            self.dtypes[usize::from(out)] = Some((real, eager));
        }
    }

    fn scope_completed(
        &mut self,
        shared: &mut Shared,
        world: &World<'_>,
        scope: &CompletedScope<'_>,
    ) {
        let Some(flex) = shared.flex.as_ref() else {
            return;
        };
        let feed: Vec<Option<TensorData>> = scope
            .inputs
            .iter()
            .map(|(s, _)| Some(faults::replay_feed(native_bools(flex.data(*s)?))))
            .collect();
        let Some(replayed) = replay_flex(shared, world, scope, &feed) else {
            return;
        };
        let mut found: Vec<Differing> = Vec::new();
        let mut dtypes_lost: Vec<Violation> = Vec::new();
        self.compare_flex(
            shared,
            world,
            scope,
            &replayed,
            (&mut found, &mut dtypes_lost),
        );
        self.compare_wgpu(
            shared,
            world,
            (scope, &feed),
            (&mut found, &mut dtypes_lost),
        );
        let violations = differing_violations(world, scope, &found);
        shared.report.violations.extend(violations);
        shared.report.violations.extend(dtypes_lost);
    }
}

/// Whether the eager value of output slot `slot` at scope exit `exit` is one the reference
/// oracle found wrong at the step that made it (its violations for the steps before the exit
/// are in by then): the eager run is the baseline the replay is compared with. Only the step
/// that made the value is read, not the steps before it.
fn eager_wrong(shared: &Shared, world: &World<'_>, slot: Slot, exit: usize) -> bool {
    producer_step(world, slot, exit).is_some_and(|at| {
        (shared.report.violations.iter()).any(|v| v.step == at && v.class == REFERENCE_MISMATCH)
    })
}

/// A replayed output handed back in another dtype than its graph recorded for it: the scope's
/// exit step, the output's position and the slot it went to; the dtype it came back in and the
/// one recorded.
struct Lost((usize, usize, Slot), DType, DType);

impl Lost {
    /// Adds it to `lost` as a violation of the op `what` (as a signature names it), replayed on
    /// `on`, unless one signs the same (an op met by two outputs).
    fn push_into(&self, what: &str, on: Backend, lost: &mut Vec<Violation>) {
        let Lost((exit, k, slot), got, recorded) = self;
        // Flex's replay is the graph's own check; wgpu's says where it ran.
        let device = match on {
            Backend::Flex => String::new(),
            other => format!(" on {}", other.name()),
        };
        let summary = format!("the replayed {what}{device} is {got:?}{DTYPE_LOST}{recorded:?}");
        if !lost.iter().any(|v| v.summary == summary) {
            let message = format!(
                "output {k} (t{slot}): replayed on {} as {got:?}, recorded as {recorded:?}",
                on.name()
            );
            let deviation = Dtype::from_burn(*recorded)
                .zip(Dtype::from_burn(*got))
                .map(|(recorded, got)| Deviation::Dtype { recorded, got });
            lost.push(Violation {
                step: *exit,
                class: REPLAY_MISMATCH,
                summary,
                message,
                facts: Facts {
                    entry: Some(what.to_string()),
                    dtype: Dtype::from_burn(*recorded),
                    deviation,
                    backend: Some(on),
                },
                payload: Payload::Replay {
                    backend: on,
                    dtype_lost: true,
                },
                ..Violation::default()
            });
        }
    }
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

/// Whether a replay's panic is the program's own choice of dtypes ([`chose_dtype_mix`]) or a
/// failure Burn documents as possible (a `limitation` record): no graph Burn recorded wrong.
fn chosen_or_documented(steps: &[Step], panic: &crate::interpreter::PanicInfo) -> bool {
    chose_dtype_mix(steps, &panic.message)
        || super::catalogue::lookup(
            super::catalogue::catalogue(),
            &panic.message,
            panic.location.as_deref(),
        )
        .is_some_and(|r| r.is_limitation())
}

#[cfg(test)]
mod tests {
    use super::difference;
    use burn::tensor::TensorData;

    #[test]
    fn replayed_ints_and_bools_must_equal_their_eager_values_exactly() {
        let eager = TensorData::new(vec![200i64, -7], [2]);
        let replayed = TensorData::new(vec![201i64, -7], [2]);
        assert!(difference(&replayed, &eager).is_some());
        let eager = TensorData::new(vec![true, false], [2]);
        let replayed = TensorData::new(vec![true, true], [2]);
        assert!(difference(&replayed, &eager).is_some());
    }

    #[test]
    fn replayed_floats_may_differ_within_the_default_tolerance() {
        let eager = TensorData::new(vec![200.0f32], [1]);
        let replayed = TensorData::new(vec![200.0001f32], [1]);
        assert!(difference(&replayed, &eager).is_none());
    }
}
