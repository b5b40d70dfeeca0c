//! Near misses of the stored root causes' predicates: a finding is a stored case's only when the
//! case's predicate holds for its entry, dtype, deviation, backend and role alike.

use dispatch_fuzz::interpreter::Trace;
use dispatch_fuzz::oracles::{
    classify, Backend, Deviation, Facts, Policy, Violation, DIVERGENCE, REFERENCE_MISMATCH,
    REPLAY_MISMATCH,
};
use dispatch_fuzz::program::Dtype;

/// The stored case classification makes of `violation` alone, or `None` where it is new.
fn known_as(violation: Violation) -> Option<String> {
    let found = classify(&[], &mut Trace::default(), &[violation], &Policy::default());
    match (found.known.first(), found.finding) {
        (Some(case), None) => Some(case.clone()),
        (None, Some(_)) => None,
        other => panic!("one violation is one finding or one known case: {other:?}"),
    }
}

/// A reference mismatch with these facts (the summary is not what decides).
fn reference(entry: &str, dtype: Dtype, deviation: Deviation, backend: Backend) -> Violation {
    Violation {
        step: 2,
        class: REFERENCE_MISMATCH,
        summary: format!("{entry} over ({dtype:?}) differs from its definition"),
        message: "t1 element 0: the definition gives 1, Burn computed 2".into(),
        facts: Facts {
            entry: Some(entry.into()),
            dtype: Some(dtype),
            deviation: Some(deviation),
            backend: Some(backend),
        },
        ..Violation::default()
    }
}

/// A replay that handed an output back in `got` where the graph recorded `recorded`.
fn lost(entry: &str, recorded: Dtype, got: Dtype) -> Violation {
    Violation {
        step: 4,
        class: REPLAY_MISMATCH,
        summary: format!("the replayed {entry} is {got:?} where the graph recorded {recorded:?}"),
        message: "output 0 (t2): replayed on Flex".into(),
        facts: Facts {
            entry: Some(entry.into()),
            dtype: Some(recorded),
            deviation: Some(Deviation::Dtype { recorded, got }),
            backend: Some(Backend::Flex),
        },
        ..Violation::default()
    }
}

const ARGMAX: &str =
    "captured-int-argmax-is-recorded-in-its-operand-dtype-but-replays-as-i64-on-flex";
const SUM: &str = "flex-i64-sum-overflow-panics-in-debug-builds";

#[test]
fn a_covered_entry_with_another_deviation_is_new() {
    let nan = |deviation| {
        let mut v = reference(
            "backward of unary elu",
            Dtype::F32,
            deviation,
            Backend::Flex,
        );
        v.role = Some("gradient of operand 0".into());
        known_as(v)
    };
    assert_eq!(
        nan(Deviation::NanForFinite).as_deref(),
        Some("elu-gradient-is-nan-for-large-inputs")
    );
    assert_eq!(
        nan(Deviation::Off),
        None,
        "a gradient off by a little is not the NaN bug"
    );
    assert_eq!(nan(Deviation::WrongSign), None);
    // The argmax bug loses a dtype to I64; the same entry handing back I32 is another bug.
    assert_eq!(
        known_as(lost("arg_max", Dtype::I16, Dtype::I64)).as_deref(),
        Some(ARGMAX)
    );
    assert_eq!(known_as(lost("arg_max", Dtype::I16, Dtype::I32)), None);
}

#[test]
fn an_entry_next_to_a_covered_family_but_outside_its_list_is_new() {
    assert_eq!(
        known_as(lost("along_dim argmin", Dtype::U8, Dtype::I64)).as_deref(),
        Some(ARGMAX)
    );
    // max_dim's values, scatter_add and sum_dim never reach Flex's I64 index kernels.
    for entry in [
        "along_dim max_dim",
        "along_dim scatter_add",
        "sum_dim",
        "slice",
    ] {
        assert_eq!(
            known_as(lost(entry, Dtype::I32, Dtype::I64)),
            None,
            "{entry}"
        );
    }
    // The int-mean case knows mean_dim and minus_mean, not a sum over the same dtype.
    let mean = |entry| known_as(reference(entry, Dtype::I16, Deviation::Off, Backend::Flex));
    assert_eq!(
        mean("along_dim mean_dim").as_deref(),
        Some("flex-int-mean-sums-in-the-tensor-dtype")
    );
    assert_eq!(mean("along_dim sum_dims"), None);
}

#[test]
fn the_same_bug_on_another_backend_is_new() {
    let asinh = |backend| {
        known_as(reference(
            "unary asinh",
            Dtype::F32,
            Deviation::InfForFinite,
            backend,
        ))
    };
    assert_eq!(
        asinh(Backend::Flex).as_deref(),
        Some("flex-asinh-and-acosh-past-half-of-f32-max-are-inf")
    );
    assert_eq!(
        asinh(Backend::Wgpu),
        None,
        "wgpu computes asinh with its own code"
    );
    let mut on_wgpu = lost("arg_max", Dtype::I32, Dtype::I64);
    on_wgpu.facts.backend = Some(Backend::Wgpu);
    assert_eq!(known_as(on_wgpu), None);
}

#[test]
fn a_wgpu_case_knows_its_finding_only_on_an_adapter_class_it_holds_on() {
    use dispatch_fuzz::oracles::known::known_case_on;
    use dispatch_fuzz::program::AdapterClass;
    let signature = "flex-wgpu-divergence | the result of unary exp differs between Flex and wgpu \
                     | flex-vs-wgpu | operands: F64"
        .parse()
        .unwrap();
    let exp = Facts {
        entry: Some("unary exp".into()),
        dtype: Some(Dtype::F64),
        deviation: Some(Deviation::Off),
        backend: Some(Backend::Wgpu),
    };
    let on = |adapter: Option<AdapterClass>| known_case_on(&signature, &exp, adapter.as_ref());
    // Stored from Vulkan/llvmpipe alone.
    assert_eq!(
        on(Some(AdapterClass::vulkan_llvmpipe())),
        Some("wgpu-vulkan-exp-of-an-f64-tensor-reads-back-f32-bits")
    );
    assert_eq!(on(Some(AdapterClass::gl_llvmpipe())), None);
    let nvidia = AdapterClass::new("vulkan", "nvidia", "discrete-gpu");
    assert_eq!(on(Some(nvidia)), None);
    assert_eq!(on(None), None, "no wgpu device: no wgpu case's finding");
    // A case naming no adapter holds anywhere.
    let sum =
        "flex-int-sum-overflow | attempt to add with overflow | core/src/iter/traits/accum.rs \
               | op: minus_sum | operands: I64"
            .parse()
            .unwrap();
    let facts = Facts {
        entry: Some("unary minus_sum".into()),
        dtype: Some(Dtype::I64),
        deviation: Some(Deviation::Panic),
        backend: Some(Backend::Flex),
    };
    assert_eq!(known_case_on(&sum, &facts, None), Some(SUM));
}

#[test]
fn an_f64_transcendental_divergence_on_vulkan_llvmpipe_is_known_by_its_facts_and_an_f32_one_is_not()
{
    // cos of an F64 on Vulkan/llvmpipe: the stored exp case's mechanism, met through an entry
    // none of its programs holds (a wgpu session, --seed 21).
    use dispatch_fuzz::oracles::known::known_case_on;
    use dispatch_fuzz::program::AdapterClass;
    let signature = "flex-wgpu-divergence | the result of unary cos differs between Flex and wgpu \
                     | flex-vs-wgpu | operands: F64"
        .parse()
        .unwrap();
    let cos = |dtype| Facts {
        entry: Some("unary cos".into()),
        dtype: Some(dtype),
        deviation: Some(Deviation::Off),
        backend: Some(Backend::Wgpu),
    };
    let vulkan = Some(AdapterClass::vulkan_llvmpipe());
    assert_eq!(
        known_case_on(&signature, &cos(Dtype::F64), vulkan.as_ref()),
        Some("wgpu-vulkan-exp-of-an-f64-tensor-reads-back-f32-bits")
    );
    assert_eq!(
        known_case_on(&signature, &cos(Dtype::F32), vulkan.as_ref()),
        None
    );
    // Without facts (a divergence before they were given) nothing is known by the predicate.
    assert_eq!(
        known_case_on(&signature, &Facts::default(), vulkan.as_ref()),
        None
    );
}

#[test]
fn a_release_wrap_of_a_covered_overflow_is_known_and_a_narrower_dtype_is_not() {
    // The debug build's panic and the release build's wrapped sum are one root cause.
    let wrap = |entry, dtype| known_as(reference(entry, dtype, Deviation::Wrap, Backend::Flex));
    assert_eq!(wrap("unary minus_sum", Dtype::I64).as_deref(), Some(SUM));
    assert_eq!(wrap("sum_dim", Dtype::U64).as_deref(), Some(SUM));
    let mean = known_as(reference(
        "along_dim mean_dim",
        Dtype::I64,
        Deviation::WrongSign,
        Backend::Flex,
    ));
    assert_eq!(mean.as_deref(), Some(SUM));
    // I32 sums widen in i64 and wrap explicitly: a wrong I32 sum is not this overflow.
    assert_eq!(wrap("sum_dim", Dtype::I32), None);
    // A NaN is no overflow of an int sum.
    let nan = known_as(reference(
        "unary minus_sum",
        Dtype::I64,
        Deviation::NanForFinite,
        Backend::Flex,
    ));
    assert_eq!(nan, None);
}

#[test]
fn a_stored_signature_is_not_known_when_its_facts_are_outside_the_predicate() {
    // The text of a stored also signature, with facts no predicate clause names: the summary
    // alone decides nothing for a case that states a predicate.
    let mut v = lost("along_dim argmin", Dtype::I32, Dtype::I64);
    v.facts.deviation = Some(Deviation::Off);
    assert_eq!(known_as(v), None);
}

#[test]
fn a_divergence_at_a_step_whose_flex_value_the_reference_found_wrong_is_that_finding() {
    let asinh = || {
        reference(
            "unary asinh",
            Dtype::F32,
            Deviation::InfForFinite,
            Backend::Flex,
        )
    };
    let divergence = |step| Violation {
        step,
        class: DIVERGENCE,
        summary: "the result of unary asinh differs between Flex and wgpu".into(),
        message: "t1: 1 value(s) differ".into(),
        ..Violation::default()
    };
    let classified = |violations: &[Violation]| {
        classify(&[], &mut Trace::default(), violations, &Policy::default())
    };
    // Same step: Flex's value is the stored bug, and wgpu's disagreeing with it is no news.
    let same = classified(&[asinh(), divergence(2)]);
    assert!(same.finding.is_none(), "{:?}", same.finding);
    assert_eq!(
        same.known,
        ["flex-asinh-and-acosh-past-half-of-f32-max-are-inf"]
    );
    // Another step's divergence is judged on its own.
    let later = classified(&[asinh(), divergence(3)]);
    assert_eq!(later.finding.map(|f| f.class), Some(DIVERGENCE));
    // A reference finding on wgpu leaves Flex's value to the differential.
    let mut on_wgpu = asinh();
    on_wgpu.facts.backend = Some(Backend::Wgpu);
    let kept = classified(&[divergence(2), on_wgpu]);
    assert_eq!(kept.finding.map(|f| f.class), Some(DIVERGENCE));
}
