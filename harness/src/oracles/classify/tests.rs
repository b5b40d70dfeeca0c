//! Tests of `classify`.

use super::normalize::without_kernel_hashes;
use super::{classify, normalize_message, Class, Policy};
use crate::interpreter::{Outcome, Trace};
use crate::oracles::deviation::{Backend, Deviation, Facts};
use crate::oracles::known::key_of;
use crate::oracles::{
    oracle_of, Signature, Violation, DIVERGENCE, MODEL_MISMATCH, REFERENCE_MISMATCH, REPLAY_FAILURE,
};

fn created(dtype: Option<crate::program::Dtype>) -> crate::program::Step {
    crate::program::Step::Create {
        out: 0,
        kind: crate::program::Kind::Int,
        shape: vec![1],
        fill: crate::program::Fill::Zeros,
        device: crate::program::DeviceRef::Flex,
        dtype,
    }
}

#[test]
fn a_dtype_mismatch_naming_a_dtype_the_program_chose_is_the_programs_mix_and_one_between_defaults_is_not(
) {
    use super::chose_dtype_mix;
    use crate::program::Dtype;
    let named_i8 = [created(Some(Dtype::I8))];
    let message = "storage: dtype mismatch (expected I32, got I8)";
    assert!(chose_dtype_mix(&named_i8, message));
    // The defaults' own mix (capture's I64 against Flex's I32) stays the catalogued bug's,
    // even where the program named I64 itself.
    let between_defaults = "storage: dtype mismatch (expected I64, got I32)";
    assert!(!chose_dtype_mix(
        &[created(Some(Dtype::I64))],
        between_defaults
    ));
    // A dtype the program never named is Burn's doing.
    assert!(!chose_dtype_mix(&[created(None)], message));
    // `U8` inside `Bool(U8)` is a bool storage, not the U8 the program named.
    let bools = "bool_binary_op: dtype mismatch left: Bool(Native) right: Bool(U8)";
    assert!(!chose_dtype_mix(&[created(Some(Dtype::U8))], bools));
    // Only a dtype refusal: another panic naming the dtype is not one.
    assert!(!chose_dtype_mix(
        &named_i8,
        "int_mean: unsupported dtype I8"
    ));
}

#[test]
fn an_at_steps_entry_ending_in_a_star_names_every_step_of_its_prefix() {
    let at = ["replay".to_string(), "scalar *".to_string()];
    assert!(super::at_step(&at, "scalar add"));
    assert!(super::at_step(&at, "replay"));
    assert!(!super::at_step(&at, "binary add"));
    assert!(!super::at_step(&at, "replay_on_wgpu"));
}

/// What classification makes of `violation` alone: the stored case it is, or its finding's
/// signature.
fn judged(violation: Violation) -> Result<String, String> {
    let found = classify(&[], &mut Trace::default(), &[violation], &Policy::default());
    match (found.known.first(), found.finding) {
        (Some(case), None) => Ok(case.clone()),
        (_, Some(f)) => Err(f.signature.to_string()),
        (None, None) => panic!("a violation is a finding or a known one"),
    }
}

/// [`judged`] for a wgpu case's violation, as in a process whose wgpu device runs on
/// Vulkan/llvmpipe (a wgpu case knows nothing in a process without one).
fn judged_on_vulkan(v: Violation) -> Result<String, String> {
    let oracle = oracle_of(v.class).map_or("unknown-oracle", |o| o.name);
    let signature = Signature {
        op: v.op.clone(),
        operands: v.operands.clone(),
        role: v.role.clone(),
        ..Signature::new(v.class, &v.summary, oracle)
    };
    let vulkan = crate::program::AdapterClass::vulkan_llvmpipe();
    crate::oracles::known::known_case_on(&signature, &v.facts, Some(&vulkan))
        .map(str::to_string)
        .ok_or_else(|| signature.to_string())
}

/// A violation with the fields the stored case `case` has, changed by `change`.
fn like_case(case: &str, class: Class, change: impl FnOnce(&mut Violation)) -> Violation {
    let stored = &key_of(case).expect("the case is stored").signature;
    let mut v = Violation {
        step: 3,
        class,
        summary: stored.summary.clone(),
        message: "details".into(),
        op: stored.op.clone(),
        operands: stored.operands.clone(),
        role: stored.role.clone(),
        ..Violation::default()
    };
    change(&mut v);
    v
}

#[test]
fn each_gradient_of_a_stored_gradient_bugs_op_is_its_own_finding() {
    // powf's base gradient (operand 0) and its exponent's (operand 1) are two stored cases;
    // a gradient of a value further up is neither.
    let case = "powf-gradient-of-zero-to-the-zero-is-nan";
    // The NaN both cases state, where the definition is finite.
    let nan = |v: &mut Violation| {
        v.facts = Facts {
            entry: Some("backward of binary powf".into()),
            dtype: Some(crate::program::Dtype::F32),
            deviation: Some(Deviation::NanForFinite),
            backend: Some(Backend::Flex),
        }
    };
    assert_eq!(
        judged(like_case(case, REFERENCE_MISMATCH, nan)),
        Ok(case.into())
    );
    let exponent = like_case(case, REFERENCE_MISMATCH, |v| {
        nan(v);
        v.role = Some("gradient of operand 1".into())
    });
    let other = "powf-exponent-gradient-at-a-zero-base-is-nan";
    assert_eq!(judged(exponent), Ok(other.into()));
    let earlier = like_case(case, REFERENCE_MISMATCH, |v| {
        nan(v);
        v.role = Some("gradient of an earlier value".into())
    });
    let finding = judged(earlier).expect_err("another gradient is another bug");
    assert!(
        finding.ends_with("role: gradient of an earlier value"),
        "{finding}"
    );
}

#[test]
fn a_gradient_of_another_op_is_not_the_stored_sqrt_gradient() {
    let case = "wgpu-sqrt-gradient-at-zero-is-zero";
    let stored = like_case(case, DIVERGENCE, |_| {});
    assert_eq!(judged_on_vulkan(stored), Ok(case.into()));
    let conv = like_case(case, DIVERGENCE, |v| {
        v.summary = "the result of backward of module conv2d differs between Flex and wgpu".into();
        v.role = Some("gradient of operand 1".into());
    });
    assert!(judged_on_vulkan(conv).is_err());
}

#[test]
fn the_same_model_rule_broken_after_another_op_is_a_new_finding() {
    let case = "stale-left-operand-of-min-pair-leaves-a-half-recorded-graph";
    assert_eq!(
        judged(like_case(case, MODEL_MISMATCH, |_| {})),
        Ok(case.into())
    );
    let max_pair = like_case(case, MODEL_MISMATCH, |v| {
        v.op = Some("binary max_pair".into())
    });
    assert!(judged(max_pair).is_err());
    let no_op = like_case(case, MODEL_MISMATCH, |v| v.op = None);
    assert!(judged(no_op).is_err(), "a case's op must be there to match");
}

#[test]
fn a_divergence_of_a_stored_ops_other_operand_dtypes_is_a_new_finding() {
    let case = "wgpu-int-compare-of-i64-with-i32-reads-the-i32-buffer-as-i64";
    let stored = like_case(case, DIVERGENCE, |_| {});
    assert_eq!(judged_on_vulkan(stored), Ok(case.into()));
    let floats = like_case(case, DIVERGENCE, |v| v.operands = Some("F32, F32".into()));
    assert!(judged_on_vulkan(floats).is_err());
}

#[test]
fn a_panic_the_standard_library_reports_is_the_catalogued_bug_only_at_the_steps_it_names() {
    let class = "flex-int-prod-overflow";
    let panic_at = |op: &str, policy: &Policy| {
        let step = format!(r#"{{"op":{{"out":1,"op":{{"unary":{{"op":"{op}","src":0}}}}}}}}"#);
        let steps = vec![serde_json::from_str(&step).expect("a step")];
        let mut trace = Trace {
            steps: vec![crate::interpreter::StepRecord {
                index: 0,
                outcome: Outcome::Panic(crate::interpreter::PanicInfo {
                    message: "attempt to multiply with overflow".into(),
                    location: Some("/rustc/x/library/core/src/iter/traits/accum.rs:149:1".into()),
                    thread: None,
                    class: String::new(),
                }),
            }],
            ..Trace::default()
        };
        let found = classify(&steps, &mut trace, &[], policy);
        let class = trace.panics().next().map(|(_, p)| p.class.clone());
        (class.unwrap_or_default(), found)
    };
    let (met, found) = panic_at("minus_prod", &Policy::default());
    assert_eq!((met.as_str(), found.finding), (class, None));
    // A regression run names the class: the stored case is that finding, known by its op.
    let (_, found) = panic_at("minus_prod", &Policy::parse(&format!("{class},known")));
    let finding = found.finding.expect("named, the class is a finding");
    assert_eq!(finding.signature.op.as_deref(), Some("unary minus_prod"));
    let stored = key_of("flex-i64-prod-overflow-panics-in-debug-builds").unwrap();
    assert!(stored.matches(&finding.signature));
    // The same overflow raised at another step is not Flex's prod: a new finding.
    let (met, found) = panic_at("abs", &Policy::default());
    assert_eq!(met, super::UNKNOWN);
    let other = found.finding.expect("a new finding");
    assert_eq!(other.signature.op.as_deref(), Some("unary abs"));
    assert!(!stored.matches(&other.signature));
}

fn replay_failure(message: &str, location: Option<&str>) -> Violation {
    Violation {
        step: 3,
        class: REPLAY_FAILURE,
        summary: normalize_message(message),
        message: message.into(),
        location: location.map(str::to_string),
        ..Violation::default()
    }
}

fn read_error(message: &str) -> Trace {
    Trace {
        steps: vec![crate::interpreter::StepRecord {
            index: 0,
            outcome: Outcome::Error {
                error: super::EXECUTION_ERROR.into(),
                message: message.into(),
            },
        }],
        ..Trace::default()
    }
}

#[test]
fn an_execution_error_no_record_knows_is_a_finding_and_a_catalogued_one_is_not() {
    let policy = Policy::default();
    let known = "An error happened during execution\nCaused by:\n    captured tensor \
                 TensorId(4) has no concrete value";
    assert!(classify(&[], &mut read_error(known), &[], &policy)
        .finding
        .is_none());
    let new = "An error happened during execution\nCaused by:\n    device lost";
    let finding = classify(&[], &mut read_error(new), &[], &policy).finding;
    let finding = finding.expect("an unknown execution error is a finding");
    assert_eq!(
        (finding.class.name(), finding.step),
        (super::UNKNOWN, Some(0))
    );
    assert_eq!(finding.signature.origin, "execution-error");
}

#[test]
fn an_unknown_error_a_mirror_or_a_read_returned_beside_the_steps_is_a_finding() {
    let side = |message: &str| Trace {
        side_errors: vec![crate::interpreter::SideError {
            step: Some(3),
            site: "wgpu mirror".into(),
            error: super::EXECUTION_ERROR.into(),
            message: message.into(),
        }],
        ..Trace::default()
    };
    let policy = Policy::default();
    let known = "captured tensor TensorId(4) has no concrete value";
    assert!(classify(&[], &mut side(known), &[], &policy)
        .finding
        .is_none());
    let finding = classify(&[], &mut side("device lost"), &[], &policy).finding;
    let finding = finding.expect("an unknown side error is a finding");
    assert_eq!(
        (finding.class.name(), finding.step),
        (super::UNKNOWN, Some(3))
    );
}

#[test]
fn a_replay_failing_with_a_misuse_guards_message_stays_a_replay_failure() {
    // A clean graph misuses nothing: a guard firing in its replay is a finding, not the
    // guard's class (which would not even be a finding by default).
    let guard = replay_failure("Cannot move a tensor from a capture device", None);
    let found = classify(&[], &mut Trace::default(), &[guard], &Policy::default());
    assert_eq!(found.finding.expect("a finding").class, REPLAY_FAILURE);
}

#[test]
fn a_replay_failing_with_a_known_bug_at_its_location_takes_the_bugs_class() {
    let at = "/r/burn-flex-0.23.0-pre.1/src/ops/reduce.rs:1014:9";
    let bug = replay_failure(
        "range end index 9 out of range for slice of length 4",
        Some(at),
    );
    let found = classify(&[], &mut Trace::default(), &[bug], &Policy::default());
    assert!(found.finding.is_none(), "{:?}", found.finding);
    // The same message raised elsewhere is not that bug.
    let at = "/r/burn-ir-0.23.0-pre.1/src/builder.rs:10:1";
    let other = replay_failure(
        "range end index 9 out of range for slice of length 4",
        Some(at),
    );
    let found = classify(&[], &mut Trace::default(), &[other], &Policy::default());
    assert_eq!(found.finding.expect("a finding").class, REPLAY_FAILURE);
}

#[test]
fn ids_are_normalized_but_dtype_names_are_kept() {
    assert_eq!(
        normalize_message("storage: dtype mismatch (expected I64, got I32)"),
        "storage: dtype mismatch (expected I64, got I32)"
    );
    assert_eq!(
        normalize_message("capture tensor 17 has no  initialized value"),
        "capture tensor N has no initialized value"
    );
    assert_eq!(
        normalize_message("TensorId(305) and i64(-35)"),
        "TensorId(N) and i64(N)"
    );
    assert_eq!(normalize_message("id: 12.5"), "id: N.N");
}

#[test]
fn a_kernel_names_hash_is_normalized_and_the_rest_of_the_name_kept() {
    for hash in ["15637f82", "6264db5f", "12345678"] {
        assert_eq!(
            normalize_message(&format!("for kernel `unary_float_f_f32_n_1_{hash}`: ok")),
            "for kernel `unary_float_f_f32_n_1_HASH`: ok"
        );
    }
    // Not a hash: too short, too long, not hex, or not the end of a name.
    for kept in [
        "shape_1234567",
        "max_123456789",
        "x_1234567g",
        "x_12345678_y",
    ] {
        assert_eq!(without_kernel_hashes(kept), kept);
    }
    assert_eq!(without_kernel_hashes("é_00000000"), "é_00000000");
}
