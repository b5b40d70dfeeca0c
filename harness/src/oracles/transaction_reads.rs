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
                        "a transaction's {what} of a {:?} {} tensor differs from its own read",
                        own.dtype,
                        // The family alone (`capture1_ad` is `capture`): one bug has one
                        // signature whichever pool device met it.
                        own.device.family()
                    ),
                    format!(
                        "answer {k} (t{s}) is {:?} {:?} (digest {}), its own read {:?} {:?} (digest {})",
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

#[cfg(test)]
mod tests {
    use burn::tensor::DType;

    use super::*;
    use crate::interpreter::{Base, Digest, Placed};
    use crate::program::Kind;

    fn info(dtype: DType, shape: &[usize], digest: u64) -> ValueInfo {
        ValueInfo {
            kind: Kind::Float,
            dtype,
            shape: shape.to_vec(),
            device: Placed::new(Base::Capture(2), true),
            same_as: None,
            digest: Some(Digest(digest)),
        }
    }

    #[test]
    fn an_answer_is_told_apart_by_dtype_then_shape_then_bytes() {
        let own = info(DType::F32, &[2], 1);
        assert_eq!(differs(&info(DType::F32, &[2], 1), &own), None);
        assert_eq!(differs(&info(DType::F64, &[1], 2), &own), Some("dtype"));
        assert_eq!(differs(&info(DType::F32, &[1], 2), &own), Some("shape"));
        assert_eq!(differs(&info(DType::F32, &[2], 2), &own), Some("data"));
    }

    #[test]
    fn a_signature_names_the_device_family_not_the_pool_device() {
        let named = |name: &str| name.parse::<Placed>().expect("a device name");
        assert_eq!(named("capture2_ad").family(), "capture");
        assert_eq!(named("flex").family(), "flex");
        assert_eq!(named("wgpu_ad").family(), "wgpu");
        for name in [
            "flex",
            "flex_ad",
            "capture0",
            "capture2_ad",
            "wgpu",
            "wgpu_ad",
            "other",
        ] {
            assert_eq!(named(name).to_string(), name);
        }
        assert!("capture_ad".parse::<Placed>().is_err() && "cpu".parse::<Placed>().is_err());
    }
}
