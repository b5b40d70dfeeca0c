//! The interpreter on the real crates: random programs run without harness failures, the pool
//! survives more programs than there are capture-device ids, and leaked scope state is caught.

use crate::common;

use dispatch_fuzz::interpreter::{pool, Outcome};
use dispatch_fuzz::oracles::STATE_LEAK;
use dispatch_fuzz::program::{Backends, Program};
use dispatch_fuzz::rng::SplitMix64;
use dispatch_fuzz::Verdict;

#[test]
fn thousands_of_random_programs_run_without_harness_failure() {
    let mut rng = SplitMix64::new(42);
    let mut steps = 0;
    let mut panics = 0;
    for _ in 0..2000 {
        let len = rng.below(2048) as usize;
        let program = Program::from_fuzz_bytes(&rng.bytes(len), Backends::FLEX_CAPTURE);
        let verdict = dispatch_fuzz::check(&common::cpu(), &program)
            .unwrap_or_else(|e| panic!("harness failure {e:#} on\n{program}"));
        assert_eq!(verdict.trace.steps.len(), program.steps.len());
        assert!(
            verdict.trace.leaked_devices.is_empty(),
            "state leak after\n{program}"
        );
        steps += program.steps.len();
        panics += verdict.trace.panics().count();
        // Every panic random programs meet is catalogued: an unknown one is a finding the
        // fuzzer would stop at, and must be stored or catalogued before this passes again.
        for (step, panic) in verdict.trace.panics() {
            assert_ne!(
                panic.class,
                dispatch_fuzz::oracles::UNKNOWN,
                "step {step}: {} at {:?}\n{program}",
                panic.message,
                panic.location
            );
        }
    }
    // The generator must produce real programs, not mostly empty ones.
    assert!(steps > 2000 * 10, "only {steps} steps in 2000 programs");
    assert!(panics > 0);
}

#[test]
fn more_programs_than_capture_device_ids_run_in_one_process() {
    // Burn's capture ids are a never-recycled u16: a device per program would panic at 65,536.
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2], "fill": "ones", "device": "flex"}},
            {"enter_scope": {"device": {"capture": 1}}},
            {"to_device": {"out": 1, "src": 0, "device": {"capture": 1}}},
            {"exit_scope": {"inputs": [1], "outputs": [1]}}]"#,
    );
    for i in 0..70_000 {
        let verdict = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
        assert!(
            verdict.finding.is_none(),
            "program {i}: {:?}",
            verdict.finding
        );
    }
}

/// Checks `program` while a scope is held open on pooled device 0, as a program that left one
/// open would leave it.
fn check_with_capture0_held_open(program: &Program) -> Verdict {
    let mut inside = None;
    pool::capture(0)
        .capture_scope(|scope| {
            inside = Some(dispatch_fuzz::check(&common::cpu(), program).unwrap());
            scope.complete([], [])
        })
        .unwrap();
    inside.expect("the scope's closure ran")
}

#[test]
fn a_scope_left_open_on_a_pooled_device_the_program_names_is_a_state_leak() {
    // The program names capture0 (a device call that asks no client) and uses it for nothing.
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "int", "shape": [3], "fill": "arange", "device": "flex"}},
            {"device": {"device": {"capture": 0}, "call": "name"}}]"#,
    );
    let clean = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
    assert!(clean.finding.is_none());
    let finding = check_with_capture0_held_open(&program)
        .finding
        .expect("the open scope is reported");
    assert_eq!(finding.class, STATE_LEAK);
    // Once the scope is closed, the pool is clean again.
    assert!(dispatch_fuzz::check(&common::cpu(), &program)
        .unwrap()
        .finding
        .is_none());
}

#[test]
fn state_left_on_a_device_a_program_never_names_is_not_blamed_on_it() {
    // Only the devices a program names can hold its state: a leak elsewhere was left by
    // something else, and blaming this program would give a finding it cannot reproduce.
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "int", "shape": [3], "fill": "arange", "device": "flex"}},
            {"device": {"device": {"capture": 1}, "call": "name"}}]"#,
    );
    let verdict = check_with_capture0_held_open(&program);
    assert!(verdict.trace.leaked_devices.is_empty());
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
}

#[test]
fn nested_scope_on_the_same_device_is_an_error_outcome_not_a_crash() {
    let program = common::program(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "float", "shape": [2], "fill": "ones", "device": "flex"}},
            {"exit_scope": {"inputs": [], "outputs": []}},
            {"exit_scope": {"inputs": [], "outputs": []}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
    let outcomes: Vec<&Outcome> = verdict.trace.steps.iter().map(|r| &r.outcome).collect();
    assert!(matches!(outcomes[1], Outcome::Error { error, .. } if error == "AlreadyActive"));
    assert!(
        matches!(outcomes[2], Outcome::Skipped { .. }),
        "{outcomes:?}"
    );
    assert!(matches!(outcomes[4], Outcome::Ok { graph: Some(_), .. }));
    assert!(verdict.finding.is_none());
}

#[test]
fn a_replayed_graph_computes_what_flex_computes_eagerly() {
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2, 2], "fill": "arange", "device": "flex"}},
            {"enter_scope": {"device": {"capture": 2}}},
            {"to_device": {"out": 1, "src": 0, "device": {"capture": 2}}},
            {"op": {"out": 2, "op": {"matmul": {"lhs": 1, "rhs": 1, "transpose_rhs": true}}}},
            {"op": {"out": 3, "op": {"scalar": {"op": "add", "src": 2, "value": 3}}}},
            {"exit_scope": {"inputs": [1], "outputs": [3]}},
            {"replay": {"graph": 0, "feed": [0], "outputs": [4]}},
            {"op": {"out": 5, "op": {"matmul": {"lhs": 0, "rhs": 0, "transpose_rhs": true}}}},
            {"op": {"out": 6, "op": {"scalar": {"op": "add", "src": 5, "value": 3}}}},
            {"read": {"src": 6, "fallible": true}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
    let Outcome::Ok { outputs, .. } = &verdict.trace.steps[6].outcome else {
        panic!("replay failed: {:?}", verdict.trace.steps[6]);
    };
    let Outcome::Ok {
        value: Some(eager), ..
    } = &verdict.trace.steps[9].outcome
    else {
        panic!("read failed: {:?}", verdict.trace.steps[9]);
    };
    assert_eq!(outputs[0].digest, eager.digest);
}

#[test]
fn wgpu_steps_are_skipped_with_a_reason_when_wgpu_is_not_enabled() {
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2], "fill": "ones", "device": "wgpu"}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
    assert!(
        matches!(&verdict.trace.steps[0].outcome, Outcome::Skipped { reason } if reason.contains("not enabled")),
        "{:?}",
        verdict.trace.steps[0]
    );
}

/// The outcomes of `program`'s steps, in order, and no finding.
fn outcomes_without_finding(program: &Program) -> Vec<Outcome> {
    let verdict = dispatch_fuzz::check(&common::cpu(), program).unwrap();
    assert!(
        verdict.finding.is_none(),
        "{:?}\n{program}",
        verdict.finding
    );
    verdict.trace.steps.into_iter().map(|r| r.outcome).collect()
}

#[test]
fn a_scope_whose_closure_unwinds_leaves_no_graph_and_frees_its_device() {
    let program = common::program(
        r#"[{"enter_scope": {"device": {"capture": 1}}},
            {"create": {"out": 0, "kind": "float", "shape": [2], "fill": "arange", "device": {"capture": 1}}},
            {"op": {"out": 1, "op": {"unary": {"op": "exp", "src": 0}}}},
            {"exit_scope": {"inputs": [0], "outputs": [1], "form": "unwind"}},
            {"op": {"out": 2, "op": {"unary": {"op": "exp", "src": 0}}}},
            {"enter_scope": {"device": {"capture": 1}}},
            {"create": {"out": 3, "kind": "float", "shape": [2], "fill": "ones", "device": {"capture": 1}}},
            {"exit_scope": {"inputs": [3], "outputs": [3]}},
            {"replay": {"graph": 0, "feed": [], "outputs": [4]}}]"#,
    );
    let outcomes = outcomes_without_finding(&program);
    assert!(
        matches!(&outcomes[3], Outcome::Ok { graph: None, .. }),
        "{outcomes:?}"
    );
    // The unwound scope is closed: its tensors are stale, and the device opens again.
    assert!(
        matches!(&outcomes[4], Outcome::Panic(p) if p.class == "capture-scope-complete"),
        "{outcomes:?}"
    );
    assert!(
        matches!(&outcomes[7], Outcome::Ok { graph: Some(_), .. }),
        "{outcomes:?}"
    );
    assert!(
        matches!(&outcomes[8], Outcome::Skipped { .. }),
        "{outcomes:?}"
    );
}

#[test]
fn complete_with_registers_an_input_named_twice_once_where_complete_calls_it_a_duplicate() {
    let steps = |form: &str| {
        format!(
            r#"[{{"enter_scope": {{"device": {{"capture": 0}}}}}},
                {{"create": {{"out": 0, "kind": "float", "shape": [2], "fill": "arange", "device": {{"capture": 0}}}}}},
                {{"create": {{"out": 1, "kind": "int", "shape": [2], "fill": "ones", "device": {{"capture": 0}}}}}},
                {{"op": {{"out": 2, "op": {{"unary": {{"op": "exp", "src": 0}}}}}}}},
                {{"exit_scope": {{"inputs": [0, 0], "outputs": [2, 1, 0], "form": "{form}"}}}}]"#
        )
    };
    for form in ["with", "with_slice"] {
        let outcomes = outcomes_without_finding(&common::program(&steps(form)));
        let Outcome::Ok {
            graph: Some(graph), ..
        } = &outcomes[4]
        else {
            panic!("{form}: {outcomes:?}");
        };
        assert_eq!((graph.inputs, graph.outputs), (1, 3), "{form}");
    }
    let outcomes = outcomes_without_finding(&common::program(&steps("complete")));
    assert!(
        matches!(&outcomes[4], Outcome::Error { error, .. } if error == "DuplicateBoundary"),
        "{outcomes:?}"
    );
}

#[test]
fn device_calls_on_a_capture_device_succeed_in_its_scope_but_seeding_and_any_call_outside_panic() {
    let program = common::program(
        r#"[{"device": {"device": "flex", "call": {"seed": 3}}},
            {"device": {"device": "flex_autodiff", "call": "sync"}},
            {"device": {"device": {"capture": 2}, "call": "sync"}},
            {"enter_scope": {"device": {"capture": 2}}},
            {"device": {"device": {"capture": 2}, "call": "sync"}},
            {"device": {"device": {"capture": 2}, "call": "flush"}},
            {"device": {"device": {"capture": 2}, "call": {"supports_dtype": 8}}},
            {"device": {"device": {"capture": 2}, "call": {"seed": 1}}},
            {"exit_scope": {"inputs": [], "outputs": []}}]"#,
    );
    let outcomes = outcomes_without_finding(&program);
    let class = |i: usize| match &outcomes[i] {
        Outcome::Ok { .. } => "ok".to_string(),
        Outcome::Panic(p) => p.class.clone(),
        other => format!("{other:?}"),
    };
    let classes: Vec<String> = (0..outcomes.len()).map(class).collect();
    assert_eq!(
        classes,
        [
            "ok",
            "ok",
            "operation-outside-capture-scope",
            "ok",
            "ok",
            "ok",
            "ok",
            "capture-seeding",
            "ok"
        ]
    );
}

#[test]
fn a_fusion_alias_of_a_capture_value_reads_and_replays_as_the_value_it_aliases() {
    // Capture resolves an alias to its source (CaptureState::resolve_alias): the alias of an
    // initialized value reads its data, and naming it as an output names the value itself.
    let outcomes = outcomes_without_finding(&common::program(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "float", "shape": [2, 3], "fill": "arange", "device": {"capture": 0}}},
            {"op": {"out": 1, "op": {"along_dim": {"op": "fusion_alias", "src": 0, "dim": 0}}}},
            {"read": {"src": 1, "fallible": true}},
            {"exit_scope": {"inputs": [], "outputs": [1]}},
            {"replay": {"graph": 0, "feed": [], "outputs": [2]}}]"#,
    ));
    assert!(
        matches!(&outcomes[3], Outcome::Ok { value: Some(_), .. }),
        "{outcomes:?}"
    );
    let Outcome::Ok {
        graph: Some(graph), ..
    } = &outcomes[4]
    else {
        panic!("{outcomes:?}");
    };
    // The value's initializer, and no op: the alias records nothing of its own.
    assert_eq!((graph.operations, graph.outputs, graph.values), (1, 1, 1));
}

#[test]
fn an_alias_and_its_target_declared_as_inputs_are_a_duplicate_and_another_session_does_not_resolve_it(
) {
    // `scope.input` registers each handle once by its own id, so an alias and its target are
    // two inputs; `complete` resolves the alias and finds the target twice. A scope on another
    // device does not resolve an alias it never registered: there its handle is an unknown id.
    // The model predicted ok and DuplicateBoundary (fuzz --seconds 60 --seed 0); no finding now.
    for (exit, expected) in [
        (
            r#"{"exit_scope": {"inputs": [1, 0], "outputs": [], "form": "with"}}"#,
            "DuplicateBoundary",
        ),
        (
            r#"{"enter_scope": {"device": {"capture": 1}}},
            {"exit_scope": {"inputs": [], "outputs": [1, 0]}},
            {"exit_scope": {"inputs": [], "outputs": []}}"#,
            "UnknownBoundary",
        ),
    ] {
        let outcomes = outcomes_without_finding(&common::program(&format!(
            r#"[{{"enter_scope": {{"device": {{"capture": 0}}}}}},
                {{"create": {{"out": 0, "kind": "float", "shape": [1], "fill": "zeros", "device": {{"capture": 0}}}}}},
                {{"op": {{"out": 1, "op": {{"along_dim": {{"op": "fusion_alias", "src": 0, "dim": 0}}}}}}}},
                {exit}]"#
        )));
        assert!(
            outcomes
                .iter()
                .any(|o| matches!(o, Outcome::Error { error, .. } if error == expected)),
            "{expected}: {outcomes:?}"
        );
    }
}

#[test]
fn a_cached_relative_graph_invoked_twice_records_both_bound_invocations() {
    // register_and_execute_graph then execute_graph: two bound copies of [mul_scalar, add]
    // after the operand's initializer, replayed to what the same ops give eagerly (4.5 x; the
    // eager-replay oracle compares them, so no finding means they agree).
    let outcomes = outcomes_without_finding(&common::program(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "float", "shape": [2, 3], "fill": "arange", "device": {"capture": 0}}},
            {"op": {"out": 1, "op": {"along_dim": {"op": "fusion_cached_graph", "src": 0, "dim": 0}}}},
            {"exit_scope": {"inputs": [], "outputs": [1]}},
            {"replay": {"graph": 0, "feed": [], "outputs": [2]}},
            {"read": {"src": 2, "fallible": false}}]"#,
    ));
    assert!(
        matches!(&outcomes[3], Outcome::Ok { graph: Some(g), .. } if g.operations == 5),
        "{outcomes:?}"
    );
    assert!(matches!(&outcomes[5], Outcome::Ok { .. }), "{outcomes:?}");
}
