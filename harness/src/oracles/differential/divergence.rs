//! How the differential reports a divergence: its summary, the names and facts its signature
//! carries, and the poison it leaves past the diverged value.

use burn::tensor::TensorData;

use crate::oracles::compare::{self, Poison};
use crate::oracles::deviation::{Backend, Deviation, Facts};
use crate::oracles::taint::Taint;
use crate::oracles::{normalize_message, Payload, Shared, Violation, DIVERGENCE};
use crate::program::{Dtype, Slot};

/// What a divergence's signature names beyond its summary.
pub(super) struct Named {
    /// The op (or what stands for it) in the summary.
    pub(super) what: String,
    /// The operand dtypes of the step it names, from the trace (`naming::operand_dtypes`).
    pub(super) operands: Option<String>,
    /// The first of them, for the finding's facts.
    pub(super) dtype: Option<Dtype>,
    /// Which gradient, for a backward step.
    pub(super) role: Option<String>,
}

/// Reports that one backend failed (`how`: `wgpu panicked reading`) with `message` where the
/// other computed output `out` of step `index`: a divergence whose deviation is a panic. Its
/// summary names the failure, the op's value and the message with its numbers and kernel
/// hashes normalized: without the op and the message every such failure is one signature, so
/// one stored case would pass them all as known.
pub(super) fn failed(
    shared: &mut Shared,
    (index, out): (usize, Slot),
    (how, named): (&str, &Named),
    message: String,
) {
    let summary = format!("{how} ({}): {}", named.what, normalize_message(&message));
    let payload = Payload::Failed {
        message: message.clone(),
    };
    let deviation = Some(Deviation::Panic);
    diverge(
        shared,
        (index, out),
        (&summary, named),
        (message, deviation),
        payload,
    );
}

/// Reports the divergence of output `out` of step `index`; `deviation` is wgpu's value's from
/// Flex's.
fn diverge(
    shared: &mut Shared,
    (index, out): (usize, Slot),
    (summary, named): (&str, &Named),
    (details, deviation): (String, Option<Deviation>),
    payload: Payload,
) {
    // What is computed from a diverged value would only repeat the report.
    shared.poison[usize::from(out)] = Some(Taint::whole(Poison::FromPoisoned));
    shared.report.violations.push(Violation {
        step: index,
        class: DIVERGENCE,
        summary: summary.to_string(),
        message: format!("t{out}: {details}"),
        operands: named.operands.clone(),
        role: named.role.clone(),
        facts: Facts {
            entry: Some(named.what.clone()),
            dtype: named.dtype,
            deviation,
            backend: Some(Backend::Wgpu),
        },
        payload,
        ..Violation::default()
    });
}

/// Up to eight values of `data`, for a divergence message.
fn short(data: &TensorData) -> Vec<f64> {
    compare::values(data).into_iter().take(8).collect()
}

/// Reports that output `out` of step `index` holds `values` (Flex's, wgpu's) that differ as
/// `diff` says.
pub(super) fn differs(
    shared: &mut Shared,
    (index, out): (usize, Slot),
    (flex, on_wgpu): (&TensorData, &TensorData),
    diff: &compare::Difference,
    named: &Named,
) {
    let both = format!(
        "{diff}; flex {:?} = {:?}; wgpu {:?} = {:?}",
        flex.dtype(),
        short(flex),
        on_wgpu.dtype(),
        short(on_wgpu)
    );
    // Compared as wgpu's, then Flex's.
    let deviation = (diff.first).and_then(|(wgpu, flex_value)| {
        Deviation::between(
            &flex_value.to_string(),
            &wgpu.to_string(),
            Some(flex.dtype()),
        )
    });
    let summary = format!("the result of {} differs between Flex and wgpu", named.what);
    diverge(
        shared,
        (index, out),
        (&summary, named),
        (both, deviation),
        Payload::None,
    );
}
