//! The transaction oracle: a `Transaction` hands back one answer per tensor it reads, and each
//! is exactly what that tensor's own read gives (dtype, shape and bytes), whatever the backend
//! batches: the same tensor read twice on the same backend has one answer.

use crate::interpreter::{data_info, read_data, Outcome, ValueInfo, World};
use crate::program::{step_line, Step};

use super::{faults, Oracle, Shared, StepFacts, Violation, TRANSACTION_MISMATCH};

/// The oracle (follows the run: the tensors must still be in their slots to be read alone).
pub struct TransactionReads;

impl Oracle for TransactionReads {
    fn after_step(&mut self, shared: &mut Shared, world: &World<'_>, facts: &StepFacts<'_>) {
        let step = &world.program().steps[facts.index];
        let (Step::Transaction { srcs, .. }, Outcome::Ok { outputs, .. }) = (step, facts.outcome)
        else {
            return;
        };
        let violation = |summary: String, detail: String| Violation {
            step: facts.index,
            class: TRANSACTION_MISMATCH,
            summary,
            message: format!("step {} `{}`: {detail}", facts.index, step_line(step)),
            ..Violation::default()
        };
        if outputs.len() != srcs.len() {
            let (n, m) = (srcs.len(), outputs.len());
            shared.report.violations.push(violation(
                format!("a transaction of {n} tensors answered {m}"),
                format!("{n} tensors registered, {m} answers"),
            ));
            return;
        }
        for (k, (s, got)) in srcs.iter().zip(outputs).enumerate() {
            // A read that fails alone is in the run's journal, judged with the trace.
            let Some(t) = world.slot_ref(*s) else {
                continue;
            };
            let Some(own) = read_data(t.clone()).map(|d| data_info(t, &faults::own_read(d))) else {
                continue;
            };
            if let Some(what) = differs(got, &own) {
                shared.report.violations.push(violation(
                    format!(
                        "a transaction's {what} of a {} {} tensor differs from its own read",
                        own.dtype,
                        family(&own.device)
                    ),
                    format!(
                        "answer {k} (t{s}) is {} {:?} (digest {}), its own read {} {:?} (digest {})",
                        got.dtype,
                        got.shape,
                        got.digest.map_or_else(|| "-".into(), |d| d.to_string()),
                        own.dtype,
                        own.shape,
                        own.digest.map_or_else(|| "-".into(), |d| d.to_string()),
                    ),
                ));
                return;
            }
        }
    }
}

/// What differs between a transaction's answer and the tensor's own read, first found first.
fn differs(got: &ValueInfo, own: &ValueInfo) -> Option<&'static str> {
    if got.dtype != own.dtype {
        Some("dtype")
    } else if got.shape != own.shape {
        Some("shape")
    } else if got.digest != own.digest {
        Some("data")
    } else {
        None
    }
}

/// A device name without its pool number or autodiff suffix (`capture1_ad` is `capture`), so
/// one bug has one signature whichever pool device met it.
fn family(device: &str) -> &str {
    device
        .trim_end_matches("_ad")
        .trim_end_matches(|c: char| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::interpreter::Digest;
    use crate::program::Kind;

    fn info(dtype: &'static str, shape: &[usize], digest: u64) -> ValueInfo {
        ValueInfo {
            kind: Kind::Float,
            dtype: Cow::Borrowed(dtype),
            shape: shape.to_vec(),
            device: Cow::Borrowed("capture2_ad"),
            same_as: None,
            digest: Some(Digest(digest)),
        }
    }

    #[test]
    fn an_answer_is_told_apart_by_dtype_then_shape_then_bytes() {
        let own = info("F32", &[2], 1);
        assert_eq!(differs(&info("F32", &[2], 1), &own), None);
        assert_eq!(differs(&info("F64", &[1], 2), &own), Some("dtype"));
        assert_eq!(differs(&info("F32", &[1], 2), &own), Some("shape"));
        assert_eq!(differs(&info("F32", &[2], 2), &own), Some("data"));
    }

    #[test]
    fn a_signature_names_the_device_family_not_the_pool_device() {
        assert_eq!(family("capture2_ad"), "capture");
        assert_eq!(family("flex"), "flex");
        assert_eq!(family("wgpu_ad"), "wgpu");
    }
}
