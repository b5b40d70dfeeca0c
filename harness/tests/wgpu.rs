//! wgpu as a real second backend: programs create on, move to and compute on it, and its exact
//! results equal Flex's. Each test holds on the adapter classes its table row names (any
//! adapter, or those it was checked on): elsewhere it is ignored with the reason, or fails under
//! `DISPATCH_FUZZ_WGPU=required` (CI installs Mesa's Vulkan and GL drivers).

mod common;

use std::process::ExitCode;

use common::{run_trials, wgpu_trial, ANY, GL_LLVMPIPE, LLVMPIPE, VULKAN_LLVMPIPE};

use dispatch_fuzz::interpreter::{wgpu, Outcome};
use dispatch_fuzz::program::{Backends, Program};

fn digest(
    verdict: &dispatch_fuzz::Verdict,
    step: usize,
) -> Option<dispatch_fuzz::interpreter::Digest> {
    match &verdict.trace.steps[step].outcome {
        Outcome::Ok { value: Some(v), .. } => v.digest,
        other => panic!("step {step}: {other:?}"),
    }
}

/// The classes of the panics a verdict's trace holds, in order.
fn panic_classes(verdict: &dispatch_fuzz::Verdict) -> Vec<&str> {
    verdict
        .trace
        .panics()
        .map(|(_, p)| p.class.as_str())
        .collect()
}

fn a_program_on_wgpu_computes_what_flex_computes() {
    let adapter = common::adapter().expect("a wgpu adapter (install mesa-vulkan-drivers)");
    eprintln!("wgpu adapter: {adapter}");
    let on = |device: &str| {
        common::program(&format!(
            r#"[{{"create": {{"out": 0, "kind": "float", "shape": [2, 3], "fill": "arange", "device": {device}}}}},
                {{"op": {{"out": 1, "op": {{"scalar": {{"op": "mul", "src": 0, "value": 3}}}}}}}},
                {{"op": {{"out": 2, "op": {{"binary": {{"op": "add", "lhs": 1, "rhs": 0}}}}}}}},
                {{"op": {{"out": 3, "op": {{"sum_dim": {{"src": 2, "dim": 1}}}}}}}},
                {{"to_device": {{"out": 4, "src": 3, "device": "flex"}}}},
                {{"read": {{"src": 4, "fallible": true}}}}]"#
        ))
    };
    let flex = dispatch_fuzz::check(&common::on_wgpu(), &on("\"flex\"")).unwrap();
    let wgpu = dispatch_fuzz::check(&common::on_wgpu(), &on("\"wgpu\"")).unwrap();
    assert!(wgpu.finding.is_none(), "{:?}", wgpu.finding);
    assert!(
        matches!(&wgpu.trace.steps[0].outcome, Outcome::Ok { value: Some(v), .. } if v.device.to_string() == "wgpu")
    );
    assert_eq!(digest(&wgpu, 5), digest(&flex, 5));
}

fn a_session_choosing_another_adapter_than_the_one_wgpu_came_up_on_is_refused() {
    use dispatch_fuzz::program::{Adapter, Api};
    let here = common::adapter_choice();
    common::adapter().expect("a wgpu adapter");
    let mut other = here.pinned_to(if here.api == Some(Api::Gl) {
        Api::Vulkan
    } else {
        Api::Gl
    });
    other.kind = if here.kind == Adapter::Gpu {
        Adapter::Cpu
    } else {
        Adapter::Gpu
    };
    let refused = wgpu::adapter(other).expect_err("one wgpu device per process");
    assert!(refused.contains("cannot be had here"), "{refused}");
    // A wgpu step of a session on that choice meets the refusal as its reason, not the device
    // another session brought up.
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2], "fill": "ones", "device": "wgpu"}}]"#,
    );
    let session = common::on_wgpu().on(Backends::WITH_WGPU);
    assert_eq!(
        session.backends.adapter, here,
        "on() keeps the session's adapter"
    );
    let mut elsewhere = session.clone();
    elsewhere.backends.adapter = other;
    let verdict = dispatch_fuzz::check(&elsewhere, &program).unwrap();
    assert!(
        matches!(&verdict.trace.steps[0].outcome, Outcome::Skipped { reason } if reason.contains("cannot be had here")),
        "{:?}",
        verdict.trace.steps[0]
    );
    // Its own choice still gets the device.
    assert!(wgpu::adapter(here).is_ok());
}

fn a_capture_scope_records_a_tensor_moved_from_wgpu() {
    common::adapter().expect("a wgpu adapter");
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "int", "shape": [4], "fill": "arange", "device": "wgpu"}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"to_device": {"out": 1, "src": 0, "device": {"capture": 0}}},
            {"op": {"out": 2, "op": {"scalar": {"op": "add", "src": 1, "value": 1}}}},
            {"exit_scope": {"inputs": [1], "outputs": [2]}},
            {"replay": {"graph": 0, "feed": [0], "outputs": [3]}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    assert!(
        matches!(&verdict.trace.steps[4].outcome, Outcome::Ok { graph: Some(g), .. } if g.values == 1),
        "{:?}",
        verdict.trace.steps[4]
    );
}

fn a_scalar_a_dtype_moved_from_wgpu_cannot_hold_is_the_guard_not_the_devices_failure() {
    // A U16 made on wgpu (which llvmpipe says it does not support) and moved into a scope,
    // then clamp_max(-51): burn-std's guard refuses the scalar on any device, and it keeps its
    // class past the unsupported dtype (a wgpu session, --seed 21, called it the device's).
    common::adapter().expect("a wgpu adapter");
    let program = common::program(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "int", "shape": [1], "fill": "zeros", "device": "wgpu", "dtype": "u16"}},
            {"to_device": {"out": 1, "src": 0, "device": {"capture": 0}}},
            {"op": {"out": 1, "op": {"scalar": {"op": "clamp_max", "src": 1, "value": -51}}}},
            {"exit_scope": {"inputs": [], "outputs": []}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    assert!(
        matches!(&verdict.trace.steps[3].outcome, Outcome::Panic(p) if p.class == "element-not-representable"),
        "{:?}",
        verdict.trace.steps[3]
    );
}

fn a_wgpu_bool_used_by_flex_logic_and_mask_ops_is_the_known_bool_storage_bug() {
    // Found by a wgpu fuzz session (seed 21) once the catalogue's Bool(U32) patterns were
    // narrowed: the same storage bug, met at two more Flex sites. Each has its own record.
    common::adapter().expect("a wgpu adapter");
    let cases = [
        (
            r#"[{"create": {"out": 0, "kind": "bool", "shape": [1], "fill": "ones", "device": "wgpu"}},
                {"to_device": {"out": 1, "src": 0, "device": "flex"}},
                {"op": {"out": 2, "op": {"mask_where": {"src": 1, "mask": 1, "value": 1}}}}]"#,
            2,
        ),
        (
            r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": "zeros", "device": "wgpu"}},
                {"op": {"out": 1, "op": {"compare": {"op": "lower", "lhs": 0, "rhs": 0}}}},
                {"to_device": {"out": 2, "src": 1, "device": "flex"}},
                {"op": {"out": 3, "op": {"logic": {"op": "or", "lhs": 2, "rhs": 2}}}}]"#,
            3,
        ),
    ];
    for (json, step) in cases {
        let verdict = dispatch_fuzz::check(&common::on_wgpu(), &common::program(json)).unwrap();
        assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
        match &verdict.trace.steps[step].outcome {
            Outcome::Panic(p) => assert_eq!(p.class, "bool-storage-transfer", "{p:?}"),
            other => panic!("step {step}: {other:?}"),
        }
    }
}

mod differential {
    //! The Flex vs wgpu differential oracle: it fires on a perturbed wgpu value, stays quiet on
    //! a poisoned one, and on random programs that run on both backends.

    use super::common;
    use dispatch_fuzz::oracles::differential::DIVERGENCE;
    use dispatch_fuzz::oracles::eager_replay::{REPLAY_FAILURE, REPLAY_MISMATCH};
    use dispatch_fuzz::oracles::faults::{
        nudge_wgpu_values_for_tests, perturb_wgpu_values_for_tests,
    };
    use dispatch_fuzz::program::{Backends, Program};
    use dispatch_fuzz::rng::SplitMix64;

    fn argmax_of(fill: &str) -> Program {
        common::program(&format!(
            r#"[{{"create": {{"out": 0, "kind": "float", "shape": [2, 3], "fill": {fill}, "device": "flex"}}}},
                {{"op": {{"out": 1, "op": {{"arg_max": {{"src": 0, "dim": 1}}}}}}}},
                {{"read": {{"src": 1, "fallible": true}}}}]"#
        ))
    }

    fn divergences_with_step_perturbed(program: &Program, step: usize) -> Vec<usize> {
        perturb_wgpu_values_for_tests(Some(step));
        let verdict = dispatch_fuzz::check(&common::on_wgpu(), program);
        perturb_wgpu_values_for_tests(None);
        verdict
            .unwrap()
            .oracles
            .violations
            .iter()
            .filter(|v| v.class == DIVERGENCE)
            .map(|v| v.step)
            .collect()
    }

    pub(super) fn a_perturbed_wgpu_value_is_a_flex_wgpu_divergence() {
        common::adapter().expect("a wgpu adapter");
        let program = argmax_of(r#""arange""#);
        assert!(dispatch_fuzz::check(&common::on_wgpu(), &program)
            .unwrap()
            .finding
            .is_none());
        assert_eq!(divergences_with_step_perturbed(&program, 1), vec![1]);
        let finding = {
            perturb_wgpu_values_for_tests(Some(0));
            let v = dispatch_fuzz::check(&common::on_wgpu(), &program);
            perturb_wgpu_values_for_tests(None);
            v.unwrap().finding.expect("the oracle fires")
        };
        assert_eq!(finding.class, DIVERGENCE);
        assert!(finding.message.contains("flex F32"), "{}", finding.message);
    }

    /// Divergent steps and the verdict when step `step`'s wgpu values are nudged a hair lower.
    fn with_step_nudged(program: &Program, step: usize) -> (Vec<usize>, dispatch_fuzz::Verdict) {
        nudge_wgpu_values_for_tests(Some(step));
        let verdict = dispatch_fuzz::check(&common::on_wgpu(), program).unwrap();
        nudge_wgpu_values_for_tests(None);
        let steps = verdict
            .oracles
            .violations
            .iter()
            .filter(|v| v.class == DIVERGENCE)
            .map(|v| v.step)
            .collect();
        (steps, verdict)
    }

    fn unary_of_arange(op: &str) -> Program {
        common::program(&format!(
            r#"[{{"create": {{"out": 0, "kind": "float", "shape": [4], "fill": "arange", "device": "flex"}}}},
                {{"op": {{"out": 1, "op": {{"unary": {{"op": "{op}", "src": 0}}}}}}}}]"#
        ))
    }

    pub(super) fn a_floor_over_an_operand_the_backends_computed_slightly_differently_is_poisoned() {
        common::adapter().expect("a wgpu adapter");
        let program = common::program(
            r#"[{"create": {"out": 0, "kind": "float", "shape": [4], "fill": "arange", "device": "flex"}},
                {"op": {"out": 1, "op": {"scalar": {"op": "mul", "src": 0, "value": 1}}}},
                {"op": {"out": 2, "op": {"unary": {"op": "floor", "src": 1}}}}]"#,
        );
        assert!(dispatch_fuzz::check(&common::on_wgpu(), &program)
            .unwrap()
            .finding
            .is_none());
        // 2.999997 floors to 2 where 3 floors to 3: not a bug, the operand was inexact.
        let (diverged, verdict) = with_step_nudged(&program, 1);
        assert!(diverged.is_empty(), "{diverged:?}");
        assert_eq!(verdict.oracles.poisoned.get("inexact-operand"), Some(&1));
    }

    pub(super) fn a_wrong_result_every_backend_shares_is_no_divergence_but_a_reference_mismatch() {
        use dispatch_fuzz::interpreter::faults::wrong_unary_for_tests;
        use dispatch_fuzz::oracles::{OracleId, Oracles, REFERENCE_MISMATCH};
        common::adapter().expect("a wgpu adapter");
        // exp one too large on Flex and on wgpu alike, as a wrong forwarding in dispatch would
        // make it: the differential compares the two and they agree.
        let program = unary_of_arange("exp");
        wrong_unary_for_tests(Some("exp"));
        let session = common::on_wgpu();
        let others = dispatch_fuzz::check(
            &session.with_oracles(Oracles::ALL.without(OracleId::Reference)),
            &program,
        );
        let all = dispatch_fuzz::check(&session, &program);
        wrong_unary_for_tests(None);
        let (others, all) = (others.unwrap(), all.unwrap());
        assert!(others.finding.is_none(), "{:?}", others.finding);
        assert!(
            others.oracles.compared >= 2,
            "the differential compared: {:?}",
            others.oracles
        );
        let finding = all.finding.expect("the reference oracle reports it");
        assert_eq!(finding.class, REFERENCE_MISMATCH, "{finding:?}");
    }

    pub(super) fn a_wrong_wgpu_value_where_flex_computed_nothing_is_a_reference_mismatch_on_wgpu() {
        use dispatch_fuzz::oracles::REFERENCE_MISMATCH;
        common::adapter().expect("a wgpu adapter");
        // Flex panics on this sum_dim (flex-sum-dim-on-permuted-tensor-reads-out-of-range), so
        // the eager mirror holds nothing to compare wgpu's value with: the differential cannot
        // judge it, and only the reference oracle, over wgpu's own operands, does.
        let program = common::program(
            r#"[{"create": {"out": 0, "kind": "float", "shape": [1, 1, 4, 1], "fill": "arange", "device": "wgpu"}},
                {"op": {"out": 1, "op": {"swap_dims": {"src": 0, "dim0": 3, "dim1": 0}}}},
                {"op": {"out": 2, "op": {"sum_dim": {"src": 1, "dim": 0}}}}]"#,
        );
        let mismatches = |v: &dispatch_fuzz::Verdict| -> Vec<(usize, String)> {
            (v.oracles.violations.iter())
                .filter(|v| v.class == REFERENCE_MISMATCH || v.class == DIVERGENCE)
                .map(|v| (v.step, v.summary.clone()))
                .collect()
        };
        let clean = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
        assert_eq!(mismatches(&clean), vec![], "{:?}", clean.oracles);
        assert!(
            clean.oracles.reference.on_wgpu >= 3,
            "{:?}",
            clean.oracles.reference
        );
        perturb_wgpu_values_for_tests(Some(2));
        let wrong = dispatch_fuzz::check(&common::on_wgpu(), &program);
        perturb_wgpu_values_for_tests(None);
        let wrong = wrong.unwrap();
        assert_eq!(
            mismatches(&wrong),
            vec![(
                2,
                "sum_dim over (F32) on wgpu differs from its definition".to_string()
            )],
            "{:?}",
            wrong.oracles
        );
        // Its reproducer runs the steps again on wgpu and asserts the element there.
        let finding = wrong.finding.as_ref().expect("a finding");
        let rust = dispatch_fuzz::report::to_rust(&program, &wrong.trace, Some(finding));
        assert!(rust.contains("let w2 = w1.clone().sum_dim(0);"), "{rust}");
        assert!(rust.contains("let got = w2.to_data()"), "{rust}");
    }

    pub(super) fn a_wgpu_value_moved_to_flex_is_the_differentials_not_judged_against_flexs_own() {
        use dispatch_fuzz::oracles::{OracleId, Oracles};
        common::adapter().expect("a wgpu adapter");
        // Found by a guided wgpu session (seed 1): llvmpipe's sinh(42) is 14 ulps from Flex's,
        // within the transcendental tolerance; moved to Flex, it was judged as an exact move of
        // Flex's eager value and reported as a reference mismatch.
        let program = common::program(
            r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": {"value": 42}, "device": "wgpu"}},
                {"op": {"out": 1, "op": {"unary": {"op": "sinh", "src": 0}}}},
                {"to_device": {"out": 2, "src": 1, "device": "flex"}}]"#,
        );
        let only = Oracles::only(OracleId::Reference);
        let verdict =
            dispatch_fuzz::check(&common::on_wgpu().with_oracles(only), &program).unwrap();
        assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
        let why = "a value another backend computed, moved onto Flex (the differential compares \
                   it with the eager run's)";
        assert_eq!(
            verdict.oracles.reference.open.get(why),
            Some(&1),
            "{:?}",
            verdict.oracles
        );
    }

    pub(super) fn a_bicubic_backward_wgpu_refuses_is_the_catalogued_limitation() {
        common::adapter().expect("a wgpu adapter");
        // Found by a guided wgpu session (seed 1): cubek-interpolate has no bicubic backward,
        // and wgpu panics where Flex computed the gradient.
        let program = common::program(
            r#"[{"create": {"out": 0, "kind": "float", "shape": [1, 1, 2, 2], "fill": "arange", "device": "flex"}},
                {"autodiff": {"out": 1, "src": 0, "mode": "enable"}},
                {"autodiff": {"out": 1, "src": 1, "mode": "require_grad"}},
                {"op": {"out": 2, "op": {"module": {"op": "interpolate_bicubic", "src": 1, "kernel": 1}}}},
                {"backward": {"out": 3, "loss": 2, "param": 1}}]"#,
        );
        let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
        assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
        let classes = super::panic_classes(&verdict);
        assert!(
            classes.contains(&"wgpu-interpolate-backward-unsupported"),
            "{classes:?}"
        );
    }

    pub(super) fn a_wrong_gradient_of_another_op_is_no_stored_sqrt_gradients_case() {
        use dispatch_fuzz::oracles::faults::perturb_wgpu_values_for_tests;
        common::adapter().expect("a wgpu adapter");
        // The stored wgpu-sqrt-gradient-at-zero-is-zero signs a wrong gradient; a wrong
        // gradient of exp (planted on wgpu) is another bug and must be a new finding, not that
        // case met again: a backward was signed `backward` alone, whatever its loss.
        let program = common::program(
            r#"[{"create": {"out": 0, "kind": "float", "shape": [2], "fill": "arange", "device": "flex"}},
                {"autodiff": {"out": 1, "src": 0, "mode": "enable"}},
                {"autodiff": {"out": 1, "src": 1, "mode": "require_grad"}},
                {"op": {"out": 2, "op": {"unary": {"op": "exp", "src": 1}}}},
                {"backward": {"out": 3, "loss": 2, "param": 1}}]"#,
        );
        perturb_wgpu_values_for_tests(Some(4));
        let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program);
        perturb_wgpu_values_for_tests(None);
        let verdict = verdict.unwrap();
        assert!(
            verdict.known_findings.is_empty(),
            "{:?}",
            verdict.known_findings
        );
        let finding = verdict.finding.expect("a divergence of the gradient");
        assert!(
            finding
                .signature
                .summary
                .contains("the result of backward of unary exp differs"),
            "{}",
            finding.signature
        );
    }

    pub(super) fn an_exact_op_over_identical_operands_must_agree_bit_for_bit() {
        common::adapter().expect("a wgpu adapter");
        // A relative 1e-6 passes the balanced tolerance, but neg adds no error of its own.
        assert_eq!(with_step_nudged(&unary_of_arange("neg"), 1).0, vec![1]);
        // exp is a transcendental: the same nudge is within its tolerance.
        assert!(with_step_nudged(&unary_of_arange("exp"), 1).0.is_empty());
    }

    pub(super) fn a_wgpu_bool_moved_to_flex_is_poisoned_where_flex_misreads_it() {
        common::adapter().expect("a wgpu adapter");
        // Found by a wgpu session (seed 41): [true, false] from wgpu casts to [1, 0] on wgpu
        // and to garbage on Flex, the catalogued bool-storage-transfer bug, not a new one.
        let program = common::program(
            r#"[{"create": {"out": 0, "kind": "bool", "shape": [2], "fill": "arange", "device": "wgpu"}},
                {"to_device": {"out": 1, "src": 0, "device": "flex"}},
                {"op": {"out": 2, "op": {"cast": {"src": 1, "to": "float"}}}}]"#,
        );
        let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
        assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
        assert_eq!(verdict.oracles.poisoned.get("from-poisoned"), Some(&1));
    }

    pub(super) fn an_argmax_over_ties_is_poisoned_not_compared() {
        common::adapter().expect("a wgpu adapter");
        assert!(divergences_with_step_perturbed(&argmax_of(r#""ones""#), 1).is_empty());
    }

    /// `[[0, 1, 2], [2, 2, 2]]`: its argmax over dim 1 ties in the second lane only, then the
    /// argmax cast to float, then a whole-tensor reduction of that.
    fn argmax_tied_in_one_lane() -> Program {
        common::program(
            r#"[{"create": {"out": 0, "kind": "float", "shape": [2, 3], "fill": "arange", "device": "flex"}},
                {"op": {"out": 1, "op": {"clamp": {"src": 0, "min": 0, "max": 2}}}},
                {"op": {"out": 2, "op": {"arg_max": {"src": 1, "dim": 1}}}},
                {"op": {"out": 3, "op": {"cast": {"src": 2, "to": "float"}}}},
                {"op": {"out": 4, "op": {"unary": {"op": "minus_sum", "src": 3}}}}]"#,
        )
    }

    pub(super) fn a_tie_poisons_only_its_lane_and_what_that_lane_reaches() {
        common::adapter().expect("a wgpu adapter");
        let program = argmax_tied_in_one_lane();
        let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
        assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
        // The argmax and its cast are compared at the untied lane, the reduction not at all.
        assert_eq!(verdict.oracles.partly_poisoned.get("argmax-tie"), Some(&1));
        assert_eq!(
            verdict.oracles.partly_poisoned.get("from-poisoned"),
            Some(&1)
        );
        assert_eq!(verdict.oracles.poisoned.get("from-poisoned"), Some(&1));
        // A wrong index in the untied lane is a divergence, and so is a wrong value an
        // element-wise op computes from it; the tied lane reaches every element of the sum.
        assert_eq!(divergences_with_step_perturbed(&program, 2), vec![2]);
        assert_eq!(divergences_with_step_perturbed(&program, 3), vec![3]);
        assert!(divergences_with_step_perturbed(&program, 4).is_empty());
    }

    pub(super) fn a_replay_fed_a_bool_is_fed_the_same_on_the_wgpu_mirror() {
        common::adapter().expect("a wgpu adapter");
        // The real run feeds capture1's Bool(U8) zeros to a graph that recorded Bool(U8); the
        // wgpu mirror holds the same zeros as Bool(U32), and must feed them too rather than
        // let the replay fall back to the recorded ones.
        let program = common::program(
            r#"[
            {"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "bool", "shape": [1], "fill": "ones", "device": {"capture": 0}}},
            {"exit_scope": {"inputs": [0], "outputs": [0]}},
            {"enter_scope": {"device": {"capture": 1}}},
            {"create": {"out": 1, "kind": "bool", "shape": [1], "fill": "zeros", "device": {"capture": 1}}},
            {"replay": {"graph": 0, "feed": [1], "outputs": [2]}},
            {"exit_scope": {"inputs": [], "outputs": []}}
        ]"#,
        );
        let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
        assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
        assert!(verdict.oracles.compared > 0);
    }

    pub(super) fn flex_and_wgpu_agree_on_random_programs() {
        common::adapter().expect("a wgpu adapter");
        let mut rng = SplitMix64::new(77);
        let mut compared = 0;
        for _ in 0..150 {
            let len = rng.below(1500) as usize;
            let program = Program::from_fuzz_bytes(&rng.bytes(len), Backends::WITH_WGPU);
            let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
            // Violations the catalogue explains (a known bug met through replay) are classified
            // as that bug; only what is left is a finding.
            if let Some(f) = &verdict.finding {
                assert!(
                    ![DIVERGENCE, REPLAY_MISMATCH, REPLAY_FAILURE].contains(&f.class),
                    "{}: {}\n{program}",
                    f.signature,
                    f.message
                );
            }
            compared += verdict.oracles.compared;
        }
        assert!(compared > 200, "only {compared} values compared");
    }
}

fn with_wgpu_the_fuzz_target_and_check_decide_alike() {
    dispatch_fuzz::interpreter::install_panic_hook(Some(common::record));
    common::adapter().expect("a wgpu adapter (install mesa-vulkan-drivers)");
    let mut rng = dispatch_fuzz::rng::SplitMix64::new(77);
    let mut side = std::collections::BTreeMap::<String, usize>::new();
    for _ in 0..300 {
        let len = rng.below(2000) as usize;
        let program = Program::from_fuzz_bytes(&rng.bytes(len), Backends::WITH_WGPU);
        let (hook, verdict) = common::both(&program);
        let verdict = verdict.unwrap();
        for s in &verdict.trace.side_panics {
            *side
                .entry(format!("{} [{}]", s.site, s.panic.class))
                .or_default() += 1;
        }
        assert_eq!(hook.len(), common::recorded_panics(&verdict), "{program}");
        if hook
            .iter()
            .any(|d| *d != dispatch_fuzz::libfuzzer::HookDecision::Go)
        {
            assert!(verdict.finding.is_some(), "{program}");
        }
    }
    eprintln!("side panics by site: {side:?}");
}

/// Follows a run with the eager mirror and checks where each of its values lives.
struct EagerOnly {
    mirror: dispatch_fuzz::interpreter::Mirror,
    off_flex: Vec<usize>,
    held: usize,
}

impl dispatch_fuzz::interpreter::Lockstep for EagerOnly {
    fn after_step(&mut self, world: &dispatch_fuzz::interpreter::World<'_>, index: usize) {
        let outcome = world.outcome(index).unwrap().clone();
        self.mirror.follow(world, index, &outcome);
        for slot in world.program().steps[index].writes() {
            if let Some(t) = self.mirror.get(slot) {
                self.held += 1;
                if !dispatch_fuzz::interpreter::on_flex(&t) {
                    self.off_flex.push(index);
                }
            }
        }
    }
    fn scope_completed(
        &mut self,
        _: &dispatch_fuzz::interpreter::World<'_>,
        _: &dispatch_fuzz::interpreter::CompletedScope<'_>,
    ) {
    }
    fn finish(&mut self) {
        self.mirror.clear();
    }
}

fn the_eager_mirror_holds_flex_values_for_wgpu_slots_so_every_comparison_crosses_backends() {
    common::adapter().expect("a wgpu adapter");
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2, 3], "fill": "arange", "device": "wgpu"}},
            {"op": {"out": 1, "op": {"unary": {"op": "exp", "src": 0}}}},
            {"create": {"out": 2, "kind": "int", "shape": [3], "fill": "arange", "device": "flex"}},
            {"to_device": {"out": 3, "src": 2, "device": "wgpu"}},
            {"op": {"out": 4, "op": {"scalar": {"op": "add", "src": 3, "value": 2}}}}]"#,
    );
    let mut hook = EagerOnly {
        mirror: dispatch_fuzz::interpreter::Mirror::eager_flex(),
        off_flex: Vec::new(),
        held: 0,
    };
    let mode = dispatch_fuzz::interpreter::Mode::Full;
    dispatch_fuzz::interpreter::run_in_lockstep(
        &program,
        common::on_wgpu().backends,
        mode,
        &mut hook,
    )
    .unwrap();
    assert_eq!(hook.held, 5);
    assert!(
        hook.off_flex.is_empty(),
        "steps {:?} left a wgpu value in the eager mirror",
        hook.off_flex
    );
    // And the differential compares each of the four values wgpu computed with Flex's.
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    assert_eq!(
        verdict.oracles.compared, 4,
        "{:?}",
        verdict.oracles.poisoned
    );
}

fn a_gradient_on_flex_is_compared_with_the_same_gradient_computed_on_wgpu() {
    common::adapter().expect("a wgpu adapter");
    let forward = r#"{"create": {"out": 0, "kind": "float", "shape": [2, 3], "fill": "arange", "device": "flex_autodiff"}},
        {"autodiff": {"out": 1, "src": 0, "mode": "require_grad"}},
        {"op": {"out": 2, "op": {"unary": {"op": "exp", "src": 1}}}},
        {"op": {"out": 3, "op": {"matmul": {"lhs": 2, "rhs": 2, "transpose_rhs": true}}}}"#;
    let without = dispatch_fuzz::check(
        &common::on_wgpu(),
        &common::program(&format!("[{forward}]")),
    )
    .unwrap();
    let with = dispatch_fuzz::check(
        &common::on_wgpu(),
        &common::program(&format!(
            r#"[{forward}, {{"backward": {{"out": 4, "loss": 3, "param": 1}}}}]"#
        )),
    )
    .unwrap();
    assert!(with.finding.is_none(), "{:?}", with.finding);
    assert!(
        matches!(&with.trace.steps[4].outcome, Outcome::Ok { value: Some(v), .. } if v.device.to_string() == "flex"),
        "{:?}",
        with.trace.steps[4]
    );
    // The wgpu mirror followed the autodiff graph (the tracked leaf included), so the gradient
    // is one more value compared across backends.
    assert_eq!(with.oracles.compared, without.oracles.compared + 1);
}

fn a_replay_into_the_slot_that_fed_it_is_mirrored_on_wgpu_with_the_same_feed() {
    // The wgpu mirror once cleared a replay's output slots before reading its feed, so a graph
    // replayed into its own feed slot ran on wgpu with the recorded value instead (a harness
    // fault the fuzzer reported as a Flex/wgpu divergence: 1 on wgpu, 0 on Flex).
    common::adapter().expect("a wgpu adapter");
    let program = common::program(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "float", "shape": [1], "fill": "ones", "device": {"capture": 0}}},
            {"exit_scope": {"inputs": [0], "outputs": [0]}},
            {"create": {"out": 1, "kind": "float", "shape": [1], "fill": "zeros", "device": "wgpu"}},
            {"clone": {"out": 2, "src": 1}},
            {"replay": {"graph": 0, "feed": [2], "outputs": [2]}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    assert!(verdict.oracles.compared >= 1);
}

fn a_replay_feed_the_real_run_could_not_read_takes_the_recorded_value_on_wgpu_too() {
    // The real run cannot read a computed capture tensor, so the replay takes the input's
    // recorded value (-4); the wgpu mirror computed that slot (4) and once fed it instead (a
    // harness fault the fuzzer reported as a divergence: 4 on wgpu, -4 on Flex).
    common::adapter().expect("a wgpu adapter");
    let program = common::program(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "float", "shape": [1], "fill": {"value": -4}, "device": {"capture": 0}}},
            {"op": {"out": 1, "op": {"unary": {"op": "neg", "src": 0}}}},
            {"exit_scope": {"inputs": [0], "outputs": [0]}},
            {"replay": {"graph": 0, "feed": [1], "outputs": [2]}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    assert!(verdict.oracles.compared >= 1);
}

/// Checks a program (a JSON step list) with wgpu on and asserts that it has no finding.
fn quiet_on_wgpu(steps: &str) -> dispatch_fuzz::Verdict {
    common::adapter().expect("a wgpu adapter (install mesa-vulkan-drivers)");
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &common::program(steps)).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    verdict
}

/// [`quiet_on_wgpu`], asserting that the differential left a value open for `reason` (a
/// `Poison` name) rather than compared it: wholly, or at the elements the reason holds for.
fn left_open_on_wgpu(steps: &str, reason: &str) {
    let verdict = quiet_on_wgpu(steps);
    let oracles = &verdict.oracles;
    assert!(
        oracles.poisoned.contains_key(reason) || oracles.partly_poisoned.contains_key(reason),
        "nothing left open for {reason}: {:?}, partly {:?}",
        oracles.poisoned,
        oracles.partly_poisoned
    );
}

fn a_replay_fed_an_int_capture_tensor_is_fed_the_same_on_the_wgpu_mirror() {
    // The real run feeds graph0 the second scope's ones (capture records ints as I64); the
    // wgpu mirror holds them as I32 and must still feed them, not the recorded zeros.
    quiet_on_wgpu(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "int", "shape": [1], "fill": "zeros", "device": {"capture": 0}}},
            {"exit_scope": {"inputs": [0], "outputs": [0]}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "int", "shape": [1], "fill": "ones", "device": {"capture": 0}}},
            {"replay": {"graph": 0, "feed": [0], "outputs": [1]}},
            {"exit_scope": {"inputs": [], "outputs": []}}]"#,
    );
}

fn x_minus_its_mean_is_judged_at_the_scale_of_x_not_of_the_cancelled_result() {
    // Nine equal values near 9.4e8, where one f32 ulp is 64: Flex's mean rounds to one ulp
    // off and leaves 64 after the subtraction, wgpu's leaves 0. Both are within the mean's
    // rounding; Burn does not fix the accumulation order.
    let verdict = quiet_on_wgpu(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [3, 2], "fill": {"value": 94}, "device": "flex"}},
            {"op": {"out": 1, "op": {"matmul": {"lhs": 0, "rhs": 0, "transpose_rhs": true}}}},
            {"clone": {"out": 2, "src": 1}},
            {"op": {"out": 1, "op": {"matmul": {"lhs": 2, "rhs": 2, "transpose_rhs": true}}}},
            {"op": {"out": 3, "op": {"unary": {"op": "minus_mean", "src": 1}}}}]"#,
    );
    assert!(verdict.oracles.compared > 0);
}

fn a_replay_that_refused_a_feed_of_another_dtype_refuses_it_on_the_wgpu_mirror_too() {
    // The feed is a wgpu I32 where graph0 recorded an I64 input: the real run keeps the
    // recorded -17, so the mirror must not convert its zeros into a feed.
    quiet_on_wgpu(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "int", "shape": [1], "fill": "zeros", "device": "wgpu"}},
            {"create": {"out": 1, "kind": "int", "shape": [1], "fill": {"value": -17}, "device": {"capture": 0}}},
            {"clone": {"out": 2, "src": 1}},
            {"exit_scope": {"inputs": [1], "outputs": [2]}},
            {"replay": {"graph": 0, "feed": [0], "outputs": [0]}}]"#,
    );
}

fn a_value_wgpu_could_not_compute_for_a_known_bug_poisons_what_is_made_from_it() {
    // fmod's shader does not compile on wgpu (wgpu-fmod-shader-has-a-nan-literal): its
    // never-written output must not be compared again inside a cat.
    let verdict = quiet_on_wgpu(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": "zeros", "device": "flex"}},
            {"clone": {"out": 1, "src": 0}},
            {"op": {"out": 0, "op": {"sum_dim": {"src": 1, "dim": 0}}}},
            {"op": {"out": 2, "op": {"binary": {"op": "fmod", "lhs": 1, "rhs": 1}}}},
            {"op": {"out": 3, "op": {"cat": {"first": 0, "rest": [2, 0], "dim": 0}}}}]"#,
    );
    assert!(
        verdict.oracles.poisoned.contains_key("from-poisoned"),
        "{:?}",
        verdict.oracles.poisoned
    );
}

fn a_replay_fed_a_value_the_wgpu_mirror_never_computed_is_not_judged() {
    // The mirror computes no powf of the replayed zeros at step 5, so it cannot feed step 6
    // what the real run fed (1): replaying with the recorded 0 instead would be another
    // computation, reported as a divergence (fuzz --backends flex,capture,wgpu --seed 46).
    quiet_on_wgpu(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "float", "shape": [1], "fill": "zeros", "device": {"capture": 0}}},
            {"exit_scope": {"inputs": [0], "outputs": [0]}},
            {"replay": {"graph": 0, "feed": [], "outputs": [1]}},
            {"clone": {"out": 0, "src": 1}},
            {"op": {"out": 0, "op": {"binary": {"op": "powf", "lhs": 1, "rhs": 0}}}},
            {"replay": {"graph": 0, "feed": [0], "outputs": [2]}}]"#,
    );
}

fn a_replay_writing_two_outputs_into_one_slot_is_compared_by_the_last_one() {
    // The slot holds the Bool output in the real run; the wgpu mirror compared its Int output,
    // written first, with it (fuzz --backends flex,capture,wgpu --seed 101).
    quiet_on_wgpu(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "bool", "shape": [1], "fill": {"value": -113}, "device": {"capture": 0}}},
            {"create": {"out": 1, "kind": "int", "shape": [1], "fill": "zeros", "device": {"capture": 0}}},
            {"exit_scope": {"inputs": [], "outputs": [1, 0]}},
            {"replay": {"graph": 0, "feed": [], "outputs": [2, 2]}}]"#,
    );
}

fn what_is_computed_from_a_value_judged_within_a_quantization_step_is_not_compared() {
    // Flex dequantizes the ones to 0.996 and wgpu to 0.992, one step apart and so equal for
    // the quantized entry; atanh of them is 3.12 and 2.77 (fuzz --backends flex,capture,wgpu
    // --seed 104).
    quiet_on_wgpu(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1, 4], "fill": "ones", "device": "flex"}},
            {"op": {"out": 1, "op": {"unary": {"op": "quantized_expand", "src": 0}}}},
            {"op": {"out": 2, "op": {"unary": {"op": "atanh", "src": 1}}}}]"#,
    );
}

fn atan_of_a_nan_is_left_open_as_wgsl_leaves_it() {
    // The variance of one element is 0/0; llvmpipe's atan of it is 0 (fuzz --seed 104).
    quiet_on_wgpu(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": "zeros", "device": "flex"}},
            {"op": {"out": 1, "op": {"along_dim": {"op": "var", "src": 0, "dim": 0}}}},
            {"op": {"out": 2, "op": {"unary": {"op": "atan", "src": 1}}}}]"#,
    );
}

fn a_non_integer_power_of_a_nan_is_left_open_as_wgsl_leaves_it() {
    // 0/0 is NaN; llvmpipe's pow(NaN, 0.5) is 0 (fuzz --seed 104 with wgpu, 30 minutes).
    quiet_on_wgpu(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": "zeros", "device": "flex"}},
            {"op": {"out": 1, "op": {"binary": {"op": "div", "lhs": 0, "rhs": 0}}}},
            {"op": {"out": 2, "op": {"unary": {"op": "powf_half", "src": 1}}}}]"#,
    );
}

fn nothing_wgpu_computes_after_a_failed_launch_on_its_device_is_compared() {
    // The wgpu mirror's fmod fails to compile (wgpu-nan-constant-in-shader); once it is
    // flushed, the cat of three values made before it reads as zeros on wgpu.
    let verdict = quiet_on_wgpu(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": "zeros", "device": "flex"}},
            {"create": {"out": 1, "kind": "float", "shape": [1], "fill": "ones", "device": "flex"}},
            {"clone": {"out": 2, "src": 1}},
            {"op": {"out": 3, "op": {"scalar": {"op": "fmod", "src": 2, "value": 34}}}},
            {"device": {"device": "wgpu", "call": "flush"}},
            {"op": {"out": 3, "op": {"cat": {"first": 1, "rest": [2, 0], "dim": 0}}}}]"#,
    );
    assert!(verdict
        .oracles
        .poisoned
        .get("known-bug")
        .is_some_and(|n| *n >= 1));
}

fn a_capture_value_moved_from_wgpu_may_meet_a_failed_launch_on_wgpu_when_read() {
    // The read takes the value's bytes from its wgpu buffer, on the stream where the fmod
    // launch failed: the model accepts the catalogued failure there as it does at a scope's
    // exit (fuzz --seed 104 with wgpu: a model mismatch).
    quiet_on_wgpu(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "float", "shape": [1], "fill": "ones", "device": "wgpu"}},
            {"to_device": {"out": 1, "src": 0, "device": {"capture": 0}}},
            {"op": {"out": 0, "op": {"scalar": {"op": "fmod", "src": 0, "value": -67}}}},
            {"read": {"src": 1, "fallible": true}},
            {"exit_scope": {"inputs": [], "outputs": []}}]"#,
    );
}

fn a_known_wgpu_bug_met_again_through_a_replay_keeps_its_signature() {
    // wgpu's 0^0 is 0 (a stored case); the replayed graph's output is named after the powf
    // that computed it inside the scope, not after the replay, so it is the same known
    // finding (before: a new finding "the result of replay differs", fuzz --seed 104).
    common::adapter().expect("a wgpu adapter (install mesa-vulkan-drivers)");
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &common::program(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "float", "shape": [1], "fill": "zeros", "device": {"capture": 0}}},
            {"op": {"out": 1, "op": {"binary": {"op": "powf", "lhs": 0, "rhs": 0}}}},
            {"exit_scope": {"inputs": [], "outputs": [1]}},
            {"replay": {"graph": 0, "feed": [], "outputs": [2]}}]"#,
    ))
    .unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    assert_eq!(
        verdict.known_findings,
        ["wgpu-powf-zero-to-the-zero-is-zero-unlike-flex"]
    );
}

fn what_is_computed_from_zeros_signed_differently_is_not_compared() {
    // remainder(-13, -13) is -0 on Flex and +0 on wgpu, equal values; their -15th powers are
    // -inf and +inf (fuzz --seed 105 with wgpu).
    left_open_on_wgpu(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": {"value": -13}, "device": "wgpu"}},
            {"op": {"out": 1, "op": {"binary": {"op": "remainder", "lhs": 0, "rhs": 0}}}},
            {"op": {"out": 2, "op": {"scalar": {"op": "powf", "src": 1, "value": -15}}}}]"#,
        "from-poisoned",
    );
}

fn a_division_by_a_zero_the_backends_computed_differently_is_left_open() {
    // erf(0) is 0 on Flex but not exactly on wgpu (within erf's tolerance): 0/0 is NaN on
    // Flex, x/x is 1 on wgpu (fuzz --seed 105 with wgpu).
    left_open_on_wgpu(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": "zeros", "device": "flex"}},
            {"op": {"out": 1, "op": {"unary": {"op": "erf", "src": 0}}}},
            {"op": {"out": 2, "op": {"binary": {"op": "div", "lhs": 1, "rhs": 1}}}}]"#,
        "near-pole",
    );
}

fn an_int_magnitude_of_the_dtypes_minimum_is_left_open() {
    // abs(i32::MIN) has no I32: Flex's max_abs wraps it to itself, so x - max_abs(x) is 0 where
    // wgpu gives i32::MIN (fuzz --backends flex,capture,wgpu --seed 12).
    left_open_on_wgpu(
        r#"[{"create": {"out": 0, "kind": "int", "shape": [1], "fill": {"edge": "neg_inf"}, "device": "flex"}},
            {"op": {"out": 1, "op": {"unary": {"op": "minus_max_abs", "src": 0}}}}]"#,
        "int-minimum",
    );
}

fn an_atanh_of_a_one_the_backends_computed_differently_is_left_open() {
    // A Lanczos3 resampling's 1 is 1 on Flex and 1.0000001 on wgpu (within its tolerance):
    // atanh makes them inf and NaN (fuzz --backends flex,capture,wgpu --seed 115).
    left_open_on_wgpu(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1, 3, 4, 2], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"module": {"op": "interpolate_lanczos3", "src": 0, "kernel": 3}}}},
            {"op": {"out": 2, "op": {"unary": {"op": "atanh", "src": 1}}}}]"#,
        "near-pole",
    );
}

fn a_division_by_a_zero_both_backends_hold_bit_for_bit_is_still_compared() {
    // IEEE pins 0/0 and 1/0 down: over identical operands the pole is no excuse.
    let verdict = quiet_on_wgpu(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2], "fill": "arange", "device": "flex"}},
            {"create": {"out": 1, "kind": "float", "shape": [2], "fill": "zeros", "device": "flex"}},
            {"op": {"out": 2, "op": {"binary": {"op": "div", "lhs": 0, "rhs": 1}}}}]"#,
    );
    assert!(!verdict.oracles.poisoned.contains_key("near-pole"));
    assert!(verdict.oracles.compared >= 3);
}

fn a_quantization_of_a_nan_is_left_open() {
    // remainder(0, 0) is NaN; the quantized round trip of it is 0 on Flex and NaN on wgpu
    // (fuzz --seed 105 with wgpu).
    left_open_on_wgpu(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2, 4], "fill": "zeros", "device": "flex"}},
            {"op": {"out": 1, "op": {"binary": {"op": "remainder", "lhs": 0, "rhs": 0}}}},
            {"op": {"out": 2, "op": {"unary": {"op": "quantized_expand", "src": 1}}}}]"#,
        "out-of-range-cast",
    );
}

fn a_remainder_over_operands_the_backends_computed_differently_is_left_open() {
    // The Lanczos3 resampling's 0 is 1e-7 on one backend and -1.6e-7 on the other; its
    // remainder by -84 jumps between them: -84 on Flex, -1.6e-7 on wgpu (fuzz --seed 106).
    left_open_on_wgpu(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2, 3, 4, 2], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"module": {"op": "interpolate_lanczos3", "src": 0, "kernel": 1}}}},
            {"op": {"out": 2, "op": {"scalar": {"op": "remainder", "src": 1, "value": -84}}}}]"#,
        "inexact-operand",
    );
}

fn a_remainder_over_identical_operands_is_still_compared() {
    // Both backends hold the same 0 and inf: wgpu's NaN is the stored case, met again.
    common::adapter().expect("a wgpu adapter (install mesa-vulkan-drivers)");
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": "zeros", "device": "wgpu"}},
            {"op": {"out": 1, "op": {"scalar": {"op": "powi", "src": 0, "value": -110}}}},
            {"op": {"out": 2, "op": {"binary": {"op": "remainder", "lhs": 0, "rhs": 1}}}}]"#,
    ))
    .unwrap();
    assert_eq!(
        verdict.known_findings,
        ["wgpu-remainder-of-zero-by-infinity-is-nan"]
    );
}

fn random_draws_and_replays_of_a_graph_that_draws_are_not_compared_with_wgpu() {
    common::adapter().expect("a wgpu adapter (install mesa-vulkan-drivers)");
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2, 3], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"along_dim": {"op": "random_normal_like", "src": 0, "dim": 1}}}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"to_device": {"out": 2, "src": 0, "device": {"capture": 0}}},
            {"op": {"out": 3, "op": {"along_dim": {"op": "random_uniform_like", "src": 2, "dim": 0}}}},
            {"exit_scope": {"inputs": [], "outputs": [3]}},
            {"replay": {"graph": 0, "feed": [], "outputs": [4]}},
            {"read": {"src": 1, "fallible": false}},
            {"read": {"src": 4, "fallible": false}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    // The Flex draw, the captured draw (eager-replay, twice: on Flex and on wgpu) and the
    // replay's output are each left out.
    let drawn = verdict
        .oracles
        .poisoned
        .get("random-draw")
        .copied()
        .unwrap_or(0);
    assert!(drawn >= 3, "{:?}", verdict.oracles.poisoned);
}

fn a_bridge_of_a_value_moved_from_wgpu_meets_a_failed_launch_there_as_a_read_does() {
    common::adapter().expect("a wgpu adapter (install mesa-vulkan-drivers)");
    // fuzz --backends flex,capture,wgpu --seed 105, minimized: fmod's shader does not compile
    // on wgpu (catalogued), and the bridge then reads t1's data from the same device.
    let program = common::program(
        r#"[{"enter_scope": {"device": {"capture": 1}}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "float", "shape": [1], "fill": "zeros", "device": "wgpu"}},
            {"to_device": {"out": 1, "src": 0, "device": {"capture": 0}}},
            {"op": {"out": 2, "op": {"binary": {"op": "fmod", "lhs": 0, "rhs": 0}}}},
            {"to_device": {"out": 0, "src": 1, "device": {"capture": 1}}},
            {"exit_scope": {"inputs": [], "outputs": []}},
            {"exit_scope": {"inputs": [], "outputs": []}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    assert!(
        matches!(&verdict.trace.steps[5].outcome, Outcome::Panic(p) if p.class == "wgpu-nan-constant-in-shader"),
        "{:?}",
        verdict.trace.steps[5].outcome
    );
}

fn an_operand_near_a_pole_that_the_backends_computed_differently_leaves_the_result_open() {
    common::adapter().expect("a wgpu adapter (install mesa-vulkan-drivers)");
    // fuzz --backends flex,capture,wgpu --seed 105: log_sigmoid(73) is -2e-32 on Flex and 0 on
    // wgpu, so x / x is 1 and NaN; mish(-56) is -2.7e-23 and -0, so sqrt is NaN and -0.
    for (op, fill) in [("log_sigmoid", 73), ("mish", -56)] {
        let last = if op == "mish" {
            r#"{"unary": {"op": "sqrt", "src": 1}}"#
        } else {
            r#"{"binary": {"op": "div", "lhs": 1, "rhs": 1}}"#
        };
        let program = common::program(&format!(
            r#"[{{"create": {{"out": 0, "kind": "float", "shape": [1], "fill": {{"value": {fill}}}, "device": "flex"}}}},
                {{"op": {{"out": 1, "op": {{"unary": {{"op": "{op}", "src": 0}}}}}}}},
                {{"op": {{"out": 2, "op": {last}}}}}]"#
        ));
        let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
        assert!(verdict.finding.is_none(), "{op}: {:?}", verdict.finding);
        assert!(
            verdict.oracles.poisoned.contains_key("near-pole"),
            "{op}: {:?}",
            verdict.oracles.poisoned
        );
    }
}

fn a_graph_holding_a_wgpu_bools_u32_bytes_is_not_compared_where_flex_replays_it() {
    common::adapter().expect("a wgpu adapter (install mesa-vulkan-drivers)");
    // fuzz --backends flex,capture,wgpu --seed 105: Flex misreads the recorded Bool(U32) bytes
    // (the catalogued bool-storage-transfer bug), so its replay gives [1, 0] for [true, true].
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "bool", "shape": [2], "fill": "ones", "device": "wgpu"}},
            {"enter_scope": {"device": {"capture": 1}}},
            {"to_device": {"out": 1, "src": 0, "device": {"capture": 1}}},
            {"op": {"out": 2, "op": {"cast": {"src": 1, "to": "float"}}}},
            {"exit_scope": {"inputs": [], "outputs": [2]}},
            {"replay": {"graph": 0, "feed": [], "outputs": [2]}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    assert!(
        verdict.known_findings.is_empty(),
        "{:?}",
        verdict.known_findings
    );
    assert!(
        verdict
            .oracles
            .poisoned
            .get("bool-u32-on-flex")
            .copied()
            .unwrap_or(0)
            >= 2,
        "{:?}",
        verdict.oracles.poisoned
    );
}

fn an_inverse_hyperbolic_past_its_squares_range_and_a_remainder_past_an_exact_quotient_are_left_open(
) {
    common::adapter().expect("a wgpu adapter (install mesa-vulkan-drivers)");
    // fuzz --backends flex,capture,wgpu --seed 105: acosh(cosh(-83)) is 83 on Flex and inf on
    // llvmpipe; remainder(2^33, 53) is 31 on Flex and 0 on llvmpipe. WGSL's formulas allow both.
    let cases = [
        (
            r#"{"unary": {"op": "cosh", "src": 0}}"#,
            r#"{"unary": {"op": "acosh", "src": 1}}"#,
            -83,
            "square-overflow",
        ),
        (
            r#"{"scalar": {"op": "powf", "src": 0, "value": 33}}"#,
            r#"{"scalar": {"op": "remainder", "src": 1, "value": 53}}"#,
            2,
            "inexact-quotient",
        ),
    ];
    for (first, second, fill, poison) in cases {
        let program = common::program(&format!(
            r#"[{{"create": {{"out": 0, "kind": "float", "shape": [1], "fill": {{"value": {fill}}}, "device": "flex"}}}},
                {{"op": {{"out": 1, "op": {first}}}}},
                {{"op": {{"out": 2, "op": {second}}}}}]"#
        ));
        let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
        assert!(verdict.finding.is_none(), "{poison}: {:?}", verdict.finding);
        assert!(
            verdict.oracles.poisoned.contains_key(poison),
            "{poison}: {:?}",
            verdict.oracles.poisoned
        );
    }
}

fn a_value_recorded_from_wgpu_that_the_differential_does_not_compare_is_not_replay_judged() {
    common::adapter().expect("a wgpu adapter (install mesa-vulkan-drivers)");
    // fuzz --backends flex,capture,wgpu --seed 107, minimized: wgpu's powf(0, 0) is 0 (the
    // stored wgpu-powf-zero-to-the-zero-is-zero-unlike-flex), moved into a scope it replays as
    // 0, and eager Flex computes 1: the known wgpu bug, not a replay bug.
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": "zeros", "device": "wgpu"}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"op": {"out": 1, "op": {"binary": {"op": "powf", "lhs": 0, "rhs": 0}}}},
            {"to_device": {"out": 2, "src": 1, "device": {"capture": 0}}},
            {"exit_scope": {"inputs": [], "outputs": [2]}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    assert_eq!(
        verdict.known_findings,
        vec!["wgpu-powf-zero-to-the-zero-is-zero-unlike-flex".to_string()]
    );
}

fn a_value_the_wgpu_replay_computed_from_max_pool_indices_is_signed_with_the_max_pool() {
    // The indices of a captured max_pool2d_with_indices replay on wgpu as packed i32 pairs (a
    // stored case); a scalar mul over them inside the scope is wrong on wgpu only. Signed with
    // the mul, every consumer was a new finding (fuzz --backends flex,capture,wgpu --seed 114).
    common::adapter().expect("a wgpu adapter (install mesa-vulkan-drivers)");
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &common::program(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "float", "shape": [4, 3, 1, 3], "fill": "arange", "device": {"capture": 0}}},
            {"op": {"out": 1, "op": {"module": {"op": "max_pool2d_indices", "src": 0, "kernel": 3}}}},
            {"op": {"out": 2, "op": {"scalar": {"op": "mul", "src": 1, "value": -14}}}},
            {"exit_scope": {"inputs": [], "outputs": [2]}}]"#,
    ))
    .unwrap();
    let signatures: Vec<&str> = verdict
        .oracles
        .violations
        .iter()
        .map(|v| v.summary.as_str())
        .collect();
    assert_eq!(
        signatures,
        ["the replayed value computed from max-pool indices differs from the eager Flex run (I64 replayed, I32 eager)"]
    );
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    assert_eq!(
        verdict.known_findings,
        ["wgpu-replayed-values-computed-from-max-pool-indices-read-packed-pairs"]
    );
}

fn a_replay_step_of_a_max_pool_backward_on_the_wgpu_mirror_is_the_stored_replay_bug_alone() {
    // The backward scatters through the packed i32 indices on wgpu (a stored case, reported by
    // eager-replay at the scope's exit); the program's own replay step, which the wgpu mirror
    // replays on wgpu, was a Flex-vs-wgpu divergence of its own (fuzz --backends
    // flex,capture,wgpu --seed 21).
    common::adapter().expect("a wgpu adapter (install mesa-vulkan-drivers)");
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &common::program(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "float", "shape": [1, 4, 2, 4], "fill": "arange", "device": {"capture": 0}}},
            {"op": {"out": 1, "op": {"module": {"op": "max_pool2d_backward", "src": 0, "kernel": 3}}}},
            {"exit_scope": {"inputs": [], "outputs": [1]}},
            {"replay": {"graph": 0, "feed": [], "outputs": [2]}}]"#,
    ))
    .unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    assert_eq!(
        verdict.known_findings,
        ["wgpu-max-pool-backward-scatters-through-the-i64-indices-capture-records"]
    );
    let classes: Vec<&str> = verdict
        .oracles
        .violations
        .iter()
        .map(|v| v.class.name())
        .collect();
    assert_eq!(
        classes,
        ["replay-mismatch"],
        "{:?}",
        verdict.oracles.violations
    );
}

fn an_i64_kernel_on_an_adapter_without_shader_int64_is_the_catalogued_limitation() {
    // Mesa's GL adapter has no SHADER_INT64: Burn says I64 is unsupported there, yet a cast to
    // I64 launches a shader naga rejects, reported at the read (harness/signatures.json,
    // wgpu-i64-without-shader-int64, which names the Burn and cubecl lines).
    common::adapter().expect("a wgpu adapter");
    let device = wgpu::device(common::adapter_choice()).unwrap();
    assert!(!device.supports_dtype(burn::tensor::DType::I64));
    let class = "wgpu-i64-without-shader-int64";
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "int", "shape": [4], "fill": "arange", "device": "wgpu"}},
            {"op": {"out": 1, "op": {"unary": {"op": "cast_i64", "src": 0}}}},
            {"read": {"src": 1, "fallible": true}}]"#,
    );
    // A limitation, not a finding: fuzzing goes on past it...
    assert!(dispatch_fuzz::check(&common::on_wgpu(), &program)
        .unwrap()
        .finding
        .is_none());
    // ...and it is the catalogued class when asked for.
    let policy = dispatch_fuzz::oracles::Policy::parse(class);
    let finding = dispatch_fuzz::check(&common::on_wgpu().with_policy(policy.clone()), &program)
        .unwrap()
        .finding;
    assert_eq!(
        finding.map(|f| (f.class.name(), f.step)),
        Some((class, Some(2)))
    );
}

fn a_catalogued_failure_over_a_steps_own_dtype_mix_keeps_its_class_past_an_unsupported_dtype() {
    // An I16 made on wgpu (which llvmpipe does not support) moved into a scope, cast to U32 and
    // compared with itself: burn-ir's DTypeMismatch as it records the compare, over the step's
    // own I16 and U32, is the catalogued int-dtype-mismatch, not the unsupported dtype's guard
    // (fuzz --backends flex,capture,wgpu --seed 11: the model expected the op recorded).
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "int", "shape": [1], "fill": "zeros", "device": "wgpu", "dtype": "i16"}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"to_device": {"out": 1, "src": 0, "device": {"capture": 0}}},
            {"op": {"out": 2, "op": {"cast": {"src": 1, "to": "int", "dtype": "u32"}}}},
            {"op": {"out": 3, "op": {"compare": {"op": "greater", "lhs": 2, "rhs": 1}}}},
            {"exit_scope": {"inputs": [], "outputs": []}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    assert_eq!(panic_classes(&verdict), ["int-dtype-mismatch"]);
}

fn a_dtype_the_program_names_that_wgpu_does_not_support_is_a_predicted_guard_and_one_burn_chose_is_not(
) {
    // Mesa's llvmpipe says it supports neither BF16 nor I8 (Vulkan and GL alike); Burn's doc of
    // supports_dtype promises nothing for them there.
    common::adapter().expect("a wgpu adapter");
    let device = wgpu::device(common::adapter_choice()).unwrap();
    for dtype in [burn::tensor::DType::BF16, burn::tensor::DType::I8] {
        assert!(!device.supports_dtype(dtype), "{dtype:?}");
    }
    let class = dispatch_fuzz::oracles::UNSUPPORTED_DTYPE;
    // Where Burn chose such a dtype (capture records a bool as Bool(U8), which wgpu does not
    // support either), its failure is still the stored finding, not this guard. (First: a
    // failed launch below fails the device's stream for what follows.)
    let chosen = common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": "zeros", "device": "wgpu"}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"to_device": {"out": 1, "src": 0, "device": {"capture": 0}}},
            {"op": {"out": 2, "op": {"cast": {"src": 1, "to": "bool"}}}},
            {"exit_scope": {"inputs": [], "outputs": [2]}}]"#,
    );
    let known = "capture-bool-u8-on-wgpu";
    let policy = dispatch_fuzz::oracles::Policy::parse(known);
    let finding = dispatch_fuzz::check(&common::on_wgpu().with_policy(policy), &chosen)
        .unwrap()
        .finding;
    assert_eq!(finding.map(|f| f.class.name()), Some(known));
    // A BF16 tensor the program puts on wgpu: its kernel does not compile, reported at the read.
    let on_wgpu = common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2], "fill": "ones", "device": "wgpu", "dtype": "bf16"}},
            {"op": {"out": 1, "op": {"unary": {"op": "exp", "src": 0}}}},
            {"read": {"src": 1, "fallible": false}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &on_wgpu).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    let policy = dispatch_fuzz::oracles::Policy::parse(class);
    let finding = dispatch_fuzz::check(&common::on_wgpu().with_policy(policy), &on_wgpu)
        .unwrap()
        .finding;
    assert_eq!(
        finding.map(|f| (f.class.name(), f.step)),
        Some((class, Some(2)))
    );
    // Nor judged there from then on: its dtypes (a BF16 prelu comes back F32), a graph replayed
    // by the wgpu mirror (a BF16 matmul cubecl cannot launch), a value moved off the device (a
    // U8 kernel's failure met by the move and the read on Flex after it).
    for steps in [
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": "zeros", "device": "wgpu", "dtype": "bf16"}},
            {"op": {"out": 1, "op": {"along_dim": {"op": "prelu", "src": 0, "dim": 0}}}}]"#,
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "float", "shape": [1, 1], "fill": "zeros", "device": "wgpu", "dtype": "bf16"}},
            {"to_device": {"out": 1, "src": 0, "device": {"capture": 0}}},
            {"op": {"out": 2, "op": {"matmul": {"lhs": 1, "rhs": 1, "transpose_rhs": false}}}},
            {"exit_scope": {"inputs": [], "outputs": [0]}},
            {"replay": {"graph": 0, "feed": [], "outputs": [1]}}]"#,
        r#"[{"create": {"out": 0, "kind": "int", "shape": [1], "fill": "zeros", "device": "wgpu", "dtype": "u8"}},
            {"op": {"out": 1, "op": {"along_dim": {"op": "flip", "src": 0, "dim": 0}}}},
            {"to_device": {"out": 1, "src": 1, "device": "flex"}},
            {"read": {"src": 1, "fallible": false}}]"#,
    ] {
        let verdict = dispatch_fuzz::check(&common::on_wgpu(), &common::program(steps)).unwrap();
        assert!(verdict.finding.is_none(), "{steps}: {:?}", verdict.finding);
    }
    // A graph recording an I8 tensor the program made is not replayed on wgpu, and says so.
    let recorded = common::program(
        r#"[{"create": {"out": 0, "kind": "int", "shape": [2], "fill": "ones", "device": "flex", "dtype": "i8"}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"to_device": {"out": 1, "src": 0, "device": {"capture": 0}}},
            {"op": {"out": 2, "op": {"unary": {"op": "abs", "src": 1}}}},
            {"exit_scope": {"inputs": [], "outputs": [2]}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &recorded).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    assert_eq!(verdict.oracles.poisoned.get("unsupported-dtype"), Some(&1));
}

fn a_subnormal_the_device_may_flush_equals_a_zero_and_a_pole_or_a_jump_over_it_is_left_open() {
    // llvmpipe flushes f32 subnormals: log of the smallest one is -inf there, -103.3 on Flex,
    // its remainder by -21 is 0 there, -21 on Flex (the jump at zero), and its abs may come
    // back 0.
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": {"edge": "subnormal"}, "device": "flex"}},
            {"op": {"out": 1, "op": {"unary": {"op": "log", "src": 0}}}},
            {"op": {"out": 2, "op": {"unary": {"op": "abs", "src": 0}}}},
            {"op": {"out": 3, "op": {"scalar": {"op": "remainder", "src": 0, "value": -21}}}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    assert_eq!(verdict.oracles.poisoned.get("near-pole"), Some(&1));
    assert_eq!(verdict.oracles.poisoned.get("inexact-operand"), Some(&1));
}

fn a_resampling_of_an_infinity_and_sums_past_the_range_are_left_open() {
    // Lanczos3 over -inf: Flex skips the taps of zero weight (-inf), llvmpipe multiplies them
    // (0 x -inf is NaN). A layer norm of f32::MAX values: its bias on Flex, NaN on llvmpipe,
    // whose two-pass sum overflows.
    left_open_on_wgpu(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [4, 4, 1, 3], "fill": {"edge": "neg_inf"}, "device": "flex"}},
            {"op": {"out": 1, "op": {"module": {"op": "interpolate_lanczos3", "src": 0, "kernel": 1}}}}]"#,
        "infinite-sample",
    );
    left_open_on_wgpu(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1, 4, 4], "fill": {"edge": "max"}, "device": "flex"}},
            {"op": {"out": 1, "op": {"module": {"op": "layer_norm", "src": 0, "kernel": 3}}}}]"#,
        "partial-sum-overflow",
    );
}

fn a_powf_gradient_at_a_subnormal_base_the_device_may_flush_is_left_open() {
    // x^x at the smallest subnormal: its base gradient is inf on Flex (x^(x - 1) overflows),
    // 2.4e-7 on llvmpipe, which flushes subnormals (fuzz --backends flex,capture,wgpu --seed 2).
    quiet_on_wgpu(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": {"edge": "subnormal"}, "device": "flex"}},
            {"autodiff": {"out": 1, "src": 0, "mode": "enable"}},
            {"autodiff": {"out": 1, "src": 1, "mode": "require_grad"}},
            {"op": {"out": 2, "op": {"binary": {"op": "powf", "lhs": 1, "rhs": 0}}}},
            {"backward": {"out": 3, "loss": 2, "param": 1}}]"#,
    );
}

fn a_scope_completing_over_a_value_moved_from_wgpu_past_an_unsupported_dtype_is_that_guard() {
    // A U8 on wgpu (which says it does not support U8) moved into a scope: its completion reads
    // the device's failed stream and panics in cubecl's bytes (fuzz --backends
    // flex,capture,wgpu --seed 3), as a read there would.
    let verdict = quiet_on_wgpu(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "int", "shape": [1], "fill": "zeros", "device": "wgpu", "dtype": "u8"}},
            {"to_device": {"out": 1, "src": 0, "device": {"capture": 0}}},
            {"op": {"out": 0, "op": {"binary": {"op": "sub", "lhs": 0, "rhs": 0}}}},
            {"exit_scope": {"inputs": [], "outputs": []}}]"#,
    );
    let classes = panic_classes(&verdict);
    assert!(
        classes.contains(&"dtype-unsupported-on-device"),
        "{classes:?}"
    );
}

fn what_burn_leaves_open_inside_a_graph_is_open_in_its_replay() {
    // cos of f32::MAX is left open (WGSL bounds cos only near zero); a graph recording it
    // replays that open value, which is no more comparable than the eager one.
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": {"edge": "max"}, "device": "flex"}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"to_device": {"out": 1, "src": 0, "device": {"capture": 0}}},
            {"op": {"out": 2, "op": {"unary": {"op": "cos", "src": 1}}}},
            {"exit_scope": {"inputs": [], "outputs": [2]}},
            {"replay": {"graph": 0, "feed": [], "outputs": [1]}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &program).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    assert!(verdict.oracles.poisoned.contains_key("from-poisoned"));
}

fn operands_in_two_dtypes_the_program_chose_are_its_mix_in_whatever_words_wgpu_refuses_them() {
    // wgpu concatenates an F64 and an F32 tensor with a kernel whose bindings fail validation:
    // no dtype-mismatch words, but the mix is the program's, which Burn lets a backend refuse.
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": "zeros", "device": "wgpu", "dtype": "f64"}},
            {"create": {"out": 1, "kind": "float", "shape": [1], "fill": "zeros", "device": "wgpu"}},
            {"op": {"out": 2, "op": {"cat": {"first": 0, "rest": [1], "dim": 0}}}}]"#,
    );
    let class = dispatch_fuzz::oracles::MIXED_DTYPES;
    let policy = dispatch_fuzz::oracles::Policy::parse(class);
    let finding = dispatch_fuzz::check(&common::on_wgpu().with_policy(policy), &program)
        .unwrap()
        .finding;
    assert_eq!(
        finding.map(|f| (f.class.name(), f.step)),
        Some((class, Some(2)))
    );
}

/// What `run --json` shows of a verdict: each step's outcome kind, class and message, and the
/// finding's signature (the child's JSON and this process's verdict alike).
fn as_run_prints(steps: &[serde_json::Value], finding: &serde_json::Value) -> String {
    let outcomes: Vec<String> = steps
        .iter()
        .map(|s| {
            let o = &s["outcome"];
            format!("{} {} {}", o["kind"], o["class"], o["message"])
        })
        .collect();
    format!("{}\n{}", outcomes.join("\n"), finding["signature"])
}

/// `dispatch-fuzz run --json` of `program` in a process of its own on `backends`.
fn in_own_process(program: &Program, backends: &str) -> String {
    let path = std::env::temp_dir().join(format!(
        "two-sessions-{}-{backends}.json",
        std::process::id()
    ));
    let file = dispatch_fuzz::program::ProgramFile {
        steps: program.steps.clone(),
        ..Default::default()
    };
    std::fs::write(&path, file.to_text()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dispatch-fuzz"))
        .args(["run", "--json"])
        .arg(&path)
        .env("DISPATCH_FUZZ_BACKENDS", backends)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    as_run_prints(json["steps"].as_array().unwrap(), &json["finding"])
}

fn two_sessions_with_different_backends_in_one_process_judge_as_separate_processes_do() {
    common::adapter().expect("a wgpu adapter");
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2, 3], "fill": {"value": 3}, "device": "flex"}},
            {"op": {"out": 1, "op": {"unary": {"op": "exp", "src": 0}}}},
            {"create": {"out": 2, "kind": "float", "shape": [3], "fill": {"value": 2}, "device": "wgpu"}},
            {"op": {"out": 3, "op": {"unary": {"op": "sin", "src": 2}}}},
            {"to_device": {"out": 4, "src": 3, "device": "flex"}}]"#,
    );
    let here = |session: &dispatch_fuzz::Session| {
        let verdict = dispatch_fuzz::check(session, &program).unwrap();
        let steps: Vec<serde_json::Value> = verdict
            .trace
            .steps
            .iter()
            .map(|r| {
                let outcome = match &r.outcome {
                    Outcome::Ok { .. } => serde_json::json!({"kind": "ok"}),
                    Outcome::Error { error, message } => {
                        serde_json::json!({"kind": "error", "class": error, "message": message})
                    }
                    Outcome::Panic(p) => {
                        serde_json::json!({"kind": "panic", "class": p.class, "message": p.message})
                    }
                    Outcome::Skipped { reason } => {
                        serde_json::json!({"kind": "skipped", "message": reason})
                    }
                };
                serde_json::json!({"outcome": outcome})
            })
            .collect();
        let finding = serde_json::json!({
            "signature": verdict.finding.as_ref().map(|f| f.signature.to_string())
        });
        (as_run_prints(&steps, &finding), verdict.oracles.compared)
    };
    // Interleaved in one process: CPU, wgpu, CPU again.
    let (cpu, cpu_compared) = here(&common::cpu());
    let (gpu, gpu_compared) = here(&common::on_wgpu());
    let (cpu_again, cpu_again_compared) = here(&common::cpu());
    assert!(
        cpu.contains("skipped"),
        "the CPU session skips the wgpu steps:\n{cpu}"
    );
    assert!(
        !gpu.contains("skipped"),
        "the wgpu session runs them:\n{gpu}"
    );
    assert_eq!(cpu_compared, 0, "no value crosses backends without wgpu");
    assert!(gpu_compared > 0, "the differential compares on wgpu");
    // The wgpu session before it left the CPU session as it was.
    assert_eq!((&cpu, cpu_compared), (&cpu_again, cpu_again_compared));
    // And each is what a process of its own says.
    assert_eq!(cpu, in_own_process(&program, "flex,capture"));
    assert_eq!(gpu, in_own_process(&program, "flex,capture,wgpu"));
}

fn main() -> ExitCode {
    let (any, llvmpipe, vulkan, gl) = (ANY, LLVMPIPE, VULKAN_LLVMPIPE, GL_LLVMPIPE);
    // Mechanics of the harness hold on any adapter; what rests on an adapter's numerics or on a
    // known bug it shows holds on the classes it was checked on (both llvmpipe classes: CI and
    // a machine without a Vulkan driver); what needs I64 kernels, on Vulkan/llvmpipe.
    // One row per test: the classes it holds on and its path, which is also its name.
    macro_rules! row {
        ($classes:ident, $($path:ident)::+) => {
            ($classes, stringify!($($path)::+), $($path)::+ as fn())
        };
    }
    let tests: [(common::Classes, &str, fn()); 61] = [
        row!(any, two_sessions_with_different_backends_in_one_process_judge_as_separate_processes_do),
        row!(any, a_program_on_wgpu_computes_what_flex_computes),
        row!(any, a_capture_scope_records_a_tensor_moved_from_wgpu),
        row!(any, a_scalar_a_dtype_moved_from_wgpu_cannot_hold_is_the_guard_not_the_devices_failure),
        row!(any, a_wgpu_bool_used_by_flex_logic_and_mask_ops_is_the_known_bool_storage_bug),
        row!(any, differential::a_perturbed_wgpu_value_is_a_flex_wgpu_divergence),
        row!(any, differential::a_floor_over_an_operand_the_backends_computed_slightly_differently_is_poisoned),
        row!(any, differential::an_exact_op_over_identical_operands_must_agree_bit_for_bit),
        row!(any, differential::a_wgpu_bool_moved_to_flex_is_poisoned_where_flex_misreads_it),
        row!(any, differential::an_argmax_over_ties_is_poisoned_not_compared),
        row!(any, differential::a_tie_poisons_only_its_lane_and_what_that_lane_reaches),
        row!(any, differential::a_replay_fed_a_bool_is_fed_the_same_on_the_wgpu_mirror),
        row!(llvmpipe, differential::flex_and_wgpu_agree_on_random_programs),
        row!(any, with_wgpu_the_fuzz_target_and_check_decide_alike),
        row!(any, a_session_choosing_another_adapter_than_the_one_wgpu_came_up_on_is_refused),
        row!(any, the_eager_mirror_holds_flex_values_for_wgpu_slots_so_every_comparison_crosses_backends),
        row!(any, a_gradient_on_flex_is_compared_with_the_same_gradient_computed_on_wgpu),
        row!(any, a_replay_into_the_slot_that_fed_it_is_mirrored_on_wgpu_with_the_same_feed),
        row!(any, a_replay_feed_the_real_run_could_not_read_takes_the_recorded_value_on_wgpu_too),
        row!(any, a_replay_fed_an_int_capture_tensor_is_fed_the_same_on_the_wgpu_mirror),
        row!(llvmpipe, x_minus_its_mean_is_judged_at_the_scale_of_x_not_of_the_cancelled_result),
        row!(any, a_replay_that_refused_a_feed_of_another_dtype_refuses_it_on_the_wgpu_mirror_too),
        row!(llvmpipe, a_value_wgpu_could_not_compute_for_a_known_bug_poisons_what_is_made_from_it),
        row!(llvmpipe, a_replay_fed_a_value_the_wgpu_mirror_never_computed_is_not_judged),
        row!(any, a_replay_writing_two_outputs_into_one_slot_is_compared_by_the_last_one),
        row!(llvmpipe, what_is_computed_from_a_value_judged_within_a_quantization_step_is_not_compared),
        row!(llvmpipe, atan_of_a_nan_is_left_open_as_wgsl_leaves_it),
        row!(llvmpipe, a_non_integer_power_of_a_nan_is_left_open_as_wgsl_leaves_it),
        row!(llvmpipe, nothing_wgpu_computes_after_a_failed_launch_on_its_device_is_compared),
        row!(llvmpipe, a_capture_value_moved_from_wgpu_may_meet_a_failed_launch_on_wgpu_when_read),
        row!(llvmpipe, a_known_wgpu_bug_met_again_through_a_replay_keeps_its_signature),
        row!(llvmpipe, what_is_computed_from_zeros_signed_differently_is_not_compared),
        row!(llvmpipe, a_division_by_a_zero_the_backends_computed_differently_is_left_open),
        row!(llvmpipe, an_atanh_of_a_one_the_backends_computed_differently_is_left_open),
        row!(llvmpipe, an_int_magnitude_of_the_dtypes_minimum_is_left_open),
        row!(llvmpipe, a_division_by_a_zero_both_backends_hold_bit_for_bit_is_still_compared),
        row!(llvmpipe, a_quantization_of_a_nan_is_left_open),
        row!(llvmpipe, a_remainder_over_operands_the_backends_computed_differently_is_left_open),
        row!(llvmpipe, a_remainder_over_identical_operands_is_still_compared),
        row!(any, differential::a_wrong_result_every_backend_shares_is_no_divergence_but_a_reference_mismatch),
        row!(any, random_draws_and_replays_of_a_graph_that_draws_are_not_compared_with_wgpu),
        row!(any, differential::a_wgpu_value_moved_to_flex_is_the_differentials_not_judged_against_flexs_own),
        row!(any, differential::a_wrong_wgpu_value_where_flex_computed_nothing_is_a_reference_mismatch_on_wgpu),
        row!(any, differential::a_bicubic_backward_wgpu_refuses_is_the_catalogued_limitation),
        row!(any, differential::a_wrong_gradient_of_another_op_is_no_stored_sqrt_gradients_case),
        row!(llvmpipe, a_bridge_of_a_value_moved_from_wgpu_meets_a_failed_launch_there_as_a_read_does),
        row!(llvmpipe, an_operand_near_a_pole_that_the_backends_computed_differently_leaves_the_result_open),
        row!(llvmpipe, a_graph_holding_a_wgpu_bools_u32_bytes_is_not_compared_where_flex_replays_it),
        row!(llvmpipe, an_inverse_hyperbolic_past_its_squares_range_and_a_remainder_past_an_exact_quotient_are_left_open),
        row!(llvmpipe, a_value_recorded_from_wgpu_that_the_differential_does_not_compare_is_not_replay_judged),
        row!(vulkan, a_value_the_wgpu_replay_computed_from_max_pool_indices_is_signed_with_the_max_pool),
        row!(vulkan, a_replay_step_of_a_max_pool_backward_on_the_wgpu_mirror_is_the_stored_replay_bug_alone),
        row!(gl, an_i64_kernel_on_an_adapter_without_shader_int64_is_the_catalogued_limitation),
        row!(llvmpipe, a_dtype_the_program_names_that_wgpu_does_not_support_is_a_predicted_guard_and_one_burn_chose_is_not),
        row!(llvmpipe, a_catalogued_failure_over_a_steps_own_dtype_mix_keeps_its_class_past_an_unsupported_dtype),
        row!(llvmpipe, a_subnormal_the_device_may_flush_equals_a_zero_and_a_pole_or_a_jump_over_it_is_left_open),
        row!(llvmpipe, what_burn_leaves_open_inside_a_graph_is_open_in_its_replay),
        row!(llvmpipe, a_resampling_of_an_infinity_and_sums_past_the_range_are_left_open),
        row!(llvmpipe, a_powf_gradient_at_a_subnormal_base_the_device_may_flush_is_left_open),
        row!(llvmpipe, a_scope_completing_over_a_value_moved_from_wgpu_past_an_unsupported_dtype_is_that_guard),
        row!(vulkan, operands_in_two_dtypes_the_program_chose_are_its_mix_in_whatever_words_wgpu_refuses_them),
    ];
    run_trials(
        tests
            .into_iter()
            .map(|(classes, name, test)| {
                wgpu_trial(name, classes(), move || {
                    test();
                    Ok(())
                })
            })
            .collect(),
    )
}
