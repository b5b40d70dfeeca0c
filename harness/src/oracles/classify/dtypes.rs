//! Panics over dtypes a program chose: a mix of dtypes it named, or a dtype the device says it
//! does not support, which Burn is free to refuse.

use burn::tensor::DType;

use crate::interpreter::{wgpu, Outcome, Trace, ValueInfo};
use crate::program::limits::MAX_SLOTS;
use crate::program::{DeviceRef, Dtype, Step};

pub use crate::oracles::class::MIXED_DTYPES;

/// The words every backend's refusal of mixed operand dtypes contains (Flex's `storage: dtype
/// mismatch`, `cat: dtype mismatch`, `int_{op}: dtype mismatch`, `bool_binary_op: dtype
/// mismatch`; burn-ir's `DTypeMismatch`).
const DTYPE_MISMATCH_WORDS: [&str; 2] = ["dtype mismatch", "DTypeMismatch"];

/// Whether a panic's class may depend on the program's dtypes ([`MIXED_DTYPES`]), which only
/// `check` sees: the panic hook lets such a panic unwind, and `check` decides.
pub fn may_be_chosen_dtype_mix(message: &str) -> bool {
    DTYPE_MISMATCH_WORDS.iter().any(|w| message.contains(w))
}

/// Whether a dtype-mismatch panic's `message` names, as a word (`I8`, not the `U8` of
/// `Bool(U8)`), a dtype no device makes by default that `steps` name: that operand's dtype is
/// the program's choice. Burn's dtypes are read from the run, not from the program, so a step
/// that failed before the op cannot mislead it.
pub fn chose_dtype_mix(steps: &[Step], message: &str) -> bool {
    if !may_be_chosen_dtype_mix(message) {
        return false;
    }
    let words: Vec<&str> = message
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '(' || c == ')'))
        .map(|w| w.trim_start_matches('(').trim_end_matches(')'))
        // `Bool(U8)` stays one word; a lone `(U8` or `U8)` loses its parenthesis only.
        .collect();
    steps
        .iter()
        .filter_map(Step::named_dtype)
        .filter(|d| !d.is_a_default())
        .any(|d| words.contains(&d.spec().name))
}

/// Per step of the trace, whether [`UNSUPPORTED_DTYPE`](crate::oracles::UNSUPPORTED_DTYPE) explains its failure: it ran on the
/// wgpu device (read a value there, named it, or made a value there) at or after the first step
/// that left there a tensor of a dtype the program named and the device does not support.
/// Empty when there is no such step, as in every run without wgpu.
pub fn past_unsupported_dtype(steps: &[Step], trace: &Trace) -> Vec<bool> {
    let named: Vec<DType> = (wgpu::named_unsupported(steps).into_iter())
        .map(Dtype::burn)
        .collect();
    if named.is_empty() {
        return Vec::new();
    }
    let mut past = false;
    let mut explained = vec![false; steps.len()];
    // Per slot, whether its value was made on wgpu or from one that was (moved off it: the move
    // reads the device's failed stream).
    let mut from_wgpu = [false; MAX_SLOTS as usize];
    trace.walk_held(steps, |step, record, _| {
        let value = match &record.outcome {
            Outcome::Ok { value: Some(v), .. } => Some(v),
            _ => None,
        };
        let made_there = value.is_some_and(|v| v.device.is_wgpu());
        past |= made_there && value.is_some_and(|v| named.contains(&v.dtype));
        // A scope's completion materializes what its session recorded, a value moved in from
        // wgpu included, though the step names no slot (fuzz --backends flex,capture,wgpu
        // --seed 3: a U8 moved from wgpu into a scope panics in cubecl's bytes at the exit).
        let completes_from_wgpu =
            matches!(step, Step::ExitScope { .. }) && from_wgpu.iter().any(|&f| f);
        let ran_there = made_there
            || step.device() == Some(DeviceRef::Wgpu)
            || completes_from_wgpu
            || step.reads().iter().any(|s| from_wgpu[usize::from(*s)]);
        explained[record.index] = past && ran_there;
        // A step that failed may leave its slot as it was (a failed move onto the slot it
        // read): only a step that ran changes what a slot came from.
        if matches!(record.outcome, Outcome::Ok { .. }) {
            for out in step.writes() {
                from_wgpu[usize::from(out)] = ran_there;
            }
        }
        None::<()>
    });
    explained
}

/// Per step of the trace, whether it is an op over operands of one kind in two dtypes (as the
/// run had them), one of which the program named and no device makes by default: the mix the
/// program chose, which Burn lets a backend refuse (tracel-ai/burn#2483) in whatever words (wgpu
/// fails a cat of an F64 and an F32 tensor at its shader's binding validation). Empty when the
/// program names no such dtype.
pub fn mixes_named_dtypes(steps: &[Step], trace: &Trace) -> Vec<bool> {
    let named: Vec<DType> = steps
        .iter()
        .filter_map(Step::named_dtype)
        .filter(|d| !d.is_a_default())
        .map(Dtype::burn)
        .collect();
    if named.is_empty() {
        return Vec::new();
    }
    let mut mixed = vec![false; steps.len()];
    trace.walk_held(steps, |step, record, held| {
        if let Step::Op { op, .. } = step {
            let operands: Vec<&ValueInfo> = op
                .operands()
                .iter()
                .filter_map(|s| held[usize::from(*s)])
                .collect();
            mixed[record.index] = operands.iter().any(|a| {
                named.contains(&a.dtype)
                    && operands
                        .iter()
                        .any(|b| b.kind == a.kind && b.dtype != a.dtype)
            });
        }
        None::<()>
    });
    mixed
}
